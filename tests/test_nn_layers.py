"""Every layer of nn part 1 against torch: build the torch layer, copy its state_dict into ours,
run the same input, compare shape, dtype and values."""

import math

import pytest
import torch

import candle_bind as cb
from candle_bind import nn
import candle_bind.nn.functional as F
from conftest import assert_same, check_layer, make, to_cb

tnn = torch.nn


def pair(name, *args, **kwargs):
    torch.manual_seed(0)
    return getattr(tnn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)


@pytest.mark.parametrize("batch", [(), (1,), (3,), (2, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(batch, bias):
    t, c = pair("Linear", 7, 5, bias=bias)
    check_layer(t, c, make((*batch, 7), seed=1))
    t, c = pair("Bilinear", 4, 3, 5, bias=bias)
    check_layer(t, c, make((*batch, 4), seed=2), make((*batch, 3), seed=3))


def test_linear_non_contiguous_and_dtypes():
    t, c = pair("Linear", 6, 4)
    x = make((6, 3), seed=4).t()
    check_layer(t, c, x)
    t64, c64 = t.double(), c.double()
    assert c64.weight.dtype == cb.float64
    check_layer(t64, c64, make((2, 6), "float64", seed=5), atol=1e-10)


CONV_CASES = [
    ("Conv1d", dict(in_channels=4, out_channels=6, kernel_size=3), (2, 4, 11)),
    ("Conv1d", dict(in_channels=4, out_channels=6, kernel_size=5, stride=2, padding=2, dilation=2, groups=2), (2, 4, 19)),
    ("Conv1d", dict(in_channels=4, out_channels=4, kernel_size=4, padding="same", padding_mode="reflect"), (1, 4, 9)),
    ("Conv1d", dict(in_channels=3, out_channels=6, kernel_size=3, padding="valid", bias=False), (3, 9)),
    ("Conv2d", dict(in_channels=3, out_channels=8, kernel_size=3, padding=1), (2, 3, 9, 8)),
    ("Conv2d", dict(in_channels=4, out_channels=8, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)), (1, 4, 10, 9)),
    ("Conv2d", dict(in_channels=6, out_channels=6, kernel_size=3, groups=6, padding=1, padding_mode="circular"), (2, 6, 7, 7)),
    ("Conv2d", dict(in_channels=4, out_channels=4, kernel_size=3, padding="same", padding_mode="replicate"), (1, 4, 6, 5)),
    ("Conv2d", dict(in_channels=4, out_channels=6, kernel_size=2, padding="same"), (1, 4, 6, 5)),
    ("Conv2d", dict(in_channels=4, out_channels=6, kernel_size=1), (2, 4, 5, 5)),
    ("Conv2d", dict(in_channels=3, out_channels=4, kernel_size=7, stride=2, padding=3, bias=False), (1, 3, 32, 32)),
    ("Conv2d", dict(in_channels=3, out_channels=4, kernel_size=3, padding=1, padding_mode="reflect"), (3, 8, 8)),
    ("Conv3d", dict(in_channels=2, out_channels=4, kernel_size=3, padding=1), (2, 2, 5, 6, 4)),
    ("Conv3d", dict(in_channels=4, out_channels=4, kernel_size=(1, 3, 2), stride=(1, 2, 1), groups=2), (1, 4, 3, 7, 5)),
    ("ConvTranspose1d", dict(in_channels=4, out_channels=3, kernel_size=4, stride=2, padding=1), (2, 4, 9)),
    ("ConvTranspose1d", dict(in_channels=4, out_channels=6, kernel_size=3, stride=3, output_padding=1, groups=2, dilation=2), (1, 4, 5)),
    ("ConvTranspose2d", dict(in_channels=4, out_channels=3, kernel_size=2, stride=2), (2, 4, 5, 6)),
    ("ConvTranspose2d", dict(in_channels=6, out_channels=4, kernel_size=3, stride=(2, 1), padding=1, output_padding=(1, 0), groups=2, bias=False), (1, 6, 4, 5)),
    ("ConvTranspose2d", dict(in_channels=2, out_channels=2, kernel_size=3, padding=1), (2, 5, 5)),
    ("ConvTranspose3d", dict(in_channels=2, out_channels=3, kernel_size=2, stride=2), (1, 2, 3, 4, 2)),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name,kwargs,shape", CONV_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CONV_CASES)])
def test_conv(name, kwargs, shape):
    t, c = pair(name, **kwargs)
    check_layer(t, c, make(shape, seed=6), atol=1e-4)


def test_conv_transpose_output_size_and_double():
    t, c = pair("ConvTranspose2d", 4, 2, 3, stride=2, padding=1)
    x = make((1, 4, 5, 5), seed=7)
    c.load_state_dict(t.state_dict())
    assert_same(c(to_cb(x), output_size=[10, 10]), t(x, output_size=[10, 10]).detach(), atol=1e-4)
    t, c = t.double(), c.double()
    check_layer(t, c, x.double(), atol=1e-10)


def test_conv_errors():
    c = nn.Conv2d(3, 4, 3)
    with pytest.raises(RuntimeError, match="channels"):
        c(cb.zeros(1, 5, 8, 8))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        c(cb.zeros(1, 3, 2, 2))
    with pytest.raises(RuntimeError, match="Expected 3D .* or 4D"):
        c(cb.zeros(3, 8))
    with pytest.raises(ValueError):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 3, 3, padding_mode="bogus")


POOL_CASES = [
    ("MaxPool1d", dict(kernel_size=3), (2, 3, 10)),
    ("MaxPool1d", dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True), (2, 3, 11)),
    ("MaxPool2d", dict(kernel_size=3, stride=2, padding=1), (2, 4, 9, 9)),
    ("MaxPool2d", dict(kernel_size=(2, 3), stride=(2, 1), ceil_mode=True), (1, 2, 7, 8)),
    ("MaxPool2d", dict(kernel_size=2), (3, 6, 6)),
    ("MaxPool3d", dict(kernel_size=2, stride=1, padding=1), (1, 2, 4, 5, 3)),
    ("AvgPool1d", dict(kernel_size=4, stride=2, padding=2, count_include_pad=False), (2, 3, 11)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1), (2, 3, 9, 8)),
    ("AvgPool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), (2, 3, 10, 10)),
    ("AvgPool2d", dict(kernel_size=2, divisor_override=3), (1, 2, 6, 6)),
    ("AvgPool3d", dict(kernel_size=(2, 2, 1), stride=1), (1, 2, 4, 4, 3)),
    ("AdaptiveAvgPool1d", dict(output_size=4), (2, 3, 10)),
    ("AdaptiveAvgPool2d", dict(output_size=(1, 1)), (2, 8, 7, 7)),
    ("AdaptiveAvgPool2d", dict(output_size=(3, None)), (2, 3, 7, 5)),
    ("AdaptiveAvgPool2d", dict(output_size=5), (1, 3, 7, 9)),
    ("AdaptiveAvgPool3d", dict(output_size=(2, 3, 1)), (1, 2, 5, 7, 4)),
    ("AdaptiveMaxPool1d", dict(output_size=3), (2, 4, 10)),
    ("AdaptiveMaxPool2d", dict(output_size=(2, 3)), (1, 3, 7, 8)),
]


@pytest.mark.parametrize("name,kwargs,shape", POOL_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(POOL_CASES)])
def test_pool(name, kwargs, shape):
    t, c = pair(name, **kwargs)
    check_layer(t, c, make(shape, seed=8))


