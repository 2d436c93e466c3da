"""complex64 / complex128 tensors over Candle, which has no complex dtype.

A `ComplexTensor` is a `Tensor` whose own (Rust) data is its interleaved real view: float32 for
complex64, float64 for complex128, of shape [..., 2] (what `torch.view_as_real` returns). It reports
torch's shape and dtype, and the ops code applies to FFT/STFT results and rotary embeddings are
written here over the real and imaginary parts. Every other Tensor method raises a NotImplementedError
naming itself, rather than computing on the interleaved floats.
"""

from __future__ import annotations

import builtins
import math
import numbers

from . import _C
from ._C import Tensor
from ._size import Size
from ._subclass import _disabled_torch_function_impl

_COMPLEX_OF = {"float32": _C.complex64, "float64": _C.complex128}
_REAL_OF = {"complex64": _C.float32, "complex128": _C.float64}


def _name(dtype) -> str:
    return repr(dtype).rsplit(".", 1)[-1]


def is_complex_dtype(dtype) -> bool:
    return _name(dtype) in _REAL_OF


def real_dtype(dtype):
    """complex64 -> float32, complex128 -> float64; a real dtype is itself."""
    return _REAL_OF.get(_name(dtype), dtype)


def complex_dtype(dtype):
    """The complex dtype whose parts are `dtype` (float64 -> complex128, anything else -> complex64)."""
    return _C.complex128 if _name(dtype) in ("float64", "complex128") else _C.complex64


def unsupported(op: str, dtype=_C.complex64) -> NotImplementedError:
    return NotImplementedError(
        f"{op} is not supported for {_name(dtype)} tensors by candle_bind yet (work on the parts: "
        f".real/.imag, .abs()/.angle(), or torch.view_as_real(x))")


def from_pairs(pairs: Tensor) -> "ComplexTensor":
    """The complex tensor whose interleaved real view is `pairs` (a float [..., 2] tensor; shared)."""
    return ComplexTensor(pairs)


def _pairs(x) -> Tensor:
    """The interleaved real view of a complex tensor, as a plain Tensor sharing its memory."""
    return Tensor(x)


def _join(re: Tensor, im: Tensor) -> "ComplexTensor":
    if re.shape != im.shape:
        shape = _bshape(re.shape, im.shape)
        re, im = re.broadcast_to(shape), im.broadcast_to(shape)
    return ComplexTensor(_C.stack([re, im], -1))


def _bshape(a, b):
    n = builtins.max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {i}")
        out.append(y if x == 1 else x)
    return out


def _dim(d: int, ndim: int) -> int:
    """A dim index of a complex tensor, negatives counted from its last logical dim."""
    n = builtins.max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d + ndim if d < 0 else d


def _dims(dim, ndim: int):
    if dim is None:
        return list(range(ndim))
    if isinstance(dim, int):
        return [_dim(dim, ndim)]
    return [_dim(d, ndim) for d in dim]


# ---- type promotion (torch's categories: a 0-d tensor or a number only counts when its kind is higher) ----

def _is_complex_number(x) -> bool:
    """A Python or numpy complex scalar (numpy's complex64 is no `complex` subclass)."""
    return isinstance(x, numbers.Complex) and not isinstance(x, numbers.Real) and not isinstance(x, Tensor)


def _kind(x) -> int:
    if isinstance(x, ComplexTensor) or _is_complex_number(x):
        return 3
    if isinstance(x, Tensor):
        return 2 if x.is_floating_point() else 1
    return 2 if isinstance(x, float) else 1


def _result_real_dtype(a, b):
    """The float dtype of the parts of `a op b`'s complex result (one of them is complex)."""
    ops = [a, b]
    shaped = [x for x in ops if isinstance(x, Tensor) and x.dim() > 0]
    top = builtins.max((_kind(x) for x in shaped), default=0)
    counted = [x for x in ops if isinstance(x, Tensor) and (x.dim() > 0 or _kind(x) > top)]
    wide = any(_name(x.dtype) in ("float64", "complex128") for x in counted if _kind(x) >= 2)
    if wide:
        # a float64 tensor below a complex one only widens it when it is shaped or no shaped complex exists
        return _C.float64
    return _C.float32 if counted else real_dtype(_default_complex())


