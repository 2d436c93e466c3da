"""Tensor methods written in Python: the long tail of in-place ops and a few composites.

Each in-place op here is its out-of-place op followed by one write into the tensor's own memory
(`Tensor._assign_result`), so views of the tensor see the change as in torch. The hot ones
(`add_`, `mul_`, `+=`, `x[i] = v`, `fill_`, `copy_`, ...) live in Rust.
"""

from __future__ import annotations

import types

from ._C import Tensor, unique as _unique
from ._C import bool as _BOOL, uint8 as _UINT8

# torch's C++ names of the dtypes, as its error messages spell them ("... not implemented for 'Long'").
_TITLES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
           "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "uint16": "UInt16",
           "uint32": "UInt32", "uint64": "UInt64", "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
           "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def dtype_title(dtype) -> str:
    """torch's C++ name of a dtype: float32 -> 'Float', int64 -> 'Long'."""
    name = repr(dtype).rsplit(".", 1)[-1]
    return _TITLES.get(name, name)


_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool"}


def dtype_cpp(dtype) -> str:
    """torch's C++ type name of a dtype, as some of its messages spell it: float32 -> 'float'."""
    name = repr(dtype).rsplit(".", 1)[-1]
    return _CPP_NAMES.get(name, name)


def not_implemented(kernel: str, dtype) -> NotImplementedError:
    """torch's error for a kernel with no implementation for a dtype."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dtype_title(dtype)}'")


def need_float(input, kernel: str) -> None:
    """Raises torch's NotImplementedError where its kernel only exists for floating dtypes."""
    if not input.is_floating_point():
        raise not_implemented(kernel, input.dtype)


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
    Tensor.__format__ = _format
    # As torch's: numpy defers to the tensor, so `np.float64(2.0) * t` is a tensor, not an ndarray.
    Tensor.__array_priority__ = 1000
    # Native methods behind torch's extra keywords (listed as native: `_Checked`).
    Tensor.is_contiguous = _Checked(_is_contiguous(Tensor.is_contiguous), Tensor.is_contiguous)
    Tensor.flip = _Checked(_dims_keyword(Tensor.flip), Tensor.flip)
    # The buffer's address and size (save_pretrained finds tied weights by them): candle_bind/storage.py.
    if not hasattr(Tensor, "untyped_storage"):
        Tensor.untyped_storage = lambda self: __import__("candle_bind.storage").storage.UntypedStorage(self)
        Tensor.storage = lambda self: __import__("candle_bind.storage").storage.TypedStorage(self)
    for name in ("unsqueeze", "squeeze", "transpose", "t", "swapaxes", "swapdims"):
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _make_reshaping_inplace(name))
    _wrap_checks()


def _dims_keyword(native):
    """`flip(dims=[...])`: torch's keyword for the dims the native method takes positionally."""

    def method(self, *dims, **kwargs):
        if "dims" in kwargs:
            dims = (kwargs.pop("dims"), *dims)
        return native(self, *dims, **kwargs)

    method.__name__, method.__doc__ = native.__name__, native.__doc__
    return method


def _make_reshaping_inplace(name: str):
    """`unsqueeze_`, `transpose_`, ...: the tensor itself becomes the view (`.data` swapped, same memory)."""
    def method(self, *args, **kwargs):
        self.data = getattr(self, name)(*args, **kwargs)
        return self

    method.__name__ = name + "_"
    method.__doc__ = f"In-place :meth:`{name}`: this tensor takes the new shape (same memory)."
    return method


def _is_contiguous(native):
    """`is_contiguous(memory_format=...)`: channels_last asks whether the strides run channels fastest
    (dims of size 1 ignored, as torch's check); other formats are the native row-major check."""

    def is_contiguous(self, memory_format=None):
        name = str(memory_format).rsplit(".", 1)[-1]
        order = {"channels_last": (1, 3, 2, 0), "channels_last_3d": (1, 4, 3, 2, 0)}.get(name)
        if order is None:
            return native(self)
        if self.dim() != len(order):
            return False
        expected, shape, strides = 1, self.shape, self.stride()
        for d in order:
            if shape[d] != 1:
                if strides[d] != expected:
                    return False
                expected *= shape[d]
        return True

    is_contiguous.__doc__ = native.__doc__
    return is_contiguous


# ---- argument checks torch makes before its kernels (wrapping the Rust methods) ----

_CPP_TYPES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
              "int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t"}
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38}
_INT_RANGE = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1), "int16": (-(2**15), 2**15 - 1),
              "int8": (-128, 127), "uint8": (-255, 255)}  # unsigned targets take negatives down to -max, as c10


