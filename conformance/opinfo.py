"""OpInfo conformance: torch's own operator database run against candle_bind, torch as the oracle.

For every OpInfo in `torch.testing._internal.common_methods_invocations.op_db` and each dtype torch's CPU
supports that candle_bind has too (float32/64, float16, bfloat16, the ints, uint8, bool, complex64/128
by default), every `sample_inputs` sample is converted to candle_bind and
sent through the same entry point (torch.X / Tensor.X / Tensor.X_ / nn.functional.X / linalg.X / ... and
aliases), then compared with torch's output. Outcome per (entry, dtype, sample): pass / mismatch / error
(we raised, torch did not) / missing (no such entry point) / panic (a Rust PanicException reached Python) /
crash (the worker died or hung). Each OpInfo runs in a worker process (2 at most) under a timeout.

    python conformance/opinfo.py                                 # full run, prints the summary
    python conformance/opinfo.py --sample 40 --json out.json     # a deterministic sample of 40 OpInfos
    python conformance/opinfo.py --ops abs,nn.functional.conv2d --dtypes float32,float64
    python conformance/opinfo.py --markdown docs/compatibility.md
"""

from __future__ import annotations

import argparse
import collections
import datetime
import inspect
import json
import math
import multiprocessing as mp
import os
import random
import re
import sys
import time
import traceback
import types
import unittest

# Every dtype torch's CPU has that candle_bind has too.
DEFAULT_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                  "complex64", "complex128")
NAMESPACES = ("nn.functional", "linalg", "special", "fft", "masked", "signal.windows", "sparse")

# Ops whose outputs are random or uninitialised: only shape and dtype are compared.
RANDOM = {
    "bernoulli", "multinomial", "normal", "uniform", "cauchy", "exponential", "geometric", "log_normal",
    "rand_like", "randn", "randn_like", "randint", "randint_like", "nn.functional.dropout",
    "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
    "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "empty", "empty_like", "new_empty", "new_empty_strided",
    "empty_strided", "empty_permuted", "svd_lowrank", "pca_lowrank",
}


# Outputs defined only up to sign/phase (singular and eigen vectors): only these indices are compared by
# value, the others by shape and dtype.
UNIQUE_OUTPUTS = {"svd": (1,), "linalg.svd": (1,), "linalg.eigh": (0,), "linalg.eig": (), "linalg.eigvals": (),
                  "symeig": (0,)}


def out_of_scope(op) -> str | None:
    """Why an OpInfo is not run (autograd-only, sparse, quantized, CUDA-only, private aten ops)."""
    n = op.name
    if "backward" in n or n.endswith("_grad") or n in ("_softmax_backward_data",):
        return "autograd-only (a backward kernel)"
    if n.startswith("sparse.") or "sparse" in n or n in ("to_sparse",):
        return "sparse layouts"
    if "quantize" in n or n.startswith("q_"):
        return "quantized tensors"
    if n.startswith("jiterator_"):
        return "CUDA-only (jiterator)"
    if n.startswith("_") and not n.endswith("__"):
        return "private aten op (not public torch API)"
    return None


# --------------------------------------------------------------------------------------------- loading


def load_op_db():
    """op_db, with the `expecttest` test-only dependency stubbed (only its TestCase base is used)."""
    if "expecttest" not in sys.modules:
        try:
            import expecttest  # noqa: F401
        except ImportError:
            stub = types.ModuleType("expecttest")
            stub.TestCase = unittest.TestCase
            sys.modules["expecttest"] = stub
    import warnings

    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


