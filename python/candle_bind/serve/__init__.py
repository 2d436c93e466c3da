"""`python -m candle_bind serve MODEL`: an OpenAI-compatible HTTP server (Starlette + uvicorn).

MODEL is a GGUF file (`/v1/chat/completions`, `/v1/completions`) or a Hugging Face encoder folder
(`/v1/embeddings`). Flags follow llama-server's names. Needs the `serve` extra:
`pip install 'candle-bind[serve]'`.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import List, Optional

__all__ = ["main", "build_app", "Host", "Options"]

log = logging.getLogger("candle_bind.serve")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m candle_bind serve",
                                description="OpenAI-compatible server for a GGUF LLM or a sentence-embedding encoder folder.")
    p.add_argument("model", nargs="?", help="a .gguf file (chat/completions) or a Hugging Face encoder folder (embeddings)")
    p.add_argument("-m", "--model", dest="model_flag", help="the same as MODEL (llama-server's spelling)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    p.add_argument("-t", "--threads", type=int, default=None, help="compute threads (default: candle_bind's, one per core)")
    p.add_argument("--device", default=None, help="where a GGUF model runs: cpu (default) or cuda[:N] (a CUDA build)")
    p.add_argument("-c", "--ctx-size", type=int, default=0, help="context size in tokens (default 0: the model's own)")
    p.add_argument("-np", "--parallel", type=int, default=4,
                   help="sequences decoded together, each in its own KV cache slot (continuous batching; default 4)")
    p.add_argument("-n", "--n-predict", type=int, default=-1, help="max_tokens when a request gives none (-1: up to the context)")
    p.add_argument("-a", "--alias", default=None, help="the model id clients use (default: the file or folder name)")
    p.add_argument("--api-key", default=os.environ.get("CANDLE_BIND_API_KEY"),
                   help="require 'Authorization: Bearer KEY' (also $CANDLE_BIND_API_KEY); /health stays open")
    p.add_argument("--max-body-size", type=int, default=4 << 20, help="largest request body in bytes (default 4 MiB; 413 above)")
    p.add_argument("--max-queue", type=int, default=256, help="requests waiting for the model before new ones get 429 (default 256)")
    p.add_argument("-b", "--batch-size", type=int, default=32, help="embeddings per forward (default 32)")
    p.add_argument("--shutdown-timeout", type=float, default=30.0,
                   help="on SIGTERM, seconds in-flight requests get to finish before they are answered 503 (default 30)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    path = args.model or args.model_flag
    if not path:
        _parser().print_usage(sys.stderr)
        print("candle_bind serve: a MODEL (GGUF file or encoder folder) is required", file=sys.stderr)
        return 2
    if not os.path.exists(path):
        print(f"candle_bind serve: no such model file or folder: {path}", file=sys.stderr)
        return 2
    for name, value, low in (("--port", args.port, 0), ("--parallel", args.parallel, 1), ("--max-queue", args.max_queue, 1),
                             ("--max-body-size", args.max_body_size, 1), ("--batch-size", args.batch_size, 1)):
        if value < low:
            print(f"candle_bind serve: {name} must be >= {low}, got {value}", file=sys.stderr)
            return 2
    try:
        import uvicorn  # noqa: F401
        import starlette  # noqa: F401
    except ImportError:
        print("candle_bind serve needs the serve extra: pip install 'candle-bind[serve]'", file=sys.stderr)
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import candle_bind

    if args.threads:
        candle_bind.set_num_threads(args.threads)
    from .app import Host, Options, build_app

    opts = Options(model_path=path, alias=args.alias, ctx_size=args.ctx_size, n_predict=args.n_predict,
                   parallel=args.parallel, max_queue=args.max_queue, max_body=args.max_body_size,
                   api_key=args.api_key or None, batch_size=args.batch_size, shutdown_timeout=args.shutdown_timeout,
                   device=args.device)
    try:
        host = Host(opts)
    except (OSError, ValueError, NotImplementedError, ImportError, RuntimeError) as e:
        print(f"candle_bind serve: cannot load {path}: {e}", file=sys.stderr)
        return 1
    log.info("serving %s (%s) as `%s` on http://%s:%d with %d threads", path, host.kind, host.model_id, args.host,
             args.port, candle_bind.get_num_threads())
    return serve(build_app(host), host, args.host, args.port, args.log_level)


def serve(app, host, address: str, port: int, log_level: str = "info") -> int:
    """Runs `app` under uvicorn until SIGINT/SIGTERM: then the listening socket closes, new requests on
    open connections get 503, and in-flight ones get `shutdown_timeout` seconds to finish."""
    import uvicorn

    grace = host.opts.shutdown_timeout

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            host.worker.drain(grace)
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, host=address, port=port, log_level=log_level, access_log=log_level == "debug",
                            lifespan="off", timeout_graceful_shutdown=grace + 5, timeout_keep_alive=5)
    server = Server(config)
    # uvicorn restores the handlers it found and raises the signal again once it has shut down; with
    # these no-ops found, a SIGTERM'd server exits 0 after its graceful shutdown, not by the signal.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    try:
        server.run()
    finally:
        host.worker.stop()
    return 0 if server.started else 1


def __getattr__(name):
    # build_app/Host/Options import Starlette: only on use, so `import candle_bind.serve` stays light.
    if name in ("build_app", "Host", "Options"):
        from . import app

        return getattr(app, name)
    raise AttributeError(name)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
