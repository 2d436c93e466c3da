"""Tensor subclasses the torch way (`as_subclass`, `__torch_function__` routing methods, what torchvision's
tv_tensors build on) and the torch surface torchvision and timm reach for, each compared with torch."""

import numpy as np
import pytest
import torch

import candle_bind as cb


def test_as_subclass_shares_memory_and_skips_init():
    class Mine(cb.Tensor):
        def __init__(self, *args, **kwargs):
            raise AssertionError("as_subclass must not run __init__")

    x = cb.tensor([1.0, 2.0])
    y = x.as_subclass(Mine)
    assert type(y) is Mine and type(y.as_subclass(cb.Tensor)) is cb.Tensor
    y.add_(1)
    assert x.tolist() == [2.0, 3.0]
    with pytest.raises(TypeError):
        x.as_subclass(int)


def _subclasses(lib):
    class Keep(lib.Tensor):
        """torch's default: every result becomes the subclass."""

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    class Unwrap(lib.Tensor):
        """tv_tensors' policy: results are plain tensors except clone/to/detach."""

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            with lib._C.DisableTorchFunctionSubclass():
                out = func(*args, **(kwargs or {}))
            if func in (lib.Tensor.clone, lib.Tensor.to, lib.Tensor.detach):
                return out.as_subclass(cls)
            return out.as_subclass(lib.Tensor) if isinstance(out, cls) else out

    return Keep, Unwrap


@pytest.mark.parametrize("case", ["keep", "unwrap"])
def test_torch_function_routes_methods(case):
    got, want = [], []
    for lib, out in ((torch, want), (cb, got)):
        cls = _subclasses(lib)[case == "unwrap"]
        x = lib.tensor([[1.0, -2.0], [3.0, 4.0]]).as_subclass(cls)
        for result in (x.clone(), x.to(lib.float64), x.abs(), x + 1, x[0], x.sum(), x.reshape(4), x.detach()):
            out.append((type(result).__name__, result.tolist()))
        out.append(x.shape == (2, 2))
    assert got == want


def test_disabled_torch_function_impl_opts_out():
    class Plain(cb.Tensor):
        __torch_function__ = cb._C._disabled_torch_function_impl

    x = cb.tensor([1.0]).as_subclass(Plain)
    assert type(x.clone()) is cb.Tensor


def test_erfinv_matches_torch():
    values = np.array([-1, -0.999999, -0.9, -0.5, -1e-6, 0, 0.1, 0.7, 0.99, 0.9999, 1, 1.5, np.nan], np.float32)
    want = torch.erfinv(torch.from_numpy(values)).numpy()
    got = cb.erfinv(cb.from_numpy(values)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    x = cb.tensor([0.3])
    assert x.erfinv_() is x and abs(x.item() - torch.erfinv(torch.tensor(0.3)).item()) < 1e-6


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(5, 7), (9, 11), (30, 17), (13, 13)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_antialias(mode, size, align_corners):
    x = np.random.default_rng(0).standard_normal((2, 3, 13, 16)).astype(np.float32)
    kwargs = dict(size=size, mode=mode, align_corners=align_corners, antialias=True)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), **kwargs).numpy()
    got = cb.nn.functional.interpolate(cb.from_numpy(x), **kwargs).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("size, align_corners", [((30, 27), False), ((5, 7), False), ((13, 40), True)])
def test_interpolate_uint8_images(mode, antialias, size, align_corners):
    """uint8 images resize with torch's integer arithmetic (int16 weights, rounded uint8 passes), exactly."""
    x = (np.random.default_rng(1).random((2, 3, 13, 16)) * 255).astype(np.uint8)
    kwargs = dict(size=size, mode=mode, align_corners=align_corners, antialias=antialias)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), **kwargs).numpy()
    got = cb.nn.functional.interpolate(cb.from_numpy(x), **kwargs).numpy()
    np.testing.assert_array_equal(got, want)


def test_reshaping_inplace_and_keywords():
    x = cb.arange(6.0)
    assert x.unsqueeze_(0) is x and list(x.shape) == [1, 6]
    x.t_()
    assert list(x.shape) == [6, 1]
    assert x.squeeze_().tolist() == torch.arange(6.0).tolist()
    m = cb.arange(6).reshape(2, 3)
    assert m.flip(dims=[1]).tolist() == torch.arange(6).reshape(2, 3).flip(dims=[1]).tolist()
    assert cb.pow(2.0, cb.tensor([1.0, 3.0])).tolist() == torch.pow(2.0, torch.tensor([1.0, 3.0])).tolist()
    assert cb.full_like(m, 7, layout=cb.strided, dtype=cb.int64).tolist() == [[7] * 3] * 2
    with pytest.raises(NotImplementedError, match="strided"):
        cb.zeros_like(m, layout=cb.sparse_coo)


@pytest.mark.parametrize("shape, permute", [((2, 3, 4, 5), None), ((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 1, 4, 5), None),
                                            ((2, 3, 1, 1), None), ((2, 3, 4), None)])
def test_is_contiguous_channels_last(shape, permute):
    want = torch.zeros(shape)
    got = cb.zeros(*shape)
    if permute:
        want, got = want.permute(*permute), got.permute(*permute)
    for fmt in ("contiguous_format", "channels_last"):
        assert got.is_contiguous(memory_format=getattr(cb, fmt)) == want.is_contiguous(
            memory_format=getattr(torch, fmt)), fmt


def test_load_from_state_dict_override_with_torchs_signature():
    """A module overriding `_load_from_state_dict` with torch's 7 arguments (torchvision's MLPBlock renames
    legacy keys there) loads, and every check still runs before the first write."""

    class Renaming(cb.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = cb.nn.Linear(2, 2)

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            if prefix + "old.weight" in state_dict:
                state_dict[prefix + "lin.weight"] = state_dict.pop(prefix + "old.weight")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)

    m = Renaming()
    m.load_state_dict({"old.weight": cb.ones(2, 2), "lin.bias": cb.zeros(2)})
    assert m.lin.weight.tolist() == [[1.0, 1.0]] * 2
    with pytest.raises(RuntimeError, match="size mismatch"):
        m.load_state_dict({"old.weight": cb.full((2, 2), 5.0), "lin.bias": cb.zeros(3)})
    assert m.lin.weight.tolist() == [[1.0, 1.0]] * 2


def test_checks_and_constants():
    with pytest.raises(AssertionError, match="boom"):
        cb._assert(False, "boom")
    with pytest.raises(RuntimeError, match="lazy"):
        cb._check(False, lambda: "lazy")
    with pytest.raises(ValueError):
        cb._check_value(False)
    assert (cb.pi, cb.e, cb.inf) == (torch.pi, torch.e, torch.inf)
    assert cb.scalar_tensor(3).dtype == cb.float32 and cb.scalar_tensor(3).tolist() == 3.0