def op_key(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


# ------------------------------------------------------------------------------------- entry points


def _resolve(root, path):
    obj = root
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _rebind(fn, cb):
    """A Python lambda from the OpInfo module, with `torch` (and `F`) meaning candle_bind."""
    g = dict(fn.__globals__)
    g["torch"] = cb
    g["F"] = cb.nn.functional
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def entries(op, torch, cb):
    """(namespace, display name, torch callable, candle_bind callable or None) for each entry point.

    A callable takes (input, *args, **kwargs). Missing on candle_bind -> None."""
    out = []
    f = op.op
    fname = getattr(f, "__name__", "")
    if fname.startswith("__") and fname.endswith("__"):  # operators: Tensor.__radd__, __getitem__
        ours = getattr(cb.Tensor, fname, None)
        out.append(("Tensor", f"Tensor.{fname}", lambda x, *a, **k: getattr(x, fname)(*a, **k),
                    None if ours is None else (lambda x, *a, **k: getattr(x, fname)(*a, **k))))
        return out
    path = None
    for cand in [op.name] + [f"{ns}.{fname}" for ns in NAMESPACES] + [fname]:
        try:
            if cand and _resolve(torch, cand) is f:
                path = cand
                break
        except AttributeError:
            continue
    if path is not None:
        path = path.removeprefix("torch.")  # OpInfos named torch.ops.aten.X
        ns = next((n for n in NAMESPACES if path.startswith(n + ".")), "torch")
        try:
            ours = _resolve(cb, path)
        except (AttributeError, ImportError):
            ours = None
        out.append((ns, path if ns != "torch" else f"torch.{path}", f, ours))
    elif getattr(f, "__module__", "") and "testing" in f.__module__ and isinstance(f, types.FunctionType):
        ns = next((n for n in NAMESPACES if op.name.startswith(n + ".")), "torch")
        out.append((ns, f"{op.name} (OpInfo wrapper)" if ns == "torch" else op.name, f, _rebind(f, cb)))
    m = op.method_variant
    if m is not None and getattr(m, "__name__", "") and m.__name__ != "<lambda>":
        name = m.__name__
        has = hasattr(cb.Tensor, name)
        out.append(("Tensor", f"Tensor.{name}", lambda x, *a, _n=name, **k: getattr(x, _n)(*a, **k),
                    (lambda x, *a, _n=name, **k: getattr(x, _n)(*a, **k)) if has else None))
    ip = op.inplace_variant
    if ip is not None and getattr(ip, "__name__", "") and ip.__name__ != "<lambda>":
        name = ip.__name__
        has = hasattr(cb.Tensor, name)
        out.append(("Tensor", f"Tensor.{name}", lambda x, *a, _n=name, **k: getattr(x, _n)(*a, **k),
                    (lambda x, *a, _n=name, **k: getattr(x, _n)(*a, **k)) if has else None))
    for alias in getattr(op, "aliases", ()) or ():
        aname = alias.name.removeprefix("torch.")  # some aliases are spelled torch.special.X
        ns = next((n for n in NAMESPACES if aname.startswith(n + ".")), "torch")
        try:
            ours = _resolve(cb, aname)
        except (AttributeError, ImportError):
            ours = None
        out.append((ns, aname if ns != "torch" else f"torch.{aname}", alias.op, ours))
    return out


# ------------------------------------------------------------------------------------ conversion


class Skip(Exception):
    """A sample that cannot be expressed for candle_bind (a torch.Generator argument, ...)."""


def to_cb(x, torch, cb):
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided or x.is_quantized:
            raise Skip("non-strided tensor")
        if x.dtype in (torch.complex32,):
            raise Skip("complex32")
        t = x.detach().resolve_conj().resolve_neg().contiguous()
        if t.dtype == torch.bfloat16:
            return cb.from_numpy(t.float().numpy()).to(cb.bfloat16)
        return cb.from_numpy(t.numpy().copy())
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.dtype):
        return getattr(cb, str(x).split(".")[-1])
    if isinstance(x, torch.device):
        return str(x)
    if isinstance(x, (torch.memory_format, torch.layout)):
        return getattr(cb, str(x).split(".")[-1])
    if isinstance(x, torch.Generator):
        raise Skip("torch.Generator argument")
    if isinstance(x, tuple):
        return tuple(to_cb(v, torch, cb) for v in x)
    if isinstance(x, list):
        return [to_cb(v, torch, cb) for v in x]
    if isinstance(x, dict):
        return {k: to_cb(v, torch, cb) for k, v in x.items()}
    if callable(x) and not isinstance(x, type):
        raise Skip("callable argument")
    return x


