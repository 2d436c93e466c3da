"""candle_bind: a torch-shaped API over Hugging Face's Candle.

    import candle_bind as torch
"""

from __future__ import annotations

import builtins as _builtins
import contextlib as _contextlib
import functools as _functools
import math as _math
import threading as _threading
from typing import NamedTuple as _NamedTuple

try:
    from . import _C
except ImportError as _e:
    # A CUDA build whose CUDA libraries live in pip packages: load them, then the extension.
    if "libcu" not in str(_e):
        raise
    from . import _cuda_libs

    _cuda_libs.preload()
    from . import _C
if _C.cuda_compiled:
    from . import _cuda_libs

    _cuda_libs.preload()
from ._C import (
    CandleError,
    DeviceError,
    DTypeError,
    OutOfMemoryError,
    ShapeError,
    Tensor,
    arange,
    as_tensor,
    cat,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    get_default_device,
    get_default_dtype,
    get_num_threads,
    manual_seed,
    ones,
    ones_like,
    promote_types,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    result_type,
    seed,
    set_default_device,
    set_default_dtype,
    set_num_threads,
    stack,
    tensor,
    zeros,
    zeros_like,
)
from ._C import device, dtype
from ._C import bucketize, searchsorted, unique
from ._size import Size
from . import return_types
from ._tensor import allclose, isclose, take_along_dim
from ._tensor import _typed_tensors

globals().update(_typed_tensors())
from . import _ops
from . import _pointwise
from . import _subclass, _torch_c  # Tensor subclasses (as_subclass, __torch_function__); torch._C's Python names

_subclass.install()
_torch_c.install()
TensorType = _torch_c.TensorType
from ._checks import *  # noqa: F401,F403  (torch._assert, torch._check*, sym_int, ...)
from ._checks import _assert, _check, _check_index, _check_is_size, _check_not_implemented  # noqa: F401
from ._checks import _check_type, _check_value, _check_with, _shape_as_tensor  # noqa: F401
from ._checks import _check_tensor_all, _check_tensor_all_with  # noqa: F401
pi, e, inf, nan = 3.141592653589793, 2.718281828459045, _builtins.float("inf"), _builtins.float("nan")
from ._generator import rand, randint, randn, randperm  # given generator=, torch's own CPU stream
from ._runtime import (  # noqa: F401
    Generator,
    are_deterministic_algorithms_enabled,
    channels_last,
    channels_last_3d,
    compile,
    contiguous_format,
    get_device_module,
    get_float32_matmul_precision,
    is_warn_always_enabled,
    layout,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
    set_float32_matmul_precision,
    set_warn_always,
    sparse_coo,
    sparse_csr,
    strided,
    use_deterministic_algorithms,
)

# Submodules load on first use, so `import candle_bind` stays fast (numpy, zipfile and the layer
# classes are only imported by the code that needs them).
_LAZY_MODULES = {
    "nn", "gguf", "models", "safetensors", "serialization", "compat", "utils", "testing",
    # torch's submodules, stood in for (one small module each)
    "accelerator", "amp", "autograd", "backends", "compiler", "cuda", "distributed", "distributions", "jit",
    "library", "mps", "multiprocessing", "ops", "optim", "profiler", "random", "version", "xpu", "_dynamo",
    "__config__", "fft", "signal",
    "overrides", "cpu", "storage",
    "sparse",
    "linalg",
    "fx", "onnx", "ao", "_custom_ops", "_prims_common", "types",
    "masked", "quantization",
    "special",
    "func",
}
_QTENSOR_NAMES = ("quantize_per_tensor", "quantize_per_channel", "dequantize", "qscheme", "per_tensor_affine",
                  "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric",
                  "per_channel_affine_float_qparams", "_empty_affine_quantized", "_make_per_tensor_quantized_tensor",
                  "_make_per_channel_quantized_tensor")
