"""torch's functions for complex tensors (the tensor type is candle_bind/_complex.py): view_as_real,
view_as_complex, complex, polar, torch.tensor/from_numpy of complex data, the factories with a complex
dtype, cat/stack/where/matmul with complex operands, and `torch.<op>(complex)` routed to the complex
tensor's method (which computes or names itself as unsupported)."""

from __future__ import annotations

import builtins
import math

from . import _C
from ._C import Tensor
from ._complex import (ComplexTensor, _default_complex, _dim, _join, _name, _pairs, complex_dtype, complex_from_real,
                       dtype_title, from_numpy_complex, is_complex_dtype, real_dtype, _complex_matmul)


def view_as_real(input):
    if not isinstance(input, ComplexTensor):
        raise TypeError("view_as_real is only supported for complex tensors")
    return _pairs(input)


def view_as_complex(input):
    if isinstance(input, ComplexTensor) or _name(input.dtype) not in ("float32", "float64"):
        raise NotImplementedError(f"view_as_complex is only supported for half, float and double tensors, but got a "
                                  f"tensor of scalar type: {dtype_title(input.dtype)}")
    if input.dim() == 0 or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input.stride(-1) != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    return ComplexTensor(input)


def complex(real, imag, *, out=None):  # noqa: A001 - torch's name
    if out is not None:
        result = complex(real, imag)
        if out.dtype != result.dtype:
            raise RuntimeError(f"Expected object of scalar type {dtype_title(result.dtype)} but got scalar type "
                               f"{dtype_title(out.dtype)} for argument 'out'")
        return out.copy_(result)
    for n, x in (("real", real), ("imag", imag)):
        if not isinstance(x, Tensor):
            raise TypeError(f"complex(): argument '{n}' (position {1 + (n == 'imag')}) must be Tensor, not "
                            f"{type(x).__name__}")
    if real.dtype != imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {dtype_title(real.dtype)} but got scalar type "
                           f"{dtype_title(imag.dtype)} for second argument")
    if _name(real.dtype) not in ("float32", "float64"):
        raise NotImplementedError(f"Expected both inputs to be Half, Float or Double tensors but got "
                                  f"{dtype_title(real.dtype)} and {dtype_title(imag.dtype)}")
    return _join(real, imag)


def polar(abs, angle):  # noqa: A002 - torch's names
    complex(abs, angle)  # the same checks
    return _join(abs * angle.cos(), abs * angle.sin())


def _is_complex_data(data) -> bool:
    if isinstance(data, builtins.complex):
        return True
    if isinstance(data, (list, tuple)):
        return any(_is_complex_data(d) for d in data)
    kind = getattr(getattr(data, "dtype", None), "kind", None)
    return kind == "c"


def _from_complex_numpy(a, dtype=None, device=None):
    import numpy as np

    rd = None if dtype is None else (np.float64 if real_dtype(dtype) == _C.float64 else np.float32)
    out = from_numpy_complex(a, rd)
    return out.to(device) if device is not None else out


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """torch.tensor, which also takes Python complex numbers and numpy complex arrays."""
    if not (dtype is not None and is_complex_dtype(dtype) or isinstance(data, ComplexTensor)):
        try:
            return _C.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        except TypeError:
            if not _is_complex_data(data):
                raise
    return _complex_tensor(data, dtype, device)


def _complex_tensor(data, dtype, device):
    import numpy as np

    if isinstance(data, ComplexTensor):
        out = data.to(dtype or data.dtype, copy=True)
        return out if device is None else out.to(device)
    if isinstance(data, Tensor):
        return complex_from_real(data, dtype).to(device or data.device)
    arr = np.asarray(data)
    if dtype is None and not isinstance(data, np.ndarray):
        dtype = _default_complex()  # Python numbers take the default complex dtype
    return _from_complex_numpy(arr, dtype, device)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, ComplexTensor) and dtype in (None, data.dtype):
        return data if device is None else data.to(device)
    if not (dtype is not None and is_complex_dtype(dtype) or isinstance(data, ComplexTensor)):
        try:
            return _C.as_tensor(data, dtype=dtype, device=device)
        except TypeError:
            if not _is_complex_data(data):
                raise
    return _complex_tensor(data, dtype, device)


def from_numpy(a):
    if getattr(getattr(a, "dtype", None), "kind", None) == "c":
        return _from_complex_numpy(a)  # a copy: the interleaved layout is numpy's own, but we restack it
    return _C.from_numpy(a)


def _size(args, kwargs):
    if kwargs.get("size") is not None:
        return tuple(kwargs.pop("size"))
    kwargs.pop("size", None)
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else tuple(args)