def _clone(x, torch):
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        return type(x)(_clone(v, torch) for v in x) if not hasattr(x, "_fields") else x
    if isinstance(x, dict):
        return {k: _clone(v, torch) for k, v in x.items()}
    return x


# ------------------------------------------------------------------------------------- comparison


def tolerances(op, dtype_name, torch):
    """OpInfo's widest toleranceOverride for this dtype, else torch.testing.assert_close's default for it."""
    from torch.testing._internal.common_device_type import toleranceOverride

    dtype = getattr(torch, dtype_name)
    # torch.testing.assert_close's defaults per dtype (what torch's own test_ops compares with)
    atol, rtol = {"float32": (1e-5, 1.3e-6), "float64": (1e-7, 1e-7), "float16": (1e-5, 1e-3),
                  "bfloat16": (1e-5, 1.6e-2)}.get(dtype_name, (0.0, 0.0))
    for info in getattr(op, "decorators", ()) or ():
        for d in getattr(info, "decorators", [info]) or ():
            if isinstance(d, toleranceOverride) and dtype in d.d:
                atol, rtol = max(atol, d.d[dtype].atol), max(rtol, d.d[dtype].rtol)
    return atol, rtol


def _dtype_name(d):
    return str(d).split(".")[-1]


def compare(ours, ref, torch, cb, atol, rtol, values=True):
    """None when equal, else a short reason."""
    import numpy as np

    if isinstance(ref, torch.Tensor):
        if not isinstance(ours, cb.Tensor):
            return f"returned {type(ours).__name__}, torch a Tensor"
        if tuple(ours.shape) != tuple(ref.shape):
            return f"shape {tuple(ours.shape)} != {tuple(ref.shape)}"
        if _dtype_name(ours.dtype) != _dtype_name(ref.dtype):
            return f"dtype {_dtype_name(ours.dtype)} != {_dtype_name(ref.dtype)}"
        if not values or ref.numel() == 0:
            return None
        r = ref.detach().resolve_conj().resolve_neg()
        r = (r.float() if r.dtype in (torch.bfloat16, torch.float16) else r).numpy()
        o = ours.float() if ours.dtype in (cb.bfloat16, cb.float16) else ours
        o = o.cpu().numpy()
        if r.dtype.kind in "fc":
            # An int input promoted to a float result (sin, fft of int64) takes the result dtype's tolerance.
            low = r.dtype in (np.float32, np.complex64)
            atol, rtol = max(atol, 1e-5 if low else 1e-7), max(rtol, 1.3e-6 if low else 1e-7)
            if not np.array_equal(np.isnan(o), np.isnan(r)):
                return "NaN positions differ"
            ok = np.isclose(o, r, rtol=rtol, atol=atol, equal_nan=True) | (o == r)
            if not ok.all():
                return f"values differ (max abs err {float(np.nanmax(np.abs(o.astype(np.float64) - r))):.3g})"
            return None
        return None if np.array_equal(o, r) else "values differ (exact dtype)"
    if isinstance(ref, (tuple, list)):
        if not isinstance(ours, (tuple, list)):
            return f"returned {type(ours).__name__}, torch a {type(ref).__name__}"
        if len(ours) != len(ref):
            return f"length {len(ours)} != {len(ref)}"
        for i, (o, r) in enumerate(zip(ours, ref)):
            why = compare(o, r, torch, cb, atol, rtol, values)
            if why:
                return f"[{i}] {why}"
        return None
    if isinstance(ref, (bool, int, float, complex)):
        if isinstance(ours, cb.Tensor):
            return "returned a Tensor, torch a Python number"
        if not isinstance(ours, (bool, int, float, complex)):
            return f"returned {type(ours).__name__}, torch {type(ref).__name__}"
        if isinstance(ref, float) and math.isnan(ref):
            return None if isinstance(ours, float) and math.isnan(ours) else "NaN differs"
        return None if (not values or abs(ours - ref) <= atol + rtol * abs(ref)) else f"{ours!r} != {ref!r}"
    if isinstance(ref, torch.dtype):
        return None if _dtype_name(ours) == _dtype_name(ref) else f"{ours} != {ref}"
    if ref is None:
        return None if ours is None else f"returned {type(ours).__name__}, torch None"
    return None


