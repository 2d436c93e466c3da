"""Checkpoint tensors mapped in place (src/io/mapped.rs): safetensors files and torch.load(mmap=True)
give torch's tensors without a copy; writes to them are copy-on-write (the file never changes), as
torch's MAP_PRIVATE maps; a failed load leaves nothing mapped; saving over a mapped file keeps the
loaded tensors intact; from_pretrained under the shim maps the checkpoint's weights."""

import gc
import hashlib
import pickle
import sys
import zipfile

import numpy as np
import pytest
import safetensors.torch as st
import torch

import candle_bind as cb
import candle_bind.safetensors as cst
from candle_bind import _C
from shim_runs import compare, run

# Tensors of at least 64 KiB are mapped; smaller ones are copied.
BIG = 64 << 10


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def state():
    torch.manual_seed(0)
    return {
        "f32": torch.randn(160, 128),
        "bf16": torch.randn(256, 160).bfloat16(),
        "f16": torch.randn(40000).half(),
        "f64": torch.randn(90, 100).double(),
        "i64": torch.arange(9000).reshape(90, 100),
        "i32": torch.arange(20000, dtype=torch.int32),
        "u8": torch.randint(0, 255, (70000,), dtype=torch.uint8),
        "bool": torch.rand(70000) > 0.5,
        "i8": torch.randint(-128, 127, (70000,), dtype=torch.int8),
        "small": torch.randn(7),
    }


def same(ours, ref):
    assert tuple(ours.shape) == tuple(ref.shape)
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    o = ours.float() if ours.dtype == cb.bfloat16 else ours
    r = ref.float() if ref.dtype == torch.bfloat16 else ref
    np.testing.assert_array_equal(o.numpy(), r.numpy())


def n_mapped(sd):
    """How many of `sd`'s tensors load mapped: the big ones, but int8 (wider storage here) and bool
    (mapped, then converted) are copies."""
    return sum(v.numel() * v.element_size() >= BIG and v.dtype not in (torch.int8, torch.bool) for v in sd.values())


def mapped_now():
    gc.collect()
    return _C.mapped_count()


@pytest.fixture
def files(tmp_path):
    sd = state()
    st.save_file(sd, tmp_path / "w.safetensors")
    torch.save(sd, tmp_path / "w.pth")
    return sd, tmp_path / "w.safetensors", tmp_path / "w.pth"


def test_safetensors_tensors_are_mapped_and_match_torch(files):
    sd, path, _ = files
    base = mapped_now()
    ours, ref = cst.load_file(path), st.load_file(path)
    for k in sd:
        same(ours[k], ref[k])
    assert _C.mapped_count() - base == n_mapped(sd)
    with cst.safe_open(path, "pt") as f:
        same(f.get_tensor("bf16"), ref["bf16"])
        same(f.get_slice("f32")[2:5], ref["f32"][2:5])
    del ours, f
    assert mapped_now() == base


@pytest.mark.parametrize("loader", ["safetensors", "pth"])
def test_writes_to_mapped_tensors_never_reach_the_file(files, loader):
    sd, st_path, pth_path = files
    path = st_path if loader == "safetensors" else pth_path
    before = digest(path)
    if loader == "safetensors":
        ours, ref = cst.load_file(path), st.load_file(path)
    else:
        ours, ref = cb.load(path, mmap=True), torch.load(path, mmap=True)
    for t in (ours, ref):
        t["f32"].add_(1)
        t["f32"][0] = 5.0
        t["bf16"].mul_(2)
        t["f16"].copy_(t["f16"] * 0 + 3)
        t["i64"][3, 4:9] = -1
    for k in ("f32", "bf16", "f16", "i64"):
        same(ours[k], ref[k])
    assert digest(path) == before
    again = cst.load_file(path) if loader == "safetensors" else cb.load(path, mmap=True)
    for k in sd:
        same(again[k], sd[k])


def test_torch_load_mmap_matches_torch(tmp_path, files):
    sd, _, path = files
    base = mapped_now()
    ours, ref = cb.load(path, mmap=True), torch.load(path, mmap=True)
    for k in sd:
        same(ours[k], ref[k])
    assert _C.mapped_count() - base == n_mapped(sd)
    plain = cb.load(path)  # mmap=False: copies
    assert _C.mapped_count() - base == n_mapped(sd)
    for k in sd:
        same(plain[k], sd[k])
    # Tied weights and views of one storage, as torch writes them (64-byte aligned records).
    torch.manual_seed(1)
    w = torch.randn(300, 64)
    tied = {"emb": w, "head": w, "rows": w[10:20], "t": w.t()}
    torch.save(tied, tmp_path / "tied.pth")
    ours, ref = cb.load(tmp_path / "tied.pth", mmap=True), torch.load(tmp_path / "tied.pth", mmap=True)
    for k in tied:
        same(ours[k], ref[k])
    assert ours["emb"] is ours["head"]
    assert ours["rows"].data_ptr() == ours["emb"].data_ptr() + 10 * 64 * 4  # a view of the mapped storage
    # Files that candle_bind saved are aligned the same way, and torch reads them.
    cb.save(plain, tmp_path / "ours.pth")
    n = mapped_now()
    back = cb.load(tmp_path / "ours.pth", mmap=True)
    assert _C.mapped_count() > n
    theirs = torch.load(tmp_path / "ours.pth", mmap=True)
    for k in sd:
        same(back[k], sd[k])
        same(back[k], theirs[k])


