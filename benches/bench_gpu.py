"""Real-size GPU work on torch (eager) vs on candle_bind, both on the same GPU, as time ratios
(candle_bind / torch; < 1 is faster) with each side's peak GPU memory. Each measurement is this file
run as a worker in a subprocess, once with plain python (torch) and once under
`python -m candle_bind run` (candle_bind); the worker loads its model onto the GPU, warms up, times
its own work (synchronised) and prints one JSON line.

    python benches/bench_gpu.py [--only ROW ...] [--quick]

Rows:
- qwen2-0.5b, qwen2-1.5b: transformers' Qwen2 in bfloat16 with seeded random weights of the real
  models' shapes (built once by torch and saved; both sides load the same files): prefill of 512 and
  2048 tokens, greedy decode of 128 new tokens at batch 1 and 8 (tokens/s).
- sdpa: F.scaled_dot_product_attention, causal, bf16, 16 heads of 128, at 2k and 8k tokens; and
  decoding one token (14 query heads, 2 key/value heads of 64: GQA) against a 16k-token cache.
- minilm: a BERT of all-MiniLM-L6-v2's shape (seeded weights), forward of batch 256 x 128 tokens.
- gguf: candle_bind.models on a SmolLM2-135M-shaped Q8_0 GGUF (seeded weights): greedy decode on
  the GPU against the same engine on the CPU (all cores), and against transformers on torch (bf16,
  the same shape) on the GPU.
`--smoke` runs every row on the CPU at tiny sizes (checks this script, measures nothing).
Peak memory is the GPU's used memory, sampled every 5 ms through NVML, above what was in use before
the worker started (so it includes each side's CUDA context and library workspaces).
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

QWEN = {
    "qwen2-0.5b": dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                       intermediate_size=4864, vocab_size=151936, tie_word_embeddings=True),
    "qwen2-1.5b": dict(hidden_size=1536, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                       intermediate_size=8960, vocab_size=151936, tie_word_embeddings=True),
}
SMOLLM2 = dict(hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
               intermediate_size=1536, vocab_size=49152, tie_word_embeddings=True)
MINILM = dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536, vocab_size=30522)
ROWS = [*QWEN, "sdpa", "minilm", "gguf"]
SMOKE = os.environ.get("BENCH_GPU_SMOKE") == "1"
DEV = "cpu" if SMOKE else "cuda"
if SMOKE:
    tiny = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=96, vocab_size=500)
    QWEN = {k: tiny for k in QWEN}
    SMOLLM2 = tiny
    MINILM = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96, vocab_size=500)


class PeakMemory:
    """The GPU's used memory above its level at start, sampled in a thread (NVML)."""

    def __init__(self):
        self.peak = self.base = 0
        if SMOKE:
            return
        import pynvml

        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(0)
        self.used = lambda: pynvml.nvmlDeviceGetMemoryInfo(self.h).used
        self.base = self.used()
        self.peak = self.base
        self.stop = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.stop:
            self.peak = max(self.peak, self.used())
            time.sleep(0.005)

    def mib(self):
        return (self.peak - self.base) / 2**20


def timed(torch, fn, reps=3):
    """Best of `reps` synchronised calls after one warm-up; seconds."""
    sync = torch.cuda.synchronize if DEV == "cuda" else (lambda: None)
    fn()
    sync()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