def check_scalar_fits(value, dtype) -> None:
    """torch's "value cannot be converted to type X without overflow" for a fill value (a number or
    a one-element tensor) written into a tensor of `dtype`."""
    if isinstance(value, Tensor):
        if value.dtype == dtype or value.numel() != 1 or value.is_meta:
            return
        value = value.item()
    if isinstance(value, complex) and value.imag != 0 and not repr(dtype).rsplit(".", 1)[-1].startswith("complex"):
        name = repr(dtype).rsplit(".", 1)[-1]
        raise RuntimeError(f"value cannot be converted to type {_CPP_TYPES.get(name, name)} without overflow")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    name = repr(dtype).rsplit(".", 1)[-1]
    if name in _FLOAT_MAX:
        if isinstance(value, float) and (value != value or abs(value) == float("inf")):
            return  # NaN and infinities convert
        try:
            if abs(float(value)) <= _FLOAT_MAX[name]:
                return
        except OverflowError:  # an int past float64's range
            pass
    elif name in _INT_RANGE:
        lo, hi = _INT_RANGE[name]
        if lo <= value <= hi:  # NaN compares False
            return
    else:
        return
    raise RuntimeError(f"value cannot be converted to type {_CPP_TYPES[name]} without overflow")


def _advanced_put(key, value) -> bool:
    """Whether `self[key] = value` is an index_put (torch then needs value.dtype == self.dtype): the
    key has an index tensor or sequence, other than one bool mask with a one-element value (which
    torch runs as masked_fill)."""
    items = key if isinstance(key, tuple) else (key,)
    adv = [k for k in items if (isinstance(k, Tensor) and (k.dim() > 0 or k.dtype == _BOOL))
           or isinstance(k, (list, tuple))]
    if not adv:
        return False
    if len(adv) == 1 and value.numel() == 1:
        k = adv[0]
        if isinstance(k, Tensor) and k.dtype == _BOOL and k.dim() > 0:
            return False
        if isinstance(k, list) and k and builtins_all(isinstance(v, bool) for v in k):
            return False
    return True


def builtins_all(it):
    import builtins

    return builtins.all(it)


def _index_put_error(self, value):
    return RuntimeError(f"Index put requires the source and destination dtypes match, got {dtype_title(self.dtype)} "
                        f"for the destination and {dtype_title(value.dtype)} for the source.")


class _Checked:
    """A native Tensor method behind a Python check of its arguments (validation torch does that the
    native method lacks). It stays the native method for introspection (name, doc, `__wrapped__`;
    the stubs list it), and binds like a function."""

    def __init__(self, fn, native):
        self._fn = fn
        self.__name__ = native.__name__
        self.__doc__ = native.__doc__
        self.__wrapped__ = native

    def __get__(self, obj, cls=None):
        return self._fn if obj is None else types.MethodType(self._fn, obj)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)


