"""The convolution kernel paths against torch, each at the sizes that pick it: Winograd F(2x2,3x3)
for 3x3 stride-1 convs with 16+ channels (its filter cache included), Winograd along the rows for
stride-2 rows of 5-8 taps and stride-1 rows of 3 taps, the direct kernel for wide
strided/dilated/grouped 1-D and 2-D f32 convs (AVX-512), im2col over tiles of output rows, 1x1
convs as a plain product, depthwise; transposed convs as forward convs over their output phases.
`tests/test_isa.py` reruns them at every lower ISA level the CPU has."""

import pytest
import torch

import candle_bind as cb
from candle_bind import nn
import candle_bind.nn.functional as F
from conftest import assert_same, check_layer, make, to_cb


def pair(cls, *args, **kwargs):
    torch.manual_seed(0)
    return getattr(torch.nn, cls)(*args, **kwargs), getattr(nn, cls)(*args, **kwargs)


def at_threads(counts, fn):
    """fn() at each thread count, the count restored afterwards: the results."""
    old = cb.get_num_threads()
    try:
        out = []
        for n in counts:
            cb.set_num_threads(n)
            out.append(fn())
        return out
    finally:
        cb.set_num_threads(old)


def same_bits_at_threads(layer, x):
    """The layer's output on x is bit-identical at 1, 2 and 3 threads."""
    outs = at_threads((1, 2, 3), lambda: layer(to_cb(x)).numpy())
    assert all((o == outs[0]).all() for o in outs)


# (batch, C_in, C_out, H, W, padding, bias): odd and even planes (partial last tile row and
# column), padding 0-2, several tile-row blocks, one tile per image at the smallest.
WINOGRAD = [(1, 16, 16, 8, 8, 1, True), (2, 16, 32, 9, 11, 1, False), (1, 32, 16, 7, 8, 0, True),
            (3, 17, 19, 13, 10, 2, True), (1, 64, 64, 56, 56, 1, True), (2, 24, 40, 30, 5, 1, True),
            (1, 16, 16, 6, 70, 1, False),
            # blocks of 20 and 36 tiles: a product tail of 4 positions (the half-vector tile)
            (1, 16, 16, 4, 20, 1, True), (1, 16, 24, 8, 18, 1, False)]


@pytest.mark.parametrize("n,cin,cout,h,w,p,bias", WINOGRAD)
def test_winograd_3x3(n, cin, cout, h, w, p, bias):
    t, c = pair("Conv2d", cin, cout, 3, padding=p, bias=bias)
    check_layer(t, c, make((n, cin, h, w), seed=1), atol=2e-5, rtol=1e-4)


def test_winograd_non_contiguous_input_and_float64():
    t, c = pair("Conv2d", 16, 16, 3, padding=1)
    x = make((2, 9, 16, 10), seed=2).permute(0, 2, 1, 3)
    check_layer(t, c, x, atol=2e-5)
    check_layer(t.double(), c.double(), x.double(), atol=1e-10)


