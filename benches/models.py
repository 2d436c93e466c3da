"""Whole models end to end, torch vs candle_bind in one run, as time ratios: each script in
examples/swap (unmodified PyTorch code) constructs its model, loads the checkpoint, runs its forward
pass and, where it applies, its generation loop — once with real torch, once through the shim.

    python benches/models.py [--threads N] [--only NAME] [--dtype bfloat16|float16] [--profile] [--device cuda]

--dtype casts the loaded models (the token-input ones; image and audio scripts feed float32 inputs,
which torch refuses to mix with 16-bit weights, so they are left out).

--profile prints, per model, the candle_bind calls that take the most time (cProfile, own time).

--device cuda runs both on the GPU (a CUDA build of candle_bind): the default device of each side is
set, so the scripts build their models and inputs there as they would under torch.set_default_device.
"""

import argparse
import cProfile
import importlib.util
import os
import pstats
import tempfile

import torch

import candle_bind as cb
import candle_bind.compat as compat
from harness import best, cpu_line, header

SWAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "swap")
MODELS = ["gpt", "llama", "resnet", "unet", "rnn_lm", "vit", "audio", "hf_gpt2"]
TOKEN_MODELS = ["gpt", "llama", "rnn_lm", "hf_gpt2"]


def cast(model, dtype):
    """`model.to(dtype)`, for a module or a dict of them (rnn_lm loads two)."""
    if isinstance(model, dict):
        return {k: m.to(dtype) for k, m in model.items()}
    return model.to(dtype)


def import_script(name, tag):
    spec = importlib.util.spec_from_file_location(f"{tag}_{name}", os.path.join(SWAP, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_both(name):
    """The script bound to real torch, and the same script bound to candle_bind through the shim."""
    ref = import_script(name, "torch")
    compat.install()
    try:
        ours = import_script(name, "cb")
    finally:
        compat.uninstall()
    return ref, ours


def profile(run, top=6):
    prof = cProfile.Profile()
    prof.runcall(run)
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(top)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--threads", type=int, action="append", help="default: 1 and 2")
    p.add_argument("--only", action="append", choices=MODELS)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = p.parse_args()
    if args.device == "cuda":
        torch.set_default_device("cuda")
        cb.set_default_device("cuda")
    names = args.only or (MODELS if args.dtype == "float32" else TOKEN_MODELS)
    with tempfile.TemporaryDirectory() as tmp:
        scripts = {}
        for name in names:
            ref, ours = import_both(name)
            path = os.path.join(tmp, f"{name}.pt")
            ref.save_checkpoint(path)
            scripts[name] = (ref, ours, path)
        for threads in args.threads or [1, 2]:
            torch.set_num_threads(threads)
            cb.set_num_threads(threads)
            gpu = f"\ndevice: {torch.cuda.get_device_name()} (torch), {cb.cuda.get_device_name()} (candle_bind)" if args.device == "cuda" else ""
            print(f"\n{cpu_line()}\nthreads: {threads}{gpu}")
            tdt, cdt = getattr(torch, args.dtype), getattr(cb, args.dtype)
            header(f"end to end: construct + load + forward [+ generate], {args.dtype}", 50, "ms")
            for name, (ref, ours, path) in scripts.items():
                timed(name, lambda: ref.infer(cast(ref.load(path), tdt)), lambda: ours.infer(cast(ours.load(path), cdt)),
                      args.profile)
            header(f"forward [+ generate] only, model loaded, {args.dtype}", 50, "ms")
            for name, (ref, ours, path) in scripts.items():
                t_model, c_model = cast(ref.load(path), tdt), cast(ours.load(path), cdt)
                timed(name, lambda: ref.infer(t_model), lambda: ours.infer(c_model), args.profile)


def timed(name, t_run, c_run, show_profile):
    t, c = best(t_run, 1), best(c_run, 1)
    print(f"{name:<50} {t * 1e3:>10.1f} {c * 1e3:>10.1f} {c / t:>7.2f}")
    if show_profile:
        profile(c_run)

if __name__ == "__main__":
    main()