def _wrap_checks() -> None:
    T = Tensor

    def wrap(name, check):
        op = getattr(T, name)

        def method(self, *args, **kwargs):
            check(self, *args, **kwargs)
            return op(self, *args, **kwargs)

        method.__name__ = method.__qualname__ = name
        method.__doc__ = op.__doc__
        setattr(T, name, method if isinstance(op, types.FunctionType) else _Checked(method, op))

    def scatter_check(self, dim=None, index=None, src=None, value=None, *rest, **kw):
        if isinstance(src, Tensor):
            if src.dtype != self.dtype:
                raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        else:
            check_scalar_fits(value if src is None else src, self.dtype)

    for n in ("scatter", "scatter_", "scatter_add", "scatter_add_"):
        wrap(n, scatter_check)

    def index_add_check(self, dim=None, index=None, source=None, *rest, **kw):
        if isinstance(source, Tensor) and source.dtype != self.dtype:
            raise RuntimeError(f"index_add_(): self ({dtype_title(self.dtype)}) and source "
                               f"({dtype_title(source.dtype)}) must have the same scalar type")

    for n in ("index_add", "index_add_"):
        wrap(n, index_add_check)

    def index_copy_check(self, dim=None, index=None, source=None, *rest, **kw):
        if isinstance(source, Tensor) and source.dtype != self.dtype:
            raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                               f"{dtype_title(self.dtype)} and (source) {dtype_title(source.dtype)}")

    for n in ("index_copy", "index_copy_"):
        wrap(n, index_copy_check)

    def fill_check(self, mask=None, value=None, *rest, **kw):
        check_scalar_fits(value, self.dtype)

    for n in ("masked_fill", "masked_fill_"):
        wrap(n, fill_check)

    def index_fill_check(self, dim=None, index=None, value=None, *rest, **kw):
        check_scalar_fits(value, self.dtype)

    for n in ("index_fill", "index_fill_"):
        wrap(n, index_fill_check)

    def new_full_check(self, size=None, fill_value=None, *rest, dtype=None, **kw):
        check_scalar_fits(fill_value, self.dtype if dtype is None else dtype)

    wrap("new_full", new_full_check)

    def size_keyword(name):  # x.new_ones(size=(2, 3)) (LED's global attention), as torch accepts
        op = getattr(T, name)

        def method(self, *args, **kwargs):
            if "size" in kwargs:
                args = (kwargs.pop("size"), *args)
            return op(self, *args, **kwargs)

        method.__name__ = method.__qualname__ = name
        method.__doc__ = op.__doc__
        setattr(T, name, _Checked(method, op))

    for n in ("new_ones", "new_zeros", "new_empty"):
        size_keyword(n)

    def alpha_check(self, other=None, *rest, alpha=None, **kw):
        if alpha is None or rest:  # add(input, alpha, other): torch's deprecated order, left to the kernel
            return
        is_bool = self.dtype == _BOOL and (other.dtype == _BOOL if isinstance(other, Tensor)
                                                else isinstance(other, bool))
        if isinstance(alpha, bool):
            if not is_bool:
                raise RuntimeError("Boolean alpha only supported for Boolean results.")
        elif isinstance(alpha, float) and not self.is_floating_point() and (
                other.is_floating_point() is False if isinstance(other, Tensor) else isinstance(other, int)):
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")

    for n in ("add", "sub", "subtract", "add_", "sub_"):
        if hasattr(T, n):
            wrap(n, alpha_check)

    def where_check(self, condition=None, *rest, **kw):
        if isinstance(condition, Tensor) and condition.dtype not in (_BOOL, _UINT8):
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{dtype_title(condition.dtype)}")

    wrap("where", where_check)

    def no_bool(kernel_msg):
        def check(self, *args, **kwargs):
            if self.dtype == _BOOL:
                raise NotImplementedError(kernel_msg)
        return check

    wrap("abs", no_bool("\"abs_cpu\" not implemented for 'Bool'"))
    if hasattr(T, "abs_"):
        wrap("abs_", no_bool("\"abs_cpu\" not implemented for 'Bool'"))
    wrap("argmax", no_bool("argmax(): does not support bool input"))
    wrap("argmin", no_bool("argmin(): does not support bool input"))
    wrap("topk", no_bool("topk does not support bool dtypes on CPU"))
    def kthvalue_check(self, k=None, dim=-1, *rest, **kw):
        if self.dtype == _BOOL:
            raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
        dim = kw.get("dim", dim)
        if isinstance(k, int) and isinstance(dim, int):  # the native kernel's IndexError is torch's RuntimeError
            n = self.dim()
            lo, hi = (-n, n - 1) if n else (-1, 0)
            if not lo <= dim <= hi:
                raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
            d = dim % n if n else 0
            if not 1 <= k <= (self.shape[d] if n else 1):
                raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")

    wrap("kthvalue", kthvalue_check)

    def squeeze_check(self, dim=None, *rest, **kw):
        if isinstance(dim, (list, tuple)):
            seen = set()
            n = self.dim()
            for d in dim:
                k = d + n if d < 0 and n else d
                if k in seen:
                    raise RuntimeError(f"dim {k} appears multiple times in the list of dims")
                seen.add(k)

    wrap("squeeze", squeeze_check)

    def clamp_types(name):
        # A 0-d tensor also fills a Number slot (torch's Scalar overload), so only a bound with dims
        # beside a Python number is the invalid mix.
        def check(self, min=None, max=None, *rest, **kw):  # noqa: A002 - torch's names
            def dims(v):
                return isinstance(v, Tensor) and v.dim() > 0

            def number(v):
                return v is not None and not isinstance(v, Tensor)
            if (dims(min) and number(max)) or (dims(max) and number(min)):
                got = ", ".join(type(v).__name__ for v in (min, max))
                raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected "
                                "one of:\n * (Tensor min = None, Tensor max = None)\n * (Number min = None, Number max = None)")
        return check

    for n in ("clamp", "clip", "clamp_", "clip_"):
        if hasattr(T, n):
            wrap(n, clamp_types(n))

    setitem = T.__setitem__

    def __setitem__(self, key, value):
        if isinstance(value, Tensor) and value.dtype != self.dtype and _advanced_put(key, value):
            raise _index_put_error(self, value)
        setitem(self, key, value)

    T.__setitem__ = __setitem__

    count_nonzero = T.count_nonzero

    def count_nonzero_dim(self, dim=None):
        """Non-zero elements, in all the tensor or along `dim` (an int or a tuple of ints)."""
        if dim is None:
            return count_nonzero(self)
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        squeeze_check(self, dims)
        return (self != 0).sum(dims).long() if dims else count_nonzero(self)

    T.count_nonzero = _Checked(count_nonzero_dim, count_nonzero)

    copy_ = T.copy_

    def copy_number(self, src, non_blocking=False):
        if isinstance(src, (bool, int, float)):
            return self.fill_(src)
        return copy_(self, src, non_blocking)

    copy_number.__doc__ = copy_.__doc__
    T.copy_ = _Checked(copy_number, copy_)