def test_winograd_filters_follow_weight_changes():
    """Transformed filters are cached by weight content: writes in place, a new state_dict loaded
    into the same parameters and a fresh layer all give torch's answer."""
    t, c = pair("Conv2d", 32, 32, 3, padding=1)
    x = make((1, 32, 12, 12), seed=3)
    check_layer(t, c, x, atol=2e-5)
    with torch.no_grad():
        t.weight[3, 5, 1, 1] += 1.0
    check_layer(t, c, x, atol=2e-5)
    with torch.no_grad():
        c.weight[0, 0, 0, 0] = 7.0
        t.weight[0, 0, 0, 0] = 7.0
    assert_same(c(to_cb(x)), t(x).detach(), atol=2e-5)
    t2, c2 = pair("Conv2d", 32, 32, 3, padding=1)
    check_layer(t2, c2, x, atol=2e-5)
    # Weights past one hashing chunk (65536 elements: hashed in parallel, then folded): a write to
    # the last element, then to the first, is seen.
    t3, c3 = pair("Conv2d", 96, 96, 3, padding=1)
    x3 = make((1, 96, 12, 12), seed=5)
    check_layer(t3, c3, x3, atol=5e-5)
    for at in [(95, 95, 2, 2), (0, 0, 0, 0)]:
        with torch.no_grad():
            c3.weight[at] = 3.0
            t3.weight[at] = 3.0
        assert_same(c3(to_cb(x3)), t3(x3).detach(), atol=5e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_winograd_half_precision(dtype):
    t, c = pair("Conv2d", 16, 16, 3, padding=1)
    t, c = t.to(getattr(torch, dtype)), c.to(getattr(cb, dtype))
    tol = 2e-2 if dtype == "float16" else 1e-1
    check_layer(t, c, make((1, 16, 10, 10), dtype, seed=4, low=-1, high=1), atol=tol, rtol=tol)


# Shapes past one im2col tile (many tiles of output rows), strided and dilated, grouped, 1-D
# speech-style front ends, 1x1 with few and many (batch, group) products.
TILED = [
    ("Conv2d", dict(in_channels=3, out_channels=16, kernel_size=7, stride=2, padding=3), (1, 3, 70, 66)),
    ("Conv2d", dict(in_channels=8, out_channels=16, kernel_size=3, stride=2, padding=1, dilation=2), (2, 8, 41, 37)),
    ("Conv2d", dict(in_channels=32, out_channels=32, kernel_size=3, padding=1, groups=8), (2, 32, 20, 21)),
    ("Conv2d", dict(in_channels=16, out_channels=32, kernel_size=(5, 3), padding=(2, 1)), (1, 16, 33, 17)),
    ("Conv1d", dict(in_channels=8, out_channels=16, kernel_size=48, stride=2, padding=3), (2, 8, 1500)),
    ("Conv1d", dict(in_channels=4, out_channels=24, kernel_size=7, stride=2), (4, 4, 801)),
    ("Conv1d", dict(in_channels=16, out_channels=16, kernel_size=3, padding=1), (1, 16, 3000)),
    ("Conv2d", dict(in_channels=24, out_channels=40, kernel_size=1), (1, 24, 17, 19)),
    ("Conv2d", dict(in_channels=24, out_channels=40, kernel_size=1, groups=4, bias=False), (5, 24, 9, 7)),
    ("Conv2d", dict(in_channels=24, out_channels=40, kernel_size=1, stride=2), (3, 24, 9, 7)),
    ("Conv3d", dict(in_channels=16, out_channels=16, kernel_size=3, padding=1), (1, 16, 6, 12, 10)),
]


@pytest.mark.parametrize("cls,kwargs,shape", TILED, ids=[f"{c[0]}-{i}" for i, c in enumerate(TILED)])
def test_im2col_tiles(cls, kwargs, shape):
    t, c = pair(cls, **kwargs)
    check_layer(t, c, make(shape, seed=5), atol=5e-5, rtol=1e-4)


# Shapes the direct kernel takes on AVX-512: output rows at most 8% narrower than the padded,
# stride-split input rows (wide maps). Odd channel counts leave partial 8-channel tiles; strides
# with dilations that read only some stride phases; groups; 1-D front ends; one-vector row tails.
DIRECT = [
    ("Conv2d", dict(in_channels=3, out_channels=12, kernel_size=7, stride=2, padding=3), (1, 3, 64, 150)),
    ("Conv2d", dict(in_channels=8, out_channels=20, kernel_size=3, stride=(2, 3), padding=(1, 2), dilation=(2, 1)), (2, 8, 41, 200)),
    ("Conv2d", dict(in_channels=12, out_channels=18, kernel_size=3, padding=1, groups=3), (2, 12, 9, 130)),
    ("Conv1d", dict(in_channels=4, out_channels=24, kernel_size=7, stride=2), (4, 4, 801)),
    ("Conv1d", dict(in_channels=8, out_channels=3, kernel_size=5, stride=3, padding=2, dilation=2), (3, 8, 500)),
    ("Conv2d", dict(in_channels=6, out_channels=10, kernel_size=5, stride=2, padding=4, dilation=2), (1, 6, 30, 400)),
    ("Conv2d", dict(in_channels=32, out_channels=3, kernel_size=5, padding=2, bias=False), (1, 32, 40, 60)),
    ("Conv2d", dict(in_channels=5, out_channels=9, kernel_size=(1, 3), stride=(1, 2)), (2, 5, 3, 37)),
]


@pytest.mark.parametrize("cls,kwargs,shape", DIRECT, ids=[f"{c[0]}-{i}" for i, c in enumerate(DIRECT)])
def test_direct_kernel(cls, kwargs, shape):
    t, c = pair(cls, **kwargs)
    x = make(shape, seed=10)
    check_layer(t, c, x, atol=5e-5, rtol=1e-4)
    # A non-contiguous input, and every thread count (tiles split over positions and batches).
    check_layer(t, c, x.transpose(-1, -2).contiguous().transpose(-1, -2), atol=5e-5, rtol=1e-4)
    at_threads((1, 3), lambda: check_layer(t, c, x, atol=5e-5, rtol=1e-4))


# Shapes Winograd along the rows takes on AVX-512 (16+ output channels and columns): F(4, 4) over
# two column phases for stride 2 with 5-8 taps, F(4, 3) for stride 1 with 3 taps, F(4, 2) for stride
# 1 with 2 taps over rows of 48+ outputs (the phases of k4 stride-2 transposed convs), F(4, 2) on
# the even columns for stride 2 with 3 taps (3x3 stride-2 downsampling). Rows of whole
# tiles and rows whose last tile is partial (tiles that cross output rows), row strides 1 and 2,
# tile tails of 8 channels, 1-D front ends; 3x3 maps with too few input channels for Winograd 2-D.
STRIDED_WINOGRAD = [
    ("Conv1d", dict(in_channels=80, out_channels=48, kernel_size=3, padding=1), (1, 80, 300)),
    ("Conv1d", dict(in_channels=16, out_channels=20, kernel_size=3), (3, 16, 203)),
    ("Conv1d", dict(in_channels=16, out_channels=32, kernel_size=3, padding=2, bias=False), (2, 16, 66)),
    ("Conv2d", dict(in_channels=8, out_channels=16, kernel_size=3, padding=1), (1, 8, 30, 70)),
    ("Conv2d", dict(in_channels=6, out_channels=20, kernel_size=(5, 3), stride=(2, 1), padding=(2, 1)), (2, 6, 21, 45)),
    ("Conv2d", dict(in_channels=3, out_channels=64, kernel_size=7, stride=2, padding=3), (1, 3, 96, 96)),
    ("Conv2d", dict(in_channels=3, out_channels=16, kernel_size=7, stride=2, padding=3), (2, 3, 45, 67)),
    ("Conv2d", dict(in_channels=4, out_channels=20, kernel_size=(3, 8), stride=(1, 2), padding=(1, 0)), (1, 4, 30, 70)),
    ("Conv2d", dict(in_channels=2, out_channels=17, kernel_size=5, stride=2, padding=2, bias=False), (1, 2, 25, 80)),
    ("Conv2d", dict(in_channels=4, out_channels=16, kernel_size=(2, 6), stride=2, padding=(0, 1)), (1, 4, 9, 71)),
    ("Conv1d", dict(in_channels=32, out_channels=64, kernel_size=7, stride=2), (2, 32, 1000)),
    ("Conv1d", dict(in_channels=16, out_channels=32, kernel_size=5, stride=2, padding=2), (3, 16, 301)),
    ("Conv1d", dict(in_channels=8, out_channels=24, kernel_size=6, stride=2), (2, 8, 403)),
    ("Conv1d", dict(in_channels=8, out_channels=16, kernel_size=8, stride=2, padding=3), (1, 8, 200)),
    ("Conv2d", dict(in_channels=32, out_channels=24, kernel_size=2), (1, 32, 20, 64)),
    ("Conv2d", dict(in_channels=16, out_channels=40, kernel_size=2, padding=1), (2, 16, 9, 53)),
    ("Conv2d", dict(in_channels=16, out_channels=16, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), bias=False), (1, 16, 15, 70)),
    ("Conv1d", dict(in_channels=12, out_channels=32, kernel_size=2), (3, 12, 301)),
    ("ConvTranspose2d", dict(in_channels=32, out_channels=24, kernel_size=4, stride=2, padding=1), (1, 32, 24, 48)),
    ("Conv2d", dict(in_channels=32, out_channels=40, kernel_size=3, stride=2, padding=1), (1, 32, 56, 56)),
    ("Conv2d", dict(in_channels=24, out_channels=32, kernel_size=3, stride=2, padding=1, bias=False), (2, 24, 44, 38)),
    ("Conv2d", dict(in_channels=16, out_channels=24, kernel_size=3, stride=2, padding=1), (1, 16, 40, 40)),
    ("Conv2d", dict(in_channels=8, out_channels=16, kernel_size=3, stride=2), (1, 8, 31, 75)),
    ("Conv2d", dict(in_channels=16, out_channels=16, kernel_size=(1, 3), stride=(1, 2), padding=(0, 1)), (2, 16, 5, 300)),
    ("Conv1d", dict(in_channels=16, out_channels=32, kernel_size=3, stride=2, padding=1), (3, 16, 1001)),
]


