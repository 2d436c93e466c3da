"""Every transformers architecture, from transformers' own Auto mappings, run on torch and on candle_bind.

For each model_type in transformers' CONFIG_MAPPING_NAMES and each head we cover (the `HEADS` mappings of
transformers.models.auto.modeling_auto: the base model, causal / masked / seq2seq LMs, sequence and token
classification, image classification, speech seq2seq, CLIP-style zero-shot image classification), the
config class's defaults are shrunk generically (`shrink`: hidden sizes, layers, heads, vocabularies, image
and audio sizes, recursively through sub-configs, keeping head_dim = hidden / heads), the model is built
with a fixed seed in real torch, saved with `save_pretrained`, loaded back and run on inputs made from its
config by arithmetic (no RNG). The same worker code then loads and runs each saved model under
`python -m candle_bind run` and the outputs are compared: the model's first tensor outputs (shape and a
summary: sum, sum of |x|, five values) within rtol 1e-3 / atol 1e-4, and the greedy `generate` tokens of
generative heads exactly.

Outcome per (model_type, head): match / mismatch / error (ours raised; first error and frames) /
not-built (out of scope: the sweep could not build, save, load or run the shrunk model in real torch;
its detail is "<stage>: <first error>", stage one of import / config / size / build / run / timeout / crash) /
needs-package (the class needs a package that is not installed). Workers (2 at most) run batches of
model types; each architecture has a time limit so a hang cannot eat the run.

    python conformance/transformers_archs.py                          # everything (long; prints the summary)
    python conformance/transformers_archs.py --sample 30 --json out.json
    python conformance/transformers_archs.py --types bert,llama --heads base,causal-lm
    python conformance/transformers_archs.py --markdown docs/transformers.md
    python conformance/transformers_archs.py _worker torch|shim DIR TYPE[:HEAD,...] ...   (internal)
"""

from __future__ import annotations

import argparse
import collections
import copy
import datetime
import json
import math
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from hf_shrink import ALTERNATE_LAYOUT, cfg_get, make_config, make_inputs  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(HERE))

# head -> the Auto mapping (in transformers.models.auto.modeling_auto) that names its class per model_type.
HEADS = {
    "base": "MODEL_MAPPING_NAMES",
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "masked-lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "seq2seq-lm": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "seq-cls": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "token-cls": "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES",
    "image-cls": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "speech-seq2seq": "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
    "zero-shot-image": "MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES",
}
GENERATIVE = {"causal-lm", "seq2seq-lm", "speech-seq2seq"}

RTOL, ATOL = 1e-3, 1e-4
MAX_PARAMS = 40_000_000  # a shrunk model bigger than this is a shrinking failure, not built (memory)


# ------------------------------------------------------------------------------------------ summaries


def _r(xs):
    return [float(f"{float(x):.7g}") for x in xs]


def summarize(torch, t, mask):
    t = t.detach().float()
    if mask is not None and t.dim() >= 2 and tuple(t.shape[:2]) == tuple(mask.shape):
        t_m = t * mask.to(t.dtype).reshape(*mask.shape, *([1] * (t.dim() - 2)))
    else:
        t_m = t
    row = t[0].reshape(-1) if t.dim() > 1 else t.reshape(-1)
    return {"shape": list(t.shape), "numel": t.numel(),
            "values": _r([t_m.sum().item(), t_m.abs().sum().item()] + row[-5:].tolist())}


def outputs(torch, out, mask, limit=3):
    """The first `limit` floating tensor outputs of a forward, by name."""
    if isinstance(out, torch.Tensor):
        items = [("output", out)]
    elif isinstance(out, dict):
        items = list(out.items())
    elif isinstance(out, (tuple, list)):
        items = [(f"output{i}", o) for i, o in enumerate(out)]
    else:
        items = []
    res = {}
    for name, value in items:
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
            res[name] = summarize(torch, value, mask)
            if len(res) == limit:
                break
    return res


# ---------------------------------------------------------------------------------------------- worker


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout("time limit reached (per-architecture)")