def _deepcopy(self, memo):
    if id(self) not in memo:
        new = self.clone()
        new.requires_grad = self.requires_grad
        memo[id(self)] = new
        copy_attributes(self, new, memo)
    return memo[id(self)]


_native_format = Tensor.__format__


def _format(self, spec):
    """As torch's: a 0-d tensor formats as its number (f"expert_{idx[0]}" is "expert_0", switch_transformers)."""
    if self.dim() == 0 and not self.is_meta and type(self) is Tensor:
        return self.item().__format__(spec)
    return _native_format(self, spec)


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
    """Tensor.unique: the sorted distinct values (see `candle_bind.unique`); with `dim`, the sorted
    distinct slices along that dim."""
    if dim is not None:
        return _unique_dim(self, dim, return_inverse, return_counts)
    return _unique(self, sorted, return_inverse, return_counts, dim)


def _unique_dim(x, dim, return_inverse, return_counts):
    from . import _C
    from ._ops import _dim

    if x.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = _dim(dim, x.dim())
    zeros = [i for i, n in enumerate(x.shape) if n == 0]
    if len(zeros) > 1:
        raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
    if zeros and zeros[0] != d:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    n = x.shape[d]
    if n == 0:
        values = x.clone()
        inverse = counts = _C.zeros(0, dtype=_C.int64)
    else:
        moved = x.movedim(d, 0)
        rows = moved.reshape(n, -1)
        perm = _C.arange(n)
        for col in reversed(range(rows.shape[1])):  # a stable sort per column, last first: lexicographic order
            key = rows.index_select(0, perm)[:, col]
            perm = perm.index_select(0, key.sort(0, stable=True).indices)
        ordered = rows.index_select(0, perm)
        starts = _C.ones(n, dtype=_C.bool)
        if n > 1:
            starts[1:] = (ordered[1:] != ordered[:-1]).any(1)
        first = starts.nonzero().reshape(-1)
        values = moved.index_select(0, perm.index_select(0, first)).movedim(0, d)
        group = starts.long().cumsum(0) - 1
        inverse = _C.zeros(n, dtype=_C.int64).scatter(0, perm, group)
        counts = _C.cat([first[1:], _C.tensor([n])]) - first
    out = [values]
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def isclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other|, elementwise; equal values (infinities) are close."""
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if input.dtype != other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"{'rtol' if rtol < 0 else 'atol'} must be greater than or equal to zero, but got "
                           f"{rtol if rtol < 0 else atol}")
    close = input == other
    if input.is_floating_point():
        a, b = input.double(), other.double()
        finite = a.isfinite() & b.isfinite()
        close = close | (finite & ((a - b).abs() <= atol + rtol * b.abs()))
        if equal_nan:
            close = close | (a.isnan() & b.isnan())
    return close


def allclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    if not isinstance(other, Tensor):
        raise TypeError(f"allclose(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
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
            a, b = shape_i[i], shape_x[i]
            if a != b and a != 1 and b != 1:
                raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                                   f"dimension {i}")
            shape_i[i] = shape_x[i] = b if a == 1 else a
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

        # always on the CPU, as torch's legacy constructors: a `with torch.device("meta")` build keeps data
        if len(args) == 1 and not isinstance(args[0], int):
            return tensor(args[0], dtype=cls.dtype, device="cpu")
        return zeros(*args, dtype=cls.dtype, device="cpu")


def _typed_tensor(name: str, dtype) -> type:
    return _TypedTensorMeta(name, (Tensor,), {"dtype": dtype, "__module__": "candle_bind"})


def _typed_tensors() -> dict:
    from . import _C

    names = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
             "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8", "ShortTensor": "int16",
             "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool"}
    return {name: _typed_tensor(name, getattr(_C, dtype)) for name, dtype in names.items()}


_install()