def _default_complex():
    return complex_dtype(_C.get_default_dtype())


def _parts_of(x, rd):
    """(re, im) of an operand as tensors/numbers of real dtype `rd`; im is None for a real operand."""
    if isinstance(x, ComplexTensor):
        p = _pairs(x)
        if p.dtype != rd:
            p = p.to(rd)
        return p[..., 0], p[..., 1]
    if isinstance(x, Tensor):
        return (x if x.dtype == rd else x.to(rd)), None
    if _is_complex_number(x):
        x = builtins.complex(x)
        return x.real, x.imag
    if isinstance(x, numbers.Number):
        return builtins.float(x), None
    return NotImplemented, None


def _binary(op: str, a, b):
    """`a op b` for + - * / where at least one side is complex."""
    if not isinstance(b, (Tensor, numbers.Number)) or not isinstance(a, (Tensor, numbers.Number)):
        return NotImplemented
    rd = _result_real_dtype(a, b)
    ar, ai = _parts_of(a, rd)
    br, bi = _parts_of(b, rd)
    if op == "add":
        return _make(ar + br, ai if bi is None else (bi if ai is None else ai + bi), rd)
    if op == "sub":
        return _make(ar - br, ai if bi is None else (-bi if ai is None else ai - bi), rd)
    if op == "mul":
        if bi is None:
            return _make(ar * br, ai * br, rd)
        if ai is None:
            return _make(ar * br, ar * bi, rd)
        return _make(ar * br - ai * bi, ar * bi + ai * br, rd)
    if op == "div":
        if bi is None:
            return _make(ar / br, ai / br, rd)
        den = br * br + bi * bi
        if ai is None:
            return _make(ar * br / den, -(ar * bi) / den, rd)
        return _make((ar * br + ai * bi) / den, (ai * br - ar * bi) / den, rd)
    raise AssertionError(op)


def _make(re, im, rd):
    """A complex tensor from parts that may be numbers (a number times a number stays a number)."""
    if not isinstance(re, Tensor) and not isinstance(im, Tensor):
        return ComplexTensor(_C.tensor([re, im], dtype=rd))
    like = re if isinstance(re, Tensor) else im
    if not isinstance(re, Tensor):
        re = _C.full_like(like, re)
    if im is None or not isinstance(im, Tensor):
        im = _C.full_like(re, 0.0 if im is None else im)
    if re.dtype != rd:
        re = re.to(rd)
    if im.dtype != rd:
        im = im.to(rd)
    return _join(re, im)