# torch.<name> served by candle_bind.linalg (loaded on first use: it imports numpy)
_LINALG_TOP_LEVEL = ("svd", "qr", "det", "logdet", "slogdet", "inverse", "pinverse", "svd_lowrank", "pca_lowrank",
                     "matrix_power", "cholesky")


def from_torch(t) -> Tensor:
    """A copy of a torch tensor (any dtype we have, bfloat16 included) as a candle_bind tensor."""
    t = t.detach().cpu().contiguous()
    if str(t.dtype) == "torch.bfloat16":
        return from_numpy(t.float().numpy()).to(bfloat16)
    return from_numpy(t.numpy())


def to_torch(t: Tensor):
    """A copy of a candle_bind tensor as a torch tensor (torch must be importable)."""
    import importlib

    torch = importlib.import_module("torch")
    if t.dtype == bfloat16:
        return torch.from_numpy(t.float().numpy().copy()).to(torch.bfloat16)
    return torch.from_numpy(t.numpy().copy())


def __getattr__(name):
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("load", "save"):
        return getattr(importlib.import_module(f"{__name__}.serialization"), name)
    if name == "vmap":
        return importlib.import_module(f"{__name__}.func").vmap
    if name in _LINALG_TOP_LEVEL:
        return importlib.import_module(f"{__name__}.linalg").TOP_LEVEL[name]
    if name in ("autocast", "is_autocast_enabled", "get_autocast_dtype", "get_autocast_gpu_dtype", "get_autocast_cpu_dtype"):
        return getattr(importlib.import_module(f"{__name__}.amp"), name)
    if name in ("get_rng_state", "set_rng_state", "initial_seed", "fork_rng"):
        return getattr(importlib.import_module(f"{__name__}.random"), name)
    if name in ("stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
                "kaiser_window"):
        return getattr(importlib.import_module(f"{__name__}._spectral"), name)
    if name in ("Stream", "Event"):  # torch's device-generic stream types (diffusers' offloading annotates with them)
        return getattr(importlib.import_module(f"{__name__}.cuda"), name)
    if name in ("UntypedStorage", "TypedStorage"):
        return getattr(importlib.import_module(f"{__name__}.storage"), name)
    if name in _QTENSOR_NAMES:  # quantized tensors (torch.quantize_per_tensor, torch.per_tensor_affine, ...)
        return getattr(importlib.import_module(f"{__name__}._qtensor"), name)
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(f"torch.{name} is not supported by candle_bind yet")

__version__ = _C.__version__

# dtypes and torch's aliases
bool = _C.bool  # noqa: A001 - torch's name
uint8 = _C.uint8
int32 = _C.int32
int64 = _C.int64
float16 = _C.float16
bfloat16 = _C.bfloat16
float32 = _C.float32
float64 = _C.float64
# dtypes with storage only (int16, float8_e4m3fn) or as objects only (the rest: creating such a
# tensor raises "torch.int8 tensors are not supported by candle_bind yet").
int8 = _C.int8
int16 = _C.int16
uint16 = _C.uint16
uint32 = _C.uint32
uint64 = _C.uint64
float8_e4m3fn = _C.float8_e4m3fn
float8_e5m2 = _C.float8_e5m2
complex64 = _C.complex64
complex128 = _C.complex128
# quantized dtypes (their tensors: candle_bind._qtensor.QuantizedTensor)
qint8 = _C.qint8
quint8 = _C.quint8
qint32 = _C.qint32
short = int16
cfloat = complex64
cdouble = complex128
long = int64
int = int32  # noqa: A001
half = float16
float = float32  # noqa: A001
double = float64

concat = cat
concatenate = cat