# ----------------------------------------------------------------------------------------- worker
def worker(row, folder, quick):
    mem = PeakMemory()
    import torch

    out = {"gpu": torch.cuda.get_device_name(0) if DEV == "cuda" else "cpu (smoke)"}
    dev = DEV
    if row in QWEN:
        import transformers

        model = transformers.AutoModelForCausalLM.from_pretrained(os.path.join(folder, row), dtype=torch.bfloat16)
        model = model.to(dev).eval()
        g = torch.Generator().manual_seed(0)
        vocab = model.config.vocab_size
        with torch.no_grad():
            for n in ((16, 32) if SMOKE else (512, 2048)):
                ids = torch.randint(0, vocab, (1, n), generator=g).to(dev)
                out[f"prefill {n} ms"] = timed(torch, lambda: model(ids, use_cache=False).logits[:, -1].float(), 2) * 1e3
            for b in (1, 8):
                new = 32 if quick else 128
                ids = torch.randint(0, vocab, (b, 16), generator=g).to(dev)
                gen = lambda: model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False,  # noqa: E731
                                             pad_token_id=0)
                toks = gen()
                s = timed(torch, gen, 1)
                out[f"decode b{b} tok/s"] = b * new / s
                if b == 1:
                    out["tokens"] = toks[0, 16:].tolist()
    elif row == "sdpa":
        F = torch.nn.functional
        for n in ((64, 128) if SMOKE else (2048, 8192)):
            g = torch.Generator().manual_seed(0)
            q, k, v = (torch.randn(1, 16, n, 128, generator=g).to(dev).to(torch.bfloat16) for _ in range(3))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            out[f"sdpa {n} ms"] = timed(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), 5) * 1e3
            out[f"check {n}"] = o[0, :, -1].float().sum().item()
        # decoding: one query token of 14 heads against a cache of 2 key/value heads (Qwen2-0.5B's GQA)
        n = 1024 if SMOKE else 16384
        g = torch.Generator().manual_seed(0)
        q = torch.randn(1, 14, 1, 64, generator=g).to(dev).to(torch.bfloat16)
        k, v = (torch.randn(1, 2, n, 64, generator=g).to(dev).to(torch.bfloat16) for _ in range(2))
        o = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        out[f"sdpa decode gqa {n} ms"] = timed(torch, lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), 5) * 1e3
        out["check decode"] = o.float().sum().item()
    elif row == "minilm":
        import transformers

        model = transformers.AutoModel.from_pretrained(os.path.join(folder, "minilm")).to(dev).eval()
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, MINILM["vocab_size"], (8, 16) if SMOKE else (256, 128), generator=g).to(dev)
        mask = torch.ones_like(ids)
        with torch.no_grad():
            out["minilm b256 ms"] = timed(torch, lambda: model(input_ids=ids, attention_mask=mask).last_hidden_state, 3) * 1e3
            out["check"] = model(input_ids=ids[:2], attention_mask=mask[:2]).last_hidden_state.float().abs().mean().item()
    elif row == "gguf":
        new = 32 if quick else 128
        if os.environ.get("BENCH_GPU_SIDE") == "cb":
            import candle_bind as cb

            for device in ("cpu",) if SMOKE else ("cuda", "cpu"):
                llm = cb.models.from_gguf(os.path.join(folder, "smollm2.gguf"), device=device)
                prompt = list(range(1, 17))
                toks = list(llm.stream(prompt, max_new_tokens=8, stop=()))  # warm-up
                t0 = time.perf_counter()
                toks = list(llm.stream(prompt, max_new_tokens=new, stop=()))
                out[f"gguf {device} tok/s"] = len(toks) / (time.perf_counter() - t0)
                out[f"tokens {device}"] = toks
        else:
            import transformers

            model = transformers.AutoModelForCausalLM.from_pretrained(os.path.join(folder, "smollm2"),
                                                                      dtype=torch.bfloat16).to(dev).eval()
            ids = torch.arange(1, 17)[None].to(dev)
            gen = lambda: model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)  # noqa: E731
            out["transformers bf16 tok/s"] = new / timed(torch, gen, 1)
    mem.stop = True
    out["peak MiB"] = mem.mib()
    print(json.dumps(out))


# ----------------------------------------------------------------------------------------- parent
def build(rows, folder):
    """The seeded models both sides load, saved once with real torch."""
    import torch
    import transformers

    def save(name, model):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            model.save_pretrained(path)

    for row in rows:
        torch.manual_seed(0)
        if row in QWEN:
            cfg = transformers.Qwen2Config(**QWEN[row], max_position_embeddings=32768, rope_theta=1e6)
            with torch.device(DEV):
                save(row, transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16))
        elif row == "minilm":
            save("minilm", transformers.BertModel(transformers.BertConfig(**MINILM)))
        elif row == "gguf":
            cfg = transformers.LlamaConfig(**SMOLLM2)
            with torch.device(DEV):
                m = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
            save("smollm2", m.to(torch.bfloat16))
            gguf_from_llama(m, cfg, os.path.join(folder, "smollm2.gguf"))