@pytest.mark.parametrize("cls,kwargs,shape", STRIDED_WINOGRAD, ids=[f"{c[0]}-{i}" for i, c in enumerate(STRIDED_WINOGRAD)])
def test_strided_winograd(cls, kwargs, shape):
    t, c = pair(cls, **kwargs)
    x = make(shape, seed=15)
    check_layer(t, c, x, atol=5e-5, rtol=1e-4)
    check_layer(t, c, x.transpose(-1, -2).contiguous().transpose(-1, -2), atol=5e-5, rtol=1e-4)
    # Every thread count gives the same bits: tiles are split, never their sums.
    same_bits_at_threads(c, x)


def test_strided_winograd_large_values():
    """Inputs and weights far from 1 (the transforms scale by up to 8): relative error stays small."""
    t, c = pair("Conv2d", 3, 32, 7, stride=2, padding=3)
    with torch.no_grad():
        t.weight.mul_(1e3)
    c.load_state_dict(t.state_dict())
    x = make((1, 3, 40, 72), seed=16) * 1e-2
    want = t(x).detach()
    got = torch.from_numpy(c(to_cb(x)).numpy())
    assert float((got - want).abs().max() / want.abs().max()) < 1e-5


@pytest.mark.parametrize("shape,wshape,kw", [
    ((0, 3, 64, 150), (16, 3, 7, 7), dict(stride=2, padding=3)),    # empty batch, direct geometry
    ((2, 0, 20, 130), (5, 0, 3, 3), dict(padding=1)),               # no input channels: torch answers (N, 0, ...)
    ((2, 0, 20, 20), (32, 0, 3, 3), dict(padding=1)),
    ((1, 4, 1, 130), (6, 4, 1, 3), {}),                             # one-row map
    ((1, 6, 1, 1), (8, 6, 1, 1), dict(stride=2)),                   # one-element map, strided 1x1
])
def test_conv_edge_shapes(shape, wshape, kw):
    x, w, b = make(shape, seed=12), make(wshape, seed=13), make(wshape[:1], seed=14)
    for bias in (b, None):
        assert_same(F.conv2d(to_cb(x), to_cb(w), None if bias is None else to_cb(bias), **kw),
                    torch.nn.functional.conv2d(x, w, bias, **kw), atol=1e-5)