# torch.<op>(input, ...) for every Tensor method torch also exposes as a function.
_METHOD_FUNCTIONS = (
    "abs", "acos", "add", "all", "amax", "amin", "any", "argmax", "argmin", "asin", "atan",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bmm", "ceil", "chunk", "clamp", "clamp_max",
    "clamp_min", "clip", "clone", "cos", "cosh", "count_nonzero", "cumprod", "cumsum", "detach",
    "div", "divide", "dot", "eq", "erf", "exp", "expm1", "fix", "flatten", "flip", "fliplr",
    "flipud", "floor", "floor_divide", "ge", "gt", "isfinite", "isinf", "isnan", "isneginf",
    "isposinf", "le", "lerp", "log", "log10", "log1p", "log2", "log_softmax", "logical_and",
    "logical_not", "logical_or", "logical_xor", "logsumexp", "lt", "matmul", "maximum", "mean",
    "minimum", "mm", "mul", "multiply", "mv", "nan_to_num", "nansum", "narrow", "ne", "neg",
    "negative", "norm", "numel", "outer", "permute", "pow", "prod", "reciprocal", "relu",
    "remainder", "repeat_interleave", "reshape", "roll", "round", "rsqrt", "sigmoid", "sign",
    "sin", "sinh", "softmax", "split", "sqrt", "square", "squeeze", "std", "sub", "subtract",
    "sum", "swapaxes", "swapdims", "t", "tan", "tanh", "transpose", "tril", "triu", "true_divide",
    "trunc", "unbind", "unflatten", "unsqueeze", "var",
    # selection and ordering
    "argsort", "argwhere", "bernoulli", "bincount", "gather", "index_add", "index_copy", "index_fill",
    "index_select", "kthvalue", "masked_fill", "masked_select", "multinomial", "nonzero", "scatter",
    "scatter_add", "sort", "topk",
)
for _name in _METHOD_FUNCTIONS:
    globals()[_name] = getattr(Tensor, _name)
for _name in _ops.FUNCTIONS:
    globals()[_name] = getattr(_ops, _name)
for _name in _pointwise.FUNCTIONS:
    globals()[_name] = getattr(_pointwise, _name)
for _name, _target in _pointwise.ALIASES.items():
    globals()[_name] = getattr(Tensor, _target)
from ._blas_ops import grouped_mm as _grouped_mm  # noqa: E402 - torch._grouped_mm
del _name, _target

# Op families in modules of their own. Each module lists FUNCTIONS (torch.<name>), METHODS (Tensor.<name>,
# set only where the Rust Tensor has none) and INPLACE (Tensor.<name>_ from the method, torch's in-place rule).
# Keep these modules light at import (numpy/scipy-style dependencies load inside the functions).
_OP_FAMILIES = ("_blas_ops", "_layout_ops", "_math_ops", "_reduce_ops", "_shape_ops", "_scatter_ops", "_nn_ops", "_stats_ops", "_calculus_ops", "_numeric_ops", "_random_ops", "_linalg_entry", "_special_ops", "_opmath", "_dtype_rules", "_spectral_ops", "_inplace_ops", "_tensor_info", "_creation_ops")
_FAMILY_FUNCTIONS = []


def _install_families() -> None:
    import importlib

    from ._tensor import _make_inplace

    for family in _OP_FAMILIES:
        module = importlib.import_module(f"{__name__}.{family}")
        for name in getattr(module, "FUNCTIONS", ()):
            globals()[name] = getattr(module, name)
            _FAMILY_FUNCTIONS.append(name)
        for name in getattr(module, "METHODS", ()):
            if not hasattr(Tensor, name):
                setattr(Tensor, name, getattr(module, name))
        for name in getattr(module, "INPLACE", ()):
            if not hasattr(Tensor, name + "_"):
                setattr(Tensor, name + "_", _make_inplace(name))


_install_families()
_tensor_pow = pow  # noqa: F821 - set from Tensor.pow above


def pow(input, exponent, **kwargs):  # noqa: A001
    """torch.pow, also with a Python number as the base (torch.pow(2.0, t), as torchvision's RegNet calls it)."""
    if not isinstance(input, Tensor) and isinstance(exponent, Tensor):
        return input ** exponent
    return _tensor_pow(input, exponent, **kwargs)