class ComplexTensor(Tensor):
    """A complex64/complex128 tensor, stored as its interleaved real view (see the module doc)."""

    __slots__ = ()

    def __new__(cls, pairs=None, *args, **kwargs):
        if not isinstance(pairs, Tensor) or pairs.dim() == 0 or pairs.shape[-1] != 2 or not pairs.is_floating_point():
            raise TypeError("ComplexTensor(pairs) takes a float tensor of shape [..., 2]")
        return super().__new__(cls, pairs)

    __hash__ = Tensor.__hash__

    # opted out of the subclass protocol: functions return what they make (complex where they made it)
    __torch_function__ = _disabled_torch_function_impl

    # ---- what it is ----
    @property
    def dtype(self):
        return _COMPLEX_OF[_name(Tensor.dtype.__get__(self))]

    @property
    def shape(self):
        return Size(Tensor.shape.__get__(self)[:-1])

    def size(self, dim=None):
        shape = self.shape
        return shape if dim is None else shape[_dim(dim, len(shape))]

    def dim(self):
        return len(Tensor.shape.__get__(self)) - 1

    ndimension = dim

    @property
    def ndim(self):
        return self.dim()

    def numel(self):
        return math.prod(self.shape)

    nelement = numel

    def element_size(self):
        return 2 * Tensor.element_size(self)

    @property
    def itemsize(self):
        return self.element_size()

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    def is_complex(self):
        return True

    def is_floating_point(self):
        return False

    def is_conj(self):
        return False

    def is_contiguous(self, memory_format=None):
        return Tensor.is_contiguous(self)

    def stride(self, dim=None):
        s = tuple(n // 2 for n in Tensor.stride(self)[:-1])
        return s if dim is None else s[_dim(dim, len(s))]

    @property
    def real(self):
        return _pairs(self)[..., 0]

    @property
    def imag(self):
        return _pairs(self)[..., 1]

    @property
    def data(self):
        return self

    @data.setter
    def data(self, value):  # the tensor takes `value`'s memory (resize_, unsqueeze_, ...)
        if not isinstance(value, ComplexTensor):
            raise RuntimeError("a complex tensor's data can only be set to a complex tensor")
        Tensor.data.__set__(self, _pairs(value))

    @property
    def T(self):
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    @property
    def H(self):
        return self.conj().T if self.dim() == 2 else self.conj()

    @property
    def mH(self):
        return self.conj().transpose(-2, -1)

    @property
    def grad(self):
        return None

    def __repr__(self):
        from ._tensor_str import complex_repr

        return complex_repr(self, self.dtype != _default_complex())

    __str__ = __repr__

    def __format__(self, spec):
        return format(self.item(), spec) if self.dim() == 0 else repr(self)

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return self.item() != 0

    def __reduce_ex__(self, protocol):
        return (from_pairs, (Tensor(_pairs(self).clone()),))

    def __deepcopy__(self, memo):
        return self.clone()

    def __copy__(self):
        return self.clone()

    # ---- to and from Python and numpy ----
    def numpy(self, *, force=False):
        return _host_view(self) if self.device.type == "cpu" else self.cpu().numpy()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def tolist(self):
        return self.numpy().tolist()

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return builtins.complex(self.numpy().reshape(-1)[0])

    def __complex__(self):
        return self.item()

    # ---- copies, devices, dtypes ----
    def clone(self, *, memory_format=None):
        return ComplexTensor(_pairs(self).clone())

    def contiguous(self, memory_format=None):
        return self if Tensor.is_contiguous(self) else ComplexTensor(_pairs(self).contiguous())

    def detach(self):
        return ComplexTensor(_pairs(self).detach())

    def requires_grad_(self, requires_grad=True):
        if requires_grad:
            raise unsupported("autograd")
        return self

    def to(self, *args, **kwargs):
        dtype, device, copy = kwargs.get("dtype"), kwargs.get("device"), kwargs.get("copy", False)
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, int, _C.device)):
                device = a
        p = _pairs(self)
        if device is not None:
            p = p.to(device)
        if dtype is not None and not is_complex_dtype(dtype):
            import warnings

            warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
            return p[..., 0].to(dtype, copy=copy)
        if dtype is not None:
            p = p.to(real_dtype(dtype))
        if p.device == self.device and p.dtype == Tensor.dtype.__get__(self):
            return self.clone() if copy else self
        return ComplexTensor(p)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device)

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return "torch.ComplexFloatTensor" if self.dtype == _C.complex64 else "torch.ComplexDoubleTensor"
        return self.to(dtype)

    def type_as(self, other):
        return self.to(other.dtype)

    def cfloat(self, memory_format=None):
        return self.to(_C.complex64)

    def cdouble(self, memory_format=None):
        return self.to(_C.complex128)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        size = size[0] if len(size) == 1 and isinstance(size[0], (list, tuple)) else size
        dtype = dtype or self.dtype
        if not is_complex_dtype(dtype):
            return _C.zeros(*size, dtype=dtype, device=device or self.device)
        return ComplexTensor(_C.zeros(*size, 2, dtype=real_dtype(dtype), device=device or self.device))

    # ---- arithmetic ----
    def __add__(self, other):
        return _binary("add", self, other)

    def __radd__(self, other):
        return _binary("add", other, self)

    def __sub__(self, other):
        return _binary("sub", self, other)

    def __rsub__(self, other):
        return _binary("sub", other, self)

    def __mul__(self, other):
        return _binary("mul", self, other)

    def __rmul__(self, other):
        return _binary("mul", other, self)

    def __truediv__(self, other):
        return _binary("div", self, other)

    def __rtruediv__(self, other):
        return _binary("div", other, self)

    def add(self, other, *, alpha=1):
        return _binary("add", self, other if alpha == 1 else other * alpha)

    def sub(self, other, *, alpha=1):
        return _binary("sub", self, other if alpha == 1 else other * alpha)

    subtract = sub

    def mul(self, other):
        return _binary("mul", self, other)

    multiply = mul

    def div(self, other, *, rounding_mode=None):
        if rounding_mode is not None:
            raise RuntimeError("div expected rounding_mode to be one of None, but complex inputs have no rounding")
        return _binary("div", self, other)

    divide = true_divide = div

    def __iadd__(self, other):
        return self._assign(self + other)

    def __isub__(self, other):
        return self._assign(self - other)

    def __imul__(self, other):
        return self._assign(self * other)

    def __itruediv__(self, other):
        return self._assign(self / other)

    def _assign(self, result):
        if result.dtype != self.dtype:
            raise RuntimeError(f"result type {dtype_title(result.dtype)} can't be cast to the desired output type "
                               f"{dtype_title(self.dtype)}")
        p = _pairs(self)
        p.copy_(_pairs(result).broadcast_to(p.shape))
        return self

    def add_(self, other, *, alpha=1):
        return self._assign(self.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        return self._assign(self.sub(other, alpha=alpha))

    def mul_(self, other):
        return self._assign(self * other)

    def div_(self, other):
        return self._assign(self / other)

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, ComplexTensor):
            src = complex_from_real(src, self.dtype)
        return self._assign(src.to(self.dtype))

    def zero_(self):
        _pairs(self).zero_()
        return self

    def fill_(self, value):
        self[...] = value
        return self

    def __neg__(self):
        return ComplexTensor(-_pairs(self))

    neg = negative = __neg__

    def __pos__(self):
        return self

    def square(self):
        return self * self

    def __matmul__(self, other):
        return _complex_matmul(self, other)

    def __rmatmul__(self, other):
        return _complex_matmul(other, self)

    matmul = __matmul__

    def __eq__(self, other):
        if not isinstance(other, (Tensor, numbers.Number)):
            return NotImplemented
        rd = _result_real_dtype(self, other)
        ar, ai = _parts_of(self, rd)
        br, bi = _parts_of(other, rd)
        return (ar == br) & (ai == (bi if bi is not None else 0.0))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else eq.logical_not()

    def eq(self, other):
        return self == other

    def ne(self, other):
        return self != other

    def equal(self, other):
        return self.shape == other.shape and bool((self == other).all())

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return bool(((self - other).abs() <= atol + rtol * (other.abs() if isinstance(other, Tensor) else abs(other))).all())


