"""complex64/complex128 tensors (candle_bind/_complex.py): each case runs the same code on torch and on
candle_bind (same inputs) and compares shape, dtype and values; ops candle_bind does not serve on complex
tensors must raise an error naming the op, never compute on the interleaved floats."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import candle_bind as cb
from conftest import TEST_DEVICE, assert_same, make, to_cb


def run(fn, *inputs, atol=None, rtol=None):
    ref = fn(torch, *inputs)
    ours = fn(cb, *[to_cb(t) if isinstance(t, torch.Tensor) else t for t in inputs])
    if isinstance(ref, (bool, int, float, complex)):
        assert ours == ref or np.isclose(ours, ref), (ours, ref)
        return
    assert_same(ours, ref, atol, rtol)


def cplx(shape, dtype=torch.complex64, seed=0):
    real = torch.float64 if dtype == torch.complex128 else torch.float32
    return torch.complex(make(shape, seed=seed).to(real), make(shape, seed=seed + 7).to(real))


Z = cplx((3, 4))
W = cplx((3, 4), seed=1)
Z64 = cplx((2, 3), torch.complex128, seed=2)
R = make((3, 4), seed=3)

CASES = {
    "abs angle real imag": (lambda L, z: (z.abs(), z.angle(), z.real, z.imag, L.abs(z), L.angle(z), L.real(z),
                                          L.imag(z)), Z),
    "conj": (lambda L, z: (z.conj(), L.conj(z), z.conj().imag, z.conj_physical(), z.resolve_conj()), Z),
    "+ - * / complex": (lambda L, z, w: (z + w, z - w, z * w, z / w), Z, W),
    "ops with real tensors": (lambda L, z, r: (z + r, r + z, z - r, r - z, z * r, r * z, z / r, r / z), Z, R),
    "ops with numbers": (lambda L, z: (z + 2, 2 + z, z - 1.5, 1.5 - z, z * 3, 3 * z, z / 2, 2 / z, z * 1j, 1j * z,
                                       z + (1 - 2j), (1 - 2j) / z, -z, +z, z * np.float64(0.5),
                                       np.float32(2) - z), Z),
    "broadcasting": (lambda L, z, r: (z[:1] * r, z[:, :1] + r[:1], z * r[0], z[0] / z[:, 1:2]), Z, R),
    "method forms": (lambda L, z, w: (z.add(w), z.add(w, alpha=2), z.sub(w), z.mul(w), z.div(w), L.mul(z, w),
                                      L.add(z, 1), L.sub(z, w), L.div(z, 2.0)), Z, W),
    "pow and square": (lambda L, z: (z ** 2, z.pow(2), z ** 0.5, z ** 3, z ** -1, z.square(), L.pow(z, 2)), Z),
    "exp and reciprocal": (lambda L, z: (z.exp(), L.exp(z), z.reciprocal(), z.sgn()), Z),
    "complex128": (lambda L, z: (z * z, z.abs(), z.angle(), z.exp(), z / 3, z.sum(), L.view_as_real(z)), Z64),
    "promotion": (lambda L, z, z64, r: (z * r.double(), z64 * r, z * r.double().sum(), z * 2.5, r.int() * z), Z,
                  cplx((3, 4), torch.complex128), R),
    "indexing": (lambda L, z: (z[0], z[1:, ::2], z[..., :-1], z[:, None], z[z.abs() > 1], z[[0, 2]], z[-1, -1],
                               z[..., 1]), Z),
    "shape ops": (lambda L, z: (z.reshape(4, 3), z.view(-1), z.permute(1, 0), z.transpose(0, 1), z.t(), z.T,
                                z.unsqueeze(0), z.unsqueeze(-1), z[None].squeeze(), z[:1].squeeze(0), z.flatten(),
                                z.mT, z.reshape(2, 6).unflatten(1, (2, 3)), z.flip(0), z.roll(1, 1), z.expand(2, 3, 4),
                                z.narrow(1, 1, 2), z.select(0, 1), z.repeat(2, 1), z.contiguous(), z.clone()), Z),
    "split and join": (lambda L, z, w: (z.chunk(2, 1), z.split(1, 0), z.unbind(1), L.cat([z, w]), L.cat([z, w], -1),
                                        L.stack([z, w]), L.stack([z, w], -1), L.cat([z, w.real], 1)), Z, W),
    "reductions": (lambda L, z: (z.sum(), z.sum(0), z.sum(-1, keepdim=True), z.mean(), z.mean((0, 1)),
                                 L.sum(z, 1), L.mean(z, 0)), Z),
    "matmul": (lambda L, z, w: (z @ w.mT, L.matmul(z, w.mT), z.mT @ w, z[0] @ w[1]), Z, W),
    "view_as_real/complex": (lambda L, z, r: (L.view_as_real(z), L.view_as_complex(L.view_as_real(z)),
                                              L.view_as_complex(r.reshape(3, 2, 2)),
                                              L.view_as_real(L.view_as_complex(r.reshape(6, 2)))), Z, R),
    "complex and polar": (lambda L, r: (L.complex(r, r * 2), L.polar(r.abs(), r), L.complex(r.double(), r.double())),
                          R),
    "compare": (lambda L, z, w: (z == w, z == z, z != w, z == 0, z.eq(z.clone()), L.equal(z, z.clone())), Z, W),
    "predicates": (lambda L, z: (z.is_complex(), L.is_complex(z), z.is_floating_point(), L.is_complex(z.real),
                                 z.dim(), z.ndim, z.numel(), tuple(z.size()), z.size(-1), z.element_size(),
                                 z.is_contiguous(), z.T.is_contiguous(), len(z)), Z),
    "masked_fill where-like": (lambda L, z: (z.masked_fill(z.real > 0, 0), z.masked_fill(z.real > 0, 1 + 1j)), Z),
    "isnan isfinite": (lambda L, z: (z.isnan(), z.isfinite(), L.isinf(z)), Z),
    "math (numpy's complex kernels)": (lambda L, z: (z.sin(), z.cos(), z.tan(), z.sinh(), z.cosh(), z.tanh(),
                                                     z.asin(), z.acos(), z.atan(), z.asinh(), z.acosh(), z.atanh(),
                                                     z.log(), z.log2(), z.log10(), z.log1p(), z.sqrt(), z.rsqrt(),
                                                     z.sigmoid(), z.expm1(), L.sin(z), z ** z, 2 ** z, z ** 0.3,
                                                     z.pow(2.5), L.sinc(z)), Z),
    "layout ops on the parts": (lambda L, z: (z.tile((2, 1)), L.rot90(z, 1, (0, 1)), z.unfold(1, 2, 1), z.diagonal(),
                                              L.diff(z, dim=-1), L.diff(z, prepend=z[:, :1]), z.movedim(0, -1),
                                              z.tril(), z.triu(1), L.diag(z[0]), L.diag(z), L.diag_embed(z),
                                              z.flip(dims=(0,)), L.fliplr(z), L.take(z, L.tensor([0, 5])),
                                              z.gather(1, L.tensor([[0], [1], [3]])), z.cumsum(-1), L.trace(z),
                                              L.tensor_split(z, 2, 1), z.repeat_interleave(2, 0),
                                              z.T.tril(), z[:, ::2].diagonal(), z.as_strided((2, 2), (1, 2), 1),
                                              ), Z),
    "in place": (lambda L, z: (z.clone().unsqueeze_(0), z.clone().t_(), z.clone().sin_(), z.clone().eq_(z),
                               z.clone().transpose_(0, -1), z[None].clone().squeeze_(0), z.clone().cumsum_(1),
                               z.clone().index_add_(0, L.tensor([0, 0]), z[:2]),
                               z.clone().scatter_(1, L.tensor([[0], [1], [2]]), z[:, :1])), Z),
    "products and tests": (lambda L, z, w: (z.prod(), z.prod(1), z.cumprod(0), L.isclose(z, w), L.isclose(z, z),
                                            z.nonzero(), L.count_nonzero(z), z.all(), z.any(1), L.logical_not(z),
                                            L.logical_and(z, w), z.var(1), z.std(), L.var_mean(z, 0)), Z, W),
    "norms and linalg": (lambda L, z: (z.norm(), L.linalg.vector_norm(z, 1), L.linalg.norm(z[:3, :3]),
                                       L.linalg.matrix_norm(z, 1), L.linalg.svdvals(z), L.linalg.inv(z[:3, :3]),
                                       L.linalg.det(z[:3, :3]), L.linalg.solve(z[:3, :3], z[:, :2]),
                                       L.linalg.eigvals(z[:3, :3].real)), Z),
    "complex factories": (lambda L: (L.linspace(0, 1, 5, dtype=L.complex64), L.linspace(1 + 2j, 3 - 1j, 4),
                                     L.logspace(0, 2, 3, dtype=L.complex128), L.logspace(1j, 2, 4),
                                     L.eye(3, dtype=L.complex64), L.eye(2, 3, dtype=L.complex128)),),
    "real to complex": (lambda L, z, r: (r.type_as(z), r.cfloat(), r.cdouble(), z.type_as(z), r.double().type_as(z),
                                         L.add(r, z), L.mul(r, z)), Z, R),
}


@pytest.mark.parametrize("name", list(CASES))
def test_complex_ops(name):
    fn, *inputs = CASES[name]
    run(fn, *inputs)


def test_dtype_shape_and_repr():
    for z in [Z, Z64, torch.tensor(1 + 2j), torch.tensor([[1e-5 + 1j, 1000]]), torch.zeros(0, dtype=torch.cfloat),
              torch.tensor([1 - 0.5j, -2 + 3j]), cplx((40, 40))]:
        ours = to_cb(z)
        assert ours.dtype == getattr(cb, repr(z.dtype).split(".")[-1])
        assert tuple(ours.shape) == tuple(z.shape)
        if TEST_DEVICE == "cpu":
            assert repr(ours) == repr(z)


def test_creation():
    run(lambda L: (L.tensor(1 + 2j), L.tensor([1 + 2j, 3]), L.tensor([[1j], [2.0]]), L.tensor([1, 2], dtype=L.complex64),
                   L.tensor(np.array([1 + 1j, 2], np.complex64)), L.tensor(np.array([1 + 1j], np.complex128)),
                   L.as_tensor(np.array([3j])), L.zeros(2, 3, dtype=L.complex64), L.zeros(2, dtype=L.cdouble)))
    run(lambda L, z: (L.ones(2, 3, dtype=L.cfloat), L.ones((2,), dtype=L.complex128), L.full((2, 2), 1 - 2j),
                      L.full((3,), 2.0, dtype=L.complex64), L.zeros_like(z), L.ones_like(z), L.full_like(z, 3j),
                      L.zeros_like(z, dtype=L.float64), L.ones_like(z.real, dtype=L.complex64)), Z)
    for make_one in [lambda L: L.randn(3, 4, dtype=L.complex64), lambda L: L.rand(3, dtype=L.cdouble),
                     lambda L: L.empty(2, 2, dtype=L.complex64), lambda L: L.randn_like(to(L, Z))]:
        ref, ours = make_one(torch), make_one(cb)
        assert repr(ours.dtype) == repr(ref.dtype) and tuple(ours.shape) == tuple(ref.shape)
    arr = np.array([[1 + 2j, 3 - 4j]], np.complex64)
    run(lambda L: L.from_numpy(arr))
    assert isinstance(cb.tensor([1.0, 2.0]), cb.Tensor) and not cb.tensor([1.0]).is_complex()


def to(L, t):
    return t if L is torch else to_cb(t)


def test_where():
    run(lambda L, z, w: (L.where(z.real > 0, z, w), L.where(z.real > 0, z, 0), L.where(z.real > 0, 1j, z),
                         L.where(z.real > 0, z, z.imag)), Z, W)


def test_numpy_item_tolist():
    z = to_cb(Z)
    np.testing.assert_allclose(z.numpy(), Z.numpy(), rtol=1e-6)
    assert z.numpy().dtype == np.complex64 and np.asarray(z).dtype == np.complex64
    assert z[1, 2].item() == pytest.approx(Z[1, 2].item(), rel=1e-6)
    assert isinstance(z[0, 0].item(), complex)
    assert np.allclose(np.array(z.tolist()), np.array(Z.tolist()))
    assert to_cb(Z64).numpy().dtype == np.complex128
    np.testing.assert_allclose(to_cb(Z).T.numpy(), Z.T.numpy(), rtol=1e-6)


def test_to_clone_copy_pickle():
    z = to_cb(Z)
    assert z.to(cb.complex128).dtype == cb.complex128 and z.to(cb.complex128).to(cb.complex64).dtype == cb.complex64
    assert z.cdouble().dtype == cb.complex128 and z.type() == "torch.ComplexFloatTensor"
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        real = z.to(cb.float32)
    assert_same(real, Z.real)
    for c in [copy.deepcopy(z), copy.copy(z), pickle.loads(pickle.dumps(z))]:
        assert_same(c, Z)


def test_views_and_writes():
    """.real/.imag are views; x[i] = v and in-place ops write the tensor's memory, as torch."""
    def fn(L, z):
        z = z.clone()
        re = z.real
        re.mul_(2)
        z.imag[0] = 5.0
        z[1] = 1 - 1j
        z[2, :2] = z[0, :2]
        z += 1
        z *= z[0].clone()
        return z
    run(fn, Z)