def max(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """torch.max(input), torch.max(input, dim, keepdim) or torch.max(input, other)."""
    try:
        return input.max(dim, keepdim)
    except AttributeError:
        if isinstance(input, Tensor):
            raise
        raise TypeError(f"max(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}") from None


def min(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """torch.min(input), torch.min(input, dim, keepdim) or torch.min(input, other)."""
    try:
        return input.min(dim, keepdim)
    except AttributeError:
        if isinstance(input, Tensor):
            raise
        raise TypeError(f"min(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}") from None


def where(condition, input=None, other=None):
    """torch.where(condition, input, other); the one-argument form returns nonzero indices."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if isinstance(condition, Tensor) and condition.dtype not in (bool, uint8):
        from ._tensor import dtype_title

        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{dtype_title(condition.dtype)}")
    return _C.where(condition, input, other)


def broadcast_to(input, size):
    return input.broadcast_to(size)


def broadcast_shapes(*shapes):
    out: list = []
    for s in shapes:
        s = (s,) if isinstance(s, _builtins.int) else tuple(s)
        if len(s) > len(out):
            out = [1] * (len(s) - len(out)) + out
        for i, d in enumerate(s, len(out) - len(s)):
            if out[i] == 1:
                out[i] = d
            elif d != 1 and d != out[i]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape. Mismatch is at dim {i}")
    return Size(out)


def hstack(tensors):
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(tensors, 0 if tensors[0].dim() == 1 else 1)


def vstack(tensors):
    return cat([t.unsqueeze(0) if t.dim() == 1 else t for t in tensors], 0)


def is_tensor(obj) -> _builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(input) -> _builtins.bool:
    return input.is_floating_point()


def numel(input) -> _builtins.int:
    return input.numel()


def einsum(equation: str, *operands):
    """einsum over explicit equations (``ij,jk->ik``) and implicit ones; ``...`` for leading dims."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    inputs = lhs.split(",")
    if len(inputs) != len(operands):
        raise ValueError("einsum(): more operands were provided than specified in the equation")
    # Expand "..." to unique upper-case letters per broadcast dim.
    nell = _builtins.max((t.dim() - len(s.replace("...", "")) for s, t in zip(inputs, operands) if "..." in s), default=0)
    ell = "".join(chr(ord("A") + i) for i in _builtins.range(nell))
    inputs = [s.replace("...", ell[nell - (t.dim() - len(s.replace("...", ""))):]) for s, t in zip(inputs, operands)]
    if "->" not in eq:
        counts: dict = {}
        for s in inputs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    letters = list(dict.fromkeys("".join(inputs) + rhs))
    sizes: dict = {}
    aligned = []
    for s, t in zip(inputs, operands):
        if len(s) != t.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the number of dimensions ({t.dim()}) for operand")
        # A letter repeated in one operand takes that operand's diagonal over those dims.
        while len(set(s)) != len(s):
            c = next(ch for ch in s if s.count(ch) > 1)
            i = s.index(c)
            j = s.index(c, i + 1)
            if t.shape[i] != t.shape[j]:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {len(aligned)} but the sizes "
                                   f"don't match, {t.shape[j]} != {t.shape[i]}")
            t = t.diagonal(0, i, j)  # the diagonal becomes the last dim
            s = s[:i] + s[i + 1:j] + s[j + 1:] + c
        for c, d in zip(s, t.shape):
            if d != 1:
                if sizes.get(c, d) != d:
                    raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped)")
                sizes[c] = d
        order = [s.index(c) for c in letters if c in s]
        x = t.permute(*order) if order else t
        shape = [t.shape[s.index(c)] if c in s else 1 for c in letters]
        aligned.append(x.reshape(*shape))
    # Two operands contracting shared letters: a batched matmul.
    if len(aligned) == 2:
        return _einsum_pair(aligned, letters, inputs, rhs, sizes)
    out = aligned[0]
    for x in aligned[1:]:
        out = out * x
    reduce = [i for i, c in enumerate(letters) if c not in rhs]
    if reduce:
        out = out.sum(reduce)
    kept = [c for c in letters if c in rhs]
    return out.permute(*[kept.index(c) for c in rhs]) if kept else out


