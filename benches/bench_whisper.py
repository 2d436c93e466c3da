"""openai-whisper on torch vs on candle_bind (unmodified whisper under `python -m candle_bind run`), as time ratios
(candle_bind / torch; < 1 is faster). A whisper-tiny-shaped model (80 mels, audio and text width 384, 6 heads,
4 + 4 layers, vocabulary 51865) with seeded random weights, built and saved once by real torch in whisper's
checkpoint layout and loaded with whisper.load_model by both sides. Each side is this file run as a worker in
its own process (plain python: torch; under the shim: candle_bind) that sets the thread count, warms up and
prints one JSON line.

Rows: log_mel_spectrogram of 30 s of audio (the front end: STFT + Mel filter bank); the encoder over a 30 s
mel (1, 80, 3000); a 32-token greedy decode with whisper's kv cache (its PyTorchInference: forward hooks on the
key/value projections), audio features precomputed; whisper.decode (greedy, its logit filters, up to 32
tokens) from the mel, encoder included. "agree": the same greedy tokens, or the largest encoder difference.

    python benches/bench_whisper.py [--threads N ...] [--reps N]
"""

import argparse
import dataclasses
import json
import os
import tempfile
import time

from harness import cpu_line, run_swapped

DIMS = dict(n_mels=80, n_audio_ctx=1500, n_audio_state=384, n_audio_head=6, n_audio_layer=4, n_vocab=51865,
            n_text_ctx=448, n_text_state=384, n_text_head=6, n_text_layer=4)
NEW_TOKENS = 32
ROWS = ("log_mel 30 s", "encoder 30 s mel", f"greedy {NEW_TOKENS} tokens, kv cache", f"whisper.decode <= {NEW_TOKENS}")


def audio():
    import numpy as np

    t = np.arange(16000 * 30) / 16000
    return (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * np.random.RandomState(0).randn(t.size)).astype(np.float32)


def worker(path, threads, reps):
    """Runs in the subprocess: `import torch` is real torch or candle_bind, whichever launched us."""
    import torch
    import whisper
    from whisper.decoding import DecodingOptions, PyTorchInference

    torch.set_num_threads(threads)
    model = whisper.load_model(path, device="cpu").eval()
    wave = audio()
    mel = whisper.log_mel_spectrogram(wave)[:, :3000]
    tokenizer = whisper.tokenizer.get_tokenizer(True, num_languages=model.num_languages, language="en",
                                                task="transcribe")
    prompt = list(tokenizer.sot_sequence_including_notimestamps)
    with torch.no_grad():
        feats = model.encoder(mel[None])

    def greedy():
        inference = PyTorchInference(model, len(prompt))
        tokens = torch.tensor([prompt])
        with torch.no_grad():
            for _ in range(NEW_TOKENS):
                logits = inference.logits(tokens, feats)[:, -1]
                tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=-1)
        inference.cleanup_caching()
        return tokens[0, len(prompt):].tolist()

    options = DecodingOptions(language="en", without_timestamps=True, fp16=False, sample_len=NEW_TOKENS)
    work = {
        ROWS[0]: lambda: whisper.log_mel_spectrogram(wave),
        ROWS[1]: lambda: model.encoder(mel[None]),
        ROWS[2]: greedy,
        ROWS[3]: lambda: whisper.decode(model, mel, options).tokens,
    }
    times, out = {}, {}
    for name, fn in work.items():
        with torch.no_grad():
            out[name] = fn()  # warm-up
            best = float("inf")
            for _ in range(reps):
                start = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - start)
        times[name] = best
    check = {"encoder": out[ROWS[1]][0, :8, :8].reshape(-1).tolist(), "greedy": out[ROWS[2]],
             "decode": out[ROWS[3]]}
    print(json.dumps(dict(times=times, check=check, threads=torch.get_num_threads())))


def save_model(folder):
    import torch
    from whisper.model import ModelDimensions, Whisper

    torch.manual_seed(0)
    dims = ModelDimensions(**DIMS)
    model = Whisper(dims)
    torch.nn.init.normal_(model.decoder.positional_embedding, std=0.02)  # torch.empty in whisper
    path = os.path.join(folder, "whisper-tiny-random.pt")
    torch.save({"dims": dataclasses.asdict(dims), "model_state_dict": model.state_dict()}, path)
    return path


def run_worker(path, threads, side, reps):
    return run_swapped(__file__, side, ["--worker", path, "--threads", str(threads), "--reps", str(reps)])


def agree(name, t, c):
    if name == ROWS[0]:
        return ""
    if name == ROWS[1]:
        return f"{max(abs(a - b) for a, b in zip(t['check']['encoder'], c['check']['encoder'])):.0e}"
    key = "greedy" if name == ROWS[2] else "decode"
    return "same" if t["check"][key] == c["check"][key] else "DIFF"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, action="append", help="default: 1 and 2")
    p.add_argument("--reps", type=int, default=3, help="timed calls per measurement (best is kept)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.threads[0], args.reps)
    with tempfile.TemporaryDirectory() as folder:
        path = save_model(folder)
        for threads in args.threads or [1, 2]:
            print(f"\n{cpu_line()}, --threads {threads}")
            t, c = run_worker(path, threads, "torch", args.reps), run_worker(path, threads, "cb", args.reps)
            if t is None or c is None:
                continue
            print(f"threads: torch {t['threads']}, candle_bind {c['threads']}")
            print(f"{f'whisper-tiny shape, random weights (best of {args.reps})':<50} {'torch ms':>9} {'cb ms':>9}"
                  f" {'ratio':>6} {'agree':>6}")
            for name, tt in t["times"].items():
                ct = c["times"][name]
                print(f"{name:<50} {tt * 1e3:>9.1f} {ct * 1e3:>9.1f} {ct / tt:>6.2f} {agree(name, t, c):>6}")


if __name__ == "__main__":
    main()