def test_pool_indices_nan_and_errors():
    x = make((1, 2, 6, 6), seed=9)
    o, i = F.max_pool2d(to_cb(x), 2, return_indices=True)
    to_, ti = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
    assert_same(o, to_)
    assert_same(i, ti)
    o, i = nn.AdaptiveMaxPool2d(3, return_indices=True)(to_cb(x))
    assert_same(i, tnn.AdaptiveMaxPool2d(3, return_indices=True)(x)[1])
    x[0, 0, 1, 1] = float("nan")
    assert_same(F.max_pool2d(to_cb(x), 2), torch.nn.functional.max_pool2d(x, 2))
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(cb.zeros(1, 1, 8, 8), 2, padding=2)
    assert_same(F.avg_pool2d(to_cb(x.half()), 2), torch.nn.functional.avg_pool2d(x.half(), 2), atol=1e-3)


ACTIVATIONS = [
    ("ReLU", {}), ("ReLU6", {}), ("LeakyReLU", dict(negative_slope=0.2)), ("ELU", dict(alpha=0.7)), ("SELU", {}),
    ("CELU", dict(alpha=1.3)), ("GELU", {}), ("GELU", dict(approximate="tanh")), ("SiLU", {}), ("Mish", {}),
    ("Sigmoid", {}), ("Tanh", {}), ("Hardtanh", dict(min_val=-0.5, max_val=2.0)), ("Hardsigmoid", {}), ("Hardswish", {}),
    ("Softplus", dict(beta=2.0, threshold=5.0)), ("Softsign", {}), ("Softmax", dict(dim=1)), ("LogSoftmax", dict(dim=-1)),
    ("Softmin", dict(dim=0)), ("GLU", dict(dim=-1)), ("LogSigmoid", {}), ("Tanhshrink", {}), ("Softshrink", dict(lambd=0.7)),
    ("Hardshrink", dict(lambd=0.7)), ("Threshold", dict(threshold=0.3, value=-2.0)), ("PReLU", {}), ("PReLU", dict(num_parameters=4)),
    ("RReLU", {}), ("Softmax2d", {}), ("Identity", {}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", ACTIVATIONS, ids=[f"{a[0]}-{i}" for i, a in enumerate(ACTIVATIONS)])
def test_activations(name, kwargs, dtype):
    t, c = pair(name, **kwargs)
    if dtype == "float64":
        t, c = t.double(), c.double()
    x = make((2, 4, 3, 6), dtype, low=-25, high=25, seed=10)
    check_layer(t, c, x, atol=1e-5 if dtype == "float32" else 1e-10)


@pytest.mark.parametrize("name", ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SiLU", "Hardswish", "Hardtanh"])
def test_inplace_activations(name):
    t, c = pair(name, inplace=True)
    x = make((3, 5), seed=11)
    cx = to_cb(x)
    out = c(cx)
    assert out is cx
    assert_same(cx, t(x.clone()))
    assert "inplace=True" in repr(c)


def test_activation_half_and_functional():
    x = make((4, 8), "float16", seed=12)
    assert_same(F.gelu(to_cb(x)), torch.nn.functional.gelu(x), atol=2e-3)
    assert_same(F.silu(to_cb(x)), torch.nn.functional.silu(x), atol=2e-3)
    y = make((3, 5), seed=13)
    assert_same(F.softmax(to_cb(y), dim=-1), torch.nn.functional.softmax(y, dim=-1))
    assert_same(F.relu(to_cb(y)), torch.relu(y))


def test_dropout_modes():
    x = cb.ones(2000)
    for name in ["Dropout", "AlphaDropout"]:
        m = getattr(nn, name)(0.3).eval()
        assert_same(m(to_cb(torch.ones(5))), torch.ones(5))
    d = nn.Dropout(0.25).train()
    y = d(x)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.75) < 0.05
    assert abs(y[y != 0].mean().item() - 1 / 0.75) < 1e-5
    d2 = nn.Dropout2d(0.5).train()
    z = d2(cb.ones(4, 8, 3, 3))
    per_channel = z.reshape(4, 8, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_embedding():
    t, c = pair("Embedding", 10, 4, padding_idx=2)
    idx = torch.tensor([[1, 2, 3], [9, 0, 2]])
    check_layer(t, c, idx)
    assert (c.weight[2] == 0).all()
    w = make((6, 3), seed=14)
    e, te = nn.Embedding.from_pretrained(to_cb(w)), tnn.Embedding.from_pretrained(w)
    assert_same(e(cb.tensor([5, 0])), te(torch.tensor([5, 0])))
    tm, cm = pair("Embedding", 6, 3, max_norm=1.0)
    cm.load_state_dict(tm.state_dict())
    with torch.no_grad():
        ref = tm(torch.tensor([0, 1, 1]))
    assert_same(cm(cb.tensor([0, 1, 1])), ref, atol=1e-5)
    assert_same(cm.weight, tm.weight.detach(), atol=1e-5)
    with pytest.raises(RuntimeError):
        c(cb.tensor([0.5]))
    with pytest.raises(IndexError):
        c(cb.tensor([10]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    t, c = pair("EmbeddingBag", 10, 3, mode=mode)
    inp, off = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4])
    check_layer(t, c, inp, off)
    check_layer(t, c, torch.tensor([[1, 2], [4, 5]]))


PAD_CASES = [
    ("ZeroPad1d", ((2, 1),), (2, 3, 5)), ("ConstantPad1d", ((1, 3), 2.5), (2, 4)), ("ReflectionPad1d", (2,), (1, 2, 5)),
    ("ReplicationPad1d", ((3, 1),), (2, 3, 4)), ("CircularPad1d", ((2, 1),), (1, 2, 4)),
    ("ZeroPad2d", ((1, 0, 2, 1),), (1, 2, 3, 4)), ("ConstantPad2d", (2, -1.0), (2, 3, 3)), ("ReflectionPad2d", ((1, 2, 2, 0),), (1, 2, 4, 4)),
    ("ReplicationPad2d", (2,), (1, 1, 3, 3)), ("CircularPad2d", ((1, 1, 2, 0),), (1, 2, 3, 4)),
    ("ConstantPad3d", ((1, 0, 0, 1, 1, 1), 3.0), (1, 1, 2, 2, 2)), ("ReflectionPad3d", (1,), (1, 1, 3, 3, 3)),
    ("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),), (1, 2, 2, 3, 2)), ("CircularPad3d", (1,), (1, 1, 2, 3, 2)),
    ("ZeroPad2d", ((-1, 2, 0, -1),), (1, 1, 4, 4)),
]


@pytest.mark.parametrize("name,args,shape", PAD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(PAD_CASES)])
def test_padding_layers(name, args, shape):
    t, c = pair(name, *args)
    check_layer(t, c, make(shape, seed=15))


def test_functional_pad_modes():
    x = make((1, 2, 4, 5), seed=16)
    for mode in ["constant", "reflect", "replicate", "circular"]:
        assert_same(F.pad(to_cb(x), (1, 2, 2, 1), mode=mode), torch.nn.functional.pad(x, (1, 2, 2, 1), mode=mode))
    assert_same(F.pad(to_cb(x), (1, 1), value=7.0), torch.nn.functional.pad(x, (1, 1), value=7.0))
    with pytest.raises(RuntimeError, match="Padding size should be less"):
        F.pad(cb.zeros(1, 1, 3), (3, 3), mode="reflect")


def test_shuffles_flatten_fold():
    x = make((2, 8, 3, 4), seed=17)
    check_layer(*pair("PixelShuffle", 2), x)
    check_layer(*pair("PixelUnshuffle", 2), make((2, 3, 4, 6), seed=18))
    check_layer(*pair("ChannelShuffle", 4), x)
    check_layer(*pair("Flatten"), x)
    check_layer(*pair("Flatten", 0, 2), x)
    check_layer(*pair("Unflatten", 1, (2, 4)), x)
    check_layer(*pair("Unfold", kernel_size=(2, 3), padding=1, stride=(1, 2), dilation=1), x)
    cols = make((2, 3 * 2 * 2, 12), seed=19)
    check_layer(*pair("Fold", output_size=(4, 5), kernel_size=2, stride=1, padding=0), make((2, 12, 12), seed=19))
    check_layer(*pair("Fold", output_size=(5, 5), kernel_size=2, stride=2, padding=1), cols[:, :, :9])


def test_functional_misc():
    x = make((4, 5), seed=20)
    assert_same(F.normalize(to_cb(x), dim=1), torch.nn.functional.normalize(x, dim=1))
    assert_same(F.one_hot(cb.tensor([0, 3, 1])), torch.nn.functional.one_hot(torch.tensor([0, 3, 1])))
    assert_same(F.cosine_similarity(to_cb(x), to_cb(x.flip(0))), torch.nn.functional.cosine_similarity(x, x.flip(0)))


def test_snake_matches_formula():
    x = make((2, 3, 7), seed=21)
    alpha = torch.rand(1, 3, 1, generator=torch.Generator().manual_seed(0)) + 0.5
    m = nn.Snake(3)
    m.alpha.copy_(to_cb(alpha))
    ref = x + (1.0 / (alpha + 1e-9)) * torch.sin(alpha * x) ** 2
    assert_same(m(to_cb(x)), ref, atol=1e-5)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses(reduction):
    tf = torch.nn.functional
    logits, target = make((6, 5), seed=30), torch.tensor([0, 4, 2, -100, 1, 4])
    w = torch.rand(5, generator=torch.Generator().manual_seed(1)) + 0.5
    for kw in [{}, {"weight": w}, {"label_smoothing": 0.1}, {"weight": w, "label_smoothing": 0.2}]:
        ours = F.cross_entropy(to_cb(logits), to_cb(target), reduction=reduction,
                               **{k: to_cb(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()})
        assert_same(ours, tf.cross_entropy(logits, target, reduction=reduction, **kw), atol=1e-5)
    probs = torch.softmax(make((6, 5), seed=31), -1)
    assert_same(F.cross_entropy(to_cb(logits), to_cb(probs), reduction=reduction, label_smoothing=0.1),
                tf.cross_entropy(logits, probs, reduction=reduction, label_smoothing=0.1), atol=1e-5)
    img, seg = make((2, 3, 4, 4), seed=32), torch.randint(0, 3, (2, 4, 4), generator=torch.Generator().manual_seed(2))
    assert_same(nn.CrossEntropyLoss(reduction=reduction)(to_cb(img), to_cb(seg)),
                torch.nn.CrossEntropyLoss(reduction=reduction)(img, seg), atol=1e-5)
    logp = logits.log_softmax(1)
    assert_same(F.nll_loss(to_cb(logp), to_cb(target), reduction=reduction), tf.nll_loss(logp, target, reduction=reduction), atol=1e-5)
    a, b = make((4, 3), seed=33), make((4, 3), seed=34)
    for name in ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]:
        assert_same(getattr(F, name)(to_cb(a), to_cb(b), reduction=reduction), getattr(tf, name)(a, b, reduction=reduction), atol=1e-5)
    p, y = torch.sigmoid(a), (b > 0).float()
    assert_same(F.binary_cross_entropy(to_cb(p), to_cb(y), reduction=reduction), tf.binary_cross_entropy(p, y, reduction=reduction), atol=1e-5)
    assert_same(F.binary_cross_entropy_with_logits(to_cb(a), to_cb(y), reduction=reduction, pos_weight=to_cb(torch.tensor([1.0, 2.0, 0.5]))),
                tf.binary_cross_entropy_with_logits(a, y, reduction=reduction, pos_weight=torch.tensor([1.0, 2.0, 0.5])), atol=1e-5)
    q = torch.softmax(b, -1)
    assert_same(F.kl_div(to_cb(a.log_softmax(-1)), to_cb(q), reduction=reduction), tf.kl_div(a.log_softmax(-1), q, reduction=reduction), atol=1e-5)
    assert_same(nn.KLDivLoss(reduction="batchmean")(to_cb(a.log_softmax(-1)), to_cb(q)),
                torch.nn.KLDivLoss(reduction="batchmean")(a.log_softmax(-1), q), atol=1e-5)
    # Zero targets add nothing, negative ones give NaN (torch's xlogy(t, t) - t * input).
    t = torch.tensor([[0.0, 0.5, -0.1], [0.2, 0.0, 0.8], [0.1, 0.1, 0.1], [0.0, 0.0, 1.0]])
    got = F.kl_div(to_cb(a.log_softmax(-1)), to_cb(t), reduction="none")
    want = tf.kl_div(a.log_softmax(-1), t, reduction="none")
    assert torch.allclose(torch.tensor(got.tolist()), want, equal_nan=True, atol=1e-6)


def test_noncontiguous_layer_inputs():
    x = make((2, 8, 6, 5), seed=40).transpose(2, 3)
    check_layer(*pair("Conv2d", 8, 4, 3, padding=1), x, atol=1e-4)
    check_layer(*pair("MaxPool2d", 2, ceil_mode=True), x)
    check_layer(*pair("GELU"), x)
    check_layer(*pair("Linear", 6, 3), x)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_max_pool_nan_and_dtypes_with_and_without_indices(dtype):
    """Max pooling without indices runs axis by axis; NaN must still win and match the indexed path."""
    x = make((2, 3, 9, 11), dtype, seed=4)
    x[0, 1, 4, 5] = math.nan
    x[1, 2, 0, 0] = -math.inf
    for kw in (dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1)),
               dict(kernel_size=3, stride=2, ceil_mode=True)):
        ref = torch.nn.functional.max_pool2d(x, **kw)
        assert_same(F.max_pool2d(to_cb(x), **kw), ref)
        assert_same(F.max_pool2d(to_cb(x), return_indices=True, **kw)[0], ref)
    x3 = make((1, 2, 5, 6, 7), dtype, seed=5)
    assert_same(F.max_pool3d(to_cb(x3), 3, 2, 1), torch.nn.functional.max_pool3d(x3, 3, 2, 1))
    x1 = make((2, 3, 10), dtype, seed=6)
    assert_same(F.max_pool1d(to_cb(x1), 4, 3, 2, ceil_mode=True), torch.nn.functional.max_pool1d(x1, 4, 3, 2, ceil_mode=True))


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=1, padding=1),
                                dict(kernel_size=(2, 5), stride=(2, 3), padding=(0, 2), ceil_mode=True),
                                dict(kernel_size=3, stride=2, dilation=2, padding=1), dict(kernel_size=2)])