def _where(exc, frames=6):
    out = []
    for f in traceback.extract_tb(exc.__traceback__)[-frames:]:
        name = f.filename
        for marker in ("site-packages/", "python/candle_bind/"):
            if marker in name:
                name = name.split(marker, 1)[1]
                break
        out.append(f"{name}:{f.lineno} in {f.name}")
    return out


def _first_error(exc):
    if "Could not import module" in str(exc) and exc.__cause__ is not None:
        exc = exc.__cause__  # transformers' lazy import hides the original error there
    msg = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    first = " ".join(msg[:2]) if len(msg) > 1 and msg[0].endswith(":") else msg[0] if msg else ""
    return f"{type(exc).__name__}: {first}"[:300]  # (a header line ending in ':' is followed by its reason)


def _missing_package(exc):
    """The package an ImportError asks for (transformers' backend requirements name it), or None."""
    text = str(exc)
    m = re.search(r"requires? the (\S+) librar", text) or re.search(r"No module named '([^']+)'", text)
    return m.group(1).strip("`'\"") if m and isinstance(exc, ImportError) else None


def _class(transformers, name):
    try:
        return getattr(transformers, name), None
    except Exception as exc:  # noqa: BLE001 - a backend requirement names the missing package
        package = _missing_package(exc)
        return None, ("needs-package", package) if package else ("not-built", f"import: {_first_error(exc)}")


def _build(torch, transformers, model_type, heads, folder):
    """Real torch: builds, saves and reloads each head of `model_type`; yields (head, class, status, reason)."""
    try:
        base_config = make_config(model_type)
    except Exception as exc:  # noqa: BLE001
        for head, cls_name in heads:
            yield head, cls_name, "not-built", f"config: {_first_error(exc)}"
        return
    for head, cls_name in heads:
        cls, problem = _class(transformers, cls_name)
        if problem:
            yield head, cls_name, problem[0], problem[1]
            continue
        config = copy.deepcopy(base_config)  # some heads edit their config (is_encoder_decoder, ...)
        try:
            with torch.device("meta"):
                n = sum(p.numel() for p in cls(config).parameters())
        except Exception:  # noqa: BLE001 - some inits compute on their weights; the real build decides
            n = 0
        if n > MAX_PARAMS:
            yield head, cls_name, "not-built", f"size: shrunk config still has {n / 1e6:.0f}M parameters"
            continue
        try:
            torch.manual_seed(0)
            model = cls(config).eval()
            path = os.path.join(folder, model_type, head)
            model.save_pretrained(path)
            del model
        except Exception as exc:  # noqa: BLE001
            package = _missing_package(exc)
            yield (head, cls_name, "needs-package", package) if package else \
                (head, cls_name, "not-built", f"build: {_first_error(exc)}")
            continue
        yield head, cls_name, "saved", None


def _run_one(torch, transformers, cls_name, head, path, side):
    """Loads and runs one saved model. Torch tries the inputs' other layout where the first fails and
    leaves the layout that ran in the model's folder for the shim."""
    cls = getattr(transformers, cls_name)
    model = cls.from_pretrained(path).eval()
    layout_file = os.path.join(path, "inputs_layout")
    if side == "shim":
        with open(layout_file) as f:
            return _forward(torch, model, head, *make_inputs(torch, model, head, int(f.read())))
    kw, mask = make_inputs(torch, model, head)
    layout = 0
    try:
        res = _forward(torch, model, head, kw, mask)
    except Timeout:
        raise
    except Exception as first:  # noqa: BLE001
        if not set(kw) & set(ALTERNATE_LAYOUT):
            raise
        try:
            res, layout = _forward(torch, model, head, *make_inputs(torch, model, head, 1)), 1
        except Timeout:
            raise
        except Exception:  # noqa: BLE001 - the first layout's error is the one to report
            raise first from None
        res["layout"] = 1
    with open(layout_file, "w") as f:
        f.write(str(layout))
    return res


