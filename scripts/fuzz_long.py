#!/usr/bin/env python
"""Long fuzz runs for candle_bind, outside CI.

API surface (tests/fuzz_api.py, real torch as the oracle):
    python scripts/fuzz_long.py --calls 100000 --seed 7 [--no-torch] [--json out.json]

File readers (mutated valid files; each load must succeed or raise an Exception subclass, never crash,
panic, hang or blow up memory):
    python scripts/fuzz_long.py --files 1000000 --seed 7 [--formats safetensors,pth,gguf] [--jobs 2]
          [--timeout 10] [--out DIR]

Readers exercised: candle_bind.safetensors.load (bytes) / load_file / safe_open(...).get_tensor,
candle_bind.load of torch.save zips (bytes and path), candle_bind.gguf.load. Mutations: bit/byte flips,
interesting 64-bit words, truncation, insertions/deletions/duplications, and format-aware ones
(safetensors header length and JSON: overlapping/duplicated/reversed/huge offsets, huge shapes, bad
dtypes, duplicate keys; zip members of .pth dropped/truncated/mutated; GGUF counts, string lengths,
dims, ggml types and offsets). Inputs are generated from (seed, index) inside worker processes, which
are restarted when they die; the input that killed one is regenerated and saved under --out (a temp
dir by default), and `--replay FILE --format F` loads one saved input in this process.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

FORMATS = ("safetensors", "pth", "gguf")
INTERESTING64 = [0, 1, 2, 7, 8, 255, 2 ** 16, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40, 2 ** 62,
                 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64 - 8]


# ---------------------------------------------------------------------------------------------
# API mode
# ---------------------------------------------------------------------------------------------

def api_mode(n: int, seed: int, chunk: int, with_torch: bool, json_out=None) -> int:
    import fuzz_api as fz

    if with_torch:
        try:
            import torch  # noqa: F401
        except Exception:
            with_torch = False
            print("torch not importable: crash checks only")
    gen = fz.Generator(seed)
    t0 = time.time()
    allf, done = [], 0
    torch_ok = cb_ok = 0
    while done < n:
        k = min(chunk, n - done)
        calls = gen.calls(k, done)
        cb, th = fz.run_both(calls, batch=1000, with_torch=with_torch,
                             log=lambda s: print("  " + s, flush=True))
        rep = fz.compare(calls, cb, th)
        allf += rep["findings"]
        cb_ok += rep["stats"]["cb_ok_frac"] * k
        torch_ok += (rep["stats"]["torch_ok_frac"] or 0) * k
        done += k
        el = time.time() - t0
        cnt = {}
        for f in allf:
            cnt[f["kind"]] = cnt.get(f["kind"], 0) + 1
        print(f"{done}/{n} calls  {done / el:.0f} calls/s  " + "  ".join(f"{a}={b}" for a, b in sorted(cnt.items())),
              flush=True)
    stats = {k: sum(1 for f in allf if f["kind"] == k) for k in fz.KINDS}
    stats.update(calls=n, cb_ok_frac=cb_ok / n, torch_ok_frac=(torch_ok / n) if with_torch else None)
    rep = {"findings": allf, "stats": stats}
    print(fz.format_report(rep))
    print(f"\n{n} calls in {time.time() - t0:.0f} s ({n / (time.time() - t0):.0f} calls/s)")
    if json_out:
        with open(json_out, "w") as f:
            json.dump(rep, f)
    return 1 if stats["crash"] else 0


# ---------------------------------------------------------------------------------------------
# Seed corpora (deterministic)
# ---------------------------------------------------------------------------------------------

_ST_DT = {"F32": 4, "F64": 8, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "U8": 1, "BOOL": 1, "I8": 1}


def st_build(entries, metadata=None, raw_header=None, pad=True):
    """safetensors bytes from [(name, dtype, shape, data_bytes)] (offsets computed) or a raw header."""
    if raw_header is None:
        hdr, off, body = {}, 0, b""
        for name, dt, shape, data in entries:
            hdr[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
            off += len(data)
            body += data
        if metadata is not None:
            hdr["__metadata__"] = metadata
        raw = json.dumps(hdr, separators=(",", ":")).encode()
    else:
        raw, body = raw_header, b"".join(e[3] for e in entries)
    if pad:
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + body


def st_entries(rng):
    out = []
    for j in range(rng.randint(1, 5)):
        dt = rng.choice(["F32", "F32", "F64", "F16", "BF16", "I64", "I32", "U8", "BOOL", "I16"])
        shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
        n = 1
        for d in shape:
            n *= d
        data = bytes(rng.randrange(256) for _ in range(n * _ST_DT[dt]))
        if dt == "BOOL":
            data = bytes(b & 1 for b in data)
        out.append((f"t{j}.weight", dt, shape, data))
    return out


def build_corpus(d: str):
    """Valid files: safetensors (built here), .pth (torch.save when torch is there, else candle_bind.save),
    GGUF (candle_bind.gguf.save). Returns {format: [bytes]}."""
    import candle_bind as cb
    from candle_bind import gguf

    rng = random.Random(1)
    corpus = {"safetensors": [], "pth": [], "gguf": []}
    for i in range(6):
        corpus["safetensors"].append(st_build(st_entries(rng), metadata={"format": "pt"} if i % 2 else None))
    corpus["safetensors"].append(cb.safetensors.save({"a": cb.ones(2, 3), "b": cb.arange(5), "c": cb.zeros(())},
                                                     metadata={"k": "v"}))
    try:
        import torch

        objs = [
            {"w": torch.randn(3, 4), "b": torch.arange(4), "h": torch.ones(2, dtype=torch.float16)},
            {"sd": {"a": torch.zeros(2, 2, dtype=torch.bfloat16), "v": torch.arange(6.0).view(2, 3)[:, 1:]},
             "epoch": 3, "name": "x", "lst": [1, 2.5, None], "i8": torch.tensor([-1, 2], dtype=torch.int8)},
            {"tied": (lambda t: [t, t[1:]])(torch.randn(5)), "bool": torch.tensor([True, False]),
             "e": torch.zeros(0, 3), "s": torch.tensor(2.5)},
        ]
        for o in objs:
            buf = io.BytesIO()
            torch.save(o, buf)
            corpus["pth"].append(buf.getvalue())
    except Exception:
        for o in ({"w": cb.ones(3, 4), "b": cb.arange(4)}, {"x": cb.zeros(2, 2), "n": 3, "s": "str"}):
            buf = io.BytesIO()
            cb.save(o, buf)
            corpus["pth"].append(buf.getvalue())
    g1 = os.path.join(d, "seed1.gguf")
    gguf.save(g1, {"general.architecture": "llama", "general.alignment": 32, "n": 7, "f": 1.5, "flag": True,
                   "tokens": ["a", "bb", "ccc"], "ints": [1, 2, 3]},
              {"w": gguf.quantize(cb.ones(4, 64), "Q4_0"), "q8": gguf.quantize(cb.arange(64.0).reshape(2, 32), "Q8_0"),
               "b": cb.ones(8)})
    g2 = os.path.join(d, "seed2.gguf")
    gguf.save(g2, {"name": "x"}, {"n": cb.ones(3, 5), "k": gguf.quantize(cb.ones(1, 256), "Q4K")})
    for p in (g1, g2):
        with open(p, "rb") as f:
            corpus["gguf"].append(f.read())
    return corpus


# ---------------------------------------------------------------------------------------------
# Mutators
# ---------------------------------------------------------------------------------------------

def m_bytes(rng: random.Random, b: bytearray) -> bytearray:
    """One generic byte-level mutation."""
    if not b:
        return bytearray(rng.randbytes(rng.randint(0, 16)))
    k = rng.randrange(9)
    n = len(b)
    if k == 0:  # bit flips
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(n)
            b[i] ^= 1 << rng.randrange(8)
    elif k == 1:  # random / interesting bytes
        for _ in range(rng.randint(1, 6)):
            b[rng.randrange(n)] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
    elif k == 2:  # truncate
        del b[rng.randrange(n):]
    elif k == 3:  # interesting 64-bit / 32-bit word at a random or aligned spot
        i = rng.randrange(n)
        if rng.random() < 0.5:
            i -= i % 8
        v = rng.choice(INTERESTING64 + [n, n - 1, n + 1, n * 2])
        w = struct.pack("<Q", v % 2 ** 64) if rng.random() < 0.7 else struct.pack("<I", v % 2 ** 32)
        b[i:i + len(w)] = w
    elif k == 4:  # insert
        i = rng.randrange(n + 1)
        b[i:i] = rng.randbytes(rng.randint(1, 64))
    elif k == 5:  # delete range
        i = rng.randrange(n)
        del b[i:i + rng.randint(1, 64)]
    elif k == 6:  # duplicate range
        i = rng.randrange(n)
        j = min(n, i + rng.randint(1, 128))
        b[j:j] = b[i:j]
    elif k == 7:  # swap two ranges
        i, j = rng.randrange(n), rng.randrange(n)
        L = rng.randint(1, 16)
        b[i:i + L], b[j:j + L] = b[j:j + L], b[i:i + L]
    else:  # append junk
        b += rng.randbytes(rng.randint(1, 256))
    return b


def m_safetensors(rng: random.Random, seed: bytes) -> bytes:
    k = rng.random()
    if k < 0.35:
        b = bytearray(seed)
        for _ in range(rng.randint(1, 3)):
            b = m_bytes(rng, b)
        return bytes(b)
    if k < 0.45:  # header length field
        b = bytearray(seed)
        (hl,) = struct.unpack("<Q", b[:8])
        v = rng.choice(INTERESTING64 + [hl + 1, hl - 1, len(b), len(b) - 8, len(b) - 7, hl + 8, 2 ** 27])
        b[:8] = struct.pack("<Q", v % 2 ** 64)
        return bytes(b)
    # structure-aware: edit the JSON header
    (hl,) = struct.unpack("<Q", seed[:8])
    hdr = json.loads(seed[8:8 + hl])
    body = seed[8 + hl:]
    names = [n for n in hdr if n != "__metadata__"]
    if not names:
        return seed
    a = rng.choice(names)
    other = hdr[rng.choice(names)]
    e = hdr[a]
    c = rng.randrange(16)
    huge = rng.choice([2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 10 ** 30])
    if c == 0:
        e["data_offsets"] = list(other["data_offsets"])  # duplicated
    elif c == 1:
        s, t = other["data_offsets"]
        e["data_offsets"] = [max(0, s - 1), t + 1]  # overlapping
    elif c == 2:
        e["data_offsets"] = e["data_offsets"][::-1]
    elif c == 3:
        e["data_offsets"] = rng.choice([[0, huge], [huge, huge + 4], [huge - 4, huge], [-1, 3], [0], [0, 1, 2], "x",
                                        [0.5, 4], None, [len(body), len(body) + 4], [0, len(body) + 1]])
    elif c == 4:
        e["shape"] = rng.choice([[huge], [huge, huge], [-1], [2 ** 32, 2 ** 32, 0], [3, -2], "abc", None, [1.5],
                                 [0], [], [2 ** 31] * 3, [1] * 64])
    elif c == 5:
        e["dtype"] = rng.choice(["F8_E4M3", "F8_E5M2", "I8", "U16", "U32", "U64", "C64", "X", "", 7, None, "f32",
                                 "BOOL", "U8", "F64"])
    elif c == 6:
        hdr["__metadata__"] = rng.choice([{"a": 1}, [1], "s", None, {"a": {"b": "c"}}, {"": ""}, 5])
    elif c == 7:
        del e[rng.choice(list(e))]
    elif c == 8:
        e[rng.choice(["extra", "dtype2", "offsets"])] = [1, 2]
    elif c == 9:  # duplicate key in raw JSON
        raw = json.dumps(hdr, separators=(",", ":"))
        dup = json.dumps({a: other}, separators=(",", ":"))[1:-1]
        raw = raw[:-1] + "," + dup + "}"
        return st_build([("", "", [], body)], raw_header=raw.encode())
    elif c == 10:  # header not JSON / odd JSON
        raw = rng.choice([b"", b"{", b"[]", b"null", b"{}", b'{"a":', b"\xff\xfe{}", b'{"a":{}}', b"1e999",
                          json.dumps(hdr).encode() + b"\x00", b'{"a":' * 5000])
        return st_build([("", "", [], body)], raw_header=raw, pad=rng.random() < 0.5)
    elif c == 11:  # body shortened / extended
        body = body[: rng.randrange(len(body) + 1)] if rng.random() < 0.7 else body + rng.randbytes(16)
    elif c == 12:  # many tensors
        for j in range(rng.randint(10, 2000)):
            hdr[f"x{j}"] = dict(e)
    elif c == 13:
        hdr = rng.choice([[hdr], {"__metadata__": {}}, {a: e}, {"": e}])
    elif c == 14:  # shape inconsistent with byte length
        e["shape"] = [d + 1 for d in e.get("shape", [])] or [2]
    else:  # nothing structural, but bytes of the JSON
        raw = bytearray(json.dumps(hdr).encode())
        raw = m_bytes(rng, raw)
        return st_build([("", "", [], body)], raw_header=bytes(raw))
    try:
        raw = json.dumps(hdr, separators=(",", ":")).encode()
    except (ValueError, OverflowError):
        raw = b"{}"
    return st_build([("", "", [], body)], raw_header=raw, pad=rng.random() < 0.8)


def m_pth(rng: random.Random, seed: bytes) -> bytes:
    if rng.random() < 0.4:
        b = bytearray(seed)
        for _ in range(rng.randint(1, 3)):
            b = m_bytes(rng, b)
        return bytes(b)
    zin = zipfile.ZipFile(io.BytesIO(seed))
    members = [(i.filename, zin.read(i.filename)) for i in zin.infolist()]
    c = rng.randrange(8)
    j = rng.randrange(len(members))
    name, data = members[j]
    pk = [k for k, (n, _) in enumerate(members) if n.endswith("data.pkl")]
    st = [k for k, (n, _) in enumerate(members) if "/data/" in n]
    if c in (0, 1) and pk:  # mutate the pickle
        k = pk[0]
        b = bytearray(members[k][1])
        for _ in range(rng.randint(1, 3)):
            b = m_bytes(rng, b)
        members[k] = (members[k][0], bytes(b))
    elif c == 2 and st:  # truncate / grow a storage
        k = rng.choice(st)
        d = members[k][1]
        members[k] = (members[k][0], d[: rng.randrange(len(d) + 1)] if rng.random() < 0.7 else d + b"\0" * 64)
    elif c == 3:  # drop a member
        del members[j]
    elif c == 4:
        members = [(n, (b"big" if n.endswith("byteorder") else d)) for n, d in members]
        if rng.random() < 0.5:
            members = [(n, (rng.choice([b"99\n", b"", b"x", b"1\n"]) if n.endswith("version") else d))
                       for n, d in members]
    elif c == 5:  # rename a member / duplicate member
        n2 = rng.choice([name + "x", name.replace("archive", "other"), "../evil", name.upper(), members[0][0]])
        members.append((n2, data))
    elif c == 6 and st:  # swap storages
        k1, k2 = rng.choice(st), rng.choice(st)
        members[k1], members[k2] = (members[k1][0], members[k2][1]), (members[k2][0], members[k1][1])
    else:
        members.append(("archive/data/999", b"\0" * rng.randint(0, 64)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for n, d in members:
                z.writestr(n, d)
    return out.getvalue()


def gguf_fields(b: bytes):
    """Positions (offset, size, kind) of the structural fields of a GGUF file, as far as it parses."""
    fields = []
    try:
        fields.append((4, 4, "version"))
        fields.append((8, 8, "n_tensors"))
        fields.append((16, 8, "n_kv"))
        n_t, n_kv = struct.unpack_from("<QQ", b, 8)
        p = 24
        sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

        def rd_str(p, kind):
            (L,) = struct.unpack_from("<Q", b, p)
            fields.append((p, 8, kind))
            return p + 8 + L

        def rd_val(p, t):
            if t in sizes:
                return p + sizes[t]
            if t == 8:
                return rd_str(p, "strlen")
            if t == 9:
                (et,) = struct.unpack_from("<I", b, p)
                fields.append((p, 4, "arrtype"))
                (n,) = struct.unpack_from("<Q", b, p + 4)
                fields.append((p + 4, 8, "arrlen"))
                p += 12
                for _ in range(min(n, 10000)):
                    p = rd_val(p, et)
                return p
            raise ValueError

        for _ in range(min(n_kv, 10000)):
            p = rd_str(p, "keylen")
            (t,) = struct.unpack_from("<I", b, p)
            fields.append((p, 4, "valtype"))
            p = rd_val(p + 4, t)
        for _ in range(min(n_t, 10000)):
            p = rd_str(p, "namelen")
            (nd,) = struct.unpack_from("<I", b, p)
            fields.append((p, 4, "ndims"))
            p += 4
            for _ in range(min(nd, 8)):
                fields.append((p, 8, "dim"))
                p += 8
            fields.append((p, 4, "ggmltype"))
            fields.append((p + 4, 8, "offset"))
            p += 12
    except (struct.error, ValueError):
        pass
    return fields


def m_gguf(rng: random.Random, seed: bytes) -> bytes:
    b = bytearray(seed)
    if rng.random() < 0.35:
        for _ in range(rng.randint(1, 3)):
            b = m_bytes(rng, b)
        return bytes(b)
    fields = gguf_fields(seed)
    for _ in range(rng.randint(1, 2)):
        off, size, kind = rng.choice(fields)
        if kind == "ggmltype":
            v = rng.choice(list(range(0, 40)) + [2 ** 31, 2 ** 32 - 1])
        elif kind in ("valtype", "arrtype"):
            v = rng.choice(list(range(0, 14)) + [99, 2 ** 32 - 1])
        elif kind == "ndims":
            v = rng.choice([0, 1, 2, 3, 4, 5, 8, 9, 64, 2 ** 31, 2 ** 32 - 1])
        elif kind == "version":
            v = rng.choice([0, 1, 2, 3, 4, 2 ** 32 - 1])
        elif kind == "offset":
            (cur,) = struct.unpack_from("<Q", b, off)
            v = rng.choice(INTERESTING64 + [cur + 1, cur + 32, max(cur - 32, 0), len(b), len(b) - 1])
            if rng.random() < 0.3:  # overlap with another tensor's data
                offs = [o for o, s, k in fields if k == "offset"]
                v = struct.unpack_from("<Q", b, rng.choice(offs))[0]
        else:
            (cur,) = struct.unpack_from("<Q" if size == 8 else "<I", b, off)
            v = rng.choice(INTERESTING64 + [cur + 1, max(cur - 1, 0), cur * 2, cur + 2 ** 32, len(b)])
        v %= 2 ** (8 * size)
        b[off:off + size] = struct.pack("<Q" if size == 8 else "<I", v)
    if rng.random() < 0.2:
        del b[rng.randrange(len(b)):]
    return bytes(b)


MUTATORS = {"safetensors": m_safetensors, "pth": m_pth, "gguf": m_gguf}


def make_input(corpus, formats, seed: int, i: int):
    rng = random.Random(f"{seed}:{i}")
    fmt = formats[i % len(formats)]
    base = rng.choice(corpus[fmt])
    data = base
    for _ in range(1 if rng.random() < 0.7 else rng.randint(2, 4)):
        try:  # structure-aware mutators need a parseable input: else a byte-level one
            data = MUTATORS[fmt](rng, data)
        except Exception:
            data = bytes(m_bytes(rng, bytearray(data)))
    return fmt, data, rng.randrange(3)


# ---------------------------------------------------------------------------------------------
# Loading (worker side)
# ---------------------------------------------------------------------------------------------

def _touch(cb, x, depth=0):
    """Reads the values of what was loaded (small tensors only) to reach lazy / mmap paths."""
    if depth > 6:
        return
    if isinstance(x, cb.Tensor):
        n = 1
        for d in x.shape:
            n *= d
        if n <= 1 << 20:
            x.to(cb.float32).sum().item() if n else None
    elif isinstance(x, dict):
        for v in list(x.values())[:200]:
            _touch(cb, v, depth + 1)
    elif isinstance(x, (list, tuple)):
        for v in list(x)[:200]:
            _touch(cb, v, depth + 1)


def load_one(cb, fmt: str, data: bytes, variant: int, path: str):
    if fmt == "safetensors":
        if variant == 0:
            _touch(cb, cb.safetensors.load(data))
            return
        with open(path, "wb") as f:
            f.write(data)
        if variant == 1:
            _touch(cb, cb.safetensors.load_file(path))
        else:
            with cb.safetensors.safe_open(path, framework="pt") as h:
                h.metadata()
                for k in list(h.keys())[:200]:
                    h.get_slice(k).get_shape()
                    _touch(cb, h.get_tensor(k))
    elif fmt == "pth":
        if variant == 0:
            _touch(cb, cb.load(data))
        else:
            with open(path, "wb") as f:
                f.write(data)
            _touch(cb, cb.load(path, weights_only=True))
    else:
        from candle_bind import gguf

        with open(path, "wb") as f:
            f.write(data)
        meta, ts = gguf.load(path)
        for q in list(ts.values())[:200]:
            n = 1
            for d in q.shape:
                n *= d
            if n <= 1 << 20:
                q.dequantize().sum().item()


def file_worker(workdir: str, formats, seed: int, start: int, end: int) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    res = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = open(os.devnull, "w")
    import pickle

    import candle_bind as cb
    import candle_bind.safetensors  # noqa: F401

    with open(os.path.join(workdir, "corpus.pkl"), "rb") as f:
        corpus = pickle.load(f)
    path = os.path.join(workdir, f"in_{os.getpid()}")
    res.write("READY\n")
    for i in range(start, end):
        fmt, data, variant = make_input(corpus, formats, seed, i)
        res.write(f"S {i}\n")
        try:
            load_one(cb, fmt, data, variant, path)
            st = "ok"
        except Exception as e:
            st = "exc " + type(e).__name__
        except BaseException as e:
            st = "panic " + type(e).__name__ + ": " + str(e)[:200].replace("\n", " ")
        res.write(f"R {i} {st}\n")
    res.write("DONE\n")
    try:
        os.unlink(path)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# File mode (parent)
# ---------------------------------------------------------------------------------------------

def run_range(workdir, formats, seed, start, end, timeout, mem_gb, on_result, on_crash):
    """Runs inputs [start, end) in a worker, restarting it after each input that kills it."""
    import fuzz_api as fz

    i = start
    while i < end:
        errf = tempfile.TemporaryFile()
        env = dict(os.environ, RUST_BACKTRACE="0", PYTHONFAULTHANDLER="1")
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--file-worker", workdir,
                                 ",".join(formats), str(seed), str(i), str(end)],
                                stdout=subprocess.PIPE, stderr=errf, env=env)
        # the input being loaded, when the worker last spoke, whether it is up, the next input to run
        state = {"cur": None, "t_last": time.time(), "ready": False, "next": i}

        def on_line(s):
            if s == "READY":
                state.update(ready=True, t_last=time.time())
            elif s.startswith("S "):
                state.update(cur=int(s[2:]), t_last=time.time())
            elif s.startswith("R "):
                _, idx, st = s.split(" ", 2)
                on_result(int(idx), st)
                state.update(next=int(idx) + 1, cur=None)

        def check():
            if time.time() - state["t_last"] > (timeout if state["ready"] else 120):
                return f"hang (> {timeout} s)"
            if fz._rss_gb(proc.pid) > mem_gb:
                return f"memory (> {mem_gb} GB)"
            return None

        reason = fz.watch_worker(proc, on_line, check)
        rc = proc.wait()
        i, cur = state["next"], state["cur"]
        if reason is None and rc == 0:
            return
        if cur is None:
            if not state["ready"]:
                raise RuntimeError("worker failed to start:\n" + fz._tail(errf, 2000))
            if i >= end:  # died at exit
                on_crash(end - 1, f"exit {rc} after the last input", "")
                return
            cur = i
        on_crash(cur, reason or fz._sig_name(rc), fz._tail(errf))
        i = cur + 1


def files_mode(n, seed, formats, jobs, timeout, mem_gb, out_dir) -> int:
    import pickle

    workdir = tempfile.mkdtemp(prefix="cb_filefuzz_")
    out_dir = out_dir or os.path.join(workdir, "crashes")
    os.makedirs(out_dir, exist_ok=True)
    corpus = build_corpus(workdir)
    with open(os.path.join(workdir, "corpus.pkl"), "wb") as f:
        pickle.dump(corpus, f)
    print(f"corpus: " + ", ".join(f"{k}: {len(v)} files" for k, v in corpus.items())
          + f"; crashes go to {out_dir}", flush=True)
    lock = threading.Lock()
    counts = {fmt: {} for fmt in formats}
    crashes = []
    done = [0]
    t0 = time.time()

    def on_result(i, st):
        fmt = formats[i % len(formats)]
        with lock:
            done[0] += 1
            if st.startswith("panic"):
                crashes.append((i, fmt, st, ""))
                _save(i, st, "")
            key = st if not st.startswith("panic") else "PANIC"
            counts[fmt][key] = counts[fmt].get(key, 0) + 1
            if done[0] % 20000 == 0:
                el = time.time() - t0
                print(f"{done[0]}/{n} inputs  {done[0] / el:.0f}/s  crashes {len(crashes)}", flush=True)

    def _save(i, why, tail):
        fmt, data, variant = make_input(corpus, formats, seed, i)
        p = os.path.join(out_dir, f"crash_{fmt}_{seed}_{i}.bin")
        with open(p, "wb") as f:
            f.write(data)
        with open(p + ".txt", "w") as f:
            f.write(f"{why}\nformat {fmt} variant {variant} seed {seed} index {i}\n"
                    f"replay: python {os.path.relpath(__file__)} --replay {p} --format {fmt} --variant {variant}\n\n{tail}")
        print(f"CRASH input {i} ({fmt}, variant {variant}): {why} -> {p}", flush=True)

    def on_crash(i, why, tail):
        fmt = formats[i % len(formats)]
        with lock:
            done[0] += 1
            crashes.append((i, fmt, why, tail))
            counts[fmt]["CRASH"] = counts[fmt].get("CRASH", 0) + 1
            _save(i, why, tail)

    per = (n + jobs - 1) // jobs
    ths = [threading.Thread(target=run_range, args=(workdir, formats, seed, j * per, min(n, (j + 1) * per), timeout,
                                                    mem_gb, on_result, on_crash)) for j in range(jobs)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    el = time.time() - t0
    print(f"\n{done[0]} inputs in {el:.0f} s ({done[0] / el:.0f}/s), {len(crashes)} crashes")
    for fmt in formats:
        c = counts[fmt]
        tot = sum(c.values())
        print(f"  {fmt}: {tot} inputs, ok {c.get('ok', 0)}, " +
              ", ".join(f"{k.replace('exc ', '')} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1]) if k != "ok"))
    for i, fmt, why, tail in crashes[:50]:
        print(f"  crash: input {i} {fmt}: {why}")
    return 1 if crashes else 0


def replay(path, fmt, variant):
    import candle_bind as cb
    import candle_bind.safetensors  # noqa: F401

    with open(path, "rb") as f:
        data = f.read()
    tmp = tempfile.mktemp()
    load_one(cb, fmt, data, variant, tmp)
    print("loaded without error")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--file-worker":
        _, _, workdir, fmts, seed, a, b = sys.argv
        file_worker(workdir, fmts.split(","), int(seed), int(a), int(b))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int)
    ap.add_argument("--files", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--chunk", type=int, default=5000, help="API calls generated and compared per round")
    ap.add_argument("--json")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--mem-gb", type=float, default=4.0)
    ap.add_argument("--out")
    ap.add_argument("--replay")
    ap.add_argument("--format")
    ap.add_argument("--variant", type=int, default=0)
    a = ap.parse_args()
    if a.replay:
        replay(a.replay, a.format, a.variant)
        return 0
    rc = 0
    if a.calls:
        rc |= api_mode(a.calls, a.seed, a.chunk, not a.no_torch, a.json)
    if a.files:
        rc |= files_mode(a.files, a.seed, a.formats.split(","), a.jobs, a.timeout, a.mem_gb, a.out)
    if not a.calls and not a.files:
        ap.print_help()
    return rc


if __name__ == "__main__":
    sys.exit(main())