def _reason(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    msg = re.sub(r"0x[0-9a-f]+", "0x?", msg)
    msg = re.sub(r"\d+", "N", msg)
    return f"{type(e).__name__}: {msg[:150]}"


# ------------------------------------------------------------------------------------- the worker


def run_op(op, dtypes, torch, cb, send, inputs="sample"):
    """Runs every sample of one OpInfo; calls send(record) per (entry, dtype, sample)."""
    why = out_of_scope(op)
    key = op_key(op)
    if why:
        send({"op": key, "outcome": "out_of_scope", "reason": why})
        return
    ents = entries(op, torch, cb)
    if not ents:
        send({"op": key, "outcome": "out_of_scope", "reason": "no public entry point"})
        return
    rnd = op.name in RANDOM or any(r in op.name for r in ("dropout", "rand"))
    supported = op.supported_dtypes("cpu")
    if not any(getattr(torch, dn) in supported for dn in dtypes):
        send({"op": key, "outcome": "out_of_scope", "reason": "none of the dtypes run is supported by torch's CPU"})
    for dn in dtypes:
        dtype = getattr(torch, dn)
        if dtype not in supported:
            continue
        atol, rtol = tolerances(op, dn, torch)
        torch.manual_seed(0)
        try:
            if inputs == "error":  # dtype-free: run once, under the first dtype torch supports
                if dn != next(d for d in dtypes if getattr(torch, d) in supported):
                    continue
                samples = [e.sample_input for e in op.error_inputs("cpu")]
            else:
                samples = list(getattr(op, inputs + "_inputs")("cpu", dtype, requires_grad=False))
        except Exception as e:  # noqa: BLE001 - the database cannot build samples here
            send({"op": key, "dtype": dn, "outcome": "out_of_scope", "reason": f"sample_inputs failed: {_reason(e)}"})
            continue
        for i, s in enumerate(samples):
            for ns, name, theirs, ours in ents:
                rec = {"op": key, "entry": name, "ns": ns, "dtype": dn, "sample": i}
                send({"start": rec})
                rec.update(run_sample(s, theirs, ours, name, torch, cb, atol, rtol, rnd, op.name))
                send(rec)


def run_sample(s, theirs, ours, name, torch, cb, atol, rtol, rnd, op_name=""):
    inplace = name.endswith("_") and name.startswith("Tensor.") and not name.endswith("__")
    args, kwargs = s.args, s.kwargs
    x = s.input
    if inplace:
        x = _clone(x, torch)
    try:
        ours_in = (to_cb(x, torch, cb), to_cb(args, torch, cb), to_cb(kwargs, torch, cb))
    except Skip as e:
        return {"outcome": "skip", "reason": str(e)}
    except Exception as e:  # noqa: BLE001 - numpy cannot hold it (a meta tensor, >64 dims)
        return {"outcome": "skip", "reason": f"not convertible: {_reason(e)}"}
    torch.manual_seed(0)
    try:
        want = theirs(x, *args, **kwargs)
        torch_err = None
    except Exception as e:  # noqa: BLE001
        want, torch_err = None, e
    if ours is None:
        return {"outcome": "missing", "reason": f"no {name}"}
    cb.manual_seed(0)
    try:
        got = ours(ours_in[0], *ours_in[1], **ours_in[2])
    except BaseException as e:  # noqa: BLE001 - PanicException derives BaseException
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        if type(e).__name__ == "PanicException":
            return {"outcome": "panic", "reason": _reason(e), "call": _describe(s)}
        if torch_err is not None:
            if isinstance(e, type(torch_err)) or isinstance(torch_err, type(e)) and type(e) is not Exception:
                return {"outcome": "pass"}
            return {"outcome": "mismatch", "reason": f"raised {type(e).__name__}, torch {type(torch_err).__name__}"}
        # Not there at all (a method or function we lack, or a part we name as unsupported) vs a wrong answer.
        absent = isinstance(e, NotImplementedError) or "not supported by candle_bind" in str(e)
        absent = absent or isinstance(e, AttributeError) and "has no attribute" in str(e)
        kind = "missing" if absent else "error"
        return {"outcome": kind, "reason": _reason(e), "call": _describe(s)}
    if torch_err is not None:
        return {"outcome": "mismatch", "reason": f"no error (torch raised {type(torch_err).__name__})"}
    rnd = rnd or bool(kwargs.get("dropout_p")) or kwargs.get("training") and kwargs.get("p")
    if op_name == "nn.functional.multi_head_attention_forward" and len(args) > 9:  # dropout_p is positional
        rnd = rnd or bool(args[9]) and kwargs.get("training", True)
    try:
        unique = UNIQUE_OUTPUTS.get(op_name)
        if unique is not None and isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)) and len(got) == len(want):
            why = next((f"[{i}] {w}" for i, (o, r) in enumerate(zip(got, want))
                        if (w := compare(o, r, torch, cb, atol, rtol, values=not rnd and i in unique))), None)
        else:
            why = compare(got, want, torch, cb, atol, rtol, values=not rnd)
    except Exception as e:  # noqa: BLE001 - reading our output failed
        why = f"output unreadable: {_reason(e)}"
    return {"outcome": "mismatch", "reason": why, "call": _describe(s)} if why else {"outcome": "pass"}


