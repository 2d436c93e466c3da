"""API-surface fuzzer for candle_bind, with real torch as the oracle (a library, not a test file).

A *call* is a small self-contained Python source string that only uses the names `torch`, `nn`, `F`,
`mk`, `np`, `math`, `nan`, `inf`; the runner executes it once with `torch` bound to the real torch and
once with `torch` bound to candle_bind, each in a subprocess, and compares per call:

    crash      the candle_bind process died (signal, abort, exit), hung, blew its memory bound, or
               raised a BaseException that is not an Exception (pyo3's PanicException)
    we_ok      candle_bind returned, torch raised
    we_raise   candle_bind raised, torch returned
    meta       both returned, but shapes / dtypes / structure differ
    values     both returned, same shape and dtype, values differ beyond a loose tolerance
               (only for deterministic calls; informational)

    gen = Generator(seed=0)
    calls = gen.calls(500)                    # [Call(id, op, src, det)]
    cb = run_side("candle_bind", calls)       # {id: result dict}
    th = run_side("torch", calls)
    rep = compare(calls, cb, th)              # {"findings": [...], "stats": {...}}
    print(format_report(rep))

`python tests/fuzz_api.py --calls 500 --seed 0` runs that and prints the report.

Sizes: calls never ask torch to allocate between ~2 GB and 1 TB. "Huge" requests are > 1 TB (or
overflow 64 bits) so malloc refuses them immediately on both sides; the runner also watches each
child's RSS and kills it past `mem_limit_gb` (reported as a crash of that call) as a safety net.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import random
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))

# ----------------------------------------------------------------------------------------------
# The worker side: building inputs, executing calls, summarising results
# ----------------------------------------------------------------------------------------------

INT_DTYPES = ("int64", "int32", "int16", "uint8")
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ("bool",)


def _make_mk(M):
    import numpy as np

    npdt = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.float32,
            "int64": np.int64, "int32": np.int32, "int16": np.int16, "uint8": np.uint8, "bool": np.bool_}

    def mk(shape, dt="float32", seed=0, kind="n", lo=None, hi=None):
        """A deterministic tensor of `shape`/`dt` (same values under torch and candle_bind).
        kind: n normal, pos positive, prob in [0,1), special sprinkled nan/inf, idx ints in [lo,hi)."""
        rng = np.random.default_rng(seed)
        shape = tuple(shape)
        if dt == "bool":
            a = rng.random(shape) < 0.5
        elif dt in INT_DTYPES or kind == "idx":
            if lo is None:
                lo, hi = (0, 10) if dt == "uint8" else (-5, 6)
            a = rng.integers(lo, hi, size=shape)
        else:
            if kind == "pos":
                a = np.abs(rng.standard_normal(shape)) + 0.1
            elif kind == "prob":
                a = rng.random(shape)
            else:
                a = rng.standard_normal(shape)
            if kind == "special" and a.size:
                flat = a.reshape(-1)
                for v in (np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30):
                    flat[rng.integers(0, flat.size)] = v
        a = np.ascontiguousarray(np.asarray(a).astype(npdt[dt]))
        t = M.from_numpy(a)
        if dt == "bfloat16":
            t = t.to(M.bfloat16)
        return t

    return mk


def _flat(v, out):
    if isinstance(v, (list, tuple)):
        for e in v:
            _flat(e, out)
    else:
        out.append(v)


def _summ(M, x, det, depth=0):
    """A JSON-able summary: ["T", shape, dtype, values|None] / ["S", [..]] / ["V", type, value] / ["O", type]."""
    if isinstance(x, M.Tensor):
        shape = [int(s) for s in x.shape]
        dtype = str(x.dtype).replace("torch.", "")
        vals = None
        n = 1
        for s in shape:
            n *= max(s, 1)  # (10**12, 0): tolist would build 10**12 empty lists
        if det and n <= 2048 and dtype in ALL_DTYPES and not getattr(x, "is_meta", False):
            y = x.detach()
            if dtype in ("bfloat16", "float16"):
                y = y.to(M.float32)
            fl = []
            _flat(y.tolist(), fl)
            vals = [float(v) if not isinstance(v, bool) else float(v) for v in fl]
            vals = [("nan" if math.isnan(v) else ("inf" if v == math.inf else ("-inf" if v == -math.inf else v)))
                    for v in vals]
        return ["T", shape, dtype, vals]
    if isinstance(x, (list, tuple)) and depth < 3:
        return ["S", [_summ(M, e, det, depth + 1) for e in list(x)[:64]], len(x)]
    if isinstance(x, (bool, int, float)):
        v = x
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            v = repr(v)
        return ["V", type(x).__name__, v if det else None]
    if x is None:
        return ["N"]
    return ["O", type(x).__name__]


def _worker(modname: str) -> None:
    """Reads a pickled list of (id, src, det) from stdin; per call writes `S id` then `R json` lines to
    the original stdout (ops' own prints go to /dev/null)."""
    import warnings

    warnings.filterwarnings("ignore")
    res = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w")
    import numpy as np

    if modname == "torch":
        import torch as M
        M.set_num_threads(1)
    else:
        import candle_bind as M
    import importlib

    nn = importlib.import_module(modname + ".nn")
    F = importlib.import_module(modname + ".nn.functional")
    mk = _make_mk(M)
    calls = pickle.load(sys.stdin.buffer)
    res.write("READY\n")
    for cid, src, det in calls:
        res.write(f"S {cid}\n")
        ns = {"torch": M, "nn": nn, "F": F, "mk": mk, "np": np, "math": math, "nan": float("nan"),
              "inf": float("inf")}
        r: dict
        try:
            if det:
                M.manual_seed(0)
            exec(compile(src, f"<call {cid}>", "exec"), ns)
            try:
                r = {"st": "ok", "out": _summ(M, ns.get("out"), det)}
            except Exception as e:  # summarising itself failed (e.g. tolist on a weird tensor)
                r = {"st": "ok", "out": ["O", "summary-failed"], "serr": f"{type(e).__name__}: {str(e)[:200]}"}
        except Exception as e:
            r = {"st": "exc", "type": type(e).__name__, "msg": str(e)[:300]}
        except BaseException as e:  # PanicException and friends
            r = {"st": "panic", "type": type(e).__name__, "msg": str(e)[:300]}
        res.write("R " + json.dumps(r) + "\n")
    res.write("DONE\n")
    res.flush()


# ----------------------------------------------------------------------------------------------
# The generator
# ----------------------------------------------------------------------------------------------

@dataclass
class Call:
    id: int
    op: str
    src: str
    det: bool = True  # values comparable (no randomness, no uninitialised memory, no random init)


HUGE = [10 ** 12, 2 ** 45, 2 ** 62, 2 ** 63 - 1, 10 ** 13]
HUGE_SHAPES = [(2 ** 32, 2 ** 32), (2 ** 40, 2 ** 30), (10 ** 6, 10 ** 6), (2 ** 21, 2 ** 21, 2 ** 21),
               (10 ** 12,), (2 ** 45,), (-1, 10 ** 12), (2 ** 31, 2 ** 31, 0)]
BAD_VALUES = ['"abc"', "None", "[1, 2]", "1.5", "-1", "()", "object()", "{}", "nan", "True"]
NONDET_WORDS = ("rand", "empty", "dropout", "multinomial", "bernoulli", "normal", "rrelu", "uniform",
                "Dropout", "RReLU", "new_empty", "seed")

UNARY = ["abs", "absolute", "acos", "acosh", "arccos", "arccosh", "asin", "asinh", "arcsin", "arcsinh", "atan",
         "atanh", "arctan", "arctanh", "ceil", "cos", "cosh", "deg2rad", "erf", "exp", "exp2", "expm1", "fix",
         "floor", "frac", "log", "log10", "log1p", "log2", "neg", "negative", "rad2deg", "reciprocal", "round",
         "rsqrt", "sgn", "sigmoid", "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
         "relu", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "logical_not", "bitwise_not", "nan_to_num",
         "logit", "clone", "detach", "t", "flatten", "numel", "is_floating_point", "is_nonzero", "trace",
         "count_nonzero", "nonzero", "argwhere", "fliplr", "flipud", "diag", "tril", "triu", "unbind",
         "is_complex", "ravel", "msort", "unique", "unique_consecutive", "median"]
BINARY = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
          "fmod", "pow", "atan2", "arctan2", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt",
          "ge", "greater", "greater_equal", "less", "less_equal", "not_equal", "logical_and", "logical_or",
          "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "hypot", "copysign", "heaviside",
          "logaddexp", "logaddexp2", "xlogy", "float_power", "rsub", "isclose", "equal", "allclose", "dist",
          "kron", "outer", "inner", "dot", "vdot", "cross", "masked_select", "expand_as", "type_as",
          "view_as", "reshape_as", "broadcast_tensors", "isin", "cdist", "lerp"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "==", "!=", "<", "<=", ">", ">="]
REDUCE = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "std", "var", "logsumexp",
          "all", "any", "median", "nansum", "nanmean", "count_nonzero", "aminmax", "std_mean", "var_mean",
          "norm", "cumsum", "cumprod", "logcumsumexp", "softmax", "log_softmax", "kthvalue", "quantile", "diff"]
ACTS = ["relu", "relu6", "gelu", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "hardtanh", "hardsigmoid",
        "hardswish", "hardshrink", "softshrink", "softplus", "softsign", "tanhshrink", "logsigmoid", "sigmoid",
        "tanh", "threshold", "glu", "rrelu"]