def _cpp(dtype) -> str:
    if is_complex_dtype(dtype):
        return f"c10::complex<{'float' if dtype == _C.complex64 else 'double'}>"
    from ._tensor import dtype_cpp

    return dtype_cpp(dtype)


def _host_view(x):
    """A CPU complex tensor's memory as a numpy complex array (shared, any strides)."""
    import numpy as np

    p = _pairs(x).numpy()
    ctype = np.complex64 if p.dtype == np.float32 else np.complex128
    if p.strides[-1] == p.itemsize and all(s % (2 * p.itemsize) == 0 for s in p.strides[:-1]):
        return p.view(ctype)[..., 0]
    out = np.empty(p.shape[:-1], ctype)
    out.real, out.imag = p[..., 0], p[..., 1]
    return out


def dtype_title(dtype) -> str:
    from ._tensor import dtype_title as title

    return title(dtype)


# Methods the class above does not define raise rather than compute on the interleaved floats.
_KEEP = {"device", "is_cpu", "is_cuda", "is_meta", "requires_grad", "is_leaf", "grad_fn", "data_ptr", "get_device",
         "retain_grad", "is_sparse", "is_quantized", "is_nested", "layout", "names", "pin_memory", "is_pinned",
         "share_memory_", "is_shared", "untyped_storage", "storage_offset", "_assign_result", "dim_order",
         "stft", "istft"}  # torch.stft/istft take complex tensors (candle_bind/_spectral.py)