def test_pool_long_rows(kw):
    """Rows long enough for the vector runs along W (the max or sum of k taps at every start, picked at
    the windows' starts) and their tails, with edge windows into the padding, NaN and -inf inside
    and on the edges; max exact, average within float tolerance, both without indices."""
    x = make((2, 3, 9, 70), seed=12)
    x[0, 0, 3, 0] = x[0, 1, 2, 37] = x[1, 2, 8, 69] = math.nan
    x[1, 0, 4, 15] = -math.inf
    assert_same(F.max_pool2d(to_cb(x), **kw), torch.nn.functional.max_pool2d(x, **kw))
    x = make((1, 4, 6, 37), seed=13)
    for extra in (dict(), dict(count_include_pad=False)):
        if kw.get("dilation", 1) == 1:
            assert_same(F.avg_pool2d(to_cb(x), **kw, **extra), torch.nn.functional.avg_pool2d(x, **kw, **extra), atol=1e-6)


@pytest.mark.parametrize("cls,shape,k,s,p,d", [
    ("Conv2d", (2, 8, 12, 15), 3, 1, 1, 1), ("Conv2d", (1, 6, 14, 14), 7, 1, 3, 1), ("Conv2d", (2, 4, 11, 9), 3, 2, 1, 1),
    ("Conv2d", (1, 8, 9, 11), (3, 5), 1, (0, 2), (2, 1)), ("Conv2d", (1, 4, 5, 5), 5, 1, 0, 1), ("Conv1d", (2, 6, 17), 4, 1, 0, 3),
    ("Conv1d", (1, 5, 40), 31, 1, 15, 1), ("Conv3d", (1, 3, 4, 5, 6), 3, 1, 1, 1)])