def _pairs_for(kind: str, shape, dtype, device, fill=0j):
    """The interleaved storage of a new complex tensor: zeros, ones, a fill value or random parts."""
    rd = real_dtype(dtype)
    if kind == "randn":  # torch's complex normal: each part has variance 1/2
        return _C.randn(*shape, 2, dtype=rd, device=device) * math.sqrt(0.5)
    if kind == "rand":
        return _C.rand(*shape, 2, dtype=rd, device=device)
    p = _C.zeros(*shape, 2, dtype=rd, device=device)
    fill = builtins.complex(1.0 if kind == "ones" else fill)
    if fill != 0:
        p[..., 0] = fill.real
        p[..., 1] = fill.imag
    return p


def _factory(kind: str, plain):
    """torch.zeros/ones/empty/randn/rand: a complex dtype builds the pairs, any other goes to `plain`."""
    def factory(*args, **kwargs):
        dtype = kwargs.get("dtype")
        if dtype is None or not is_complex_dtype(dtype):
            return plain(*args, **kwargs)
        shape = _size(args, kwargs)
        return ComplexTensor(_pairs_for(kind, shape, dtype, kwargs.get("device")))

    factory.__name__ = factory.__qualname__ = kind
    factory.__doc__ = plain.__doc__
    return factory


def _full_factory(plain):
    def full(size, fill_value, *, dtype=None, device=None, **kwargs):
        if isinstance(fill_value, ComplexTensor):
            fill_value = fill_value.item()
        if dtype is None and isinstance(fill_value, builtins.complex):
            dtype = _default_complex()
        if dtype is None or not is_complex_dtype(dtype):
            return plain(size, fill_value, dtype=dtype, device=device, **kwargs)
        shape = tuple(size) if isinstance(size, (list, tuple)) else (size,)
        return ComplexTensor(_pairs_for("full", shape, dtype, device, fill_value))

    full.__doc__ = plain.__doc__
    return full


def _like_factory(kind: str, plain):
    """torch.zeros_like & co.: a complex input or dtype gives a complex tensor of the input's shape."""
    def like(input, *args, dtype=None, device=None, **kwargs):
        complex_in = isinstance(input, ComplexTensor)
        if not complex_in and (dtype is None or not is_complex_dtype(dtype)):
            return plain(input, *args, dtype=dtype, device=device, **kwargs)
        dtype = dtype or input.dtype
        device = device or input.device
        if not is_complex_dtype(dtype):
            return plain(input.real, *args, dtype=dtype, device=device, **kwargs)
        fill = args[0] if args else kwargs.get("fill_value", 0j)
        if isinstance(fill, Tensor):
            fill = fill.item()
        return ComplexTensor(_pairs_for(kind, tuple(input.shape), dtype, device, fill))

    like.__name__ = like.__qualname__ = kind + "_like"
    like.__doc__ = plain.__doc__
    return like


def _eye_factory(plain):
    def eye(n, m=None, *, dtype=None, device=None, **kwargs):
        for what, v in (("n", n), ("m", m)):
            if isinstance(v, int) and v < 0:  # (not the native OverflowError)
                raise RuntimeError(f"{what} must be greater or equal to 0, got {v}")
        if dtype is None or not is_complex_dtype(dtype):
            return plain(n, m, dtype=dtype, device=device, **kwargs) if m is not None else \
                plain(n, dtype=dtype, device=device, **kwargs)
        real = plain(n, n if m is None else m, dtype=real_dtype(dtype), device=device)
        return complex_from_real(real, dtype)

    eye.__doc__ = plain.__doc__
    return eye


def any_complex(*values) -> bool:
    """Whether a Python complex number or a complex tensor is among `values`."""
    return any(isinstance(v, (builtins.complex, ComplexTensor)) for v in values)


def space(kind: str, start, end, steps: int, base, dtype, device):
    """linspace/logspace with complex ends or dtype: linspace is linear, so each part is the real linspace of
    its parts' ends; logspace is base ** that (numpy's complex pow, in double)."""
    import numpy as np

    from . import linspace

    start, end = (builtins.complex(v.item() if isinstance(v, Tensor) else v) for v in (start, end))
    dtype = dtype if dtype is not None and is_complex_dtype(dtype) else _default_complex()
    wide = _C.float64 if kind == "logspace" else real_dtype(dtype)
    lin = _join(linspace(start.real, end.real, steps, dtype=wide), linspace(start.imag, end.imag, steps, dtype=wide))
    if kind == "logspace":
        with np.errstate(all="ignore"):
            lin = from_numpy_complex(np.power(builtins.complex(base), lin.numpy()), np.float64)
    out = lin.to(dtype)
    return out if device is None else out.to(device)