def _forward(torch, model, head, kw, mask):
    res = {}
    with torch.no_grad():
        out = model(**kw)
        res["outputs"] = outputs(torch, out, mask)
        if head in GENERATIVE:
            pad = cfg_get(model.config, "pad_token_id", 0)
            pad = pad if isinstance(pad, int) and pad >= 0 else 0
            gkw = {k: v for k, v in kw.items() if k != "decoder_input_ids"}
            gen = model.generate(**gkw, max_new_tokens=4, min_new_tokens=4, do_sample=False, num_beams=1,
                                 pad_token_id=pad)
            if not isinstance(gen, torch.Tensor):
                gen = gen.sequences
            res["tokens"] = gen.tolist()
    if not res["outputs"]:
        raise NotImplementedError("the forward returned no floating tensor")
    return res


def worker(side, folder, jobs, limit):
    """Runs `jobs` ("type:head=Class,head=Class") and prints one JSON line per (type, head)."""
    import torch
    import transformers

    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    import warnings

    warnings.filterwarnings("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    for job in jobs:
        model_type, _, spec = job.partition(":")
        heads = [tuple(h.split("=", 1)) for h in spec.split(",") if h]
        print(json.dumps({"start": model_type}), flush=True)
        start = time.perf_counter()
        signal.alarm(limit)
        try:
            if side == "torch":
                built = list(_build(torch, transformers, model_type, heads, folder))
            else:
                built = [(h, c, "saved", None) for h, c in heads]
            for head, cls_name, status, reason in built:
                rec = {"type": model_type, "head": head, "class": cls_name}
                if status != "saved":
                    rec.update(status=status, reason=reason)
                else:
                    t0 = time.perf_counter()
                    try:
                        rec.update(_run_one(torch, transformers, cls_name, head,
                                            os.path.join(folder, model_type, head), side), status="ok")
                    except Timeout:
                        raise
                    except Exception as exc:  # noqa: BLE001 - one architecture must not stop the sweep
                        status = "not-built" if side == "torch" else "error"
                        rec.update(status=status, reason=("run: " if side == "torch" else "") + _first_error(exc),
                                   where=_where(exc))
                    rec["time_s"] = round(time.perf_counter() - t0, 3)
                print(json.dumps(rec), flush=True)
        except Timeout as exc:
            print(json.dumps({"type": model_type, "timeout": str(exc), "where": _where(exc)}), flush=True)
        finally:
            signal.alarm(0)
        print(json.dumps({"done": model_type, "time_s": round(time.perf_counter() - start, 3)}), flush=True)


# ------------------------------------------------------------------------------------------ orchestration


def enumerate_archs():
    """(model_type, head, class name) for every model_type in CONFIG_MAPPING_NAMES and head in HEADS."""
    import transformers.models.auto.modeling_auto as ma
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    out = []
    for model_type in CONFIG_MAPPING_NAMES:
        for head, mapping in HEADS.items():
            name = getattr(ma, mapping, {}).get(model_type)
            if isinstance(name, (tuple, list)):
                name = name[0]
            if name:
                out.append((model_type, head, name))
    return out


def _spawn(side, folder, jobs, limit):
    script = [HERE] if side == "torch" else ["-m", "candle_bind", "run", HERE]
    cmd = [sys.executable, *script, "_worker", side, folder, str(limit), *jobs]
    env = dict(os.environ, PYTHONWARNINGS="ignore", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=env, start_new_session=True)


def run_side(side, folder, jobs, limit, grace=30):
    """Runs `jobs` in one worker of `side`; a worker that goes silent past the limit is killed, its
    current model type recorded as a timeout, and a new worker goes on with the rest."""
    records, pending = [], list(jobs)
    while pending:
        proc = _spawn(side, folder, pending, limit)
        stderr_lines = []
        threading.Thread(target=lambda: stderr_lines.extend(proc.stderr), daemon=True).start()
        current, deadline = None, time.time() + limit + 120  # the first deadline covers the import
        finished = set()
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 5)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                if not line.startswith("{"):
                    continue
                rec = json.loads(line)
                if "start" in rec:
                    current, deadline = rec["start"], time.time() + limit + grace
                elif "done" in rec:
                    finished.add(rec["done"])
                    current = None
                elif "timeout" in rec:
                    for job in pending:
                        if job.partition(":")[0] == rec["type"]:
                            for h in job.partition(":")[2].split(","):
                                head, _, cls = h.partition("=")
                                records.append({"type": rec["type"], "head": head, "class": cls, "side": side,
                                                "status": "timeout", "reason": rec["timeout"],
                                                "where": rec.get("where")})
                else:
                    rec["side"] = side
                    records.append(rec)
            elif time.time() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            elif proc.poll() is not None and not ready:
                break
        proc.wait()
        seen = {(r["type"], r["head"]) for r in records}
        why = "timeout (worker killed)" if proc.returncode == -signal.SIGKILL else \
            f"worker exited {proc.returncode}: {''.join(stderr_lines)[-300:].strip()}"
        rest = []
        for job in pending:
            model_type = job.partition(":")[0]
            if model_type in finished:
                continue
            # the model type that killed or hung the worker (all of them if it died before starting
            # one): every head not yet reported is a crash / timeout
            if model_type == current or not finished and current is None:
                for h in job.partition(":")[2].split(","):
                    head, _, cls = h.partition("=")
                    if (model_type, head) not in seen:
                        records.append({"type": model_type, "head": head, "class": cls, "side": side,
                                        "status": "timeout" if "timeout" in why else "crash", "reason": why})
                continue
            rest.append(job)
        pending = rest
    return records