def test_depthwise_conv_geometries(cls, shape, k, s, p, d):
    """Depthwise convolution: stride-1 1-2-D runs over a padded plane, the rest tap by tap."""
    c = shape[1]
    torch.manual_seed(0)
    ref = getattr(torch.nn, cls)(c, c, k, s, p, d, groups=c)
    check_layer(ref, getattr(nn, cls)(c, c, k, s, p, d, groups=c), make(shape, seed=9), atol=1e-5)


def test_distance_modules():
    x1, x2 = make((4, 6)), make((4, 6), seed=1)
    for ref, ours in [(torch.nn.CosineSimilarity(dim=1), cb.nn.CosineSimilarity(dim=1)),
                      (torch.nn.CosineSimilarity(dim=0, eps=1e-3), cb.nn.CosineSimilarity(dim=0, eps=1e-3)),
                      (torch.nn.PairwiseDistance(), cb.nn.PairwiseDistance()),
                      (torch.nn.PairwiseDistance(p=1.0, keepdim=True), cb.nn.PairwiseDistance(p=1.0, keepdim=True))]:
        check_layer(ref, ours, x1, x2)


def _same_outcome(fn, *inputs):
    """fn on torch and on candle_bind: both raise (same exception type, torch's message start) or
    both return the same result."""
    try:
        ref = fn(torch, torch.nn.functional, *inputs)
    except Exception as e:  # noqa: BLE001 - any torch error
        with pytest.raises(type(e)) as ours:
            fn(cb, F, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
        head = str(e).split("\n")[0][:40]
        assert str(ours.value).startswith(head), (str(ours.value), str(e))
        return
    ours = fn(cb, F, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
    assert_same(ours, ref, 1e-5, 1e-5)


X4 = make((2, 3, 4, 5))
F_CHECKS = {
    "dropout p nan": (lambda L, f, x: f.dropout(x, p=math.nan, training=False), X4),
    "alpha_dropout p out of range": (lambda L, f, x: f.alpha_dropout(x, p=1.5), X4),
    "alpha_dropout p=1": (lambda L, f, x: f.alpha_dropout(x, p=1.0, training=True), X4),
    "batch_norm one running stat": (lambda L, f, x: f.batch_norm(x, None, L.ones(3), training=True), X4),
    "batch_norm no channels": (lambda L, f, x: f.batch_norm(x[:, :0], L.ones(0), L.ones(0), training=True), X4),
    "cross_entropy int32 target": (lambda L, f, x: f.cross_entropy(x[:, :, 0, 0], L.zeros(2, dtype=L.int32)), X4),
    "nll_loss uint8 target": (lambda L, f, x: f.nll_loss(x[:, :, 0, 0], L.zeros(2, dtype=L.uint8)), X4),
    "huber_loss delta 0": (lambda L, f, x: f.huber_loss(x, x, delta=0.0), X4),
    "rrelu bounds": (lambda L, f, x: f.rrelu(x, lower=0.5, upper=0.1), X4),
    "leaky_relu int": (lambda L, f, x: f.leaky_relu(x.long()), X4),
    "gelu int": (lambda L, f, x: f.gelu(x.int()), X4),
    "relu bool": (lambda L, f, x: f.relu(x > 0), X4),
    "hardshrink int": (lambda L, f, x: f.hardshrink(x.long()), X4),
    "embedding padding_idx out of range": (lambda L, f, w: f.embedding(L.zeros(2, dtype=L.int64), w, padding_idx=-6),
                                           make((5, 3))),
    "pad replicate empty pads": (lambda L, f, x: f.pad(x, (), mode="replicate"), X4),
    "pad replicate rank": (lambda L, f, x: f.pad(x[0, 0, 0], (1, 1), mode="replicate"), X4),
    "pad reflect output too small": (lambda L, f, x: f.pad(x, (-2, -3, 0, 0), mode="reflect"), X4),
    "pad circular negative": (lambda L, f, x: f.pad(x, (-3, -3), mode="circular"), X4),
    "pad replicate crop": (lambda L, f, x: f.pad(x, (-1, 2, 1, -2), mode="replicate"), X4),
    "affine_grid zero size": (lambda L, f, t: f.affine_grid(t, [2, 1, 0, 4], align_corners=False), make((2, 2, 3))),
    "interpolate antialias nearest": (lambda L, f, x: f.interpolate(x, size=2, mode="nearest", antialias=True), X4),
    "interpolate area to zero": (lambda L, f, x: f.interpolate(x, scale_factor=0.0, mode="area"), X4),
    "interpolate nearest int32": (lambda L, f, x: f.interpolate(x.int().unsqueeze(2), size=2), X4),
    "adaptive pool None": (lambda L, f, x: f.adaptive_avg_pool2d(x, None), X4),
    "adaptive pool 1d None": (lambda L, f, x: f.adaptive_max_pool1d(x[0], None), X4),
    "adaptive pool zero": (lambda L, f, x: [f.adaptive_avg_pool2d(x, 0), *f.adaptive_max_pool2d(x, (0, 2), True)], X4),
    "avg_pool1d float kernel": (lambda L, f, x: f.avg_pool1d(x[0], kernel_size=2.5), X4),
    "max_pool ceil window past the input": (lambda L, f, x: f.max_pool2d(x, kernel_size=(5, 1), ceil_mode=True), X4),
    "avg_pool ceil window past the input": (lambda L, f, x: f.avg_pool2d(x, kernel_size=(5, 2), ceil_mode=True), X4),
    "max_pool too small": (lambda L, f, x: f.max_pool2d(x, kernel_size=(5, 1)), X4),
    "conv_transpose empty input": (lambda L, f, x, w: f.conv_transpose2d(x[:0], w, stride=2, padding=2, output_padding=2),
                                   X4, make((3, 1, 2, 2))),
    "conv empty input weight dtype": (lambda L, f, x, w: f.conv2d(x[:0], w.half()), X4, make((1, 3, 2, 2))),
    "cosine_similarity broadcast": (lambda L, f, a, b: f.cosine_similarity(a, b), make((5,)), make((4, 3, 5))),
    "sdpa empty queries": (lambda L, f, q, k: f.scaled_dot_product_attention(q[:, :, :0], k, k[..., :2]), X4, make((2, 4, 3, 5))),
    "sdpa no keys": (lambda L, f, q: f.scaled_dot_product_attention(q, q[:, :, :0], q[:, :, :0]), X4),
    "sdpa 1-D mask": (lambda L, f, q: f.scaled_dot_product_attention(q, q, q, attn_mask=L.zeros(4)), X4),
    "instance_norm empty": (lambda L, f, x: f.instance_norm(x[..., :0]), X4),
    "fold uint8": (lambda L, f, x: f.fold(x.byte(), output_size=(3, 6), kernel_size=3), make((2, 9, 4))),
    "bilinear dtypes": (lambda L, f, a, w: f.bilinear(a, a.double(), w), make((2, 3)), make((4, 3, 3))),
    "prelu dtypes": (lambda L, f, x, w: f.prelu(x, w.double()), X4, make((3,))),
    "linear bool": (lambda L, f, x: f.linear(x > 0, x[0, 0] > 0), X4),
    "grid_sample bicubic": (lambda L, f, x, g: [f.grid_sample(x, g, mode="bicubic", padding_mode=p, align_corners=ac)
                                                for p in ("zeros", "border", "reflection") for ac in (False, True)],
                            X4, make((2, 3, 2, 2), low=-1.3, high=1.3)),
}


@pytest.mark.parametrize("name", list(F_CHECKS))
def test_functional_raises_like_torch(name):
    fn, *inputs = F_CHECKS[name]
    _same_outcome(fn, *inputs)
