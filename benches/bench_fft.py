"""torch.stft and torch.fft: whisper's STFT (n_fft 400, hop 160, hann window, 30 s of 16 kHz audio, then
`stft[..., :-1].abs() ** 2`) and rfft of (64, 1024): torch vs candle_bind at 1 and 2 threads, in one run.

    python benches/bench_fft.py
"""

import numpy as np

from harness import cpu_line, header, row

import torch  # noqa: E402  (after harness, as the other benches)

import candle_bind as cb  # noqa: E402

print(cpu_line())
audio = np.random.RandomState(0).randn(480000).astype(np.float32)
ta, ca = torch.from_numpy(audio), cb.from_numpy(audio)
tw, cw = torch.hann_window(400), cb.hann_window(400)
x = np.random.RandomState(1).randn(64, 1024).astype(np.float32)
tx, cx = torch.from_numpy(x), cb.from_numpy(x)


def whisper(lib, a, w):
    s = lib.stft(a, 400, 160, window=w, return_complex=True)
    return s[..., :-1].abs() ** 2


for threads in (1, 2):
    torch.set_num_threads(threads)
    cb.set_num_threads(threads)
    print(f"threads: torch {torch.get_num_threads()}, candle_bind {cb.get_num_threads()}")
    header("op")
    row("stft(30 s, n_fft 400, hop 160, hann)", lambda: torch.stft(ta, 400, 160, window=tw, return_complex=True),
        lambda: cb.stft(ca, 400, 160, window=cw, return_complex=True), 10)
    row("whisper: stft[..., :-1].abs() ** 2", lambda: whisper(torch, ta, tw), lambda: whisper(cb, ca, cw), 10)
    row("fft.rfft (64, 1024)", lambda: torch.fft.rfft(tx), lambda: cb.fft.rfft(cx), 200)
    row("fft.fft (64, 1024)", lambda: torch.fft.fft(tx), lambda: cb.fft.fft(cx), 200)
    row("fft.irfft(rfft) (64, 1024)", lambda: torch.fft.irfft(torch.fft.rfft(tx)),
        lambda: cb.fft.irfft(cb.fft.rfft(cx)), 100)