def test_save_and_load_with_torch(tmp_path):
    """candle_bind.save writes complex tensors as torch's ComplexFloat/DoubleStorage; torch and we read them back."""
    z, z64 = to_cb(Z), to_cb(Z64)
    cb.save({"z": z, "zt": z.T, "z64": z64}, tmp_path / "c.pt")
    ref = torch.load(tmp_path / "c.pt")
    assert_same(cb.load(tmp_path / "c.pt")["zt"], Z.T)
    for k, want in (("z", Z), ("zt", Z.T), ("z64", Z64)):
        assert ref[k].dtype == want.dtype and torch.equal(ref[k], want)


def test_rotary_embedding_llama_style():
    """Meta's Llama reference: polar frequencies, view_as_complex of pairs, complex multiply, view_as_real."""
    def fn(L, xq):
        dim, end, theta = 8, 16, 10000.0
        freqs = 1.0 / (theta ** (L.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = L.arange(end)
        freqs = L.outer(t, freqs).float()
        freqs_cis = L.polar(L.ones_like(freqs), freqs)
        freqs_cis = freqs_cis[2:2 + xq.shape[1]]
        xq_ = L.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
        out = L.view_as_real(xq_ * freqs_cis.view(*shape)).flatten(3)
        return out.type_as(xq), freqs_cis
    run(fn, make((2, 5, 3, 8), seed=4))


def test_unsupported_ops_name_themselves():
    z = to_cb(Z)
    for call in [lambda: z.max(), lambda: z < z, lambda: z.softmax(-1), lambda: z.logsumexp(0),
                 lambda: z.argmax(), lambda: z.clamp(0, 1), lambda: z.relu(), lambda: z // 2, lambda: z.sort(),
                 lambda: float(z[0, 0]), lambda: z.logcumsumexp(0)]:
        with pytest.raises(NotImplementedError, match="complex64"):
            call()
    with pytest.raises(NotImplementedError, match="complex128"):
        to_cb(Z64).logsumexp(0)
    with pytest.raises(NotImplementedError, match="ComplexFloat"):
        cb.linalg.lstsq(z, z)  # refused rather than answered differently from torch


def test_errors_as_torch():
    for fn, inputs in [(lambda L, r: L.view_as_real(r), (R,)),
                       (lambda L, r: L.view_as_complex(r), (R,)),
                       (lambda L, r: L.view_as_complex(r.int()), (R,)),
                       (lambda L, r: L.complex(r, r.double()), (R,)),
                       (lambda L, r: L.complex(r.int(), r.int()), (R,)),
                       (lambda L, r: L.imag(r), (R,)),
                       (lambda L, z: z[5], (Z,)),
                       (lambda L, z: z.permute(0, 2), (Z,)),
                       (lambda L, z: z * L.ones(5), (Z,)),
                       (lambda L, z: z.item(), (Z,)),
                       (lambda L, z, r: z @ r.mT, (Z, R)),
                       (lambda L, z, r: r @ z.mT, (Z, R)),
                       (lambda L, r: L.polar(r, r.double()), (R,)),
                       (lambda L, r: L.complex(1.0, r), (R,)),
                       (lambda L, r: L.view_as_complex(r[:2].t().contiguous().t()), (R,))]:
        try:
            fn(torch, *inputs)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                fn(cb, *[to_cb(x) for x in inputs])
        else:
            pytest.fail("torch did not raise")


def test_plain_tensors_unchanged():
    """The complex-aware torch functions keep their plain-tensor behaviour and speed path."""
    a = cb.arange(6.0).reshape(2, 3)
    assert_same(cb.cat([a, a], 1), torch.cat([torch.arange(6.0).reshape(2, 3)] * 2, 1))
    assert_same(cb.abs(-a), torch.arange(6.0).reshape(2, 3))
    assert_same(cb.matmul(a, a.t()), torch.arange(6.0).reshape(2, 3) @ torch.arange(6.0).reshape(2, 3).t())
    assert not cb.is_complex(a) and type(cb.stack([a, a])) is cb.Tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cb.tensor([[1, 2]]).dtype == cb.int64