def test_mmap_argument_errors_as_torch(tmp_path, files):
    sd, _, path = files
    with open(path, "rb") as f:
        with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
            torch.load(f, mmap=True)
        f.seek(0)
        with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
            cb.load(f, mmap=True)
    torch.save({"x": torch.ones(3)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        torch.load(str(tmp_path / "legacy.pt"), mmap=True)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        cb.load(str(tmp_path / "legacy.pt"), mmap=True)
    with pytest.raises(FileNotFoundError):
        cb.load(tmp_path / "missing.pth", mmap=True)


def test_a_failed_load_leaves_nothing_mapped_and_the_file_unchanged(tmp_path, files):
    sd, st_path, pth_path = files
    base = mapped_now()
    # A record cut short, after five tensors were mapped: the load fails (torch's reads past it) and
    # what it had mapped goes with it.
    raw = pth_path.read_bytes()
    cut = tmp_path / "cut.pth"
    with zipfile.ZipFile(pth_path) as zin, zipfile.ZipFile(cut, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            zout.writestr(item, data[: len(data) // 2] if item.filename == "w/data/5" else data)
    with pytest.raises(pickle.UnpicklingError, match="holds 10000 elements, the pickle says 20000"):
        cb.load(cut, mmap=True)
    assert mapped_now() == base
    # A module keeps its weights when a mapped state dict does not fit it.
    lin = cb.nn.Linear(128, 160)
    w0 = lin.weight.clone()
    bad = cst.load_file(st_path)
    with pytest.raises(RuntimeError, match="Missing key"):
        lin.load_state_dict(bad)
    same(lin.weight, torch.from_numpy(w0.numpy()))
    del bad
    assert mapped_now() == base
    assert raw == pth_path.read_bytes()


def test_saving_over_a_mapped_file_keeps_the_loaded_tensors(files):
    sd, st_path, pth_path = files
    ours = cst.load_file(st_path)
    assert _C.is_mapped(str(st_path))
    cst.save_file({"x": cb.ones(2)}, st_path)
    same(ours["f32"], sd["f32"])
    same(cst.load_file(st_path)["x"], torch.ones(2))
    mine = cb.load(pth_path, mmap=True)
    cb.save({"y": cb.zeros(2)}, pth_path)
    same(mine["bf16"], sd["bf16"])
    same(torch.load(pth_path)["y"], torch.zeros(2))
    del ours, mine
    gc.collect()
    assert not _C.is_mapped(str(st_path)) and not _C.is_mapped(str(pth_path))


def rss_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status")
def test_loading_reads_nothing_up_front(tmp_path):
    big = {f"w{i}": torch.full((1024, 1024), float(i)).bfloat16() for i in range(24)}  # 48 MiB
    st.save_file(big, tmp_path / "big.safetensors")
    gc.collect()
    r0 = rss_mib()
    sd = cst.load_file(tmp_path / "big.safetensors")
    assert rss_mib() - r0 < 12, "a mapped load should not make the weights resident"
    assert sum(float(t[0, 0].float()) for t in sd.values()) == sum(range(24))
    for t in sd.values():
        t.float().sum()
    assert rss_mib() - r0 > 40  # now they are: the pages came from the file


FROM_PRETRAINED = r"""
import sys, torch
from transformers import AutoModelForCausalLM
m = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.bfloat16)
print("mapped", torch._C.mapped_count() > 0)
with torch.no_grad():
    print("logits", m(torch.tensor([[1, 5, 9, 2]])).logits.float()[0, :, :8].tolist())
"""


def test_from_pretrained_maps_the_weights_under_the_shim(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    model.save_pretrained(tmp_path / "m")
    with torch.no_grad():
        want = model(torch.tensor([[1, 5, 9, 2]])).logits.float()[0, :, :8].tolist()
    script = tmp_path / "load.py"
    script.write_text(FROM_PRETRAINED)
    got = run(str(script), [str(tmp_path / "m")], shim=True)  # (the reference is this process's torch)
    assert got.pop("mapped") is True
    compare({"logits": want}, got, rtol=2e-2, atol=2e-2)  # bf16 logits


def test_op_outputs_start_on_a_cache_line():
    """Blocks of 4 KiB and more come from the allocator (src/io/mapped.rs) aligned to 64 bytes, so
    that vector loads of an op's output never straddle two cache lines; growing a vector across the
    threshold keeps its contents."""
    x = cb.randn(4, 128, 1536)
    for t in (x, x + 1, x.relu(), cb.full((64, 75, 101), 0.5), cb.empty(1024), x.sum(0), cb.cat([x, x])):
        assert t.data_ptr() % 64 == 0
    v = cb.tensor(list(range(3000)), dtype=cb.float32)  # built by growing a list of values
    assert v.data_ptr() % 64 == 0 and v.tolist() == [float(i) for i in range(3000)]


def test_huge_blocks_are_reused_and_zeroed_when_asked():
    """Blocks of 32 MiB and more are mappings of their own (src/io/mapped.rs); a freed one is kept for
    the next request of its size: ops writing every element reuse it as it was left, and zeroed
    requests (zeros, the padding of a cat) get zeros, whichever block they are handed."""
    n = (40 << 20) // 4
    for _ in range(3):
        a = cb.full((n,), 7.5)
        ptr = a.data_ptr()
        del a
        b = cb.zeros(n)
        assert b.data_ptr() % 64 == 0 and float(b.abs().max()) == 0.0 and int(b.count_nonzero()) == 0
        del b
        c = cb.ones(n) * 3
        assert float(c.min()) == 3.0 == float(c.max())
        del c
    # other sizes after a kept block: a larger request, then the first size again
    d = cb.arange(n + 4096, dtype=cb.float32)
    assert d[-1].item() == float(n + 4095) and ptr > 0
    del d
    e = cb.zeros(n, dtype=cb.int32)
    assert int(e.abs().max()) == 0