def _describe(s):
    def d(x):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return f"T{list(x.shape)}:{_dtype_name(x.dtype)}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(d(v) for v in x) + "]"
        return repr(x)[:40]
    kw = ", ".join(f"{k}={d(v)}" for k, v in s.kwargs.items())
    return f"({d(s.input)}, {', '.join(d(a) for a in s.args)}{', ' if kw else ''}{kw})"


def worker(conn, dtypes, inputs="sample"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    import candle_bind as cb

    if hasattr(cb, "set_num_threads"):
        cb.set_num_threads(1)
    by_key = {op_key(o): o for o in load_op_db()}
    conn.send(("ready", None))
    while True:
        key = conn.recv()
        if key is None:
            return
        try:
            run_op(by_key[key], dtypes, torch, cb, lambda r: conn.send(("rec", r)), inputs)
        except Exception as e:  # noqa: BLE001 - a runner bug: record it, keep going
            conn.send(("rec", {"op": key, "outcome": "runner_error", "reason": _reason(e), "tb": traceback.format_exc()[-800:]}))
        conn.send(("done", key))


# ------------------------------------------------------------------------------------- the parent


class Worker:
    def __init__(self, dtypes, inputs="sample"):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker, args=(child, dtypes, inputs), daemon=True)
        self.proc.start()
        self.dtypes = dtypes
        self.key = None
        self.started = None
        self.last = None
        self.ready = False

    def kill(self):
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)


