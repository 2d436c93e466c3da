"""diffusers on torch vs on candle_bind, as time ratios (candle_bind / torch; < 1 is faster). Each
measurement is this file run as a worker in a subprocess, once with plain python (torch) and once under
`python -m candle_bind run` (candle_bind); the worker sets the thread count, loads its model with
from_pretrained, warms up, times its own work and prints one JSON line.

    python benches/bench_diffusers.py [--threads N ...] [--only ROW ...] [--reps N] [--profile ROW]

Rows, at Stable Diffusion's 64x64 latents (a 512x512 image), with seeded random weights built and saved
once with real torch. SD-1.5's own widths would take minutes a step on 2 cores, so the models keep its
layout (the same block types, attention at the three upper levels, 8 heads, 77x768 text states) at
smaller widths, stated here:
- unet: UNet2DConditionModel, block_out_channels (128, 256, 512, 512), layers_per_block 1 (SD-1.5:
  (320, 640, 1280, 1280), 2), one denoising step of a batch of 2 (classifier-free guidance);
- vae-decode: AutoencoderKL, block_out_channels (64, 128, 256, 256), layers_per_block 1 (SD-1.5:
  (128, 256, 512, 512), 2), decoding one 4x64x64 latent into a 3x512x512 image.
"agree" is the largest output difference between the two sides.
"""

import argparse
import json
import os
import tempfile
import time

from harness import cpu_line, print_profile, run_swapped

ROWS = ["unet", "vae-decode"]
LABELS = {"unet": "UNet step, batch 2, 64x64 latents, 77x768 text",
          "vae-decode": "VAE decode 4x64x64 -> 3x512x512"}


def inputs(torch, row):
    import numpy as np

    rng = np.random.RandomState(0)
    t = lambda *shape: torch.from_numpy(rng.standard_normal(shape).astype(np.float32))  # noqa: E731
    if row == "unet":
        return t(2, 4, 64, 64), t(2, 77, 768)
    return (t(1, 4, 64, 64),)


# ----------------------------------------------------------------------------------------- worker
def worker(row, folder, threads, reps, profile):
    """Runs in the subprocess: `import torch` is real torch or candle_bind, whichever launched us."""
    t0 = time.perf_counter()
    import torch
    from diffusers import AutoencoderKL, UNet2DConditionModel

    torch.set_num_threads(threads)
    t1 = time.perf_counter()
    if row == "unet":
        model = UNet2DConditionModel.from_pretrained(os.path.join(folder, row)).eval()
        sample, text = inputs(torch, row)
        work = lambda: model(sample, 500, encoder_hidden_states=text).sample  # noqa: E731
    else:
        model = AutoencoderKL.from_pretrained(os.path.join(folder, row)).eval()
        (latents,) = inputs(torch, row)
        work = lambda: model.decode(latents).sample  # noqa: E731
    t2 = time.perf_counter()
    with torch.no_grad():
        out = work()  # warm-up
        best = float("inf")
        for _ in range(reps):
            start = time.perf_counter()
            work()
            best = min(best, time.perf_counter() - start)
        if profile:
            print_profile(row, work)
    print(json.dumps(dict(import_s=t1 - t0, load_s=t2 - t1, time=best, check=out.reshape(-1)[::997].tolist(),
                          threads=torch.get_num_threads())))


# ----------------------------------------------------------------------------------------- driver
def save_models(folder, rows):
    """Seeded random models in SD-1.5's layout (smaller widths, see the docstring), saved with real torch."""
    import torch
    from diffusers import AutoencoderKL, UNet2DConditionModel

    torch.manual_seed(0)
    if "unet" in rows:
        UNet2DConditionModel(block_out_channels=(128, 256, 512, 512), layers_per_block=1, cross_attention_dim=768,
                             attention_head_dim=8, sample_size=64).save_pretrained(os.path.join(folder, "unet"))
    if "vae-decode" in rows:
        AutoencoderKL(block_out_channels=(64, 128, 256, 256), layers_per_block=1, latent_channels=4,
                      down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
                      sample_size=512).save_pretrained(os.path.join(folder, "vae-decode"))


def run_worker(row, folder, threads, side, reps, profile=False):
    args = ["--worker", row, "--dir", folder, "--threads", str(threads), "--reps", str(reps)]
    return run_swapped(__file__, side, args + (["--profile", row] if profile else []), row)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, action="append", help="default: 1 and 2")
    p.add_argument("--only", action="append", choices=ROWS)
    p.add_argument("--profile", choices=ROWS)
    p.add_argument("--reps", type=int, default=3, help="timed calls per measurement (best is kept)")
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
    print(f"{f'work after warm-up (best of {reps})':<50} {'torch ms':>9} {'cb ms':>9} {'ratio':>6} {'agree':>8}")
    for row, (t, c) in results.items():
        diff = max(abs(a - b) for a, b in zip(t["check"], c["check"]))
        print(f"{LABELS[row]:<50} {t['time'] * 1e3:>9.1f} {c['time'] * 1e3:>9.1f} {c['time'] / t['time']:>6.2f}"
              f" {diff:>8.0e}")
    print(f"{'seconds: import, then model load':<50} {'torch':>9} {'cb':>9} {'ratio':>6} {'torch':>11} {'cb':>9}"
          f" {'ratio':>6}")
    for row, (t, c) in results.items():
        ti, ci, tl, cl = t["import_s"], c["import_s"], t["load_s"], c["load_s"]
        print(f"{row:<50} {ti:>9.2f} {ci:>9.2f} {ci / ti:>6.2f} {tl:>11.2f} {cl:>9.2f} {cl / tl:>6.2f}")


if __name__ == "__main__":
    main()
