"""torchvision classifiers on torch vs on candle_bind, as time ratios (candle_bind / torch; < 1 is faster).
Each measurement is this file run as a worker in a subprocess, once with plain python (torch) and once
under `python -m candle_bind run` (candle_bind): the worker sets the thread count, builds the model with
`torchvision.models.<name>(weights=None)`, loads the seeded random state_dict real torch saved once to a
temporary folder, warms up and times `model(x)` under no_grad on 224x224 images at batch 1 and 8.
"agree" is the largest logit difference relative to the largest logit, torch vs candle_bind.

    python benches/bench_torchvision.py [--threads N ...] [--only ROW ...] [--batch B ...] [--reps R]
"""

import argparse
import json
import os
import tempfile
import time

from harness import cpu_line, run_swapped

ROWS = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16", "convnext_tiny"]
SIZE = 224


# ----------------------------------------------------------------------------------------- worker
def images(batch):
    import numpy as np
    import torch

    return torch.from_numpy(np.random.default_rng(0).standard_normal((batch, 3, SIZE, SIZE)).astype(np.float32))


def worker(row, folder, threads, batches, reps):
    """Runs in the subprocess: `import torch` is real torch or candle_bind, whichever launched us."""
    t0 = time.perf_counter()
    import torch
    import torchvision

    torch.set_num_threads(threads)
    t1 = time.perf_counter()
    model = getattr(torchvision.models, row)(weights=None).eval()
    model.load_state_dict(torch.load(os.path.join(folder, f"{row}.pt")))
    t2 = time.perf_counter()
    times, check = {}, {}
    for batch in batches:
        x = images(batch)
        with torch.no_grad():
            out = model(x)  # warm-up
            best = float("inf")
            for _ in range(reps):
                start = time.perf_counter()
                model(x)
                best = min(best, time.perf_counter() - start)
        times[str(batch)] = best
        check[str(batch)] = out[:, :50].reshape(-1).tolist()
    print(json.dumps(dict(import_s=t1 - t0, load_s=t2 - t1, times=times, check=check,
                          threads=torch.get_num_threads())))


# ----------------------------------------------------------------------------------------- driver
def save_models(folder, rows):
    """Seeded random weights, built and saved with real torch: BatchNorm running statistics and the parameters
    a builder sets to a constant (ViT's zero head) randomised too, so the logits say something."""
    import torch
    import torchvision

    for row in rows:
        torch.manual_seed(0)
        model = getattr(torchvision.models, row)(weights=None).eval()
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                    m.running_mean.normal_(0, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
            for p in model.parameters():
                if p.numel() > 1 and p.std() == 0:
                    p.add_(torch.randn_like(p) * 0.1)
        torch.save(model.state_dict(), os.path.join(folder, f"{row}.pt"))


def run_worker(row, folder, threads, batches, side, reps):
    args = ["--worker", row, "--dir", folder, "--threads", str(threads), "--reps", str(reps),
            *[a for b in batches for a in ("--batch", str(b))]]
    return run_swapped(__file__, side, args, row)


def agree(want, got):
    scale = max(abs(v) for v in want) or 1.0
    return f"{max(abs(a - b) for a, b in zip(want, got)) / scale:.0e}"


def report(results, reps, batches):
    if not results:
        return
    t, c = next(iter(results.values()))
    print(f"threads: torch {t['threads']}, candle_bind {c['threads']}")
    print(f"{f'forward {SIZE}x{SIZE} (best of {reps})':<34} {'batch':>5} {'torch ms':>9} {'cb ms':>9} {'ratio':>6}"
          f" {'torch img/s':>11} {'cb img/s':>9} {'agree':>6}")
    for row, (t, c) in results.items():
        for batch in batches:
            tt, ct = t["times"][str(batch)], c["times"][str(batch)]
            print(f"{row:<34} {batch:>5} {tt * 1e3:>9.1f} {ct * 1e3:>9.1f} {ct / tt:>6.2f} {batch / tt:>11.1f}"
                  f" {batch / ct:>9.1f} {agree(t['check'][str(batch)], c['check'][str(batch)]):>6}")
    print(f"{'seconds: import, then model build + load':<40} {'torch':>9} {'cb':>9} {'torch':>9} {'cb':>9}")
    for row, (t, c) in results.items():
        print(f"{row:<40} {t['import_s']:>9.2f} {c['import_s']:>9.2f} {t['load_s']:>9.2f} {c['load_s']:>9.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, action="append", help="default: 1 and 2")
    p.add_argument("--batch", type=int, action="append", help="default: 1 and 8")
    p.add_argument("--only", action="append", choices=ROWS)
    p.add_argument("--reps", type=int, default=3, help="timed calls per measurement (best is kept)")
    p.add_argument("--worker", choices=ROWS, help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    batches = args.batch or [1, 8]
    if args.worker:
        return worker(args.worker, args.dir, args.threads[0], batches, args.reps)
    rows = args.only or ROWS
    with tempfile.TemporaryDirectory() as folder:
        save_models(folder, rows)
        for threads in args.threads or [1, 2]:
            print(f"\n{cpu_line()}, --threads {threads}")
            results = {row: (run_worker(row, folder, threads, batches, "torch", args.reps),
                             run_worker(row, folder, threads, batches, "cb", args.reps)) for row in rows}
            report({row: tc for row, tc in results.items() if None not in tc}, args.reps, batches)


if __name__ == "__main__":
    main()