def _einsum_pair(aligned, letters, inputs, rhs, sizes):
    a, b = aligned
    sa, sb = inputs
    contract = [c for c in letters if c in sa and c in sb and c not in rhs]
    batch = [c for c in letters if c in sa and c in sb and c in rhs]
    only_a = [c for c in letters if c in sa and c not in sb]
    only_b = [c for c in letters if c in sb and c not in sa]
    summed_alone = [c for c in only_a + only_b if c not in rhs]
    if summed_alone or _builtins.any(c not in sa and c not in sb for c in letters):
        out = a * b
        reduce = [i for i, c in enumerate(letters) if c not in rhs]
        if reduce:
            out = out.sum(reduce)
        kept = [c for c in letters if c in rhs]
        return out.permute(*[kept.index(c) for c in rhs])
    pos = {c: i for i, c in enumerate(letters)}
    size = lambda cs: _functools.reduce(lambda x, c: x * sizes.get(c, 1), cs, 1)  # noqa: E731
    bsz = [sizes.get(c, 1) for c in batch]
    a2 = a.permute(*[pos[c] for c in batch + only_a + contract + only_b]).reshape(*bsz, size(only_a), size(contract))
    b2 = b.permute(*[pos[c] for c in batch + contract + only_b + only_a]).reshape(*bsz, size(contract), size(only_b))
    out = (a2 @ b2).reshape(*bsz, *[sizes.get(c, 1) for c in only_a], *[sizes.get(c, 1) for c in only_b])
    kept = batch + only_a + only_b
    return out.permute(*[kept.index(c) for c in rhs]) if kept else out


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """linspace with torch's symmetric evaluation (steps 0 and 1 included)."""
    steps = _check_space_args("linspace", start, end, steps, dtype)
    if dtype is not None and dtype.is_complex or _complex_ops.any_complex(start, end):
        return _complex_ops.space("linspace", start, end, steps, None, dtype, device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if steps == 0:
        return empty(0, dtype=dtype, device=device)
    if steps == 1:
        return full((1,), _builtins.float(start), dtype=dtype or get_default_dtype(), device=device)
    start, end = _builtins.float(start), _builtins.float(end)
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex) and dtype != bool:
        start, end = _int_end(start), _int_end(end)  # as torch's integral kernel
    return _space(start, end, steps, dtype, device).to(dtype or get_default_dtype(), device=device)