class Generator:
    """Seeded: call i of seed s is the same call whatever else is generated."""

    def __init__(self, seed: int = 0, huge_rate: float = 0.03, bad_rate: float = 0.06):
        self.seed = seed
        self.huge_rate = huge_rate
        self.bad_rate = bad_rate
        self._discover()
        self.families = [
            (self.g_creation, 8), (self.g_unary, 7), (self.g_binary, 8), (self.g_operator, 4),
            (self.g_reduce, 8), (self.g_shape, 12), (self.g_index, 8), (self.g_getitem, 6), (self.g_setitem, 3),
            (self.g_sort, 5), (self.g_matmul, 5), (self.g_conv, 5), (self.g_pool, 5), (self.g_interp, 3),
            (self.g_pad, 3), (self.g_embed, 3), (self.g_norm, 4), (self.g_act, 4), (self.g_loss, 3),
            (self.g_sdpa, 2), (self.g_fold, 2), (self.g_misc_f, 3), (self.g_layer, 7), (self.g_inplace, 4),
            (self.g_convert, 3), (self.g_generic, 6),
        ]
        self._fam_total = sum(w for _, w in self.families)

    # ---- discovery ---------------------------------------------------------------------------
    def _discover(self):
        import candle_bind as cb
        import candle_bind.nn.functional as cF
        try:
            import torch as th
            tnames, tmeth, tF, tnn = set(dir(th)), set(dir(th.Tensor)), set(dir(th.nn.functional)), set(dir(th.nn))
        except Exception:  # torch missing: the candle_bind surface alone
            tnames, tmeth, tF, tnn = set(dir(cb)), set(dir(cb.Tensor)), set(dir(cF)), set(dir(cb.nn))
        pub = lambda s: {n for n in s if not n.startswith("_")}
        self.fn = sorted(pub(dir(cb)) & pub(tnames))
        self.meth = sorted(pub(dir(cb.Tensor)) & pub(tmeth))
        self.Fn = sorted(pub(dir(cF)) & pub(tF))
        self.layers = sorted(n for n in pub(dir(cb.nn)) & pub(tnn) if n[:1].isupper())
        dts = []
        for d in ALL_DTYPES:
            if hasattr(cb, d):
                dts.append(d)
        self.dtypes = dts
        self.float_dtypes = [d for d in dts if d in FLOAT_DTYPES]
        skip = {"set_default_dtype", "set_default_device", "set_num_threads", "set_num_interop_threads",
                "compile", "from_dlpack", "from_torch", "to_torch", "set_printoptions", "use_deterministic_algorithms",
                "manual_seed", "seed", "set_grad_enabled", "set_warn_always", "set_float32_matmul_precision",
                "from_numpy", "no_grad", "enable_grad", "inference_mode", "return_types", "annotations", "device",
                "dtype", "layout", "memory_format", "Generator", "Size", "Tensor", "finfo", "iinfo", "as_strided",
                "cuda", "grouped_mm"}
        mskip = {"cuda", "data_ptr", "numpy", "share_memory_", "pin_memory", "resize_", "set_", "apply_", "map_",
                 "register_hook", "storage", "untyped_storage", "grad_fn", "as_strided", "backward", "type",
                 "to_dense"}
        self.fn_generic = [n for n in self.fn if n not in skip and callable(getattr(cb, n, None))
                           and not n[:1].isupper() and not n.endswith("_")]
        self.meth_generic = [n for n in self.meth if n not in mskip]
        self.F_generic = [n for n in self.Fn if n not in ("grouped_mm",)]

    # ---- small helpers -------------------------------------------------------------------------
    def calls(self, n: int, start: int = 0) -> List[Call]:
        return [self.call(i) for i in range(start, start + n)]

    def call(self, i: int) -> Call:
        r = random.Random(f"{self.seed}:{i}")
        self.r = r
        self._k = 0
        x = r.uniform(0, self._fam_total)
        for fam, w in self.families:
            x -= w
            if x <= 0:
                break
        op, src = fam()
        det = not any(w in src for w in NONDET_WORDS) and not op.startswith("nn.")
        return Call(i, op, src, det)

    def p(self, prob):
        return self.r.random() < prob

    def ch(self, seq):
        return self.r.choice(seq)

    def seed_(self):
        self._k += 1
        return self.r.randrange(10 ** 6)

    def dtype(self, floats=False):
        if floats or self.p(0.55):
            return self.ch(self.float_dtypes) if not self.p(0.6) else "float32"
        return self.ch(self.dtypes)

    def shape(self, rank=None, lo=0, hi=4, maxd=5):
        if rank is None:
            rank = self.r.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
            rank = max(lo, min(hi, rank))
        dims = []
        for _ in range(rank):
            dims.append(0 if self.p(0.06) else self.r.randint(1, maxd))
        return tuple(dims)

    def dim(self, rank, bad=None):
        bad = self.bad_rate if bad is None else bad
        if self.p(bad):
            return self.ch([rank, -rank - 1, 100, -100, '"0"', "None", "1.0", "(0, 0)"])
        n = max(rank, 1)
        return self.r.randint(-n, n - 1)

    def tensor(self, shape=None, dtype=None, kind=None, layout=True):
        """Source of a tensor expression with the given shape, possibly as a non-contiguous view."""
        if shape is None:
            shape = self.shape()
        shape = tuple(shape)
        if dtype is None:
            dtype = self.dtype()
        if kind is None:
            kind = "special" if self.p(0.08) else "n"
        kv = "" if kind == "n" else f", {kind!r}"
        s = self.seed_()
        rank = len(shape)
        lay = self.r.random() if layout else 1.0
        if rank >= 2 and lay < 0.12:
            base = list(shape)
            base[-1], base[-2] = base[-2], base[-1]
            return f"mk({tuple(base)}, {dtype!r}, {s}{kv}).transpose(-1, -2)"
        if rank >= 1 and lay < 0.22:
            base = list(shape)
            base[0] = base[0] * 2
            return f"mk({tuple(base)}, {dtype!r}, {s}{kv})[::2]"
        if rank >= 1 and lay < 0.29:
            base = tuple(1 if self.p(0.5) else d for d in shape)
            return f"mk({base}, {dtype!r}, {s}{kv}).expand({shape})"
        if rank >= 3 and lay < 0.34:
            perm = list(range(rank))
            self.r.shuffle(perm)
            base = tuple(shape[p] for p in perm)
            inv = [perm.index(j) for j in range(rank)]
            return f"mk({base}, {dtype!r}, {s}{kv}).permute({tuple(inv)})"
        return f"mk({shape}, {dtype!r}, {s}{kv})"

    def idx_tensor(self, shape, n, dtype="int64", allow_neg=False, oob=None):
        oob = self.bad_rate if oob is None else oob
        lo, hi = (-n if allow_neg else 0), max(n, 1)
        if self.p(oob):
            lo, hi = self.ch([(-n - 3, -n), (n, n + 3), (-10 ** 9, 10 ** 9)])
        if n == 0 and not self.p(oob):
            shape = tuple(0 if i == 0 else d for i, d in enumerate(shape)) if shape else (0,)
        return f"mk({tuple(shape)}, {dtype!r}, {self.seed_()}, 'idx', {lo}, {hi})"

    def size_args(self, allow_huge=True):
        """A size tuple for creation ops (sometimes huge/negative/wrong-typed)."""
        x = self.r.random()
        if allow_huge and x < self.huge_rate * 3:
            return self.ch(HUGE_SHAPES)
        if x < 0.12:
            sh = list(self.shape(hi=3))
            if sh:
                sh[self.r.randrange(len(sh))] = self.ch([-1, -2, -(2 ** 63)])
            else:
                sh = [-1]
            return tuple(sh)
        return self.shape()

    def maybe_bad(self, good: str) -> str:
        return self.ch(BAD_VALUES) if self.p(self.bad_rate) else good

    def scalar(self):
        return self.ch(["2", "-1", "0", "0.5", "-2.5", "3", "True", "nan", "inf", "-inf", "1e30", "7"])

    def fn_or_meth(self, name, x, args):
        """torch.name(x, args) or x.name(args), whichever exists on both."""
        a = ", ".join(args)
        can_f = name in self.fn
        can_m = name in self.meth
        if can_m and (not can_f or self.p(0.5)):
            return f"Tensor.{name}", f"out = ({x}).{name}({a})"
        return f"torch.{name}", f"out = torch.{name}({x}{', ' if a else ''}{a})"

    # ---- families ------------------------------------------------------------------------------
    def g_creation(self):
        name = self.ch(["zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "rand", "randn",
                        "randint", "randperm", "tensor", "zeros_like", "ones_like", "full_like", "empty_like",
                        "rand_like", "randn_like", "tril_indices", "triu_indices", "new_zeros", "new_ones",
                        "new_full", "new_empty", "new_tensor", "as_tensor"])
        dt = f", dtype=torch.{self.dtype()}" if self.p(0.5) else ""
        sz = self.size_args()
        if name in ("zeros", "ones", "empty", "rand", "randn"):
            if name in ("rand", "randn") and dt and self.p(0.8):
                dt = f", dtype=torch.{self.dtype(floats=True)}"
            if self.p(0.5) and len(sz) > 0:
                return f"torch.{name}", f"out = torch.{name}({', '.join(map(str, sz))}{dt})"
            return f"torch.{name}", f"out = torch.{name}({sz}{dt})"
        if name == "full":
            return "torch.full", f"out = torch.full({sz}, {self.scalar()}{dt})"
        if name == "arange":
            x = self.r.random()
            if x < self.huge_rate:
                args = self.ch(["0, 10**13", "0, 2**62, 1", "-(2**62), 2**62, 2", "0, 1e15", "0, 10**12, 0.5"])
            elif x < 0.15:
                args = self.ch(["0, 5, 0", "5, 0, 1", "0, 5, -1", "0, inf", "nan, 3", "0, 3, nan", "0, 1, 1e-30",
                                '"a"', "None", "5, 0, -1.5", "0.5", "-3", "2**63", "0, -5"])
            else:
                a = self.r.randint(-5, 5)
                b = a + self.r.randint(0, 12)
                st = self.ch(["", ", 1", ", 2", ", 0.5", ", 3", ", 0.3"])
                args = self.ch([f"{b}", f"{a}, {b}{st}", f"{a}.5, {b}{st}"])
            return "torch.arange", f"out = torch.arange({args}{dt})"
        if name in ("linspace", "logspace"):
            steps = self.ch(["5", "1", "0", "-1", "10**12", "2**45", "3.5", "None", "100"])
            if steps in ("10**12", "2**45") and not self.p(self.huge_rate * 10):
                steps = "7"
            return f"torch.{name}", f"out = torch.{name}({self.scalar()}, {self.scalar()}, {steps}{dt})"
        if name == "eye":
            n = self.ch(["3", "0", "-1", "1", "4, 2", "2, 5", "10**12", "2**33, 2**33", "3, -2", "2.5", "None"])
            if "**" in n and not self.p(self.huge_rate * 10):
                n = "2"
            return "torch.eye", f"out = torch.eye({n}{dt})"
        if name == "randint":
            lo, hi = self.ch([(0, 10), (-5, 5), (3, 3), (5, 0), (0, 2 ** 62), (-(2 ** 63), 2 ** 63 - 1), (0, 1)])
            if self.p(0.5):
                return "torch.randint", f"out = torch.randint({hi}, {sz}{dt})"
            return "torch.randint", f"out = torch.randint({lo}, {hi}, {sz}{dt})"
        if name == "randperm":
            n = self.ch(["5", "0", "-1", "1", "10**12", "100", "2**62"])
            if "**" in n and not self.p(self.huge_rate * 10):
                n = "3"
            return "torch.randperm", f"out = torch.randperm({n}{dt})"
        if name in ("tensor", "as_tensor", "new_tensor"):
            data = self.ch(["[]", "[[]]", "[1, 2, 3]", "[[1, 2], [3, 4]]", "[[1, 2], [3]]", "[1.5, nan, inf]",
                            "[True, False]", "[1, 2.5, True]", "3", "2.5", "True", "[[[1]], [[2]]]", '"abc"',
                            "[None]", "[[1, 2], 3]", "[2**63]", "[-(2**63)]", "[2**64]", "[1e300, -1e300]",
                            "((1, 2), (3, 4))", "[[], []]", "[[[]]]", "[mk((2,), 'float32', 1)]",
                            "[mk((), 'float32', 1), mk((), 'float32', 2)]", "mk((2, 3), 'int64', 3)",
                            "np.arange(6).reshape(2, 3)", "np.zeros((2, 0))", "[300, -1]"])
            if name == "new_tensor":
                return "Tensor.new_tensor", f"out = {self.tensor()}.new_tensor({data}{dt})"
            return f"torch.{name}", f"out = torch.{name}({data}{dt})"
        if name.endswith("_like"):
            x = self.tensor()
            extra = f", {self.scalar()}" if name == "full_like" else ""
            if name == "rand_like" or name == "randn_like":
                dt = f", dtype=torch.{self.dtype(floats=True)}" if self.p(0.8) else dt
            return f"torch.{name}", f"out = torch.{name}({x}{extra}{dt})"
        if name in ("tril_indices", "triu_indices"):
            a = self.ch(["3, 3", "4, 2", "2, 5, 1", "3, 3, -1", "0, 0", "-1, 3", "3, 3, 10", "10**6, 10**6",
                         "3, 3, -10"])
            if "**" in a and not self.p(self.huge_rate * 10):
                a = "4, 4"
            return f"torch.{name}", f"out = torch.{name}({a})"
        # new_*
        x = self.tensor()
        extra = f", {self.scalar()}" if name == "new_full" else ""
        return f"Tensor.{name}", f"out = {x}.{name}({sz}{extra}{dt})"

    def g_unary(self):
        names = [n for n in UNARY if n in self.fn or n in self.meth]
        name = self.ch(names)
        sh = self.shape()
        if name in ("t", "trace", "diag", "tril", "triu", "fliplr", "flipud") and self.p(0.7):
            sh = self.shape(rank=self.ch([1, 2, 2]))
        x = self.tensor(sh, kind="special" if self.p(0.2) else ("pos" if self.p(0.3) else "n"))
        args = []
        if name in ("tril", "triu") and self.p(0.6):
            args = [str(self.r.randint(-3, 3))]
        if name == "diag" and self.p(0.5):
            args = [str(self.r.randint(-3, 3))]
        if name == "nan_to_num" and self.p(0.6):
            args = ["0.0", "1.0", "-1.0"] if self.p(0.5) else ["nan=2.0"]
        if name == "round" and self.p(0.4):
            args = [f"decimals={self.r.randint(-2, 3)}"]
        if name == "logit" and self.p(0.4):
            args = [self.ch(["0.1", "1e-6", "-0.1", "0.6"])]
        if name in ("flatten",) and self.p(0.6):
            args = [str(self.dim(len(sh))), str(self.dim(len(sh)))]
        if name in ("unbind", "median") and self.p(0.6):
            args = [str(self.dim(len(sh)))]
        if name in ("unique", "unique_consecutive") and self.p(0.6):
            args = self.r.sample(["sorted=True", "return_inverse=True", "return_counts=True",
                                  f"dim={self.dim(len(sh))}"], self.r.randint(1, 3))
            if name == "unique_consecutive":
                args = [a for a in args if not a.startswith("sorted")]
        return self.fn_or_meth(name, x, args)

    def g_binary(self):
        names = [n for n in BINARY if n in self.fn or n in self.meth]
        name = self.ch(names)
        sh = self.shape()
        sh2 = self.bcast_shape(sh)
        dt1 = self.dtype()
        dt2 = dt1 if self.p(0.6) else self.dtype()
        x = self.tensor(sh, dt1)
        y = self.tensor(sh2, dt2) if not self.p(0.2) else self.scalar()
        if name in ("dot", "vdot", "inner", "outer", "kron", "cross", "cdist", "dist"):
            if name in ("dot", "vdot", "outer"):
                n = self.r.randint(0, 4)
                x = self.tensor((n,), dt1)
                y = self.tensor((n if self.p(0.85) else n + 1,), dt2 if self.p(0.3) else dt1)
            elif name == "cross":
                s = list(self.shape(rank=self.r.randint(1, 3)))
                s[-1] = 3 if self.p(0.85) else 2
                x, y = self.tensor(tuple(s), dt1), self.tensor(tuple(s), dt1)
                return self.fn_or_meth(name, x, [y] + ([f"dim={self.dim(len(s))}"] if self.p(0.5) else []))
            elif name == "cdist":
                b, m, k = self.r.randint(1, 3), self.r.randint(0, 4), self.r.randint(1, 4)
                x = self.tensor((b, m, k), self.dtype(floats=True))
                y = self.tensor((b, self.r.randint(0, 4), k if self.p(0.85) else k + 1), "float32")
                return "torch.cdist", f"out = torch.cdist({x}, {y}, p={self.ch(['2.0', '1.0', '0.0', '-1.0', 'inf'])})"
        args = [y]
        if name in ("add", "sub", "subtract", "rsub") and self.p(0.3):
            args.append(f"alpha={self.ch(['2', '0.5', '-1', 'True'])}")
        if name in ("div", "divide") and self.p(0.4):
            args.append(f"rounding_mode={self.ch(['None', repr('floor'), repr('trunc'), repr('bogus')])}")
        if name == "isclose" and self.p(0.4):
            args.append(f"equal_nan={self.ch(['True', 'False'])}")
        if name == "lerp":
            args.append(self.ch(["0.5", self.tensor(sh, dt1)]))
        if name in ("expand_as", "view_as", "reshape_as", "type_as", "masked_select"):
            if name == "masked_select":
                args = [self.tensor(sh2, "bool")]
        if name == "broadcast_tensors":
            return "torch.broadcast_tensors", f"out = torch.broadcast_tensors({x}, {y})"
        if name == "dist" and self.p(0.5):
            args.append(self.ch(["1", "0", "inf", "-1", "3"]))
        return self.fn_or_meth(name, x, args)

    def bcast_shape(self, sh):
        x = self.r.random()
        if x < 0.45:
            return sh
        if x < 0.75:  # broadcastable
            s = [1 if self.p(0.4) else d for d in sh]
            drop = self.r.randint(0, len(s))
            s = s[drop:]
            if self.p(0.2):
                s = [self.r.randint(1, 3)] + list(sh)
            return tuple(s)
        if x < 0.85:  # incompatible
            if not sh:
                return (2,)
            s = list(sh)
            s[self.r.randrange(len(s))] += self.r.randint(1, 2)
            return tuple(s)
        return self.shape()

    def g_operator(self):
        o = self.ch(OPERATORS)
        sh = self.shape()
        x = self.tensor(sh)
        if o == "@":
            a, b = self.mm_shapes()
            x, y = self.tensor(a), self.tensor(b)
        else:
            y = self.tensor(self.bcast_shape(sh)) if self.p(0.7) else self.scalar()
        if self.p(0.2) and o not in ("@",):
            return f"op{o}", f"out = {y} {o} {x}"
        if self.p(0.15) and o in ("+", "-", "*", "/", "//", "%", "&", "|", "^"):
            return f"op{o}=", f"out = {x}\nout {o}= {y}"
        if self.p(0.1):
            u = self.ch(["-", "~", "abs", "+"])
            return f"unary{u}", f"out = {u}({x})" if u != "abs" else f"out = abs({x})"
        if self.p(0.05):
            c = self.ch(["bool", "int", "float", "len", "list", "iter"])
            return f"py.{c}", f"out = {c}({x})" if c != "iter" else f"out = list(iter({x}))"
        return f"op{o}", f"out = {x} {o} {y}"

    def g_reduce(self):
        names = [n for n in REDUCE if n in self.fn or n in self.meth]
        name = self.ch(names)
        sh = self.shape()
        r = len(sh)
        x = self.tensor(sh)
        args = []
        c = self.r.random()
        if c < 0.25 and name not in ("softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "kthvalue"):
            pass
        elif c < 0.75:
            args.append(str(self.dim(r)))
        else:
            ds = self.r.sample(range(-max(r, 1), max(r, 1)), min(max(r, 1), self.r.randint(1, 2)))
            args.append(f"dim={tuple(ds)}")
        if name == "kthvalue":
            args.insert(0, str(self.r.randint(-1, 4)))
        if name == "quantile":
            args.insert(0, self.ch(["0.5", "0.0", "1.0", "1.5", "-0.1", "mk((3,), 'float32', 5, 'prob')"]))
            if self.p(0.4):
                args.append(f"interpolation={self.ch(['linear', 'lower', 'higher', 'nearest', 'midpoint', 'bogus'])!r}")
        if name == "norm" and self.p(0.5):
            args.insert(0, f"p={self.ch(['2', '1', '0', 'inf', '-inf', '3.5', repr('fro'), repr('nuc'), repr('bogus')])}")
        if name in ("std", "var", "std_mean", "var_mean") and self.p(0.4):
            args.append(self.ch(["unbiased=False", "correction=0", "correction=2", "correction=-1"]))
        if name == "diff" and self.p(0.4):
            args = [f"n={self.r.randint(-1, 3)}"] + ([f"dim={self.dim(r)}"] if self.p(0.5) else [])
        if args and self.p(0.3) and name not in ("softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp"):
            args.append("keepdim=True")
        if name in ("sum", "mean", "prod", "cumsum", "cumprod", "softmax", "log_softmax", "nansum") and self.p(0.2):
            args.append(f"dtype=torch.{self.dtype()}")
        return self.fn_or_meth(name, x, args)

    def g_shape(self):
        name = self.ch(["cat", "stack", "reshape", "view", "permute", "transpose", "expand", "repeat",
                        "repeat_interleave", "tile", "flip", "roll", "narrow", "split", "chunk", "unfold",
                        "squeeze", "unsqueeze", "flatten", "unflatten", "movedim", "swapaxes", "select",
                        "tensor_split", "diagonal", "rot90", "broadcast_to", "contiguous", "hstack", "vstack",
                        "dstack", "column_stack", "concat", "concatenate", "diag_embed", "block_diag", "meshgrid",
                        "cartesian_prod", "t", "mT", "T", "size", "stride"])
        sh = self.shape()
        r = len(sh)
        x = self.tensor(sh)
        numel = 1
        for d in sh:
            numel *= d
        if name in ("cat", "stack", "hstack", "vstack", "dstack", "column_stack", "concat", "concatenate"):
            n = self.ch([1, 2, 2, 3, 0])
            ts = []
            dt = self.dtype()
            for _ in range(n):
                s = list(sh)
                if name in ("cat", "concat", "concatenate") and s and self.p(0.5):
                    k = self.r.randrange(len(s))
                    s[k] = self.r.randint(0, 3)
                if self.p(0.1):
                    s = list(self.shape())
                ts.append(self.tensor(tuple(s), dt if self.p(0.8) else self.dtype()))
            seq = "[" + ", ".join(ts) + "]" if self.p(0.8) else "(" + ", ".join(ts) + ("," if n == 1 else "") + ")"
            if self.p(0.04):
                seq = self.ch(["[1, 2]", "None", f"[{x}, None]", f"{x}"])
            args = ""
            if name in ("cat", "stack", "concat", "concatenate") and self.p(0.7):
                args = f", dim={self.dim(r + (1 if name == 'stack' else 0))}"
            return f"torch.{name}", f"out = torch.{name}({seq}{args})"
        if name in ("reshape", "view"):
            shp = self.factor_shape(numel)
            if self.p(0.1):
                shp = self.ch([(-1, -1), (numel + 1,), (-2,), (0, -1), ("'a'",), (2 ** 63 - 1,), (-1, 0)])
            a = ", ".join(map(str, shp))
            if self.p(0.5):
                a = f"({a}{',' if len(shp) == 1 else ''})"
            if name == "view" and self.p(0.1):
                a = f"torch.{self.dtype()}"
            return self.fn_or_meth(name, x, [a]) if name == "reshape" else ("Tensor.view", f"out = {x}.view({a})")
        if name == "permute":
            p = list(range(r))
            self.r.shuffle(p)
            if self.p(0.1):
                p = self.ch([p + [0], p[:-1], [0] * r, [-1] + p[1:], [r + 1] + p[1:]]) if r else [0]
            return self.fn_or_meth("permute", x, [f"{tuple(p)}" if self.p(0.5) or not p else ", ".join(map(str, p))])
        if name in ("transpose", "swapaxes", "movedim"):
            return self.fn_or_meth(name, x, [str(self.dim(r)), str(self.dim(r))])
        if name in ("expand", "broadcast_to"):
            s = [d if d != 1 or self.p(0.5) else self.r.randint(0, 4) for d in sh]
            if self.p(0.3):
                s = [self.r.randint(1, 3)] + s
            if self.p(0.2) and s:
                s[self.r.randrange(len(s))] = -1
            if self.p(0.1):
                s = list(self.shape())
            if self.p(self.huge_rate * 3):
                s = [10 ** 12] + [d if d else 1 for d in sh] if self.p(0.5) else [2 ** 62, 2 ** 62] + list(sh)
                if name == "expand" and sh:  # a pure view: only shape is compared
                    pass
            a = ", ".join(map(str, s))
            if name == "broadcast_to":
                return "torch.broadcast_to", f"out = torch.broadcast_to({x}, ({a}{',' if len(s) == 1 else ''}))"
            return "Tensor.expand", f"out = {x}.expand({a})"
        if name in ("repeat", "tile"):
            reps = [self.r.randint(0, 3) for _ in range(max(r, 1) + self.r.randint(0, 1) - (1 if self.p(0.1) else 0))]
            if self.p(0.08) and reps:
                reps[0] = -1
            if self.p(self.huge_rate * 3):
                reps = [10 ** 12] + reps if numel else [10 ** 12] + reps
                if numel == 0:
                    reps = [2 ** 40, 2 ** 40] + reps
            a = ", ".join(map(str, reps))
            if name == "tile":
                return "torch.tile", f"out = torch.tile({x}, ({a}{',' if len(reps) == 1 else ''}))"
            return "Tensor.repeat", f"out = {x}.repeat({a})"
        if name == "repeat_interleave":
            d = self.dim(r) if self.p(0.7) else None
            size = sh[d] if (d is not None and isinstance(d, int) and -r <= d < r) else numel
            c = self.r.random()
            if c < 0.5:
                rep = str(self.r.randint(0, 3) if not self.p(0.08) else -1)
            elif c < 0.85:
                rep = self.idx_tensor((size if not self.p(0.1) else size + 1,), 4)
            else:
                rep = self.ch(["10**12", "mk((1,), 'int64', 1, 'idx', 10**12, 10**12+1)"])
                if not self.p(self.huge_rate * 10) or numel == 0:
                    rep = "2"
            args = [rep] + ([f"dim={d}"] if d is not None else [])
            if self.p(0.1):
                args.append(f"output_size={self.r.randint(0, 10)}")
            return self.fn_or_meth("repeat_interleave", x, args)
        if name == "flip":
            ds = [self.dim(r) for _ in range(self.r.randint(0, 2))]
            return self.fn_or_meth("flip", x, [f"{tuple(ds)}" if self.p(0.7) else ", ".join(map(str, ds))])
        if name == "roll":
            if self.p(0.3):
                return self.fn_or_meth("roll", x, [str(self.r.randint(-7, 7))])
            k = self.r.randint(1, 2)
            return self.fn_or_meth("roll", x, [str(tuple(self.r.randint(-7, 7) for _ in range(k))),
                                               str(tuple(self.dim(r) for _ in range(k if self.p(0.9) else k + 1)))])
        if name == "narrow":
            d = self.dim(r)
            n = sh[d] if isinstance(d, int) and -r <= d < r else 3
            st = self.r.randint(-n - 1, n + 1)
            ln = self.r.randint(-1, n + 1)
            return self.fn_or_meth("narrow", x, [str(d), str(st), str(ln)])
        if name in ("split", "chunk", "tensor_split"):
            d = self.dim(r)
            n = sh[d] if isinstance(d, int) and -r <= d < r else 3
            if name == "split" and self.p(0.4):
                parts = [self.r.randint(0, n) for _ in range(self.r.randint(1, 3))]
                a = str(parts)
            elif name == "tensor_split" and self.p(0.4):
                a = str([self.r.randint(-1, n + 1) for _ in range(self.r.randint(1, 3))])
            else:
                a = str(self.r.randint(-1, 4))
            return self.fn_or_meth(name, x, [a, f"dim={d}" if self.p(0.5) else str(d)])
        if name == "unfold":
            d = self.dim(r)
            return "Tensor.unfold", f"out = {x}.unfold({d}, {self.r.randint(-1, 4)}, {self.r.randint(-1, 3)})"
        if name in ("squeeze", "unsqueeze"):
            d = self.dim(r + (1 if name == "unsqueeze" else 0))
            if name == "squeeze" and self.p(0.3):
                return self.fn_or_meth(name, x, [] if self.p(0.5) else [str(tuple({self.dim(r), self.dim(r)}))])
            return self.fn_or_meth(name, x, [str(d)])
        if name == "flatten":
            return self.fn_or_meth(name, x, [str(self.dim(r)), str(self.dim(r))])
        if name == "unflatten":
            d = self.dim(r)
            n = sh[d] if isinstance(d, int) and -r <= d < r else 3
            f = self.factor_shape(n)
            return self.fn_or_meth(name, x, [str(d), str(tuple(f)) if len(f) != 1 else f"({f[0]},)"])
        if name == "select":
            d = self.dim(r)
            n = sh[d] if isinstance(d, int) and -r <= d < r else 3
            return self.fn_or_meth(name, x, [str(d), str(self.r.randint(-n - 1, n))])
        if name == "diagonal":
            return self.fn_or_meth(name, x, [str(self.r.randint(-3, 3)), str(self.dim(r)), str(self.dim(r))])
        if name == "rot90":
            return self.fn_or_meth(name, x, [str(self.r.randint(-5, 5)), str([self.dim(r), self.dim(r)])])
        if name == "contiguous":
            return "Tensor.contiguous", f"out = {x}.contiguous()"
        if name == "diag_embed":
            return self.fn_or_meth(name, x, [str(self.r.randint(-2, 2))] if self.p(0.5) else [])
        if name in ("block_diag", "meshgrid", "cartesian_prod"):
            k = self.r.randint(0, 3)
            ts = [self.tensor((self.r.randint(0, 3),) if name != "block_diag" else self.shape(hi=2)) for _ in range(k)]
            extra = ""
            if name == "meshgrid" and self.p(0.6):
                extra = f", indexing={self.ch(['ij', 'xy', 'bogus'])!r}"
            return f"torch.{name}", f"out = torch.{name}({', '.join(ts)}{extra})"
        if name in ("mT", "T"):
            return f"Tensor.{name}", f"out = {x}.{name}"
        if name in ("size", "stride"):
            return f"Tensor.{name}", f"out = {x}.{name}({self.dim(r) if self.p(0.5) else ''})"
        return self.fn_or_meth(name, x, [])

    def factor_shape(self, n):
        if n == 0:
            return self.ch([(0,), (0, 3), (2, 0, -1), (-1,), (3, -1, 0)])
        out = []
        m = n
        while m > 1 and len(out) < 3:
            ds = [d for d in range(1, m + 1) if m % d == 0]
            d = self.ch(ds)
            out.append(d)
            m //= d
        if m > 1:
            out.append(m)
        if self.p(0.3) and out:
            out[self.r.randrange(len(out))] = -1
        if self.p(0.2):
            out.append(1)
        return tuple(out) if out else ((1,) if self.p(0.5) else ())

    def g_index(self):
        name = self.ch(["index_select", "gather", "scatter", "scatter_add", "take", "take_along_dim", "masked_fill",
                        "where", "index_add", "index_copy", "index_fill", "index_put", "masked_select", "nonzero",
                        "where1", "scatter_reduce", "masked_scatter"])
        sh = self.shape(lo=1)
        r = len(sh)
        x = self.tensor(sh)
        d = self.dim(r, bad=0.03)
        dv = d if isinstance(d, int) and -r <= d < r else 0
        n = sh[dv] if sh else 1
        if name == "index_select":
            return self.fn_or_meth(name, x, [str(d), self.idx_tensor((self.r.randint(0, 5),), n,
                                                                     self.ch(["int64", "int64", "int32"]))])
        if name in ("gather", "take_along_dim"):
            ish = tuple(self.r.randint(0, s) if self.p(0.8) else s + 1 for s in sh)
            idx = self.idx_tensor(ish, n, self.ch(["int64", "int64", "int32"]))
            if name == "take_along_dim":
                return "torch.take_along_dim", f"out = torch.take_along_dim({x}, {idx}, dim={d})"
            return self.fn_or_meth(name, x, [str(d), idx])
        if name in ("scatter", "scatter_add", "scatter_reduce"):
            ish = tuple(self.r.randint(0, s) for s in sh)
            idx = self.idx_tensor(ish, n)
            src = self.tensor(ish if self.p(0.7) else sh, self.dtype()) if self.p(0.8) or name != "scatter" else self.scalar()
            args = [str(d), idx, src]
            if name == "scatter" and self.p(0.2):
                args.append(f"reduce={self.ch(['add', 'multiply', 'bogus'])!r}")
            if name == "scatter_reduce":
                args.append(repr(self.ch(["sum", "prod", "mean", "amax", "amin", "bogus"])))
                if "scatter_reduce" not in self.meth:
                    name = "scatter_add"
                    args = args[:3]
            return self.fn_or_meth(name, x, args)
        if name == "take":
            return self.fn_or_meth(name, x, [self.idx_tensor(self.shape(hi=2), max(1, self.numel(sh)), allow_neg=True)])
        if name in ("masked_fill", "masked_scatter"):
            m = self.tensor(self.bcast_shape(sh), "bool" if self.p(0.9) else self.dtype())
            v = self.scalar() if self.p(0.7) else self.tensor((), self.dtype())
            if name == "masked_scatter":
                if "masked_scatter" not in self.meth:
                    name = "masked_fill"
                else:
                    v = self.tensor(sh, self.dtype())
            return self.fn_or_meth(name, x, [m, v])
        if name == "where":
            c = self.tensor(self.bcast_shape(sh), "bool" if self.p(0.85) else self.dtype())
            y = self.tensor(self.bcast_shape(sh)) if self.p(0.7) else self.scalar()
            xx = x if self.p(0.8) else self.scalar()
            return "torch.where", f"out = torch.where({c}, {xx}, {y})"
        if name == "where1":
            return "torch.where", f"out = torch.where({x})"
        if name in ("index_add", "index_copy", "index_fill"):
            k = self.r.randint(0, 4)
            idx = self.idx_tensor((k,), n)
            if name == "index_fill":
                return self.fn_or_meth(name, x, [str(d), idx, self.scalar()])
            ssh = list(sh)
            ssh[dv] = k if self.p(0.85) else k + 1
            src = self.tensor(tuple(ssh), self.dtype() if self.p(0.3) else "float32")
            args = [str(d), idx, src]
            if name == "index_add" and self.p(0.3):
                args.append("alpha=2")
            return self.fn_or_meth(name, x, args)
        if name == "index_put":
            k = self.r.randint(0, 3)
            idxs = ", ".join(self.idx_tensor((k,), s, allow_neg=True) for s in sh[: self.r.randint(1, r)])
            v = self.tensor((k,) if self.p(0.5) else (), "float32" if self.p(0.7) else self.dtype())
            acc = f", accumulate={self.ch(['True', 'False'])}" if self.p(0.4) else ""
            return self.fn_or_meth(name, x, [f"({idxs},)", v + acc])
        if name == "masked_select":
            return self.fn_or_meth(name, x, [self.tensor(self.bcast_shape(sh), "bool")])
        return self.fn_or_meth("nonzero", x, ["as_tuple=True"] if self.p(0.3) else [])

    def numel(self, sh):
        n = 1
        for d in sh:
            n *= d
        return n

    def index_expr(self, sh):
        r = len(sh)
        items = []
        k = self.r.randint(0, r + 1)
        pos = 0
        for _ in range(k):
            n = sh[pos] if pos < r else 1
            c = self.r.random()
            if c < 0.3:
                items.append(str(self.r.randint(-n - 1, n)))
                pos += 1
            elif c < 0.6:
                a = self.ch(["", str(self.r.randint(-n - 2, n + 2))])
                b = self.ch(["", str(self.r.randint(-n - 2, n + 2))])
                s = self.ch(["", "", ":2", ":3", ":-1", ":0", ":1"])
                items.append(f"{a}:{b}{s}")
                pos += 1
            elif c < 0.68:
                items.append("None")
            elif c < 0.74:
                items.append("...")
                pos = r - (k - len(items))
            elif c < 0.84:
                items.append(self.idx_tensor((self.r.randint(0, 3),), n, allow_neg=True))
                pos += 1
            elif c < 0.9:
                items.append(str([self.r.randint(-n, max(n - 1, 0)) for _ in range(self.r.randint(0, 3))]))
                pos += 1
            elif c < 0.96:
                items.append(self.tensor(sh[pos:pos + 1] if self.p(0.8) else (n + 1,), "bool", layout=False))
                pos += 1
            else:
                items.append(self.ch(['"a"', "1.5", "mk((2,), 'float32', 1)", "True", "False"]))
                pos += 1
        if len(items) == 1 and self.p(0.5):
            return items[0]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")" if items else "()"

    def g_getitem(self):
        sh = self.shape()
        x = self.tensor(sh)
        if self.p(0.1):
            return "Tensor.__getitem__", f"out = {x}[{self.tensor(sh, 'bool', layout=False)}]"
        return "Tensor.__getitem__", f"out = {x}[{self.index_expr(sh)}]"

    def g_setitem(self):
        sh = self.shape()
        x = self.tensor(sh, layout=self.p(0.3))
        v = self.ch([self.scalar(), self.tensor((), self.dtype()), self.tensor(sh[-1:] if sh else (), self.dtype()),
                     self.tensor(self.shape(hi=2)), "[1.0, 2.0]", "None"])
        return "Tensor.__setitem__", f"out = {x}\nout[{self.index_expr(sh)}] = {v}"

    def g_sort(self):
        name = self.ch(["topk", "sort", "argsort", "multinomial", "cumsum", "kthvalue", "searchsorted", "bucketize",
                        "bincount", "histc", "msort", "unique", "argmax", "cummax"])
        sh = self.shape()
        r = len(sh)
        x = self.tensor(sh)
        if name == "topk":
            d = self.dim(r)
            n = sh[d] if isinstance(d, int) and -r <= d < r else 1
            k = self.r.randint(-1, n + 1) if not self.p(0.02) else 10 ** 12
            args = [str(k)]
            if self.p(0.7):
                args.append(f"dim={d}")
            if self.p(0.3):
                args.append(f"largest={self.ch(['True', 'False'])}")
            if self.p(0.2):
                args.append("sorted=False")
            return self.fn_or_meth(name, x, args)
        if name in ("sort", "argsort"):
            args = [f"dim={self.dim(r)}"] if self.p(0.7) else []
            if self.p(0.4):
                args.append(f"descending={self.ch(['True', 'False'])}")
            if self.p(0.2):
                args.append("stable=True")
            return self.fn_or_meth(name, x, args)
        if name == "multinomial":
            psh = self.shape(rank=self.ch([1, 2, 2, 0, 3]))
            pr = self.tensor(psh, self.dtype(floats=True) if self.p(0.9) else self.dtype(),
                             kind=self.ch(["prob", "prob", "prob", "n", "special"]))
            if self.p(0.1):
                pr = f"torch.zeros({psh})"
            n = psh[-1] if psh else 1
            ns = self.r.randint(-1, n + 2) if not self.p(0.02) else 10 ** 12
            return self.fn_or_meth(name, pr, [str(ns)] + ([f"replacement={self.ch(['True', 'False'])}"]
                                                           if self.p(0.6) else []))
        if name == "searchsorted":
            sp = f"torch.sort({self.tensor(self.shape(rank=self.ch([1, 1, 2])), 'float32')}, dim=-1)[0]"
            v = self.tensor(self.shape(hi=2), "float32") if self.p(0.8) else self.scalar()
            args = [sp, v] + ([f"right={self.ch(['True', 'False'])}"] if self.p(0.4) else [])
            return "torch.searchsorted", f"out = torch.searchsorted({', '.join(args)})"
        if name == "bucketize":
            b = f"torch.sort({self.tensor((self.r.randint(0, 5),), 'float32', layout=False)})[0]"
            return "torch.bucketize", f"out = torch.bucketize({x}, {b}{', right=True' if self.p(0.4) else ''})"
        if name == "bincount":
            xi = self.idx_tensor(self.shape(rank=self.ch([1, 1, 1, 0, 2])), 6, allow_neg=self.p(0.1))
            args = []
            if self.p(0.3):
                args.append(f"minlength={self.ch(['0', '3', '10', '-1', '10**12'])}")
                if args[-1].endswith("10**12") and not self.p(self.huge_rate * 10):
                    args[-1] = "minlength=4"
            if self.p(0.3):
                args.insert(0, f"weights={self.tensor((2,), 'float32')}")
            return "torch.bincount", f"out = torch.bincount({xi}{''.join(', ' + a for a in args)})"
        if name == "histc":
            return self.fn_or_meth(name, x, [f"bins={self.r.randint(-1, 8)}", f"min={self.r.randint(-2, 2)}",
                                             f"max={self.r.randint(-2, 2)}"])
        if name == "cummax" and "cummax" not in self.fn:
            name = "cumsum"
        return self.fn_or_meth(name, x, [str(self.dim(r))] if name not in ("msort", "unique") else [])

    def mm_shapes(self):
        c = self.r.random()
        m, k, n, b = (self.r.randint(0, 4) for _ in range(4))
        k2 = k if self.p(0.85) else k + 1
        if c < 0.2:
            return (k,), (k2,)
        if c < 0.3:
            return (k,), (k2, n)
        if c < 0.4:
            return (m, k), (k2,)
        if c < 0.7:
            return (m, k), (k2, n)
        if c < 0.9:
            return (b, m, k), (b if self.p(0.8) else 1, k2, n)
        return (2, b, m, k), (b, k2, n)

    def g_matmul(self):
        name = self.ch(["matmul", "mm", "bmm", "mv", "einsum", "tensordot", "addmm", "baddbmm", "addmv", "addr",
                        "chain_matmul", "linear", "addcmul", "addcdiv", "addbmm"])
        dt = self.dtype()
        dt2 = dt if self.p(0.85) else self.dtype()
        a, b = self.mm_shapes()
        if name == "mm":
            a, b = (a + (2,))[:2] if len(a) < 2 else a[-2:], (b + (2,))[:2] if len(b) < 2 else b[-2:]
        if name == "bmm":
            a, b = self.mm_shapes()
            while len(a) != 3 and self.p(0.9):
                a, b = self.mm_shapes()
        if name == "mv":
            m, k = self.r.randint(0, 4), self.r.randint(0, 4)
            a, b = (m, k), (k if self.p(0.85) else k + 1,)
        x, y = self.tensor(a, dt), self.tensor(b, dt2)
        if name in ("matmul", "mm", "bmm", "mv"):
            return self.fn_or_meth(name, x, [y])
        if name == "einsum":
            eq, shapes = self.einsum_case()
            ts = ", ".join(self.tensor(s, dt) for s in shapes)
            return "torch.einsum", f"out = torch.einsum({eq!r}, {ts})"
        if name == "tensordot":
            dims = self.ch(["0", "1", "2", "-1", "([0], [0])", "([1], [0])", "([0, 1], [0, 1])", "([5], [0])"])
            return "torch.tensordot", f"out = torch.tensordot({x}, {y}, dims={dims})"
        if name == "linear":
            n, k, o = self.r.randint(0, 3), self.r.randint(0, 4), self.r.randint(0, 4)
            w = self.tensor((o, k if self.p(0.85) else k + 1), dt2)
            bias = f", {self.tensor((o,), dt)}" if self.p(0.5) else ""
            return "F.linear", f"out = F.linear({self.tensor((n, k), dt)}, {w}{bias})"
        if name in ("addmm", "addmv", "addr", "baddbmm", "addbmm"):
            m, k, n, bb = (self.r.randint(0, 4) for _ in range(4))
            if name == "addmm":
                ins = [self.tensor(self.ch([(m, n), (n,), (), (m, n + 1)]), dt), self.tensor((m, k), dt), self.tensor((k, n), dt2)]
            elif name == "addmv":
                ins = [self.tensor(self.ch([(m,), (), (m + 1,)]), dt), self.tensor((m, k), dt), self.tensor((k,), dt2)]
            elif name == "addr":
                ins = [self.tensor((m, n), dt), self.tensor((m,), dt), self.tensor((n,), dt2)]
            elif name == "baddbmm":
                ins = [self.tensor((bb, m, n), dt), self.tensor((bb, m, k), dt), self.tensor((bb, k, n), dt2)]
            else:
                ins = [self.tensor((m, n), dt), self.tensor((bb, m, k), dt), self.tensor((bb, k, n), dt2)]
            extra = []
            if self.p(0.4):
                extra = [f"beta={self.ch(['0', '0.5', '2', 'True'])}", f"alpha={self.ch(['1', '-1', '0.5'])}"]
            return self.fn_or_meth(name, ins[0], ins[1:] + extra)
        if name in ("addcmul", "addcdiv"):
            sh = self.shape()
            ins = [self.tensor(self.bcast_shape(sh), dt) for _ in range(2)]
            extra = [f"value={self.ch(['2', '0.5', '-1', 'True'])}"] if self.p(0.4) else []
            return self.fn_or_meth(name, self.tensor(sh, dt), ins + extra)
        k = self.r.randint(0, 3)
        sh = [self.r.randint(1, 3) for _ in range(k + 1)]
        ts = ", ".join(self.tensor((sh[i], sh[i + 1] if self.p(0.9) else sh[i + 1] + 1), dt) for i in range(k))
        return "torch.chain_matmul", f"out = torch.chain_matmul({ts})"

    def einsum_case(self):
        cases = [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 1)]), ("ii->i", [(3, 3)]),
                 ("ii", [(3, 3)]), ("ij->ji", [(2, 3)]), ("i,i->", [(3,), (3,)]), ("i,j->ij", [(2,), (3,)]),
                 ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 4)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
                 ("ij,jk->ik", [(2, 3), (4, 4)]), ("ij->k", [(2, 3)]), ("ij", [(2, 3, 4)]), ("i->i->i", [(3,)]),
                 ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 1)]), ("", [()]), ("->", [()]), ("i,i", [(0,), (0,)]),
                 ("IJ,JK->IK", [(2, 3), (3, 2)]), ("ij,ij->ij", [(2, 3), (1, 3)]), ("iij->j", [(2, 2, 3)]),
                 ("i j , j k -> i k", [(2, 3), (3, 2)]), ("ij,jk", [(2, 3)]), ("ba,ab->", [(2, 3), (3, 2)])]
        return self.ch(cases)

    # ---- nn.functional -------------------------------------------------------------------------
    def spatial(self, nd, lo=1, hi=6):
        return tuple(self.r.randint(lo, hi) for _ in range(nd))

    def kparam(self, nd, lo=1, hi=3, bad=None):
        bad = self.bad_rate if bad is None else bad
        if self.p(bad * 1.5):
            return self.ch(["0", "-1", "(0, 1)", "(1, -1)", "'a'", "None", "2.5", "(1, 1, 1, 1, 1)", "()"])
        if self.p(0.5):
            return str(self.r.randint(lo, hi))
        return str(tuple(self.r.randint(lo, hi) for _ in range(nd)))

    def g_conv(self):
        nd = self.ch([1, 1, 2, 2, 2, 3])
        tr = self.p(0.3)
        name = f"conv{'_transpose' if tr else ''}{nd}d"
        n = self.ch([1, 2, 0, 1])
        g = self.ch([1, 1, 1, 2, 3, 0]) if self.p(0.3) else 1
        cin = max(g, 1) * self.r.randint(1, 2)
        cout = max(g, 1) * self.r.randint(1, 2)
        if self.p(0.05):
            cin += 1
        k = self.spatial(nd, 1, 3)
        sp = self.spatial(nd, 1, 6)
        dt = self.dtype(floats=True) if self.p(0.95) else self.dtype()
        xs = (n, cin) + sp if self.p(0.9) else ((cin,) + sp if self.p(0.5) else self.shape())
        x = self.tensor(xs, dt)
        wsh = ((cin, cout // max(g, 1)) if tr else (cout, cin // max(g, 1))) + k
        w = self.tensor(wsh, dt if self.p(0.9) else self.dtype())
        args = [x, w]
        kw = []
        if self.p(0.5):
            kw.append(f"bias={self.tensor(((cout if tr else cout),) if self.p(0.9) else (cout + 1,), dt)}")
        if self.p(0.5):
            kw.append(f"stride={self.kparam(nd)}")
        if self.p(0.5):
            pads = [self.kparam(nd, 0, 2)]
            if not tr:
                pads += ["'same'", "'valid'", "'bogus'"]
            kw.append(f"padding={self.ch(pads)}")
        if self.p(0.3):
            kw.append(f"dilation={self.kparam(nd)}")
        if tr and self.p(0.3):
            kw.append(f"output_padding={self.kparam(nd, 0, 2)}")
        if g != 1:
            kw.append(f"groups={g}")
        return f"F.{name}", f"out = F.{name}({', '.join(args + kw)})"

    def g_pool(self):
        nd = self.ch([1, 2, 2, 3])
        kind = self.ch(["max", "avg", "adaptive_avg", "adaptive_max", "lp", "max_idx"])
        if kind == "lp" and nd == 3:
            nd = 2
        xs = (self.r.randint(0, 2), self.r.randint(1, 3)) + self.spatial(nd, 1, 7)
        if self.p(0.2):
            xs = xs[1:]
        if self.p(0.03):
            xs = self.shape()
        x = self.tensor(xs, self.dtype(floats=True) if self.p(0.9) else self.dtype())
        if kind.startswith("adaptive"):
            os_ = self.ch([str(self.r.randint(1, 4)), str(tuple(self.r.randint(1, 5) for _ in range(nd))), "0",
                           "-1", "None", str((None,) * nd), str(tuple(self.r.randint(1, 3) for _ in range(nd + 1)))])
            name = f"{kind}_pool{nd}d"
            extra = ", return_indices=True" if kind == "adaptive_max" and self.p(0.3) else ""
            return f"F.{name}", f"out = F.{name}({x}, {os_}{extra})"
        kw = [f"kernel_size={self.kparam(nd, 1, 4)}"]
        if self.p(0.5):
            kw.append(f"stride={self.kparam(nd, 1, 3)}")
        if self.p(0.4) and kind != "lp":
            kw.append(f"padding={self.kparam(nd, 0, 2)}")
        if kind in ("max", "max_idx") and self.p(0.3):
            kw.append(f"dilation={self.kparam(nd, 1, 2)}")
        if self.p(0.3):
            kw.append(f"ceil_mode={self.ch(['True', 'False'])}")
        if kind == "avg" and self.p(0.3):
            kw.append(f"count_include_pad={self.ch(['True', 'False'])}")
        if kind == "avg" and nd > 1 and self.p(0.2):
            kw.append(f"divisor_override={self.ch(['1', '2', '0', '-1'])}")
        if kind == "max" and self.p(0.2):
            kw.append("return_indices=True")
        if kind == "lp":
            name = f"lp_pool{nd}d"
            return f"F.{name}", f"out = F.{name}({x}, {self.ch(['2', '1', '3.0', '0', '-1', 'inf'])}, {', '.join(kw)})"
        name = f"max_pool{nd}d_with_indices" if kind == "max_idx" else f"{kind}_pool{nd}d"
        return f"F.{name}", f"out = F.{name}({x}, {', '.join(kw)})"

    def g_interp(self):
        nd = self.ch([1, 2, 2, 3])
        xs = (self.r.randint(0, 2), self.r.randint(1, 3)) + self.spatial(nd, 1, 5)
        if self.p(0.05):
            xs = xs[1:]
        x = self.tensor(xs, self.dtype(floats=True) if self.p(0.9) else self.dtype())
        modes = {1: ["nearest", "linear", "nearest-exact", "area"], 2: ["nearest", "bilinear", "bicubic", "area",
                                                                          "nearest-exact"],
                 3: ["nearest", "trilinear", "area", "nearest-exact"]}[nd] + ["bogus", "bilinear", "linear"]
        mode = self.ch(modes)
        kw = []
        if self.p(0.5):
            s = self.ch([str(self.r.randint(0, 8)), str(tuple(self.r.randint(1, 8) for _ in range(nd))), "-1",
                         str(tuple(self.r.randint(1, 8) for _ in range(nd + 1))),
                         "10**12" if self.p(self.huge_rate * 10) else "3",
                         str((10 ** 6,) * nd) if nd > 1 and self.p(self.huge_rate * 10) else "2"])
            kw.append(f"size={s}")
            if self.p(0.05):
                kw.append("scale_factor=2")
        else:
            kw.append(f"scale_factor={self.ch(['2', '0.5', '1.7', '0', '-1', '3', str((2.0,) * nd), 'nan', '1e-9'])}")
            if self.p(0.2):
                kw.append(f"recompute_scale_factor={self.ch(['True', 'False'])}")
        if self.p(0.3):
            kw.append(f"align_corners={self.ch(['True', 'False'])}")
        if self.p(0.1):
            kw.append("antialias=True")
        return "F.interpolate", f"out = F.interpolate({x}, {', '.join(kw)}, mode={mode!r})"

    def g_pad(self):
        sh = self.shape(lo=1) if self.p(0.8) else self.shape()
        x = self.tensor(sh)
        k = self.ch([2, 2, 4, 4, 6, 1, 8, 0])
        pads = [self.r.randint(-2, 3) for _ in range(k)]
        if self.p(self.huge_rate * 3) and pads:
            pads[0] = self.ch([10 ** 12, 2 ** 62, -(2 ** 62)])
        mode = self.ch(["constant", "constant", "reflect", "replicate", "circular", "bogus"])
        kw = f", mode={mode!r}" if mode != "constant" or self.p(0.5) else ""
        if mode == "constant" and self.p(0.4):
            kw += f", value={self.scalar()}"
        return "F.pad", f"out = F.pad({x}, {tuple(pads)}{kw})"

    def g_embed(self):
        name = self.ch(["embedding", "one_hot", "embedding_bag"])
        if name == "one_hot":
            x = self.idx_tensor(self.shape(hi=3), 5, allow_neg=self.p(0.05))
            nc = self.ch(["-1", "5", "3", "0", "10", "10**12"])
            if nc == "10**12" and not self.p(self.huge_rate * 10):
                nc = "6"
            return "F.one_hot", f"out = F.one_hot({x}, {nc})" if self.p(0.8) else f"out = F.one_hot({x})"
        v, d = self.r.randint(1, 6), self.r.randint(0, 4)
        w = self.tensor((v, d), self.dtype(floats=True))
        idx = self.idx_tensor(self.shape(hi=3), v, dtype=self.ch(["int64", "int64", "int32", "float32"]))
        kw = []
        if self.p(0.3):
            kw.append(f"padding_idx={self.r.randint(-v - 1, v)}")
        if self.p(0.2):
            kw.append(f"max_norm={self.ch(['1.0', '0.0', '-1.0'])}")
        if name == "embedding_bag":
            idx = self.idx_tensor((self.r.randint(1, 3), self.r.randint(0, 3)), v)
            kw = [f"mode={self.ch(['mean', 'sum', 'max', 'bogus'])!r}"]
            return "F.embedding_bag", f"out = F.embedding_bag({idx}, {w}, {', '.join(kw)})"
        return "F.embedding", f"out = F.embedding({idx}, {w}{''.join(', ' + a for a in kw)})"

    def g_norm(self):
        name = self.ch(["layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm", "normalize",
                        "local_response_norm"])
        sh = self.shape(lo=1)
        if name in ("group_norm", "batch_norm", "instance_norm", "local_response_norm") and len(sh) < 2:
            sh = (self.r.randint(1, 3), self.r.randint(1, 4)) + sh
        dt = self.dtype(floats=True) if self.p(0.93) else self.dtype()
        x = self.tensor(sh, dt)
        eps = f", eps={self.ch(['1e-5', '0.0', '-1.0', '1e10'])}" if self.p(0.2) else ""
        if name in ("layer_norm", "rms_norm"):
            k = self.r.randint(1, len(sh))
            ns = sh[-k:] if self.p(0.9) else tuple(d + 1 for d in sh[-k:])
            w = f", weight={self.tensor(ns, dt)}" if self.p(0.5) else ""
            b = f", bias={self.tensor(ns, dt)}" if name == "layer_norm" and self.p(0.5) else ""
            nsv = str(list(ns)) if self.p(0.5) else str(ns)
            if self.p(0.05):
                nsv = self.ch(["[]", "5", "-1", "[0]"])
            return f"F.{name}", f"out = F.{name}({x}, {nsv}{w}{b}{eps})"
        if name == "normalize":
            return "F.normalize", f"out = F.normalize({x}, p={self.ch(['2.0', '1', '0', 'inf', '-1'])}, dim={self.dim(len(sh))}{eps})"
        c = sh[1]
        if name == "group_norm":
            g = self.ch([1, c, max(c // 2, 1), c + 1, 0, -1, 2])
            w = f", weight={self.tensor((c,), dt)}, bias={self.tensor((c,), dt)}" if self.p(0.5) else ""
            return "F.group_norm", f"out = F.group_norm({x}, {g}{w}{eps})"
        if name in ("batch_norm", "instance_norm"):
            cc = c if self.p(0.9) else c + 1
            rm = f"{self.tensor((cc,), dt)}" if self.p(0.7) else "None"
            rv = f"{self.tensor((cc,), dt, kind='pos')}" if self.p(0.7) else "None"
            tr = self.ch(["True", "False"])
            w = f", weight={self.tensor((cc,), dt)}" if self.p(0.4) else ""
            mom = f", momentum={self.ch(['0.1', '0.0', '1.0', '-1.0'])}" if self.p(0.2) else ""
            if name == "instance_norm":
                return "F.instance_norm", f"out = F.instance_norm({x}, {rm}, {rv}{w}, use_input_stats={tr}{mom}{eps})"
            return "F.batch_norm", f"out = F.batch_norm({x}, {rm}, {rv}{w}, training={tr}{mom}{eps})"
        if name == "normalize":
            return "F.normalize", f"out = F.normalize({x}, p={self.ch(['2.0', '1', '0', 'inf', '-1'])}, dim={self.dim(len(sh))}{eps.replace('eps', 'eps') if eps else ''})"
        return "F.local_response_norm", f"out = F.local_response_norm({x}, {self.ch(['2', '1', '0', '-1', '5'])})"

    def g_act(self):
        names = [n for n in ACTS if n in self.Fn]
        name = self.ch(names + ["softmax", "log_softmax", "softmin", "prelu", "gelu"])
        sh = self.shape()
        x = self.tensor(sh, self.dtype(floats=True) if self.p(0.85) else self.dtype(), kind=self.ch(["n", "special"]))
        kw = []
        if name in ("softmax", "log_softmax", "softmin"):
            kw.append(f"dim={self.dim(len(sh))}")
            if self.p(0.2):
                kw.append(f"dtype=torch.{self.dtype()}")
        elif name == "gelu" and self.p(0.5):
            kw.append(f"approximate={self.ch(['none', 'tanh', 'bogus'])!r}")
        elif name == "glu":
            kw.append(f"dim={self.dim(len(sh))}")
        elif name in ("elu", "celu") and self.p(0.5):
            kw.append(f"alpha={self.ch(['1.0', '0.0', '-1.0', '2'])}")
        elif name == "leaky_relu" and self.p(0.5):
            kw.append(f"negative_slope={self.ch(['0.01', '-1.0', '0'])}")
        elif name == "hardtanh" and self.p(0.6):
            kw += [f"min_val={self.ch(['-1.0', '2.0', '0'])}", f"max_val={self.ch(['1.0', '-2.0', '0'])}"]
        elif name in ("hardshrink", "softshrink") and self.p(0.5):
            kw.append(f"lambd={self.ch(['0.5', '0.0', '-1.0'])}")
        elif name == "softplus" and self.p(0.5):
            kw += [f"beta={self.ch(['1', '2.0', '0', '-1'])}", f"threshold={self.ch(['20', '0', '-1'])}"]
        elif name == "threshold":
            kw += [self.ch(["0.5", "0", "nan"]), self.ch(["0.0", "-1", "inf"])]
        elif name == "prelu":
            c = sh[1] if len(sh) >= 2 else 1
            kw.append(self.tensor(self.ch([(1,), (c,), (c + 1,), ()]), "float32"))
        elif name == "rrelu" and self.p(0.5):
            kw += [f"lower={self.ch(['0.1', '0.5'])}", f"upper={self.ch(['0.3', '0.1'])}", "training=False"]
        if self.p(0.1) and name not in ("prelu", "threshold", "softmin"):
            kw.append("inplace=True")
        return f"F.{name}", f"out = F.{name}({x}{''.join(', ' + a for a in kw)})"

    def g_loss(self):
        name = self.ch(["mse_loss", "l1_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
                        "binary_cross_entropy_with_logits", "kl_div", "huber_loss", "smooth_l1_loss",
                        "cosine_similarity", "pairwise_distance"])
        n, c = self.r.randint(0, 4), self.r.randint(1, 5)
        dt = self.dtype(floats=True)
        red = f", reduction={self.ch(['mean', 'sum', 'none', 'bogus'])!r}" if self.p(0.4) else ""
        if name in ("cross_entropy", "nll_loss"):
            extra = tuple(self.spatial(self.ch([0, 0, 1, 2]), 1, 3))
            x = self.tensor((n, c) + extra if self.p(0.9) else (c,), dt)
            if self.p(0.2) and name == "cross_entropy":
                tgt = self.tensor((n, c) + extra, dt, kind="prob")
            else:
                tgt = self.idx_tensor((n,) + extra if self.p(0.9) else (n + 1,), c,
                                      dtype=self.ch(["int64", "int64", "int32", "float32"]))
            kw = red
            if self.p(0.2):
                kw += f", ignore_index={self.ch(['-100', '0', '1', '-1'])}"
            if self.p(0.2) and name == "cross_entropy":
                kw += f", label_smoothing={self.ch(['0.1', '0.0', '1.0', '-0.1', '1.5'])}"
            if self.p(0.2):
                kw += f", weight={self.tensor((c,) if self.p(0.8) else (c + 1,), dt, kind='pos')}"
            return f"F.{name}", f"out = F.{name}({x}, {tgt}{kw})"
        sh = self.shape()
        if name in ("cosine_similarity", "pairwise_distance"):
            y = self.tensor(self.bcast_shape(sh), dt)
            kw = f", dim={self.dim(len(sh))}" if name == "cosine_similarity" and self.p(0.6) else ""
            return f"F.{name}", f"out = F.{name}({self.tensor(sh, dt)}, {y}{kw})"
        x = self.tensor(sh, dt, kind="prob" if name == "binary_cross_entropy" and self.p(0.8) else "n")
        y = self.tensor(sh if self.p(0.85) else self.bcast_shape(sh), dt if self.p(0.9) else self.dtype(),
                        kind="prob" if name.startswith("binary") else "n")
        kw = red
        if name in ("huber_loss",) and self.p(0.3):
            kw += f", delta={self.ch(['1.0', '0.0', '-1.0'])}"
        if name in ("smooth_l1_loss",) and self.p(0.3):
            kw += f", beta={self.ch(['1.0', '0.0', '-1.0'])}"
        if name == "kl_div" and self.p(0.3):
            kw += ", log_target=True"
        return f"F.{name}", f"out = F.{name}({x}, {y}{kw})"

    def g_sdpa(self):
        b, h, l, s, e = (self.r.randint(1, 3), self.r.randint(1, 3), self.r.randint(0, 4), self.r.randint(0, 4),
                         self.r.randint(1, 8))
        dt = self.dtype(floats=True)
        hk = h if self.p(0.85) else self.ch([1, h + 1])
        q = self.tensor((b, h, l, e) if self.p(0.9) else (l, e), dt)
        k = self.tensor((b, hk, s, e if self.p(0.9) else e + 1), dt)
        v = self.tensor((b, hk, s, self.r.randint(1, 8)), dt)
        kw = []
        if self.p(0.3):
            kw.append(f"attn_mask={self.tensor(self.ch([(l, s), (b, 1, l, s), (s,), (l + 1, s)]), self.ch(['bool', dt, 'float32', 'int64']))}")
        if self.p(0.3):
            kw.append(f"is_causal={self.ch(['True', 'False'])}")
        if self.p(0.2):
            kw.append(f"scale={self.ch(['0.5', '0.0', '-1.0', 'None'])}")
        if self.p(0.1):
            kw.append("dropout_p=0.0")
        if self.p(0.15):
            kw.append("enable_gqa=True")
        return "F.scaled_dot_product_attention", f"out = F.scaled_dot_product_attention({q}, {k}, {v}{''.join(', ' + a for a in kw)})"

    def g_fold(self):
        name = self.ch(["unfold", "fold", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle"])
        if name == "unfold":
            xs = (self.r.randint(0, 2), self.r.randint(1, 3)) + self.spatial(2, 1, 6)
            if self.p(0.1):
                xs = xs[1:]
            kw = [f"kernel_size={self.kparam(2, 1, 3)}"]
            for p_ in ("dilation", "padding", "stride"):
                if self.p(0.4):
                    kw.append(f"{p_}={self.kparam(2, 0 if p_ == 'padding' else 1, 2)}")
            return "F.unfold", f"out = F.unfold({self.tensor(xs)}, {', '.join(kw)})"
        if name == "fold":
            k = self.r.randint(1, 3)
            osz = self.spatial(2, k, k + 3)
            nb = (osz[0] - k + 1) * (osz[1] - k + 1)
            c = self.r.randint(1, 2)
            xs = (self.r.randint(1, 2), c * k * k if self.p(0.85) else c * k * k + 1, nb if self.p(0.85) else nb + 1)
            kw = [f"output_size={osz if self.p(0.95) else self.ch(['(0, 0)', '(-1, 3)'])}", f"kernel_size={k}"]
            if self.p(0.3):
                kw.append(f"stride={self.kparam(2, 1, 2)}")
            return "F.fold", f"out = F.fold({self.tensor(xs)}, {', '.join(kw)})"
        rr = self.ch([1, 2, 2, 3, 0, -1])
        if name == "pixel_shuffle":
            c = self.ch([4, 8, 9, 3, 1, 0])
            return "F.pixel_shuffle", f"out = F.pixel_shuffle({self.tensor((1, c) + self.spatial(2, 1, 3))}, {rr})"
        if name == "pixel_unshuffle":
            return "F.pixel_unshuffle", f"out = F.pixel_unshuffle({self.tensor((1, 2) + self.spatial(2, 1, 6))}, {rr})"
        return "F.channel_shuffle", f"out = F.channel_shuffle({self.tensor((1, self.ch([4, 6, 3, 0])) + self.spatial(2, 1, 3))}, {rr})"

    def g_misc_f(self):
        name = self.ch(["dropout", "dropout2d", "alpha_dropout", "affine_grid", "grid_sample", "bilinear", "snake"])
        if name.startswith("dropout") or name == "alpha_dropout":
            p = self.ch(["0.0", "0.5", "1.0", "-0.1", "1.5", "nan"])
            sh = self.shape() if name == "dropout" else (self.r.randint(1, 2), self.r.randint(1, 3), 2, 2)
            return f"F.{name}", f"out = F.{name}({self.tensor(sh)}, p={p}, training={self.ch(['True', 'False'])})"
        if name == "affine_grid":
            n = self.r.randint(1, 2)
            th = self.tensor((n, 2, 3) if self.p(0.85) else (n, 3, 3), "float32")
            size = self.ch([f"[{n}, 1, 3, 4]", f"[{n}, 1, 0, 4]", f"[{n + 1}, 1, 3, 4]", "[1, 1]"])
            ac = f", align_corners={self.ch(['True', 'False'])}" if self.p(0.5) else ""
            return "F.affine_grid", f"out = F.affine_grid({th}, {size}{ac})"
        if name == "grid_sample":
            n, c = self.r.randint(1, 2), self.r.randint(1, 2)
            x = self.tensor((n, c) + self.spatial(2, 1, 4), "float32")
            g = self.tensor((n if self.p(0.9) else n + 1, self.r.randint(1, 3), self.r.randint(1, 3), 2 if self.p(0.9) else 3),
                            "float32", kind=self.ch(["prob", "n", "special"]))
            kw = f", mode={self.ch(['bilinear', 'nearest', 'bicubic', 'bogus'])!r}, padding_mode={self.ch(['zeros', 'border', 'reflection', 'bogus'])!r}"
            if self.p(0.5):
                kw += f", align_corners={self.ch(['True', 'False'])}"
            return "F.grid_sample", f"out = F.grid_sample({x}, {g}{kw})"
        if name == "bilinear":
            n, a, b, o = (self.r.randint(1, 3) for _ in range(4))
            return "F.bilinear", (f"out = F.bilinear({self.tensor((n, a))}, {self.tensor((n, b))}, "
                                  f"{self.tensor((o, a, b if self.p(0.9) else b + 1))})")
        # snake is candle-only: fall back to a generic F call
        return self.g_generic()

    def g_layer(self):
        name = self.ch(["Linear", "Conv1d", "Conv2d", "ConvTranspose2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm",
                        "GroupNorm", "Embedding", "LSTM", "GRU", "RNN", "MultiheadAttention", "MaxPool2d",
                        "AvgPool2d", "Upsample", "PixelShuffle", "Flatten", "Unflatten", "Fold", "Unfold",
                        "ZeroPad2d", "ReflectionPad1d", "Softmax", "LeakyReLU", "TransformerEncoderLayer",
                        "Dropout", "RMSNorm", "InstanceNorm2d", "EmbeddingBag", "PReLU", "Bilinear",
                        "AdaptiveAvgPool2d", "LSTMCell", "GRUCell", "Identity", "CrossEntropyLoss", "Hardtanh",
                        "LocalResponseNorm", "ConstantPad1d", "ReplicationPad2d", "CircularPad1d"])
        if name not in self.layers:
            name = "Linear"
        dt = self.ch(self.float_dtypes)
        cast = f".to(torch.{dt})" if dt != "float32" and self.p(0.5) else ""
        if not cast:
            dt = "float32"
        neg = lambda v: self.ch(["0", "-1", "-3"]) if self.p(self.bad_rate) else str(v)
        ctor, inp = None, None
        n = self.r.randint(0, 3)
        if name == "Linear":
            i, o = self.r.randint(0, 5), self.r.randint(0, 5)
            ctor = f"nn.Linear({neg(i)}, {neg(o)}, bias={self.ch(['True', 'False'])})"
            inp = self.tensor(self.shape(hi=2) + (i if self.p(0.9) else i + 1,), dt)
        elif name in ("Conv1d", "Conv2d", "ConvTranspose2d"):
            nd = 1 if name == "Conv1d" else 2
            g = self.ch([1, 1, 2])
            ci, co = g * self.r.randint(1, 2), g * self.r.randint(1, 2)
            kw = ""
            if self.p(0.4):
                kw += f", stride={self.kparam(nd)}"
            if self.p(0.4):
                kw += f", padding={self.kparam(nd, 0, 2) if 'Transpose' in name else self.ch([self.kparam(nd, 0, 2), repr('same'), repr('valid')])}"
            if self.p(0.2) and "Transpose" not in name:
                kw += f", padding_mode={self.ch(['zeros', 'reflect', 'replicate', 'circular', 'bogus'])!r}"
            ctor = f"nn.{name}({neg(ci)}, {neg(co)}, {self.kparam(nd, 1, 3)}, groups={g}{kw})"
            inp = self.tensor((n, ci) + self.spatial(nd, 1, 6) if self.p(0.9) else (ci,) + self.spatial(nd, 1, 6), dt)
        elif name in ("BatchNorm1d", "BatchNorm2d", "InstanceNorm2d"):
            c = self.r.randint(1, 4)
            nd = 2 if name.endswith("2d") else self.ch([0, 1])
            ctor = f"nn.{name}({neg(c)}{', affine=False' if self.p(0.3) else ''}{', track_running_stats=False' if self.p(0.2) else ''})"
            if self.p(0.3):
                ctor += ".eval()"
            inp = self.tensor((self.r.randint(1, 3), c if self.p(0.9) else c + 1) + self.spatial(nd, 1, 4), dt)
        elif name in ("LayerNorm", "RMSNorm"):
            ns = self.spatial(self.r.randint(1, 2), 1, 4)
            ctor = f"nn.{name}({list(ns) if self.p(0.5) else ns[-1]}{', elementwise_affine=False' if self.p(0.2) else ''})"
            inp = self.tensor(self.shape(hi=2) + (ns if self.p(0.9) else ns[:-1] + (ns[-1] + 1,)), dt)
        elif name == "GroupNorm":
            c = self.ch([2, 4, 6, 3])
            ctor = f"nn.GroupNorm({self.ch([1, 2, 3, 0, 4])}, {c})"
            inp = self.tensor((self.r.randint(1, 2), c) + self.spatial(self.r.randint(0, 2), 1, 3), dt)
        elif name in ("Embedding", "EmbeddingBag"):
            v, d = self.r.randint(1, 6), self.r.randint(1, 4)
            pi = f", padding_idx={self.r.randint(-v, v)}" if self.p(0.3) and name == "Embedding" else ""
            ctor = f"nn.{name}({neg(v)}, {neg(d)}{pi})"
            inp = self.idx_tensor((2, self.r.randint(1, 3)), v)
            cast = ""
        elif name in ("LSTM", "GRU", "RNN"):
            i, hdim, nl = self.r.randint(1, 4), self.r.randint(1, 4), self.ch([1, 1, 2, 0])
            kw = ""
            if self.p(0.4):
                kw += f", batch_first={self.ch(['True', 'False'])}"
            if self.p(0.3):
                kw += ", bidirectional=True"
            if name == "RNN" and self.p(0.3):
                kw += f", nonlinearity={self.ch(['tanh', 'relu', 'bogus'])!r}"
            if self.p(0.2):
                kw += f", dropout={self.ch(['0.0', '0.5', '1.5'])}"
            ctor = f"nn.{name}({neg(i)}, {neg(hdim)}, num_layers={nl}{kw})"
            inp = self.tensor(self.ch([(self.r.randint(1, 3), self.r.randint(1, 3), i), (self.r.randint(1, 3), i),
                                       (2, 2, i + 1), (2, 0, i)]), dt)
        elif name in ("LSTMCell", "GRUCell"):
            i, hdim = self.r.randint(1, 4), self.r.randint(1, 4)
            ctor = f"nn.{name}({neg(i)}, {neg(hdim)})"
            inp = self.tensor(self.ch([(2, i), (i,), (2, i + 1)]), dt)
        elif name == "MultiheadAttention":
            e, h = self.ch([(4, 2), (4, 1), (6, 4), (8, 2), (0, 1), (4, 0)])
            bf = self.p(0.5)
            ctor = f"nn.MultiheadAttention({e}, {h}{', batch_first=True' if bf else ''})"
            l, s, b = self.r.randint(1, 3), self.r.randint(1, 3), self.r.randint(1, 2)
            q = self.tensor((l, b, e) if self.p(0.9) else (l, b, e + 1), dt)
            kv = self.tensor((s, b, e), dt)
            mask = f", attn_mask={self.tensor((l, s), 'bool')}" if self.p(0.2) else ""
            kpm = f", key_padding_mask={self.tensor((b, s), 'bool')}" if self.p(0.2) else ""
            return f"nn.{name}", f"m = {ctor}{cast}\nout = m({q}, {kv}, {kv}{mask}{kpm})"
        elif name == "TransformerEncoderLayer":
            e, h = self.ch([(4, 2), (8, 4), (6, 4), (4, 1)])
            ctor = f"nn.TransformerEncoderLayer({e}, {h}, dim_feedforward={self.r.randint(1, 8)}, dropout=0.0{', batch_first=True' if self.p(0.5) else ''}{', norm_first=True' if self.p(0.3) else ''})"
            inp = self.tensor((self.r.randint(1, 3), self.r.randint(1, 2), e), dt)
        elif name in ("MaxPool2d", "AvgPool2d"):
            ctor = f"nn.{name}({self.kparam(2, 1, 3)}{', stride=' + self.kparam(2, 1, 2) if self.p(0.4) else ''}{', ceil_mode=True' if self.p(0.3) else ''})"
            inp = self.tensor((n, 2) + self.spatial(2, 1, 6), dt)
        elif name == "AdaptiveAvgPool2d":
            ctor = f"nn.AdaptiveAvgPool2d({self.ch(['1', '(2, 3)', '(None, 2)', '0', '7'])})"
            inp = self.tensor((n, 2) + self.spatial(2, 1, 6), dt)
        elif name == "Upsample":
            ctor = f"nn.Upsample(scale_factor={self.ch(['2', '0.5', '1.5'])}, mode={self.ch(['nearest', 'bilinear', 'bicubic', 'bogus'])!r})"
            inp = self.tensor((1, 2) + self.spatial(2, 1, 4), dt)
        elif name in ("PixelShuffle",):
            ctor = f"nn.PixelShuffle({self.ch([1, 2, 3, 0])})"
            inp = self.tensor((1, self.ch([4, 8, 9, 3])) + self.spatial(2, 1, 3), dt)
        elif name == "Flatten":
            ctor = f"nn.Flatten({self.r.randint(-2, 2)}, {self.r.randint(-2, 2)})"
            inp = self.tensor(self.shape(), dt)
        elif name == "Unflatten":
            ctor = f"nn.Unflatten({self.r.randint(-1, 1)}, {self.ch(['(2, 3)', '(3, 2)', '(-1, 2)', '(6,)', '(5,)'])})"
            inp = self.tensor((6, 6) if self.p(0.8) else self.shape(), dt)
        elif name == "Fold":
            ctor = f"nn.Fold(output_size=(4, 5), kernel_size=2)"
            inp = self.tensor((1, 4, 12) if self.p(0.8) else (1, 4, 11), dt)
        elif name == "Unfold":
            ctor = f"nn.Unfold(kernel_size={self.kparam(2, 1, 3)}, stride={self.kparam(2, 1, 2)})"
            inp = self.tensor((1, 2) + self.spatial(2, 1, 5), dt)
        elif name in ("ZeroPad2d", "ReflectionPad1d", "ConstantPad1d", "ReplicationPad2d", "CircularPad1d"):
            nd = 2 if "2d" in name else 1
            pads = tuple(self.r.randint(-1, 3) for _ in range(2 * nd)) if self.p(0.7) else self.r.randint(-1, 3)
            ctor = f"nn.{name}({pads}{', 1.5' if name.startswith('Constant') else ''})"
            inp = self.tensor((1, 2) + self.spatial(nd, 1, 4), dt)
        elif name == "Softmax":
            ctor = f"nn.Softmax(dim={self.r.randint(-3, 2)})"
            inp = self.tensor(self.shape(), dt)
        elif name in ("LeakyReLU", "Hardtanh", "PReLU", "Identity", "Dropout"):
            ctor = f"nn.{name}()"
            if name == "Dropout":
                ctor = f"nn.Dropout({self.ch(['0.5', '0.0', '1.0', '-0.5', '2'])})"
            inp = self.tensor(self.shape(), dt)
        elif name == "Bilinear":
            ctor = "nn.Bilinear(2, 3, 4)"
            inp = f"{self.tensor((2, 2), dt)}, {self.tensor((2, 3 if self.p(0.9) else 4), dt)}"
        elif name == "CrossEntropyLoss":
            c = self.r.randint(1, 4)
            ctor = f"nn.CrossEntropyLoss({'ignore_index=0' if self.p(0.3) else ''})"
            inp = f"{self.tensor((3, c), dt)}, {self.idx_tensor((3,), c)}"
        elif name == "LocalResponseNorm":
            ctor = f"nn.LocalResponseNorm({self.ch([1, 2, 3, 0])})"
            inp = self.tensor((1, 3, 4), dt)
        if ctor is None:
            ctor, inp = "nn.Identity()", self.tensor(self.shape())
        return f"nn.{name}", f"m = {ctor}{cast}\nout = m({inp})"

    def g_inplace(self):
        cands = [m for m in self.meth if m.endswith("_") and not m.startswith("_")
                 and m not in ("requires_grad_", "share_memory_", "resize_", "set_", "detach_", "normal_",
                               "uniform_", "bernoulli_")]
        name = self.ch(cands)
        sh = self.shape()
        x = self.tensor(sh, layout=self.p(0.35))
        base = name[:-1]
        args = []
        if base in BINARY or base in ("add", "sub", "mul", "div", "pow", "lerp", "clamp_min", "clamp_max",
                                      "atan2", "copysign", "xlogy", "hypot"):
            args = [self.tensor(self.bcast_shape(sh)) if self.p(0.7) else self.scalar()]
            if base == "lerp":
                args.append("0.5")
        elif base in ("fill", "clamp", "clip"):
            args = [self.scalar()] + ([self.scalar()] if base != "fill" and self.p(0.5) else [])
        elif base == "copy":
            args = [self.tensor(self.bcast_shape(sh))]
        elif base in ("masked_fill",):
            args = [self.tensor(self.bcast_shape(sh), "bool"), self.scalar()]
        elif base in ("index_fill",):
            r = len(sh)
            d = self.dim(r)
            args = [str(d), self.idx_tensor((2,), sh[d] if isinstance(d, int) and -r <= d < r and sh else 1),
                    self.scalar()]
        elif base in ("tril", "triu"):
            args = [str(self.r.randint(-2, 2))] if self.p(0.5) else []
        elif base in ("scatter", "scatter_add", "index_add", "index_copy", "index_put", "addmm", "addmv",
                      "baddbmm", "addbmm", "addcdiv", "addcmul"):
            return self.g_index() if base.startswith(("scatter", "index")) else self.g_matmul()
        return f"Tensor.{name}", f"out = {x}\nout.{name}({', '.join(args)})"

    def g_convert(self):
        sh = self.shape()
        x = self.tensor(sh, kind=self.ch(["n", "special", "pos"]))
        c = self.ch(["to", "to", "type", "float", "double", "half", "bfloat16", "long", "int", "bool", "byte",
                     "item", "tolist", "numpy", "clone", "__float__", "__int__", "__bool__", "__len__", "is_contiguous",
                     "element_size", "nbytes", "dim", "ndim", "shape", "storage_offset", "equal", "allclose"])
        if c == "to":
            tgt = self.ch([f"torch.{self.dtype()}", "'cpu'", "torch.device('cpu')", "'meta'", "'bogus'",
                           f"dtype=torch.{self.dtype()}", "None", "copy=True"])
            return "Tensor.to", f"out = {x}.to({tgt})"
        if c == "type":
            return "Tensor.type", f"out = {x}.type(torch.{self.dtype()})"
        if c in ("shape", "ndim", "nbytes"):
            return f"Tensor.{c}", f"out = {x}.{c}"
        if c == "numpy":
            return "Tensor.numpy", f"out = torch.from_numpy({x}.numpy())"
        if c in ("equal", "allclose"):
            return f"torch.{c}", f"out = torch.{c}({x}, {self.tensor(self.bcast_shape(sh), self.dtype())})"
        return f"Tensor.{c}", f"out = {x}.{c}()"

    def g_generic(self):
        """Discovered names without a template: plausible positional patterns."""
        where = self.ch(["fn", "meth", "F"])
        pool = {"fn": self.fn_generic, "meth": self.meth_generic, "F": self.F_generic}[where]
        name = self.ch(pool)
        sh = self.shape()
        x = self.tensor(sh)
        pat = self.ch(["", "dim", "t", "s", "t,t", "dim,t", "int"])
        args = {"": [], "dim": [str(self.dim(len(sh)))], "t": [self.tensor(sh)], "s": [self.scalar()],
                "t,t": [self.tensor(sh), self.tensor(sh)], "dim,t": [str(self.dim(len(sh))), self.tensor(sh)],
                "int": [str(self.r.randint(0, 4))]}[pat]
        if where == "meth":
            attr = getattr(__import__("candle_bind").Tensor, name, None)
            if isinstance(attr, property) or not callable(attr):
                return f"Tensor.{name}", f"out = {x}.{name}"
            return f"Tensor.{name}", f"out = {x}.{name}({', '.join(args)})"
        pre = "torch" if where == "fn" else "F"
        return f"{pre}.{name}", f"out = {pre}.{name}({', '.join([x] + args)})"


# ----------------------------------------------------------------------------------------------
# The runner
# ----------------------------------------------------------------------------------------------

def _rss_gb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 2 ** 20
    except OSError:
        pass
    return 0.0


def watch_worker(proc, on_line, check) -> Optional[str]:
    """Feeds each line a worker prints to `on_line` as it comes; between lines (every 0.2 s at most)
    `check()` may name a reason to stop it (a hang, too much memory), and then the worker is killed
    and the reason returned. None when the worker closes its output."""
    fd, buf = proc.stdout.fileno(), b""
    while True:
        rl, _, _ = select.select([fd], [], [], 0.2)
        if rl:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                on_line(line.decode("utf-8", "replace"))
        reason = check()
        if reason:
            proc.kill()
            return reason


def _sig_name(rc: int) -> str:
    if rc < 0:
        try:
            return f"signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"signal {-rc}"
    return f"exit {rc}"


def run_child(modname: str, calls: List[Call], call_timeout: float = 20.0, mem_limit_gb: float = 6.0,
              env: Optional[dict] = None):
    """Runs `calls` in one fresh subprocess. Returns (results {id: dict}, dead) where dead is None or
    (position, reason, stderr_tail) for the call that killed / hung / outgrew the process."""
    e = dict(os.environ)
    e.setdefault("RAYON_NUM_THREADS", "1")
    e.setdefault("OMP_NUM_THREADS", "1")
    e["PYTHONFAULTHANDLER"] = "1"
    e.setdefault("RUST_BACKTRACE", "0")
    if env:
        e.update(env)
    errf = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", modname],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, env=e)
    payload = pickle.dumps([(c.id, c.src, c.det) for c in calls])
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    results: Dict[int, dict] = {}
    pos_of = {c.id: i for i, c in enumerate(calls)}
    # position of the call started and not finished, when it started, whether the worker is up, DONE seen
    state = {"current": None, "started_at": time.time(), "ready": False, "done": False}

    def on_line(s):
        if s == "READY":
            state.update(ready=True, started_at=time.time())
        elif s.startswith("S "):
            state.update(current=pos_of[int(s[2:])], started_at=time.time())
        elif s.startswith("R "):
            results[calls[state["current"]].id] = json.loads(s[2:])
            state["current"] = None
        elif s == "DONE":
            state["done"] = True

    def check():
        limit = call_timeout if state["ready"] else 60.0
        if time.time() - state["started_at"] > limit:
            return f"hang (> {limit:.0f} s)"
        if _rss_gb(proc.pid) > mem_limit_gb:
            return f"memory (> {mem_limit_gb} GB RSS)"
        return None

    reason = watch_worker(proc, on_line, check)
    current, ready, done = state["current"], state["ready"], state["done"]
    dead = None
    if reason:
        proc.wait()
        return results, (current, reason, _tail(errf))
    rc = proc.wait()
    if rc != 0 or not done:
        pos = current
        if pos is None and len(results) < len(calls):
            pos = len(results) if ready else None
        dead = (pos, _sig_name(rc) if rc != 0 else "exited early", _tail(errf))
    return results, dead


def _tail(f, n=1500) -> str:
    try:
        f.seek(0)
        data = f.read()
        return data[-n:].decode("utf-8", "replace")
    except Exception:
        return ""


def run_side(modname: str, calls: List[Call], batch: int = 1000, call_timeout: float = 20.0,
             mem_limit_gb: float = 6.0, replay: bool = True, log=None) -> Dict[int, dict]:
    """All calls on one side; a dead process is restarted after the call that killed it, which is
    recorded as {"st": "crash", ...} (and replayed alone to see whether it crashes by itself)."""
    results: Dict[int, dict] = {}
    pending = list(calls)
    while pending:
        chunk, rest = pending[:batch], pending[batch:]
        got, dead = run_child(modname, chunk, call_timeout, mem_limit_gb)
        results.update(got)
        if dead is None:
            pending = rest
            continue
        pos, reason, tail = dead
        if pos is None:
            if not got:
                raise RuntimeError(f"{modname} worker failed to start ({reason}):\n{tail}")
            # died after its last call (at exit): charge the batch's last call
            pos = max(i for i, c in enumerate(chunk) if c.id in got)
            results[chunk[pos].id] = {"st": "crash", "reason": reason + " (at exit)", "stderr": tail,
                                      "prev": got.get(chunk[pos].id)}
            pending = rest
            continue
        c = chunk[pos]
        rec = {"st": "crash", "reason": reason, "stderr": tail}
        if replay and not reason.startswith("hang"):  # a hang replayed costs another timeout
            _, d2 = run_child(modname, [c], call_timeout, mem_limit_gb)
            rec["alone"] = d2 is not None
            if d2 is None:
                # needs earlier calls: find the shortest suffix of predecessors that reproduces it
                for k in (1, 2, 4, 8, 16, 64, 256, pos):
                    k = min(k, pos)
                    _, d3 = run_child(modname, chunk[pos - k:pos + 1], call_timeout, mem_limit_gb)
                    if d3 is not None:
                        rec["needs"] = [x.id for x in chunk[pos - k:pos]]
                        break
                    if k == pos:
                        break
        results[c.id] = rec
        if log:
            log(f"[{modname}] crash at call {c.id} ({c.op}): {reason}")
        pending = chunk[pos + 1:] + rest
    return results


def run_both(calls: List[Call], batch: int = 1000, call_timeout: float = 20.0, with_torch: bool = True, log=None):
    """candle_bind and torch side by side (two processes at a time)."""
    out = {}

    def go(m):
        out[m] = run_side(m, calls, batch=batch, call_timeout=call_timeout, log=log)

    ths = [threading.Thread(target=go, args=("candle_bind",))]
    if with_torch:
        ths.append(threading.Thread(target=go, args=("torch",)))
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return out.get("candle_bind", {}), out.get("torch")


# ----------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------

TOL = {"float32": 1e-3, "float64": 1e-6, "float16": 2e-2, "bfloat16": 8e-2}


def _meta(s):
    """Structure without values."""
    if s is None:
        return None
    k = s[0]
    if k == "T":
        return ("T", tuple(s[1]), s[2])
    if k == "S":
        return ("S", s[2], tuple(_meta(e) for e in s[1]))
    if k == "V":
        return ("V",)
    if k == "N":
        return ("N",)
    return ("O",)


def _vals_close(a, b):
    """Both summaries have equal meta; compare values loosely."""
    k = a[0]
    if k == "T":
        va, vb = a[3], b[3]
        if va is None or vb is None:
            return True
        tol = TOL.get(a[2], 0)
        for x, y in zip(va, vb):
            if isinstance(x, str) or isinstance(y, str):
                if x != y:
                    return False
                continue
            if abs(x - y) > tol * (1 + abs(y)):
                return False
        return True
    if k == "S":
        return all(_vals_close(x, y) for x, y in zip(a[1], b[1]))
    if k == "V":
        x, y = a[2], b[2]
        if x is None or y is None:
            return True
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, str):
            return abs(x - y) <= 1e-3 * (1 + abs(y))
        return x == y
    return True


KINDS = ("crash", "torch_crash", "we_ok", "we_raise", "meta", "values", "exc_type")


def classify(call: Call, cb: dict, th: Optional[dict]) -> List[str]:
    """The finding kinds of one call (empty when it agrees)."""
    if cb is None:
        return ["crash"]
    if cb["st"] in ("crash", "panic"):
        return ["crash"]
    if th is None:
        return []
    if th["st"] in ("crash", "panic"):
        return ["torch_crash"]
    if cb["st"] == "ok" and th["st"] == "exc":
        return ["we_ok"]
    if cb["st"] == "exc" and th["st"] == "ok":
        return ["we_raise"]
    if cb["st"] == "exc":
        return []
    if _meta(cb["out"]) != _meta(th["out"]):
        return ["meta"]
    if call.det and not _vals_close(cb["out"], th["out"]):
        return ["values"]
    return []


def compare(calls: List[Call], cb_res: Dict[int, dict], th_res: Optional[Dict[int, dict]]):
    findings = []
    stats = {k: 0 for k in KINDS}
    n_torch_ok = n_cb_ok = 0
    for c in calls:
        a = cb_res.get(c.id)
        b = th_res.get(c.id) if th_res is not None else None
        if a and a["st"] == "ok":
            n_cb_ok += 1
        if b and b["st"] == "ok":
            n_torch_ok += 1
        for k in classify(c, a, b if th_res is not None else None):
            stats[k] += 1
            findings.append({"kind": k, "id": c.id, "op": c.op, "src": c.src, "cb": a, "torch": b})
    stats["calls"] = len(calls)
    stats["torch_ok_frac"] = n_torch_ok / max(len(calls), 1) if th_res is not None else None
    stats["cb_ok_frac"] = n_cb_ok / max(len(calls), 1)
    return {"findings": findings, "stats": stats}


def _short(r):
    if r is None:
        return "-"
    if r["st"] == "ok":
        o = r["out"]
        if o[0] == "T":
            return f"ok {tuple(o[1])} {o[2]}"
        if o[0] == "S":
            return f"ok seq[{o[2]}] " + " ".join(_short({"st": "ok", "out": e}) for e in o[1][:3])
        return f"ok {o[0]} {o[1] if len(o) > 1 else ''}"
    if r["st"] == "crash":
        return f"CRASH {r.get('reason')}" + ("" if r.get("alone", True) else " (needs earlier calls)")
    return f"{r['st']} {r.get('type')}: {r.get('msg', '')[:140]}"


def group_findings(findings):
    """Groups by (kind, op, cb exception type, torch exception type); the shortest source represents it."""
    groups = {}
    for f in findings:
        a, b = f["cb"] or {}, f["torch"] or {}
        key = (f["kind"], f["op"], a.get("type") or a.get("reason", "")[:20], b.get("type"))
        g = groups.setdefault(key, {"kind": f["kind"], "op": f["op"], "n": 0, "best": f})
        g["n"] += 1
        if len(f["src"]) < len(g["best"]["src"]):
            g["best"] = f
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(groups.values(), key=lambda g: (order[g["kind"]], -g["n"], g["op"]))


def _first_diff(a, b):
    """Where two value summaries first differ: 'at i: ours vs torch'."""
    if not a or not b:
        return ""
    if a[0] == "S":
        for x, y in zip(a[1], b[1]):
            d = _first_diff(x, y)
            if d:
                return d
        return ""
    if a[0] == "T" and a[3] is not None and b[3] is not None:
        tol = TOL.get(a[2], 0)
        for i, (x, y) in enumerate(zip(a[3], b[3])):
            if (isinstance(x, str) or isinstance(y, str)) and x != y or \
                    not isinstance(x, str) and not isinstance(y, str) and abs(x - y) > tol * (1 + abs(y)):
                return f"first diff at flat index {i}: ours {x} vs torch {y}"
    if a[0] == "V":
        return f"ours {a[2]} vs torch {b[2]}"
    return ""


def format_report(rep, max_per_kind: int = 1000) -> str:
    st = rep["stats"]
    lines = [f"calls {st['calls']}  candle_bind ok {st['cb_ok_frac']:.1%}  torch ok "
             + (f"{st['torch_ok_frac']:.1%}" if st["torch_ok_frac"] is not None else "n/a"),
             "counts: " + "  ".join(f"{k}={st[k]}" for k in KINDS if k in st)]
    groups = group_findings(rep["findings"])
    seen = {}
    for g in groups:
        seen[g["kind"]] = seen.get(g["kind"], 0) + 1
        if seen[g["kind"]] > max_per_kind:
            continue
        f = g["best"]
        lines.append(f"\n[{g['kind']}] {g['op']}  x{g['n']}  (call {f['id']})")
        lines.append("    " + f["src"].replace("\n", "\n    "))
        lines.append(f"    candle_bind: {_short(f['cb'])}")
        lines.append(f"    torch:       {_short(f['torch'])}")
        if g["kind"] == "values":
            lines.append("    " + _first_diff(f["cb"]["out"], f["torch"]["out"]))
    return "\n".join(lines)


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--show", help="print the source of call N and exit", type=int)
    a = ap.parse_args(argv)
    if a.worker:
        _worker(a.worker)
        return 0
    gen = Generator(a.seed)
    if a.show is not None:
        print(gen.call(a.show).src)
        return 0
    t0 = time.time()
    calls = gen.calls(a.calls, a.start)
    cb, th = run_both(calls, batch=a.batch, with_torch=not a.no_torch, log=lambda s: print(s, file=sys.stderr))
    rep = compare(calls, cb, th)
    print(format_report(rep))
    print(f"\n{len(calls)} calls in {time.time() - t0:.1f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