def test_conv_weight_without_output_channels_raises():
    for fn, x, w in [("conv1d", (1, 4, 130), (0, 4, 3)), ("conv2d", (1, 4, 10, 10), (0, 4, 3, 3)),
                     ("conv_transpose2d", (2, 0, 5, 5), (0, 3, 3, 3))]:
        with pytest.raises(RuntimeError) as theirs:
            getattr(torch.nn.functional, fn)(make(x), make(w), padding=1)
        with pytest.raises(RuntimeError) as ours:
            getattr(F, fn)(to_cb(make(x)), to_cb(make(w)), padding=1)
        assert str(ours.value) == str(theirs.value)


def test_winograd_small_map_over_threads():
    """A small map at batch 1 (fewer tile blocks than threads) splits its products by channel."""
    t, c = pair("Conv2d", 40, 36, 3, padding=1)
    x = make((1, 40, 7, 9), seed=11)
    at_threads((1, 2, 3, 5), lambda: check_layer(t, c, x, atol=2e-5, rtol=1e-4))


@pytest.mark.parametrize("shape,k,s,p", [((1, 64, 56, 56), 3, 1, 1), ((2, 32, 15, 17), 7, 1, 3),
                                         ((1, 16, 2000), 31, 1, 15), ((1, 48, 23, 23), 3, 2, 1)])
def test_depthwise_with_bias(shape, k, s, p):
    cls = "Conv1d" if len(shape) == 3 else "Conv2d"
    t, c = pair(cls, shape[1], shape[1], k, s, p, groups=shape[1])
    check_layer(t, c, make(shape, seed=6), atol=2e-5)


def test_empty_batch_and_threads():
    t, c = pair("Conv2d", 16, 16, 3, padding=1)
    check_layer(t, c, make((0, 16, 8, 8)))
    x = make((3, 16, 20, 20), seed=7)
    at_threads((1, 2, 3), lambda: check_layer(t, c, x, atol=2e-5))


def test_functional_weight_views():
    """A weight that is a view (transposed, sliced) is read through its layout, not in place."""
    w = make((16, 32, 3, 3), seed=8)
    x = make((1, 16, 10, 10), seed=9)
    wt = w.transpose(0, 1)
    assert_same(F.conv2d(to_cb(x), to_cb(w).transpose(0, 1), padding=1),
                torch.nn.functional.conv2d(x, wt, padding=1), atol=2e-5)