def run(keys, dtypes, workers=2, timeout=300.0, progress=True, inputs="sample"):
    """Runs the OpInfos named by keys; returns the list of records."""
    records, todo = [], list(keys)
    pool = [Worker(dtypes, inputs) for _ in range(min(workers, len(todo)) or 1)]
    done = 0
    t0 = time.time()
    while pool:
        for w in list(pool):
            if w.ready and w.key is None:
                if not todo:
                    w.conn.send(None)
                    w.proc.join(10)
                    pool.remove(w)
                    continue
                w.key, w.started, w.last = todo.pop(0), time.time(), None
                w.conn.send(w.key)
            alive = True
            while alive and w.conn.poll(0.05):
                try:
                    kind, val = w.conn.recv()
                except (EOFError, OSError):
                    alive = False
                    break
                if kind == "ready":
                    w.ready = True
                elif kind == "rec":
                    if "start" in val:
                        w.last = val["start"]
                    else:
                        records.append(val)
                        w.last = None
                elif kind == "done":
                    done += 1
                    if progress:
                        print(f"[{done}/{len(keys)} {time.time() - t0:.0f}s] {val}", file=sys.stderr, flush=True)
                    w.key = None
            hung = w.key is not None and time.time() - w.started > timeout
            if not w.proc.is_alive() or not alive or hung:
                if w.key is not None:
                    if not hung:
                        w.proc.join(2)  # for its exit code
                    rec = dict(w.last or {"op": w.key})
                    rec.update(outcome="crash", reason="timeout" if hung else f"worker died (exit {w.proc.exitcode})")
                    records.append(rec)
                    done += 1
                    print(f"[{done}/{len(keys)}] {w.key}: {rec['reason']}", file=sys.stderr, flush=True)
                elif not w.ready:
                    raise RuntimeError("a worker failed to start")
                w.kill()
                pool.remove(w)
                if todo:
                    pool.append(Worker(dtypes, inputs))
    return records


# ------------------------------------------------------------------------------------- reporting


def summarize(records):
    """Per OpInfo / entry: outcome counts; totals."""
    ops = collections.OrderedDict()
    for r in records:
        ops.setdefault(r["op"], []).append(r)
    per_entry = collections.defaultdict(collections.Counter)
    ns_of = {}
    for r in records:
        if "entry" in r:
            per_entry[r["entry"]][r["outcome"]] += 1
            ns_of[r["entry"]] = r["ns"]
    out_scope = {k: v[0]["reason"] for k, v in ops.items() if v and v[0]["outcome"] == "out_of_scope" and "entry" not in v[0]}
    in_scope = [k for k in ops if k not in out_scope]

    def op_status(k, dtype=None):
        rs = [r for r in ops[k] if "entry" in r and r["outcome"] != "skip" and (dtype is None or r.get("dtype") == dtype)]
        if not rs:
            return None
        primary = rs[0]["entry"]
        rs = [r for r in rs if r["entry"] == primary]
        c = collections.Counter(r["outcome"] for r in rs)
        if c["missing"] == len(rs):
            return "missing"
        return "all" if c["pass"] == len(rs) else ("some" if c["pass"] else "none")

    existing = [k for k in in_scope if op_status(k) not in (None, "missing")]
    f32_all = [k for k in in_scope if op_status(k, "float32") == "all"]
    triples = collections.Counter(r["outcome"] for r in records if "entry" in r)
    per_dtype = collections.defaultdict(collections.Counter)
    for r in records:
        if "entry" in r and r["outcome"] != "skip":
            per_dtype[r.get("dtype")][r["outcome"]] += 1
    with_f32 = [k for k in in_scope if op_status(k, "float32") is not None]
    counted = sum(v for k, v in triples.items() if k != "skip")
    return {
        # the two headline figures
        "float32_ops_pct": 100.0 * len(f32_all) / max(len(with_f32), 1), "float32_ops": len(with_f32),
        "triples_pass_pct": 100.0 * triples["pass"] / max(counted, 1),
        "per_dtype": {d: dict(c) for d, c in per_dtype.items()},
        "opinfos": len(ops), "in_scope": len(in_scope), "out_of_scope": out_scope,
        "existing": len(existing), "float32_all_pass": len(f32_all),
        "all_pass": sum(op_status(k) == "all" for k in in_scope),
        "samples": dict(triples), "per_entry": {e: dict(c) for e, c in per_entry.items()}, "ns_of": ns_of,
    }