def _space(start, end, steps, dtype, device=None):
    """linspace's values before the cast to `dtype`: the first half counts up from `start`, the second down
    from `end`, as torch's kernel does. In float64 natively (a size check before anything is allocated);
    for float16/bfloat16 torch rounds the ends to the dtype and steps in float32 (its opmath)."""
    work = float64
    if dtype in (float16, bfloat16):
        start, end = tensor([start, end], dtype=float64, device="cpu").to(dtype).tolist()
        work = float32
    step = (end - start) / (steps - 1)
    i = arange(steps, dtype=work, device=device)  # on the device asked for, not a default-device context's
    return where(i < steps // 2, i * step + start, (steps - 1 - i) * -step + end)


def _int_end(v):
    """An end of linspace/logspace for an integral dtype: truncated, as torch's kernel casts it."""
    v = _builtins.float(v)
    return _builtins.float(_builtins.int(v)) if _math.isfinite(v) else v


def _check_space_args(name, start, end, steps, dtype):
    if isinstance(steps, _builtins.bool) or not hasattr(steps, "__index__") or isinstance(steps, Tensor) and steps.is_floating_point():
        kinds = ", ".join(_builtins.type(v).__name__ for v in (start, end, steps))
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({kinds}), but expected one of:\n"
                        f" * (Tensor start, Tensor end, int steps, *, ...)\n * (Number start, Number end, int steps, *, ...)")
    if dtype == bool:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    return steps.__index__()


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    steps = _check_space_args("logspace", start, end, steps, dtype)
    if dtype is not None and dtype.is_complex or _complex_ops.any_complex(start, end):
        return _complex_ops.space("logspace", start, end, steps, base, dtype, device)
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex) and dtype != bool:
        # torch's integral kernel casts the ends to the dtype first (logspace(0, 1.2, 2) -> [1, 10])
        start, end = _int_end(start), _int_end(end)
    # Computed on the host (C's pow, exact as torch's) and moved where it was asked for.
    if dtype in (float16, bfloat16) and steps > 1:
        lin = _space(_builtins.float(start), _builtins.float(end), steps, dtype, "cpu").to(float64)
    else:
        lin = linspace(start, end, steps, dtype=float64, device="cpu")
    out = _C.full((), base, dtype=float64, device="cpu") ** lin if steps else lin
    return out.to(dtype or get_default_dtype()).to(empty(0, device=device).device)


# ---- dtype info ----

class finfo(_NamedTuple):
    """Machine limits for a float dtype (torch.finfo)."""

    bits: _builtins.int
    eps: _builtins.float
    max: _builtins.float
    min: _builtins.float
    tiny: _builtins.float
    smallest_normal: _builtins.float
    resolution: _builtins.float
    dtype: str

    @classmethod
    def _of(cls, d=None):
        d = float32 if d is None else d
        table = {
            "float8_e4m3fn": (8, 0.125, 448.0, 2.0**-6, 1.0),
            "float8_e5m2": (8, 0.25, 57344.0, 2.0**-14, 1.0),
            "complex64": (32, 2.0**-23, 3.4028234663852886e38, 1.1754943508222875e-38, 1e-6),
            "complex128": (64, 2.0**-52, 1.7976931348623157e308, 2.2250738585072014e-308, 1e-15),
            "float16": (16, 2.0**-10, 65504.0, 2.0**-14, 1e-3),
            "bfloat16": (16, 2.0**-7, 3.3895313892515355e38, 1.1754943508222875e-38, 1e-2),
            "float32": (32, 2.0**-23, 3.4028234663852886e38, 1.1754943508222875e-38, 1e-6),
            "float64": (64, 2.0**-52, 1.7976931348623157e308, 2.2250738585072014e-308, 1e-15),
        }
        name = repr(d).rsplit(".", 1)[-1]
        if name not in table:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'")
        bits, eps, mx, tiny, res = table[name]
        return cls(bits, eps, mx, -mx, tiny, tiny, res, name)


class iinfo(_NamedTuple):
    """Machine limits for an integer dtype (torch.iinfo)."""

    bits: _builtins.int
    max: _builtins.int
    min: _builtins.int
    dtype: str

    @classmethod
    def _of(cls, d):
        table = {"uint8": (8, 255, 0), "int8": (8, 127, -128), "int16": (16, 2**15 - 1, -(2**15)),
                 "uint16": (16, 2**16 - 1, 0), "uint32": (32, 2**32 - 1, 0), "uint64": (64, 2**64 - 1, 0),
                 "int32": (32, 2**31 - 1, -(2**31)), "int64": (64, 2**63 - 1, -(2**63))}
        name = repr(d).rsplit(".", 1)[-1]
        if name not in table:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        bits, mx, mn = table[name]
        return cls(bits, mx, mn, name)


_finfo_cls, _iinfo_cls = finfo, iinfo


def finfo(type=None):  # type: ignore[no-redef]  # noqa: A002, F811
    return _finfo_cls._of(type)