def _promote_all(tensors):
    rd = _C.float32
    for t in tensors:
        if _name(t.dtype) in ("float64", "complex128"):
            rd = _C.float64
    return [_pairs(t).to(rd) if isinstance(t, ComplexTensor) else _pairs(complex_from_real(t, complex_dtype(rd)))
            for t in tensors]


def cat(tensors, dim=0, **kwargs):
    if type(tensors) in (list, tuple) and not tensors:  # (a Tensor here is the native cat's TypeError)
        raise ValueError("cat(): expected a non-empty list of Tensors")
    for t in tensors:  # (a plain loop: torch.cat is hot, and a real tensor's cat must stay cheap)
        if type(t) is ComplexTensor:
            n = builtins.max(t.dim() for t in tensors)
            return ComplexTensor(_C.cat(_promote_all(tensors), _dim(kwargs.get("axis", dim), n)))
    if "axis" in kwargs:  # numpy's name, which torch accepts (funnel's stride_pool)
        dim = kwargs.pop("axis")
    return _C.cat(tensors, dim, **kwargs) if kwargs else _C.cat(tensors, dim)


def stack(tensors, dim=0, **kwargs):
    for t in tensors:
        if type(t) is ComplexTensor:
            n = tensors[0].dim() + 1
            dim = kwargs.get("axis", dim)
            if not -n <= dim < n:
                raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
            return ComplexTensor(_C.stack(_promote_all(tensors), dim + n if dim < 0 else dim))
    return _C.stack(tensors, dim, **kwargs) if kwargs else _C.stack(tensors, dim)


def _matmul_function(rust):
    def matmul(input, other, *, out=None):
        if isinstance(input, ComplexTensor) or isinstance(other, ComplexTensor):
            return _complex_matmul(input, other)
        return rust(input, other) if out is None else rust(input, other, out=out)

    matmul.__doc__ = rust.__doc__
    return matmul


def _where_function(plain):
    """torch.where with a complex branch: the pairs chosen by the condition (broadcast over the pair dim)."""
    def where(condition, input=None, other=None):
        if isinstance(input, ComplexTensor) or isinstance(other, ComplexTensor):
            dtype = input.dtype if isinstance(input, ComplexTensor) else other.dtype
            a, b = (_pairs(_as_complex(x, dtype)) for x in (input, other))
            return ComplexTensor(plain(condition.unsqueeze(-1), a, b))
        return plain(condition, input, other)

    where.__doc__ = plain.__doc__
    return where


def _as_complex(x, dtype):
    if isinstance(x, ComplexTensor):
        return x.to(dtype)
    if isinstance(x, Tensor):
        return complex_from_real(x, dtype)
    return tensor(builtins.complex(x), dtype=dtype)


def is_complex(input) -> bool:
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return isinstance(input, ComplexTensor)


def angle(input):
    if isinstance(input, ComplexTensor):
        return input.angle()
    x = input if input.is_floating_point() else input.float()
    return _C.where(x < 0, _C.full_like(x, math.pi), x * 0)  # NaN stays NaN


def real(input):
    return input.real if isinstance(input, ComplexTensor) else input


def imag(input):
    if isinstance(input, ComplexTensor):
        return input.imag
    raise TypeError("imag is not implemented for tensors with non-complex dtypes.")


def conj(input):
    return input.conj() if isinstance(input, ComplexTensor) else input


# torch functions whose `input` may be a Python number (torch's Scalar overloads): with any `other`, or only
# with a tensor `other` (torch.pow(2, t) works, torch.pow(2, 3) and torch.eq(2, t) raise TypeError).
_NUMBER_INPUT_ANY = frozenset(("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
                               "floor_divide"))
_NUMBER_INPUT_TENSOR = frozenset(("pow", "float_power", "remainder", "xlogy", "bitwise_and", "bitwise_or",
                                  "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"))


def _number_input_ok(name, args, kwargs) -> bool:
    if name in _NUMBER_INPUT_ANY:
        return True
    other = args[0] if args else kwargs.get("other", kwargs.get("exponent"))
    return name in _NUMBER_INPUT_TENSOR and isinstance(other, Tensor)


def _span(t):
    """The byte range a tensor's elements occupy in its storage (None when empty)."""
    if t.numel() == 0:
        return None
    start = t.data_ptr()
    last = builtins.sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n > 1)
    return start, start + (last + 1) * t.element_size()


def _overlap(a, b) -> bool:
    sa, sb = _span(a), _span(b)
    return sa is not None and sb is not None and sa[0] < sb[1] and sb[0] < sa[1]