def gguf_from_llama(model, cfg, path):
    """The transformers Llama's weights as a llama GGUF (Q8_0 matrices; q/k rows permuted to GGUF's
    interleaved rotary layout, as llama.cpp's converter does)."""
    import candle_bind as cb
    from candle_bind import gguf

    sd = {k: v.float().cpu().numpy() for k, v in model.state_dict().items()}
    heads, kv = cfg.num_attention_heads, cfg.num_key_value_heads

    def permute(w, n):
        return w.reshape(n, 2, w.shape[0] // n // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    q8 = lambda a: gguf.quantize(cb.from_numpy(a.copy()), "Q8_0")  # noqa: E731
    t = {"token_embd.weight": q8(sd["model.embed_tokens.weight"]), "output_norm.weight": cb.from_numpy(sd["model.norm.weight"])}
    for i in range(cfg.num_hidden_layers):
        p, s = f"blk.{i}.", f"model.layers.{i}."
        t.update({p + "attn_norm.weight": cb.from_numpy(sd[s + "input_layernorm.weight"]),
                  p + "ffn_norm.weight": cb.from_numpy(sd[s + "post_attention_layernorm.weight"]),
                  p + "attn_q.weight": q8(permute(sd[s + "self_attn.q_proj.weight"], heads)),
                  p + "attn_k.weight": q8(permute(sd[s + "self_attn.k_proj.weight"], kv)),
                  p + "attn_v.weight": q8(sd[s + "self_attn.v_proj.weight"]),
                  p + "attn_output.weight": q8(sd[s + "self_attn.o_proj.weight"]),
                  p + "ffn_gate.weight": q8(sd[s + "mlp.gate_proj.weight"]),
                  p + "ffn_up.weight": q8(sd[s + "mlp.up_proj.weight"]),
                  p + "ffn_down.weight": q8(sd[s + "mlp.down_proj.weight"])})
    d = cfg.hidden_size
    meta = {"general.architecture": "llama", "llama.block_count": cfg.num_hidden_layers, "llama.embedding_length": d,
            "llama.feed_forward_length": cfg.intermediate_size, "llama.attention.head_count": heads,
            "llama.attention.head_count_kv": kv, "llama.rope.dimension_count": d // heads,
            "llama.attention.layer_norm_rms_epsilon": cfg.rms_norm_eps, "llama.rope.freq_base": float(getattr(cfg, "rope_theta", None) or cfg.rope_parameters["rope_theta"]),
            "llama.context_length": 2048}
    gguf.save(path, meta, t)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--quick", action="store_true", help="32 decoded tokens instead of 128")
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "candle_bind_bench_gpu"))
    p.add_argument("--worker", default=None)
    a = p.parse_args()
    if a.worker:
        return worker(a.worker, a.folder, a.quick)
    from harness import run_swapped

    import torch

    rows = a.only or ROWS
    os.makedirs(a.folder, exist_ok=True)
    build(rows, a.folder)
    gpu = torch.cuda.get_device_name(0) if DEV == "cuda" else "none (smoke run on the CPU)"
    print(f"gpu: {gpu}; torch {torch.__version__}; cpu: {os.cpu_count()} cores")
    args = ["--folder", a.folder] + (["--quick"] if a.quick else [])
    for row in rows:
        res = {}
        for side in ("torch", "cb"):
            os.environ["BENCH_GPU_SIDE"] = side
            res[side] = run_swapped(__file__, side, ["--worker", row, *args], row)
        t, c = res["torch"] or {}, res["cb"] or {}
        print(f"\n{row}: {'':<28} {'torch':>12} {'candle_bind':>12} {'ratio':>7}")
        for key in sorted(set(t) | set(c)):
            tv, cv = t.get(key), c.get(key)
            if isinstance(tv, (list, str)) or isinstance(cv, (list, str)):
                continue
            ratio = ""
            if isinstance(tv, float) and isinstance(cv, float) and tv and cv and not key.startswith("check"):
                ratio = f"{(tv / cv if 'tok/s' in key else cv / tv):7.2f}"
            fmt = lambda v: f"{v:12.2f}" if isinstance(v, float) else f"{'-':>12}"  # noqa: E731
            print(f"  {key:<32} {fmt(tv)} {fmt(cv)} {ratio}")
        if "tokens" in t and "tokens" in c:
            same = sum(x == y for x, y in zip(t["tokens"], c["tokens"]))
            print(f"  greedy tokens equal: {same}/{len(t['tokens'])}")
        if "tokens cuda" in c and "tokens cpu" in c:
            same = sum(x == y for x, y in zip(c["tokens cuda"], c["tokens cpu"]))
            print(f"  GGUF greedy tokens GPU vs CPU equal: {same}/{len(c['tokens cpu'])}")
            g, cpu, hf = c["gguf cuda tok/s"], c["gguf cpu tok/s"], t.get("transformers bf16 tok/s")
            print(f"  GGUF on the GPU: {g / cpu:.2f}x our CPU decode"
                  + (f", {g / hf:.2f}x transformers-on-torch bf16 decode" if hf else ""))
        for key in ("check", "check 2048", "check 8192", "check decode"):
            if key in t and key in c:
                print(f"  {key}: torch {t[key]:.5g}, candle_bind {c[key]:.5g}")


if __name__ == "__main__":
    main()
