"""Tensor methods written in Python: the long tail of in-place ops and a few composites.

Each in-place op here is its out-of-place op followed by one write into the tensor's own memory
(`Tensor._assign_result`), so views of the tensor see the change as in torch. The hot ones
(`add_`, `mul_`, `+=`, `x[i] = v`, `fill_`, `copy_`, ...) live in Rust.
"""

from __future__ import annotations

from ._C import Tensor, unique as _unique

# name_ -> name: in-place forms computed by the out-of-place method, then written back.
_INPLACE = (
    "abs", "acos", "asin", "atan", "bitwise_and", "bitwise_or", "bitwise_xor", "ceil", "clamp",
    "clamp_max", "clamp_min", "clip", "copysign", "cos", "cosh", "erf", "exp", "expm1", "fix",
    "floor", "floor_divide", "lerp", "log", "log10", "log1p", "log2", "logical_and", "logical_not",
    "logical_or", "logical_xor", "nan_to_num", "neg", "negative", "reciprocal", "relu", "remainder",
    "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh", "tril",
    "triu", "true_divide", "trunc", "multiply", "subtract", "divide", "fmod", "eq", "ne", "lt",
    "le", "gt", "ge",
)


def _make_inplace(name: str):
    op = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        self._assign_result(op(self, *args, **kwargs), name + "_")
        return self

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In-place :meth:`{name}`: writes the result into this tensor's memory."
    return method


def _install() -> None:
    for name in _INPLACE:
        if hasattr(Tensor, name) and not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _make_inplace(name))
    Tensor.take_along_dim = take_along_dim
    Tensor.unique = unique
    Tensor.isclose = isclose
    Tensor.allclose = allclose
    # copy.deepcopy (nn.TransformerEncoder clones layers, transformers deep-copies configs and
    # models), copy.copy and pickle: values, dtype, device, requires_grad and attributes.
    Tensor.__deepcopy__ = _deepcopy
    Tensor.__copy__ = lambda self: self.clone()
    Tensor.__reduce_ex__ = _reduce_ex


def _deepcopy(self, memo):
    if id(self) not in memo:
        new = self.clone()
        new.requires_grad = self.requires_grad
        memo[id(self)] = new
        copy_attributes(self, new, memo)
    return memo[id(self)]


def copy_attributes(src, dst, memo) -> None:
    """Deep copies of the attributes set on `src` (`t._is_hf_initialized = True`) onto `dst`."""
    if src.__dict__:
        import copy

        dst.__dict__.update(copy.deepcopy(src.__dict__, memo))


def _reduce_ex(self, proto):
    """Pickled by value: a numpy array of the values (16-bit and 8-bit floats as float32, which
    holds them exactly), or only the shape for meta tensors."""
    from . import _C

    dtype = repr(self.dtype).rsplit(".", 1)[-1]
    device = str(self.device)
    if self.is_meta:
        data = None
    else:
        x = self.cpu()
        data = (x.float() if dtype in ("bfloat16", "float8_e4m3fn") else x).numpy().copy()
    args = (data, dtype, tuple(self.shape), device, self.requires_grad)
    return (_rebuild_tensor, args, dict(self.__dict__) or None)


def _rebuild_tensor(data, dtype, shape, device, requires_grad):
    from . import _C, empty, from_numpy

    d = getattr(_C, dtype)
    if data is None:
        t = empty(*shape, dtype=d, device=device)
    else:
        t = from_numpy(data).to(d).reshape(shape)
        if device != "cpu":
            t = t.to(device)
    t.requires_grad = requires_grad
    return t


def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002 - torch's names
    """Tensor.unique: the sorted distinct values (see `candle_bind.unique`)."""
    return _unique(self, sorted, return_inverse, return_counts, dim)


def isclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other|, elementwise; equal values (infinities) are close."""
    if not isinstance(other, Tensor):
        other = input.new_tensor(other)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    close = input == other
    if input.is_floating_point():
        a, b = input.double(), other.double()
        finite = a.isfinite() & b.isfinite()
        close = close | (finite & ((a - b).abs() <= atol + rtol * b.abs()))
        if equal_nan:
            close = close | (a.isnan() & b.isnan())
    return close


def allclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def take_along_dim(input: Tensor, indices: Tensor, dim=None) -> Tensor:
    """torch.take_along_dim: gather with indices broadcast against the input (flattened if no dim);
    along a dim, unlike gather, negative indices count from the end."""
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    rank = input.dim()
    d = dim + rank if dim < 0 else dim
    if indices.dim() != rank:
        raise RuntimeError(
            f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
            f"but got {rank} dimensions for input, and {indices.dim()} dimensions for indices")
    shape_i = list(input.shape)
    shape_x = list(indices.shape)
    for i in range(rank):
        if i != d:
            n = max(shape_i[i], shape_x[i])
            shape_i[i] = shape_x[i] = n
    shape_i[d] = input.shape[d]
    shape_x[d] = indices.shape[d]
    indices = indices + (indices < 0) * input.shape[d]
    return input.expand(*shape_i).gather(d, indices.expand(*shape_x))


class _TypedTensorMeta(type):
    """torch's legacy typed tensor classes: `isinstance(x, LongTensor)` checks the dtype, and
    `LongTensor([1, 2])` / `FloatTensor(2, 3)` build tensors of that dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args):
        from . import tensor, zeros

        if len(args) == 1 and not isinstance(args[0], int):
            return tensor(args[0], dtype=cls.dtype)
        return zeros(*args, dtype=cls.dtype)


def _typed_tensor(name: str, dtype) -> type:
    return _TypedTensorMeta(name, (Tensor,), {"dtype": dtype, "__module__": "candle_bind"})


def _typed_tensors() -> dict:
    from . import _C

    names = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
             "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8", "ShortTensor": "int16",
             "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool"}
    return {name: _typed_tensor(name, getattr(_C, dtype)) for name, dtype in names.items()}


_install()