_OP_DUNDERS = {"__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__invert__", "__floordiv__",
               "__rfloordiv__", "__mod__", "__rmod__", "__lt__", "__le__", "__gt__", "__ge__", "__float__", "__int__",
               "__index__", "__iand__", "__ior__", "__ixor__", "__ifloordiv__", "__imod__", "__dlpack__",
               "__contains__"}


def _guard(name: str):
    def method(self, *args, **kwargs):
        raise unsupported(f"Tensor.{name}", self.dtype)

    method.__name__ = method.__qualname__ = name
    return method


def _install_guards() -> None:
    own = ComplexTensor.__dict__
    for name in dir(Tensor):
        if name in own or name in _KEEP:
            continue
        if name.startswith("__"):
            if name in _OP_DUNDERS:
                setattr(ComplexTensor, name, _guard(name))
            continue
        attr = getattr(Tensor, name, None)
        if callable(attr) or isinstance(attr, property) or type(attr).__name__ == "getset_descriptor":
            setattr(ComplexTensor, name, _guard(name) if callable(attr) else property(_guard(name)))


def complex_from_real(x: Tensor, dtype=None):
    """A real tensor as a complex one (imaginary part zero)."""
    rd = real_dtype(dtype) if dtype is not None else (_C.float64 if x.dtype == _C.float64 else _C.float32)
    x = x.to(rd)
    return _join(x, _C.zeros_like(x))


def from_numpy_complex(a, rd=None) -> "ComplexTensor":
    """A complex numpy array (or one to be made complex) as a ComplexTensor; `rd` picks np.float32 or
    np.float64 parts (by default the array's own precision)."""
    import numpy as np

    a = np.asarray(a)
    if rd is None:
        rd = np.float64 if a.dtype in (np.complex128, np.float64) else np.float32
    a = np.asarray(a, dtype=np.complex128 if rd == np.float64 else np.complex64)
    if not a.flags.c_contiguous:
        a = a.copy()
    pairs = a.reshape(-1).view(rd).reshape(*a.shape, 2)  # numpy's complex layout is interleaved too
    return ComplexTensor(_C.from_numpy(pairs))


def _complex_matmul(a, b):
    """Complex matrix products as four real ones (both complex of one dtype: matmul does not promote)."""
    if not isinstance(b, Tensor):
        return NotImplemented
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_cpp(a.dtype)} != {_cpp(b.dtype)}")
    rd = _result_real_dtype(a, b)
    ar, ai = (x.contiguous() for x in _parts_of(a, rd))
    br, bi = (x.contiguous() for x in _parts_of(b, rd))
    return _join(ar @ br - ai @ bi, ar @ bi + ai @ br)


def _adopt(family) -> None:
    """Gives ComplexTensor the methods of a family's class body (_complex_shape.py, _complex_math.py)."""
    for name, value in vars(family).items():
        if name not in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
            setattr(ComplexTensor, name, value)


from . import _complex_math, _complex_shape  # noqa: E402,F401  (their methods join the class)


def _inplace(name: str):
    def method(self, *args, **kwargs):
        result = getattr(self, name)(*args, **kwargs)
        return self._assign(result if isinstance(result, ComplexTensor) else complex_from_real(result, self.dtype))

    method.__name__ = method.__qualname__ = name + "_"
    return method


def _install_inplace() -> None:
    """x.sin_(), x.eq_(y), ...: the out-of-place result written back (a real one as complex)."""
    own = ComplexTensor.__dict__
    for name in list(own):
        if not name.startswith("_") and callable(own[name]) and hasattr(Tensor, name + "_") \
                and name + "_" not in own:
            setattr(ComplexTensor, name + "_", _inplace(name))


_install_inplace()
_install_guards()