def entry_status(c):
    n = sum(v for k, v in c.items() if k != "skip")
    if n == 0:
        return "skip"
    if c.get("missing", 0) == n:
        return "missing"
    return "all" if c.get("pass", 0) == n else ("some" if c.get("pass", 0) else "none")


def reasons(records, outcomes=("mismatch", "error", "missing", "panic", "crash"), top=25):
    c = collections.Counter()
    ops = collections.defaultdict(set)
    for r in records:
        if r.get("outcome") in outcomes and "entry" in r:
            key = f"{r['outcome']}: {r.get('reason')}"
            c[key] += 1
            ops[key].add(r["entry"])
    return [(k, n, sorted(ops[k])[:6]) for k, n in c.most_common(top)]


def markdown(records, summary, dtypes, elapsed):
    import torch

    lines = [
        "# Compatibility with torch's OpInfo database",
        "",
        f"Generated by `python conformance/opinfo.py --markdown docs/compatibility.md` on "
        f"{datetime.date.today().isoformat()} against torch {torch.__version__} (CPU), dtypes {', '.join(dtypes)}, "
        f"in {elapsed / 60:.0f} min on 2 cores. Each sample of `op.sample_inputs('cpu', dtype)` is run through "
        "torch and candle_bind; an entry point passes when every sample matches torch (shape, dtype, values "
        "within the OpInfo's tolerance, or the same exception type where torch raises).",
        "",
        f"- OpInfos: {summary['opinfos']} ({summary['in_scope']} in scope, {len(summary['out_of_scope'])} out of scope: autograd-only, sparse, quantized, CUDA-only, private)",
        f"- In scope and existing in candle_bind: {summary['existing']}; passing every sample: {summary['all_pass']}; "
        f"passing every float32 sample: {summary['float32_all_pass']}",
        "- (entry, dtype, sample) triples: " + ", ".join(f"{k} {v}" for k, v in sorted(summary["samples"].items(), key=lambda kv: -kv[1])),
        "",
        f"**Headline: {summary['float32_ops_pct']:.1f}% of the in-scope OpInfos with float32 samples "
        f"({summary['float32_all_pass']} of {summary['float32_ops']}) pass every float32 sample; "
        f"{summary['triples_pass_pct']:.1f}% of all (entry, dtype, sample) triples pass.**",
        "",
        "## Per dtype ((entry, sample) pairs)",
        "",
        "| dtype | pass | mismatch | error | missing | panic / crash | pass % |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(f"| {d} | {c.get('pass', 0)} | {c.get('mismatch', 0)} | {c.get('error', 0)} | {c.get('missing', 0)} | "
          f"{c.get('panic', 0) + c.get('crash', 0)} | {100.0 * c.get('pass', 0) / max(sum(c.values()), 1):.1f} |"
          for d, c in sorted(summary["per_dtype"].items(), key=lambda kv: str(kv[0]))),
        "",
        "## Per namespace (entry points; Tensor = methods and in-place methods)",
        "",
        "| namespace | entry points | pass all samples | pass some | pass none | missing |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    by_ns = collections.defaultdict(collections.Counter)
    for e, c in summary["per_entry"].items():
        by_ns[summary["ns_of"][e]][entry_status(c)] += 1
    order = ["torch", "Tensor"] + [n for n in NAMESPACES]
    for ns in sorted(by_ns, key=lambda n: order.index(n) if n in order else 99):
        c = by_ns[ns]
        lines.append(f"| {ns} | {sum(c.values()) - c['skip']} | {c['all']} | {c['some']} | {c['none']} | {c['missing']} |")
    lines += ["", "## Top failure reasons (by samples)", "", "| outcome: reason | samples | entry points (first few) |", "| --- | ---: | --- |"]
    for k, n, ents in reasons(records):
        lines.append(f"| {k.replace('|', '/')} | {n} | {', '.join(ents)} |")
    missing = collections.Counter()
    for e, c in summary["per_entry"].items():
        if entry_status(c) == "missing":
            missing[summary["ns_of"][e]] += 1
    lines += ["", "## Missing entry points", ""]
    for ns, n in missing.most_common():
        names = sorted(e for e, c in summary["per_entry"].items() if entry_status(c) == "missing" and summary["ns_of"][e] == ns)
        lines.append(f"- **{ns}** ({n}): " + ", ".join(f"`{x}`" for x in names))
    lines += ["", "## Partly passing entry points", ""]
    some = sorted(e for e, c in summary["per_entry"].items() if entry_status(c) in ("some", "none"))
    lines.append(", ".join(f"`{e}` ({summary['per_entry'][e].get('pass', 0)}/{sum(v for k, v in summary['per_entry'][e].items() if k != 'skip')})" for e in some))
    lines += ["", "## Out of scope", ""]
    why = collections.defaultdict(list)
    for k, v in summary["out_of_scope"].items():
        why[v].append(k)
    for v, ks in sorted(why.items()):
        lines.append(f"- {v}: " + ", ".join(f"`{k}`" for k in sorted(ks)))
    return "\n".join(lines) + "\n"