def iinfo(type):  # type: ignore[no-redef]  # noqa: A002, F811
    return _iinfo_cls._of(type)


def is_grad_enabled() -> _builtins.bool:
    return _grad_mode().enabled


def is_inference_mode_enabled() -> _builtins.bool:
    return _grad_mode().inference[-1]


# ---- grad-mode surface (no autograd: these only track the flag torch code reads) ----

# Per thread, as torch's: one thread's `with no_grad()` does not change what another thread sees.
# `saved` is the stack of modes the open `with` blocks replaced (they nest per thread, so one stack
# per thread serves every context object, and a decorator object can be entered by many threads).
_grad_local = _threading.local()


def _grad_mode():
    state = _grad_local.__dict__
    if "enabled" not in state:
        state.update(enabled=True, inference=[False], saved=[])
    return _grad_local


class _GradMode(_contextlib.ContextDecorator):
    def __init__(self, enabled: _builtins.bool = False):
        self._enabled = enabled

    def __enter__(self):
        mode = _grad_mode()
        mode.saved.append(mode.enabled)
        mode.enabled = self._enabled
        return self

    def __exit__(self, *exc):
        mode = _grad_mode()
        mode.enabled = mode.saved.pop()
        return False

    def __call__(self, func=None):
        # Both `@no_grad` and `@no_grad()` work, as in torch.
        if func is None:
            return self
        return super().__call__(func)


class no_grad(_GradMode):
    """Context manager and decorator; candle_bind never records gradients."""

    def __init__(self):
        super().__init__(False)

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if callable(func):
            self.__init__()
            return self(func)
        return self


class enable_grad(_GradMode):
    def __init__(self):
        super().__init__(True)

    def __new__(cls, func=None):
        self = super().__new__(cls)
        if callable(func):
            self.__init__()
            return self(func)
        return self


class set_grad_enabled(_GradMode):
    def __init__(self, mode: _builtins.bool):
        super().__init__(mode)
        # torch sets the mode on construction (a plain call works); `with` restores what was before.
        state = _grad_mode()
        self._before = state.enabled
        state.enabled = mode

    def __enter__(self):
        _grad_mode().saved.append(self._before)
        return self


class inference_mode(_GradMode):
    def __init__(self, mode: _builtins.bool = True):
        super().__init__(not mode)
        self._mode = mode

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self.__init__()
            return self(mode)
        return self

    def __enter__(self):
        _grad_mode().inference.append(self._mode)
        return super().__enter__()

    def __exit__(self, *exc):
        _grad_mode().inference.pop()
        return super().__exit__(*exc)