# Transposed convs run as forward convs over their output phases (src/nn/transposed.rs). Each
# geometry picks a case: stride 1 (one phase, the flipped weight: Winograd here), groups and
# dilation; k4 s2 p1 (phases padded on one side, read in place with one extra output); k2 s2 (1x1
# phases, a plain product); output_padding; stride and dilation sharing a factor (phases no tap
# reaches: the bias alone); padding past the kernel (phases that crop the input: a padded copy);
# unequal strides; a long 1-D signal; 3-D; rows of an odd width past 64 over grouped input channels
# in more than one block of 16 (the phase weights' copy, the vector interleave and its tails).
TRANSPOSED = [
    ("ConvTranspose2d", dict(in_channels=32, out_channels=24, kernel_size=3, padding=1), (1, 32, 20, 21)),
    ("ConvTranspose2d", dict(in_channels=12, out_channels=9, kernel_size=3, padding=2, dilation=2, groups=3), (2, 12, 9, 10)),
    ("ConvTranspose2d", dict(in_channels=16, out_channels=8, kernel_size=4, stride=2, padding=1), (2, 16, 13, 11)),
    ("ConvTranspose2d", dict(in_channels=24, out_channels=16, kernel_size=2, stride=2), (1, 24, 9, 7)),
    ("ConvTranspose2d", dict(in_channels=8, out_channels=6, kernel_size=3, stride=2, padding=1, output_padding=1), (2, 8, 7, 9)),
    ("ConvTranspose2d", dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, dilation=2, padding=1, output_padding=1), (1, 4, 6, 5)),
    ("ConvTranspose2d", dict(in_channels=6, out_channels=4, kernel_size=3, stride=3, padding=5), (1, 6, 8, 9)),
    ("ConvTranspose2d", dict(in_channels=6, out_channels=4, kernel_size=(3, 5), stride=(1, 3), padding=(1, 2), groups=2), (2, 6, 5, 8)),
    ("ConvTranspose1d", dict(in_channels=8, out_channels=4, kernel_size=7, stride=3, padding=2), (1, 8, 1500)),
    ("ConvTranspose3d", dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1, output_padding=(1, 0, 1)), (1, 4, 4, 5, 3)),
    ("ConvTranspose2d", dict(in_channels=40, out_channels=12, kernel_size=3, stride=2, padding=1, groups=2), (1, 40, 5, 37)),
]


@pytest.mark.parametrize("cls,kwargs,shape", TRANSPOSED, ids=[f"{c[0]}-{i}" for i, c in enumerate(TRANSPOSED)])
def test_conv_transpose_phases(cls, kwargs, shape):
    t, c = pair(cls, **kwargs)
    x = make(shape, seed=15)
    check_layer(t, c, x, atol=5e-5, rtol=1e-4)
    # Bit-identical at every thread count (the phases' kernels split work by shape alone).
    same_bits_at_threads(c, x)
    check_layer(t.double(), c.double(), x.double(), atol=1e-10, rtol=1e-10)


def test_transposed_winograd_filters_do_not_accumulate():
    """A stride-1 transposed 3x3 runs Winograd on a flipped copy of its weight made per call: the
    transformed filters are found again by content, so repeated calls do not pile up cache entries
    (keyed by the copy's address, each call whose copy landed elsewhere added 1 MB here)."""
    resource = pytest.importorskip("resource")
    xs = make((1, 128, 12, 12), seed=20)
    ws = [make((128, 128, 3, 3), seed=21 + i) * 0.05 for i in range(3)]
    x, cws = to_cb(xs), [to_cb(w) for w in ws]
    for w, cw in zip(ws, cws):
        assert_same(F.conv_transpose2d(x, cw, padding=1), torch.nn.functional.conv_transpose2d(xs, w, padding=1), atol=5e-5, rtol=1e-4)
    held = []

    def calls(n):
        for _ in range(n):
            for cw in cws:
                F.conv_transpose2d(x, cw, padding=1)
                # A buffer of the copy's size kept alive takes its address, so the next copy lands
                # elsewhere (the heap zeroes it: it counts in RSS, below).
                held.append(cb.zeros(128 * 128 * 9))
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    before, n = calls(3), len(held)
    grown = calls(20) - before
    assert grown < (len(held) - n) * 128 * 128 * 9 * 4 / 2**20 + 16


def test_row_winograd_filters_follow_weight_changes():
    """Winograd along the rows keeps its transformed filters per weight content, as Winograd 2-D."""
    t, c = pair("Conv1d", 32, 32, 3, padding=1)
    x = make((2, 32, 100), seed=17)
    check_layer(t, c, x, atol=5e-5, rtol=1e-4)
    with torch.no_grad():
        t.weight[3, 5, 1] += 1.0
    check_layer(t, c, x, atol=5e-5, rtol=1e-4)
    with torch.no_grad():
        c.weight[0, 0, 0] = 7.0
        t.weight[0, 0, 0] = 7.0
    assert_same(c(to_cb(x)), t(x).detach(), atol=5e-5, rtol=1e-4)