def select(all_keys, ops=None, sample=None):
    if ops:
        want = set(ops)
        return [k for k in all_keys if k in want or k.split(".")[0] in want or any(k == o or k.startswith(o + ".") for o in want)]
    if sample:
        return sorted(random.Random(1234).sample(all_keys, min(sample, len(all_keys))))
    return list(all_keys)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", help="comma-separated OpInfo names (name or name.variant)")
    p.add_argument("--sample", type=int, help="a deterministic sample of N OpInfos")
    p.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES))
    p.add_argument("--inputs", default="sample", choices=("sample", "reference", "error"),
                   help="OpInfo's sample_inputs, reference_inputs (a superset with extremal values; slower), "
                        "or error_inputs (torch raises on each: we must raise the same type)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per OpInfo before it counts as a crash")
    p.add_argument("--json")
    p.add_argument("--markdown")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    dtypes = tuple(a.dtypes.split(","))
    keys = select([op_key(o) for o in load_op_db()], a.ops.split(",") if a.ops else None, a.sample)
    t0 = time.time()
    records = run(keys, dtypes, workers=min(a.workers, 2), timeout=a.timeout, progress=not a.quiet, inputs=a.inputs)
    elapsed = time.time() - t0
    s = summarize(records)
    print(f"OpInfos {s['opinfos']}, in scope {s['in_scope']}, existing {s['existing']}, all samples pass {s['all_pass']}, "
          f"float32 all pass {s['float32_all_pass']}; samples {s['samples']}; {elapsed:.0f}s")
    print(f"headline: {s['float32_ops_pct']:.1f}% of {s['float32_ops']} in-scope OpInfos pass every float32 sample; "
          f"{s['triples_pass_pct']:.1f}% of triples pass")
    for r in records:
        if r["outcome"] in ("panic", "crash", "runner_error"):
            print(f"  {r['outcome']}: {r.get('entry', r['op'])} {r.get('dtype', '')} #{r.get('sample', '')} {r.get('call', '')} {r.get('reason')}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"summary": s, "records": records, "elapsed_s": elapsed, "dtypes": dtypes}, f)
    if a.markdown:
        os.makedirs(os.path.dirname(a.markdown) or ".", exist_ok=True)
        with open(a.markdown, "w") as f:
            f.write(markdown(records, s, dtypes, elapsed))
    return s


if __name__ == "__main__":
    main()