def run_chunk(folder, chunk, limit):
    """Torch builds and runs `chunk` (model type -> [(head, class)]), then the shim runs what torch ran."""
    jobs = [f"{t}:" + ",".join(f"{h}={c}" for h, c in heads) for t, heads in chunk.items()]
    ref = run_side("torch", folder, jobs, limit)
    ok = collections.defaultdict(list)
    for r in ref:
        if r.get("status") == "ok":
            ok[r["type"]].append((r["head"], r["class"]))
    shim_jobs = [f"{t}:" + ",".join(f"{h}={c}" for h, c in heads) for t, heads in ok.items()]
    ours = run_side("shim", folder, shim_jobs, limit) if shim_jobs else []
    return ref, ours


def close(want, got, numel):
    if len(want) != len(got):
        return False
    for i, (w, g) in enumerate(zip(want, got)):
        if math.isnan(w) or math.isnan(g):
            if not (math.isnan(w) and math.isnan(g)):
                return False
            continue
        if math.isinf(w) or math.isinf(g):
            if w != g:
                return False
            continue
        atol = ATOL * (math.sqrt(numel) if i < 2 else 1.0)  # the two sums add up rounding from every element
        if abs(w - g) > atol + RTOL * abs(w):
            return False
    return True


def judge(ref, ours):
    """Outcome record per (type, head)."""
    result = {}
    shim = {(r["type"], r["head"]): r for r in ours}
    for r in ref:
        key = (r["type"], r["head"])
        rec = {"type": r["type"], "head": r["head"], "class": r["class"]}
        if r["status"] != "ok":
            status, reason = r["status"], r.get("reason")
            if status in ("timeout", "crash", "error"):  # the torch side timed out or died: not built either
                status, reason = "not-built", f"{r['status']}: {reason}"
            rec.update(outcome=status, detail=reason, where=r.get("where"))
        else:
            g = shim.get(key)
            if g is None:
                rec.update(outcome="error", detail="no output from the shim worker")
            elif g["status"] != "ok":
                rec.update(outcome="error", detail=g.get("reason"), where=g.get("where"))
            else:
                problems = []
                if r.get("tokens") != g.get("tokens"):
                    problems.append(f"generated tokens {g.get('tokens')} != torch's {r.get('tokens')}")
                if set(r["outputs"]) != set(g["outputs"]):
                    problems.append(f"outputs {sorted(g['outputs'])} != torch's {sorted(r['outputs'])}")
                else:
                    for name, w in r["outputs"].items():
                        o = g["outputs"][name]
                        if o["shape"] != w["shape"]:
                            problems.append(f"{name} shape {o['shape']} != torch's {w['shape']}")
                        elif not close(w["values"], o["values"], w["numel"]):
                            problems.append(f"{name} {o['values']} != torch's {w['values']}")
                rec.update(outcome="mismatch" if problems else "match", detail="; ".join(problems) or None,
                           time_torch_s=r.get("time_s"), time_shim_s=g.get("time_s"))
        result[key] = rec
    return result