def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions: precision, threshold, edgeitems, linewidth and the named profiles."""
    from . import _tensor_str as ts

    if profile is not None:
        ts.PRECISION, ts.THRESHOLD, ts.EDGEITEMS, ts.LINEWIDTH = {
            "default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, float("inf"), 3, 80)}[profile]
    for name, value in (("PRECISION", precision), ("THRESHOLD", threshold), ("EDGEITEMS", edgeitems),
                        ("LINEWIDTH", linewidth)):
        if value is not None:
            setattr(ts, name, value)

__all__ = [
    "CandleError", "DTypeError", "DeviceError", "OutOfMemoryError", "ShapeError", "Size", "Tensor", "arange", "as_tensor",
    "bucketize", "from_torch", "load", "save", "searchsorted", "take_along_dim", "to_torch", "unique",
    "bfloat16", "bool", "int8", "int16", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "complex64",
    "complex128", "short", "cfloat", "cdouble", "broadcast_shapes", "broadcast_to", "cat", "concat", "concatenate", "cuda", "device",
    "double", "dtype", "einsum", "empty", "empty_like", "enable_grad", "eye", "finfo", "float", "float16",
    "float32", "float64", "from_dlpack", "from_numpy", "full", "full_like", "get_default_dtype", "get_num_threads", "half",
    "hstack", "iinfo", "inference_mode", "int", "int32", "int64", "is_floating_point", "is_grad_enabled",
    "is_tensor", "linspace", "logspace", "long", "manual_seed", "max", "min", "no_grad", "numel", "ones",
    "ones_like", "promote_types", "allclose", "isclose", "set_printoptions", "rand", "rand_like", "randint", "randn", "randn_like", "randperm",
    "result_type", "return_types", "seed", "set_grad_enabled", "set_num_threads", "stack", "tensor", "uint8",
    "vstack", "where", "zeros", "zeros_like", "get_num_interop_threads", "set_num_interop_threads",
    *_METHOD_FUNCTIONS, *_ops.FUNCTIONS, *_pointwise.FUNCTIONS, *_pointwise.ALIASES, *_FAMILY_FUNCTIONS,
]


def _threads_from_env() -> None:
    """The intra-op thread count torch starts with: OMP_NUM_THREADS, else MKL_NUM_THREADS, else the
    cores (our pool's own default). Invalid values are ignored, as torch ignores them."""
    import os

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        try:
            n = _builtins.int(os.environ.get(var, ""))
        except ValueError:
            continue
        if n > 0:
            set_num_threads(n)
            return


_threads_from_env()
_interop_threads = None


def get_num_interop_threads() -> _builtins.int:
    """torch's inter-op pool size (by default the cores). Ops run one at a time on the calling
    thread here; the number only answers what torch would."""
    import os

    return _interop_threads or os.cpu_count() or 1


def set_num_interop_threads(num: _builtins.int) -> None:
    """Sets the number `get_num_interop_threads` reports: once per process, as torch allows."""
    global _interop_threads
    if not isinstance(num, _builtins.int) or isinstance(num, _builtins.bool) or num <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _interop_threads = num


# ---- factory keywords with nothing to choose here ----

def _factory(fn):
    """torch's factory keywords the Rust functions do not take: `layout` (strided is the only one),
    `pin_memory` and `memory_format` (tensors are row-major CPU/device memory) are accepted and dropped."""

    @_functools.wraps(fn)
    def factory(*args, layout=None, pin_memory=False, memory_format=None, **kwargs):
        if layout is not None and layout is not strided:
            raise NotImplementedError(f"torch.{fn.__name__}(layout={layout}): candle_bind has strided tensors only")
        return fn(*args, **kwargs)

    return factory


for _name in ("full", "full_like", "zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "arange", "eye",
              "linspace", "logspace", "randint", "randperm", "normal"):
    globals()[_name] = _factory(globals()[_name])
del _name


# ---- einops ----

def _hook_einops() -> None:
    """Registers candle_bind's einops backend now if einops' registry is loaded, else right after
    it loads (einops finds backends by scanning subclasses, so ours must exist by then)."""
    import importlib.abc
    import importlib.util
    import sys

    if "einops._backends" in sys.modules:
        from . import _einops  # noqa: F401
        return

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "einops._backends":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.loader is not None:
                exec_module = spec.loader.exec_module

                def exec_then_register(module):
                    exec_module(module)
                    sys.modules[name] = module
                    importlib.import_module(f"{__name__}._einops")

                spec.loader.exec_module = exec_then_register  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, _Finder())


_hook_einops()


def _check_isa_request():
    """CANDLE_BIND_ISA with a value we do not know is ignored (the CPU's best level runs); say so."""
    unknown = _C.cpu_capability()[2]
    if unknown is not None:
        import warnings

        warnings.warn(f"CANDLE_BIND_ISA={unknown!r} is not one of avx512, avx2, portable; ignored", RuntimeWarning,
                      stacklevel=2)


_check_isa_request()

# complex64/complex128 tensors (Python over interleaved floats): torch.tensor, cat, abs, where, ... take them.
from . import _complex_ops  # noqa: E402

_complex_ops.install(globals())