def _with_out(plain, input, args, kwargs):
    """torch.<op>(..., out=) for a native method that has no out=: torch's overlap checks, then the result
    copied into `out` (a tuple of tensors for a tuple result) with torch's dtype check."""
    from ._ops import _write_out

    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    for i, o in enumerate(outs):
        if any(_overlap(o, p) for p in outs[:i]):
            raise ValueError("out tensors must not overlap")
        if any(isinstance(x, Tensor) and _overlap(o, x) for x in (input, *args, *kwargs.values())):
            raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                               "refer to a single memory location. Please clone() the tensor before performing the "
                               "operation.")
    result = plain(input, *args, **kwargs)
    if not isinstance(out, (tuple, list)):
        return _write_out(result, out)
    return type(result)(*(_write_out(r, o) for r, o in zip(result, outs))) if hasattr(result, "_fields") else \
        tuple(_write_out(r, o) for r, o in zip(result, outs))


def _dispatching(name: str, plain):
    """torch.<name>(input, ...), which is Tensor.<name>: for a complex input (or a complex second operand)
    the complex tensor's method, implemented above or raising; otherwise the method itself."""
    def function(input, *args, **kwargs):
        if type(input) is ComplexTensor or args and type(args[0]) is ComplexTensor:
            if type(input) is not ComplexTensor and isinstance(input, Tensor):
                input = complex_from_real(input, args[0].dtype)
            return getattr(input, name)(*args, **kwargs)
        try:
            return plain(input, *args, **kwargs) if args or kwargs else plain(input)  # (no empty unpacking: faster)
        except (TypeError, AttributeError) as e:  # (a composite reading a number's .dtype: AttributeError)
            if "out" in kwargs and "'out'" in str(e):  # a native method without out=: torch's out= semantics
                return _with_out(plain, input, args, kwargs)
            if isinstance(input, Tensor) or not isinstance(input, (builtins.bool, builtins.int, builtins.float)) \
                    or "invalid combination of arguments" in str(e):  # refused as torch's parser refuses it
                raise
            if not _number_input_ok(name, args, kwargs):  # torch.eq(2, t), torch.atan2(2, t): torch's TypeError
                raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                                f"{type(input).__name__}") from None
        # torch.div(7, 2, rounding_mode="trunc") (LED/Longformer): a Python number input is a 0-d tensor
        return function(_C.tensor(input), *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = plain.__doc__
    return function


# torch.<name> functions defined here.
FUNCTIONS = ("view_as_real", "view_as_complex", "complex", "polar", "is_complex", "angle", "real", "imag", "conj",
             "cat", "concat", "concatenate", "stack", "tensor", "as_tensor", "from_numpy",
             "conj_physical", "resolve_conj", "resolve_neg")
concat = concatenate = cat
conj_physical = conj


def resolve_conj(input):
    return input


resolve_neg = resolve_conj


def install(namespace: dict) -> None:
    """Puts the complex-aware torch functions into the package namespace."""
    # torch.abs, torch.sigmoid, ...: the Tensor methods themselves, which would read a complex tensor's
    # interleaved floats as a real tensor
    for name, value in list(namespace.items()):
        if not name.startswith("_") and getattr(Tensor, name, None) is value or name in ("pow", "unique"):
            namespace[name] = _dispatching(name, value)
    for name in FUNCTIONS:
        namespace[name] = globals()[name]
    namespace["matmul"] = _matmul_function(namespace["matmul"])
    for kind in ("zeros", "ones", "empty", "randn", "rand"):
        namespace[kind] = _factory(kind, namespace[kind])
        namespace[kind + "_like"] = _like_factory(kind, namespace[kind + "_like"])
    namespace["full"] = _full_factory(namespace["full"])
    namespace["full_like"] = _like_factory("full", namespace["full_like"])
    namespace["where"] = _where_function(namespace["where"])
    namespace["eye"] = _eye_factory(namespace["eye"])
    _install_tensor_methods()


def _install_tensor_methods() -> None:
    """Real tensors' methods that make complex ones: x.cfloat(), x.cdouble(), x.type_as(complex)."""
    from ._tensor import _Checked

    # memory_format= is accepted and dropped: tensors here are row-major
    Tensor.cfloat = lambda self, *, memory_format=None: (
        self if type(self) is ComplexTensor else complex_from_real(self, _C.complex64))
    Tensor.cdouble = lambda self, *, memory_format=None: (
        self.to(_C.complex128) if type(self) is ComplexTensor else complex_from_real(self, _C.complex128))
    native = Tensor.type_as

    def type_as(self, other):
        # the native method would read a complex `other`'s dtype as its interleaved floats' float32
        if type(other) is ComplexTensor and type(self) is not ComplexTensor:
            return complex_from_real(self, other.dtype)
        return native(self, other)

    type_as.__name__ = "type_as"
    Tensor.type_as = _Checked(type_as, native)
