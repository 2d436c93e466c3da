"""`python -m candle_bind run script.py [args...]`: runs an unmodified PyTorch script on candle_bind.
`python -m candle_bind info`: this build and machine (version, CUDA, CPU, instruction set, threads).
`python -m candle_bind serve MODEL [flags]`: an OpenAI-compatible server (`candle_bind.serve`, the serve extra)."""

import os
import runpy
import sys

USAGE = ("usage: python -m candle_bind run script.py [args...]\n       python -m candle_bind info\n"
         "       python -m candle_bind serve MODEL [--host H] [--port P] [--threads N] [--ctx-size N] [--parallel N] "
         "[--api-key K] ... (serve --help)")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["info"]:
        from . import __config__

        print(__config__.show(), end="")
        return 0
    if argv[:1] == ["serve"]:
        from .serve import main as serve_main

        return serve_main(argv[1:])
    if len(argv) < 2 or argv[0] != "run":
        print(USAGE, file=sys.stderr)
        return 2
    script = argv[1]
    if not os.path.exists(script):
        print(f"candle_bind: no such script: {script}", file=sys.stderr)
        return 2
    from . import compat

    compat.install()
    sys.argv = [script, *argv[2:]]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
