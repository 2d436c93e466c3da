"""torchvision's compiled operators (`torch.ops.torchvision.*`) on candle_bind: our Rust kernels
(src/vision/, registered by candle_bind/_vision_ops.py) against torchvision's own CPU kernels on real
torch, called directly with the same inputs. nms indices and roi_pool's argmax must match exactly,
float outputs to rounding (roi_align / roi_pool / ps_* follow torchvision's evaluation order and
match bit for bit in practice). Then torchvision.ops end to end under the shim (tests/eco/torchvision_ops.py)."""

import os

import numpy as np
import pytest
import torch

import candle_bind as cb
from candle_bind import _vision_ops as ours
from shim_runs import Runs, compare

torchvision = pytest.importorskip("torchvision")
tv = torch.ops.torchvision
ECO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eco")


def to_cb(t):
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16
        return cb.from_numpy(t.float().numpy()).to(cb.bfloat16)
    return cb.from_numpy(t.detach().numpy().copy())


def to_torch(c):
    return torch.from_numpy(np.asarray(c.numpy()).copy())


def same(want, got, exact=False, rtol=1e-5, atol=1e-6):
    got = to_torch(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if exact:
        assert torch.equal(got, want), (got, want)
    else:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)


def boxes(n, seed=0, size=100.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    b = torch.rand(n, 4, generator=g, dtype=dtype) * size
    b[:, 2:] = b[:, :2] + torch.rand(n, 2, generator=g, dtype=dtype) * size / 3
    return b


def rois(k, n_img, seed=0, size=60.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed + 1)
    return torch.cat([torch.randint(0, n_img, (k, 1), generator=g).to(dtype), boxes(k, seed, size, dtype)], 1)


def feature(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# --- nms --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("thr", [0.0, 0.2, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nms_matches(thr, dtype):
    b, s = boxes(300, dtype=dtype), torch.rand(300, generator=torch.Generator().manual_seed(3), dtype=dtype)
    same(tv.nms(b, s, thr), ours.nms(to_cb(b), to_cb(s), thr), exact=True)


@pytest.mark.parametrize("case", ["empty", "one", "equal_scores", "identical_boxes", "degenerate", "nan_score",
                                  "non_contiguous"])
def test_nms_edges(case):
    b, s = boxes(40), torch.rand(40, generator=torch.Generator().manual_seed(5))
    if case == "empty":
        b, s = b[:0], s[:0]
    elif case == "one":
        b, s = b[:1], s[:1]
    elif case == "equal_scores":
        s = torch.full((40,), 0.5)  # ties keep index order (stable sort), as torch's
    elif case == "identical_boxes":
        b = b[:1].repeat(40, 1)
    elif case == "degenerate":
        b[::3, 2:] = b[::3, :2] - 1  # x2 < x1: negative areas
    elif case == "nan_score":
        s[[3, 17]] = float("nan")
    elif case == "non_contiguous":
        wide = torch.cat([b, b], 1)
        b, s = wide[:, ::2], torch.stack([s, s], 1)[:, 0]
        assert not b.is_contiguous()
    same(tv.nms(b, s, 0.3), ours.nms(to_cb(b), to_cb(s), 0.3), exact=True)


@pytest.mark.parametrize("bad", ["1d", "3cols", "scores_2d", "mismatch", "mixed_dtype", "int", "half"])
def test_nms_errors_like_torchvision(bad):
    b, s = boxes(5), torch.rand(5)
    args = {"1d": (b[0], s), "3cols": (b[:, :3], s), "scores_2d": (b, s[None]), "mismatch": (b, s[:2]),
            "mixed_dtype": (b, s.double()), "int": (b.long(), s.long()), "half": (b.half(), s.half())}[bad]
    with pytest.raises(RuntimeError) as want:
        tv.nms(*args, 0.5)
    with pytest.raises(RuntimeError) as got:
        ours.nms(*map(to_cb, args), 0.5)
    # torchvision's message, less its C++ file/line prefix
    assert str(want.value).split(", ")[-1].split("(")[0].strip() in str(got.value)


# --- roi_align / ps_roi_align ------------------------------------------------------------------------------

@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling", [0, -1, 2, 3])
def test_roi_align_matches(aligned, sampling):
    x, r = feature(3, 5, 17, 23), rois(40, 3)
    want = tv.roi_align(x, r, 0.5, 4, 3, sampling, aligned)
    same(want, ours.roi_align(to_cb(x), to_cb(r), 0.5, 4, 3, sampling, aligned))


@pytest.mark.parametrize("case", ["outside", "inverted", "tiny", "empty_rois", "pooled_zero", "huge_adaptive",
                                  "non_contiguous", "float64", "float16", "one_pixel_plane"])
def test_roi_align_edges(case):
    x, r, scale, size, sr = feature(2, 4, 12, 14), rois(12, 2), 0.25, (3, 3), 0
    if case == "outside":
        r[:, 1:] = r[:, 1:] * 4 - 150  # far beyond and before the image
    elif case == "inverted":
        r[:, [1, 3]] = r[:, [3, 1]]
    elif case == "tiny":
        r[:, 3:] = r[:, 1:3] + 0.01
    elif case == "empty_rois":
        r = r[:0]
    elif case == "pooled_zero":
        size = (0, 3)
    elif case == "huge_adaptive":
        r = torch.tensor([[0, -5.0, -5.0, 1200.0, 900.0], [1, 0.0, 0.0, 800.0, 20.0]])
        scale, size = 1.0, (1, 1)  # a 1200x900 grid per bin: sampled without the precomputed table
    elif case == "non_contiguous":
        x = feature(2, 14, 12, 4).permute(0, 3, 2, 1)
        r = torch.cat([r, r], 1)[:, ::2]
    elif case == "float64":
        x, r = x.double(), r.double()
    elif case == "float16":
        x, r = x.half(), r.half()
    elif case == "one_pixel_plane":
        x = feature(2, 4, 1, 1)
    for aligned in (False, True):
        if case == "inverted" and aligned:
            # x2 < x1 with aligned=True: a negative sampling grid, which torchvision's kernel refuses
            with pytest.raises(RuntimeError):
                tv.roi_align(x, r, scale, *size, sr, aligned)
            with pytest.raises(RuntimeError, match="negative sampling grid"):
                ours.roi_align(to_cb(x), to_cb(r), scale, *size, sr, aligned)
            continue
        want = tv.roi_align(x, r, scale, *size, sr, aligned)
        tol = dict(rtol=2e-2, atol=2e-2) if case == "float16" else {}
        same(want, ours.roi_align(to_cb(x), to_cb(r), scale, *size, sr, aligned), **tol)


@pytest.mark.parametrize("sampling", [0, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ps_roi_align_matches(sampling, dtype):
    x, r = feature(2, 18, 15, 13, dtype=dtype), rois(20, 2, dtype=dtype)
    r[::4, 1:] -= 40  # some partly outside
    out, mapping = tv.ps_roi_align(x, r, 0.5, 3, 2, sampling)
    got_out, got_map = ours.ps_roi_align(to_cb(x), to_cb(r), 0.5, 3, 2, sampling)
    same(out, got_out)
    same(mapping, got_map, exact=True)


@pytest.mark.parametrize("op", ["roi_align", "ps_roi_align"])
@pytest.mark.parametrize("bad", ["inf_box", "huge_sampling_ratio"])
def test_absurd_sampling_grids_raise(op, bad):
    # torchvision's int sample indices overflow here (undefined behaviour); ours refuses instead of hanging
    x, r, sr = feature(1, 8, 6, 6), rois(2, 1), 0
    if bad == "inf_box":
        r[1, 3] = float("inf")
    else:
        sr = 1 << 20
    extra = (sr, False) if op == "roi_align" else (sr,)
    with pytest.raises(RuntimeError, match="more than torchvision's kernel can index"):
        getattr(ours, op)(to_cb(x), to_cb(r), 1.0, 2, 2, *extra)


def test_nan_rois_give_no_crash():
    x, r = feature(1, 8, 6, 6), rois(3, 1)
    r[0, 1:] = float("nan")
    out = to_torch(ours.roi_align(to_cb(x), to_cb(r), 1.0, 2, 2, 2, True))
    same(tv.roi_align(x, r[1:], 1.0, 2, 2, 2, True), cb.from_numpy(out[1:].numpy()))
    assert torch.isfinite(out).all()  # NaN samples weigh nothing


# --- roi_pool / ps_roi_pool ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", ["plain", "outside", "inverted", "non_contiguous", "ties"])
def test_roi_pool_matches(dtype, case):
    x, r = feature(3, 6, 16, 19, dtype=dtype), rois(30, 3, dtype=dtype)
    if case == "outside":
        r[:, 1:] = r[:, 1:] * 3 - 60
    elif case == "inverted":
        r[:, [2, 4]] = r[:, [4, 2]]
    elif case == "non_contiguous":
        x = feature(3, 19, 16, 6, dtype=dtype).transpose(1, 3)
    elif case == "ties":
        x = x.round()  # equal maxima: the first one wins
    out, arg = tv.roi_pool(x, r, 0.5, 3, 4)
    got_out, got_arg = ours.roi_pool(to_cb(x), to_cb(r), 0.5, 3, 4)
    same(out, got_out, exact=True)
    same(arg, got_arg, exact=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ps_roi_pool_matches(dtype):
    x, r = feature(2, 12, 14, 15, dtype=dtype), rois(25, 2, dtype=dtype)
    r[::3, 1:] += 30  # some partly outside
    out, mapping = tv.ps_roi_pool(x, r, 0.5, 2, 3)
    got_out, got_map = ours.ps_roi_pool(to_cb(x), to_cb(r), 0.5, 2, 3)
    same(out, got_out)
    same(mapping, got_map, exact=True)


@pytest.mark.parametrize("op", ["roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool"])
@pytest.mark.parametrize("bad", ["rois_4_cols", "mixed_dtype", "batch_index", "negative_index", "bfloat16",
                                 "negative_size"])
def test_roi_errors_like_torchvision(op, bad):
    x, r = feature(2, 8, 6, 6), rois(3, 2)
    size = (2, 2)
    if bad == "rois_4_cols":
        r = r[:, :4]
    elif bad == "mixed_dtype":
        r = r.double()
    elif bad == "batch_index":
        r[1, 0] = 2
    elif bad == "negative_index":
        r[1, 0] = -1
    elif bad == "bfloat16":
        x, r = x.bfloat16(), r.bfloat16()
    elif bad == "negative_size":
        size = (-1, 2)
    extra = {"roi_align": (0, False), "ps_roi_align": (0,)}.get(op, ())
    with pytest.raises(RuntimeError):
        getattr(tv, op)(x, r, 1.0, *size, *extra)
    with pytest.raises(RuntimeError):
        getattr(ours, op)(to_cb(x), to_cb(r), 1.0, *size, *extra)


@pytest.mark.parametrize("op", ["ps_roi_align", "ps_roi_pool"])
def test_ps_channels_must_split(op):
    x, r = feature(1, 8, 6, 6), rois(2, 1)
    extra = (0,) if op == "ps_roi_align" else ()
    with pytest.raises(RuntimeError, match="multiple of pooling height"):
        getattr(ours, op)(to_cb(x), to_cb(r), 1.0, 3, 3, *extra)
    with pytest.raises(RuntimeError, match="multiple of pooling height"):
        getattr(ours, op)(to_cb(x), to_cb(r), 1.0, 0, 3, *extra)  # torchvision divides by zero here


# --- deform_conv2d ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [
    dict(n=1, cin=4, cout=6, k=(3, 3), stride=(1, 1), pad=(1, 1), dil=(1, 1), wg=1, og=1, mask=False),
    dict(n=3, cin=4, cout=6, k=(3, 3), stride=(1, 1), pad=(1, 1), dil=(1, 1), wg=1, og=1, mask=True),
    dict(n=2, cin=6, cout=4, k=(3, 2), stride=(2, 1), pad=(0, 2), dil=(2, 1), wg=2, og=3, mask=True),
    dict(n=2, cin=4, cout=4, k=(1, 1), stride=(1, 1), pad=(0, 0), dil=(1, 1), wg=4, og=2, mask=False),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_deform_conv2d_matches(cfg, dtype):
    n, cin, cout, (kh, kw) = cfg["n"], cfg["cin"], cfg["cout"], cfg["k"]
    h, w = 11, 9
    oh = (h + 2 * cfg["pad"][0] - (cfg["dil"][0] * (kh - 1) + 1)) // cfg["stride"][0] + 1
    ow = (w + 2 * cfg["pad"][1] - (cfg["dil"][1] * (kw - 1) + 1)) // cfg["stride"][1] + 1
    x = feature(n, cin, h, w, dtype=dtype)
    weight = feature(cout, cin // cfg["wg"], kh, kw, seed=1, dtype=dtype)
    offset = feature(n, cfg["og"] * 2 * kh * kw, oh, ow, seed=2, dtype=dtype) * 3  # samples leave the image too
    mask = torch.sigmoid(feature(n, cfg["og"] * kh * kw, oh, ow, seed=3, dtype=dtype)) if cfg["mask"] \
        else torch.zeros(n, 1, dtype=dtype)
    bias = feature(cout, seed=4, dtype=dtype)
    args = (*cfg["stride"], *cfg["pad"], *cfg["dil"], cfg["wg"], cfg["og"], cfg["mask"])
    want = tv.deform_conv2d(x, weight, offset, mask, bias, *args)
    got = ours.deform_conv2d(*map(to_cb, (x, weight, offset, mask, bias)), *args)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    same(want, got, **tol)


@pytest.mark.parametrize("bad", ["offset_channels", "mask_channels", "offset_batch", "offset_size", "groups",
                                 "bias", "too_small", "input_3d"])
def test_deform_conv2d_errors_like_torchvision(bad):
    x, weight = feature(1, 4, 8, 8), feature(2, 4, 3, 3)
    offset, mask, bias = torch.zeros(1, 18, 8, 8), torch.ones(1, 9, 8, 8), torch.zeros(2)
    if bad == "offset_channels":
        offset = offset[:, :17]
    elif bad == "mask_channels":
        mask = mask[:, :8]
    elif bad == "offset_batch":
        offset = offset.repeat(2, 1, 1, 1)
    elif bad == "offset_size":
        offset = offset[:, :, :7]
    elif bad == "groups":
        weight = feature(2, 3, 3, 3)
    elif bad == "bias":
        bias = bias[:1]
    elif bad == "too_small":
        x, offset, mask = x[:, :, :1, :1], offset[:, :, :0, :0], mask[:, :, :0, :0]
    elif bad == "input_3d":
        x = x[0]
    args = (1, 1, 1, 1, 1, 1, 1, 1, True)
    with pytest.raises(RuntimeError):
        tv.deform_conv2d(x, weight, offset, mask, bias, *args)
    with pytest.raises(RuntimeError):
        ours.deform_conv2d(*map(to_cb, (x, weight, offset, mask, bias)), *args)


def test_deform_conv2d_bad_stride_raises():
    # torchvision divides by a zero stride (SIGFPE); ours raises
    x, w = cb.ones(1, 1, 4, 4), cb.ones(1, 1, 3, 3)
    with pytest.raises(RuntimeError, match="stride"):
        ours.deform_conv2d(x, w, cb.zeros(1, 18, 2, 2), cb.zeros(1, 9, 2, 2), cb.zeros(1), 0, 1, 0, 0, 1, 1, 1, 1, False)
    with pytest.raises(RuntimeError, match="groups"):
        ours.deform_conv2d(x, w, cb.zeros(1, 18, 2, 2), cb.zeros(1, 9, 2, 2), cb.zeros(1), 1, 1, 0, 0, 1, 1, 0, 1, False)


def test_same_results_at_1_and_2_threads():
    x, r = feature(2, 16, 20, 20), rois(64, 2)
    b, s = boxes(500), torch.rand(500)
    before = cb.get_num_threads()
    try:
        results = []
        for n in (1, 2):
            cb.set_num_threads(n)
            results.append([to_torch(ours.roi_align(to_cb(x), to_cb(r), 0.5, 7, 7, 2, True)),
                            *map(to_torch, ours.roi_pool(to_cb(x), to_cb(r), 0.5, 7, 7)),
                            to_torch(ours.nms(to_cb(b), to_cb(s), 0.5))])
    finally:
        cb.set_num_threads(before)
    for a, b_ in zip(*results):
        assert torch.equal(a, b_)


# --- registration under torch.ops ------------------------------------------------------------------------------

def test_load_library_registers_only_torchvision():
    folder = os.path.dirname(torchvision.__file__)
    cb.ops.load_library(os.path.join(folder, "_C_stable.so"))
    assert cb.ops.torchvision._cuda_version() == -1
    b, s = boxes(20), torch.rand(20)
    same(tv.nms(b, s, 0.5), cb.ops.torchvision.nms.default(to_cb(b), to_cb(s), 0.5), exact=True)
    with pytest.raises(NotImplementedError, match="inference only"):
        cb.ops.torchvision._roi_align_backward()
    with pytest.raises(NotImplementedError, match="quantized"):
        cb.ops.torchvision.qnms()
    for other in ("/opt/lib/libcustom_ops.so", "/opt/lib/_C_stable.so", os.path.join(folder, "other.so")):
        with pytest.raises(OSError):
            cb.ops.load_library(other)


def test_meta_and_autocast_registrations_keep_the_kernels():
    cb.ops.load_library(os.path.join(os.path.dirname(torchvision.__file__), "_C.so"))
    meta = cb.library.Library("torchvision", "IMPL", "Meta")
    meta.impl(cb.ops.torchvision.roi_align.default, lambda *a: "meta")
    cb.library.Library("torchvision", "IMPL").impl("nms", lambda *a: "autocast", "AutocastCPU")
    cb.library.register_fake("torchvision::nms")(lambda *a: "fake")
    cb.library.register_autograd("torchvision::roi_align", lambda *a: None, setup_context=lambda *a: None)
    x, r = feature(1, 2, 5, 5), rois(3, 1)
    same(tv.roi_align(x, r, 1.0, 2, 2, 0, False), cb.ops.torchvision.roi_align(to_cb(x), to_cb(r), 1.0, 2, 2, 0, False))
    b, s = boxes(10), torch.rand(10)
    same(tv.nms(b, s, 0.5), cb.ops.torchvision.nms(to_cb(b), to_cb(s), 0.5), exact=True)


# --- torchvision.ops end to end under the shim -----------------------------------------------------------------

@pytest.fixture(scope="module")
def runs():
    return Runs(ECO)


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    folder = tmp_path_factory.mktemp("torchvision_ops")
    torch.manual_seed(0)
    layer = torchvision.ops.DeformConv2d(4, 6, 3, stride=2, padding=1, groups=2)
    torch.save(layer.state_dict(), folder / "deform.pt")
    return str(folder)


@pytest.mark.parametrize("name", ["nms", "roi_align", "multiscale_roi_align", "deform_conv2d", "errors"])
def test_torchvision_ops_under_shim(runs, weights, name):
    compare(*runs.section(name, "torchvision_ops.py", weights))