def error_key(detail):
    """A first error with the numbers and names that vary per architecture taken out, for grouping."""
    d = detail or ""
    d = re.sub(r"'[^']*'", "'…'", d)
    d = re.sub(r"\d+", "N", d)
    return d[:160]


def sweep(archs, workers, limit, chunk_size, folder, progress, keep=False):
    by_type = collections.OrderedDict()
    for t, h, c in archs:
        by_type.setdefault(t, []).append((h, c))
    types = list(by_type)
    chunks = [collections.OrderedDict((t, by_type[t]) for t in types[i:i + chunk_size])
              for i in range(0, len(types), chunk_size)]
    results, lock, queue = {}, threading.Lock(), list(chunks)

    def loop():
        while True:
            with lock:
                if not queue:
                    return
                chunk = queue.pop(0)
            ref, ours = run_chunk(folder, chunk, limit)
            with lock:
                judged = judge(ref, ours)
                results.update(judged)
                if progress:
                    for r in judged.values():
                        if r["outcome"] in ("error", "mismatch"):
                            print(f"  {r['type']}/{r['head']}: {r['outcome']}: {(r['detail'] or '')[:200]}",
                                  file=sys.stderr, flush=True)
                    n = collections.Counter(r["outcome"] for r in results.values())
                    print(f"[{len(results)}/{len(archs)}] " + " ".join(f"{k}={v}" for k, v in sorted(n.items())),
                          file=sys.stderr, flush=True)
            for t in chunk if not keep else ():
                shutil.rmtree(os.path.join(folder, t), ignore_errors=True)

    threads = [threading.Thread(target=loop) for _ in range(max(1, min(workers, 2)))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return [results[(t, h)] for t, h, _ in archs if (t, h) in results]


def headline(records):
    n = collections.Counter(r["outcome"] for r in records)
    buildable = n["match"] + n["mismatch"] + n["error"]
    return n, buildable


def write_markdown(path, records, meta):
    n, buildable = headline(records)
    lines = [
        "# transformers architectures under candle_bind",
        "",
        "Generated by `python conformance/transformers_archs.py --markdown docs/transformers.md` (do not edit by "
        "hand). Every (model_type, head) of transformers' Auto mappings (`HEADS` in the script) is built from "
        "its config class's defaults, shrunk, with a seeded init in real torch, saved, then loaded and run "
        "under torch and under `python -m candle_bind run`; forward outputs are compared within rtol 1e-3 / "
        "atol 1e-4 and greedy `generate` tokens exactly.",
        "",
        f"- date: {meta['date']}; transformers {meta['transformers']}; torch {meta['torch']} (the oracle); "
        f"{meta['elapsed_s']:.0f} s with {meta['workers']} workers" + (f"; sample of {meta['sample']}"
                                                                     if meta.get("sample") else ""),
        f"- **{n['match']} / {buildable} architectures that build in torch match torch "
        f"({100 * n['match'] / max(buildable, 1):.1f}%)**; {n['mismatch']} mismatch, {n['error']} error",
        f"- in scope: {buildable} / {len(records)} (model_type, head) pairs build and run in real torch from a "
        f"shrunk config; out of scope: {n['not-built']} not-built (the sweep could not build or run them in real "
        f"torch: the generic shrink or input generator does not fit them, or torch itself fails; grouped below), "
        f"{n['needs-package']} needs-package",
        "",
        "## By head",
        "",
        "| head | match | mismatch | error | not-built | needs-package |",
        "|---|---|---|---|---|---|",
    ]
    for head in HEADS:
        c = collections.Counter(r["outcome"] for r in records if r["head"] == head)
        if c:
            lines.append(f"| {head} | {c['match']} | {c['mismatch']} | {c['error']} | {c['not-built']} | "
                         f"{c['needs-package']} |")
    lines += ["", "## Failures by first error", "", "| count | first error | architectures |", "|---|---|---|"]
    groups = collections.defaultdict(list)
    for r in records:
        if r["outcome"] in ("error", "mismatch"):
            key = error_key(r["detail"]) if r["outcome"] == "error" else "mismatch"
            groups[key].append(f"{r['type']}/{r['head']}")
    for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(names[:12]) + (f", … (+{len(names) - 12})" if len(names) > 12 else "")
        lines.append(f"| {len(names)} | `{key.replace('|', '/')}` | {shown} |")
    lines += ["", "## Not built in torch (out of scope), by stage and first error", "",
              "| count | stage: first error | architectures |", "|---|---|---|"]
    groups = collections.defaultdict(list)
    for r in records:
        if r["outcome"] == "not-built":
            groups[error_key(r["detail"])].append(f"{r['type']}/{r['head']}")
    for key, names in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(names[:12]) + (f", … (+{len(names) - 12})" if len(names) > 12 else "")
        lines.append(f"| {len(names)} | `{key.replace('|', '/')}` | {shown} |")
    pk = collections.Counter(r["detail"] for r in records if r["outcome"] == "needs-package")
    if pk:
        lines += ["", "## Needs a package that is not installed", ""]
        lines += [f"- {name}: {count} architectures" for name, count in pk.most_common()]
    lines += ["", "## Per architecture", "", "| model_type | head | class | outcome | detail |",
              "|---|---|---|---|---|"]
    for r in records:
        detail = (r.get("detail") or "").replace("|", "/").replace("\n", " ")[:200]
        if r["outcome"] == "error" and r.get("where"):
            detail += f" (at {r['where'][-1]})"
        lines.append(f"| {r['type']} | {r['head']} | {r['class']} | {r['outcome']} | {detail} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "_worker":
        side, folder, limit, *jobs = argv[1:]
        worker(side, folder, jobs, int(limit))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--types", help="comma-separated model_types")
    p.add_argument("--heads", help=f"comma-separated heads (of {', '.join(HEADS)})")
    p.add_argument("--sample", type=int, help="a deterministic sample of N model types")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=int, default=90, help="seconds per model type (all its heads) and side")
    p.add_argument("--chunk", type=int, default=12, help="model types per worker process")
    p.add_argument("--keep", help="build the models in this folder and keep them")
    p.add_argument("--json")
    p.add_argument("--markdown")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)

    import torch
    import transformers

    archs = enumerate_archs()
    if args.heads:
        heads = set(args.heads.split(","))
        archs = [a for a in archs if a[1] in heads]
    if args.types:
        types = args.types.split(",")
        unknown = sorted(set(types) - {a[0] for a in archs})
        if unknown:
            p.error(f"unknown model types (or none of the chosen heads): {unknown}")
        archs = [a for a in archs if a[0] in types]
    if args.sample:
        types = sorted({a[0] for a in archs})
        picked = set(random.Random(0).sample(types, min(args.sample, len(types))))
        archs = [a for a in archs if a[0] in picked]
    start = time.perf_counter()
    folder = args.keep or tempfile.mkdtemp(prefix="transformers_archs_")
    try:
        records = sweep(archs, args.workers, args.timeout, args.chunk, folder, not args.quiet, bool(args.keep))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    elapsed = time.perf_counter() - start
    meta = {"date": datetime.date.today().isoformat(), "transformers": transformers.__version__,
            "torch": torch.__version__, "elapsed_s": elapsed, "workers": args.workers, "sample": args.sample}
    n, buildable = headline(records)
    print(f"{n['match']} / {buildable} buildable architectures match torch "
          f"({100 * n['match'] / max(buildable, 1):.1f}%); " +
          ", ".join(f"{k} {v}" for k, v in sorted(n.items())) + f"; {elapsed:.0f} s")
    if not args.quiet:
        for r in records:
            if r["outcome"] in ("error", "mismatch"):
                print(f"  {r['type']}/{r['head']}: {r['outcome']}: {r['detail']}"
                      + (f" at {r['where'][-2:]}" if r.get("where") else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "records": records}, f, indent=1)
    if args.markdown:
        write_markdown(args.markdown, records, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
