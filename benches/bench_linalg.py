"""torch.linalg solvers and decompositions: solve, inv, det, cholesky, qr, svd, eigh at n = 64, 256, 1024
(float32, well-conditioned / symmetric positive-definite inputs), torch vs candle_bind at 1 and 2 threads,
in one run. candle_bind runs LAPACK through numpy, so the ratio includes the tensor <-> numpy trips.

    python benches/bench_linalg.py [--sizes 64,256]
"""

import argparse

import numpy as np

from harness import cpu_line, header, row

import torch  # noqa: E402  (after harness, as the other benches)

import candle_bind as cb  # noqa: E402

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--sizes", default="64,256,1024")
sizes = [int(s) for s in p.parse_args().sizes.split(",")]
print(cpu_line())
CASES = {
    "solve": lambda L, a, s, b: L.linalg.solve(a, b),
    "inv": lambda L, a, s, b: L.linalg.inv(a),
    "det": lambda L, a, s, b: L.linalg.det(a),
    "cholesky": lambda L, a, s, b: L.linalg.cholesky(s),
    "qr": lambda L, a, s, b: L.linalg.qr(a),
    "svd": lambda L, a, s, b: L.linalg.svd(a, full_matrices=False),
    "eigh": lambda L, a, s, b: L.linalg.eigh(s),
}
inputs = {}
for n in sizes:
    rng = np.random.RandomState(n)
    a = (rng.randn(n, n) + n ** 0.5 * np.eye(n)).astype(np.float32)
    spd = (a @ a.T / n + np.eye(n)).astype(np.float32)
    b = rng.randn(n, n).astype(np.float32)
    inputs[n] = [(torch.from_numpy(x), cb.from_numpy(x)) for x in (a, spd, b)]

for threads in (1, 2):
    torch.set_num_threads(threads)
    cb.set_num_threads(threads)
    print(f"threads: torch {torch.get_num_threads()}, candle_bind {cb.get_num_threads()}")
    header("op (float32)")
    for name, fn in CASES.items():
        for n in sizes:
            (ta, ca), (ts, cs), (tb, cbb) = inputs[n]
            number = max(1, int(2e7 / n ** 3)) if name not in ("svd", "eigh") else max(1, int(4e6 / n ** 3))
            row(f"{name} n={n}", lambda: fn(torch, ta, ts, tb), lambda: fn(cb, ca, cs, cbb), number)
