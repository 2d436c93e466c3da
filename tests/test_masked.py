"""torch.masked parity with live torch: mask broadcasting, identities, dim/keepdim/dtype, fully masked rows."""

import pytest
import torch

import candle_bind as cb
from conftest import assert_same, make, to_cb

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]
NORMALIZATIONS = ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"]


def _mask(shape, seed=1):
    m = make(shape, "bool", seed=seed)
    m.view(-1)[0] = True
    return m


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (-1, True), ((0, 2), False), ((), True)])
@pytest.mark.parametrize("mshape", [(2, 3, 4), (3, 1), None])
def test_reductions(name, dim, keepdim, mshape):
    x = make((2, 3, 4), "float64")
    mask = None if mshape is None else _mask(mshape)
    kw = {"keepdim": keepdim} if mask is None else {"keepdim": keepdim, "mask": mask}
    cbkw = dict(kw, mask=to_cb(mask)) if mask is not None else kw
    want = getattr(torch.masked, name)(x, dim=dim, **kw)
    got = getattr(cb.masked, name)(to_cb(x), dim=dim, **cbkw)
    assert_same(got, want)


@pytest.mark.parametrize("name", NORMALIZATIONS)
@pytest.mark.parametrize("dim", [0, -1])
def test_normalizations(name, dim):
    x, mask = make((3, 5), "float32"), _mask((3, 5))
    assert_same(getattr(cb.masked, name)(to_cb(x), dim, mask=to_cb(mask)), getattr(torch.masked, name)(x, dim, mask=mask))
    assert_same(getattr(cb.masked, name)(to_cb(x), dim), getattr(torch.masked, name)(x, dim))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float16", "bfloat16"])
def test_dtypes(dtype):
    x, mask = make((3, 4), dtype), _mask((3, 4))
    for name, kw in [("sum", {}), ("prod", {"dim": 1}), ("amax", {"dim": 0}), ("argmax", {"dim": 1}),
                     ("argmin", {"dim": 0}), ("cumsum", {"dim": 1})]:
        if dtype == "bool" and name not in ("sum", "prod"):
            continue
        want = getattr(torch.masked, name)(x, mask=mask, **kw)
        assert_same(getattr(cb.masked, name)(to_cb(x), mask=to_cb(mask), **kw), want)
    want = torch.masked.sum(x, 1, dtype=torch.float64, mask=mask)
    assert_same(cb.masked.sum(to_cb(x), 1, dtype=cb.float64, mask=to_cb(mask)), want)


def test_fully_masked_rows_and_median():
    x = make((3, 4), "float32")
    mask = torch.tensor([[True, False, True, True], [False] * 4, [True, True, False, False]])
    for name in ("mean", "var", "std", "amax", "median", "logsumexp", "norm"):
        want = getattr(torch.masked, name)(x, 1, mask=mask)
        assert_same(getattr(cb.masked, name)(to_cb(x), 1, mask=to_cb(mask)), want)
    xi = make((3, 4), "int64")
    assert_same(cb.masked.median(to_cb(xi), 0, mask=to_cb(mask)), torch.masked.median(xi, 0, mask=mask))
    with pytest.raises(ValueError):
        cb.masked.median(to_cb(xi), 1, mask=to_cb(mask))
    with pytest.raises(ValueError):
        cb.masked.mean(to_cb(xi))


def test_logaddexp_normalize_and_zero_dim():
    a, b = make((4,), "float32"), make((4,), "float32", seed=2)
    ma, mb = torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])
    assert_same(cb.masked.logaddexp(to_cb(a), to_cb(b), input_mask=to_cb(ma), other_mask=to_cb(mb)),
                torch.masked.logaddexp(a, b, input_mask=ma, other_mask=mb))
    x, mask = make((3, 4), "float32"), _mask((3, 4))
    for ord in (2.0, 1.0, float("inf"), float("-inf")):
        assert_same(cb.masked.normalize(to_cb(x), ord, 1, mask=to_cb(mask)), torch.masked.normalize(x, ord, 1, mask=mask))
    z = torch.tensor(2.5)
    for name in ("sum", "amax", "mean", "norm"):
        assert_same(getattr(cb.masked, name)(to_cb(z), mask=to_cb(torch.tensor(True))),
                    getattr(torch.masked, name)(z, mask=torch.tensor(True)))
    e = torch.zeros(0, 3)
    assert_same(cb.masked.sum(to_cb(e), 0), torch.masked.sum(e, 0))


def test_errors():
    x = to_cb(make((2, 3), "float32"))
    with pytest.raises(IndexError):
        cb.masked.sum(x, 2)
    with pytest.raises(RuntimeError):
        cb.masked.sum(x, (0, 0))
    with pytest.raises(IndexError):
        cb.masked.sum(x, mask=cb.ones(1, 2, 3, dtype=cb.bool))
    with pytest.raises(RuntimeError):
        cb.masked.sum(x, mask=cb.ones(4, dtype=cb.bool))


def test_noncontiguous_input():
    x, mask = make((4, 3), "float32").t(), _mask((3, 4))
    assert_same(cb.masked.sum(to_cb(x).t().t(), 1, mask=to_cb(mask)), torch.masked.sum(x, 1, mask=mask))
    xt = to_cb(make((4, 3), "float32")).t()
    assert_same(cb.masked.amax(xt, 0, mask=to_cb(mask)), torch.masked.amax(make((4, 3), "float32").t(), 0, mask=mask))


def test_namespace_is_lazy_and_torch_shaped():
    import subprocess
    import sys

    code = "import sys, candle_bind as t; assert 'candle_bind.masked' not in sys.modules; print(t.masked.sum.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "sum"
