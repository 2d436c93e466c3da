"""Quantized tensors (torch.qint8 / quint8 / qint32): an integer tensor with its scale and zero point,
per tensor or per channel, as `torch.quantize_per_tensor` / `quantize_per_channel` return them and as a
dynamic quantized Linear's `weight()` is. They give their values (`int_repr`, `dequantize`), their
quantizer (`q_scale`, `q_per_channel_scales`, ...), print, pickle and save as torch's; arithmetic on
them is not supported (torch has little of it either), so they are not `Tensor`s."""

from __future__ import annotations

import numpy as np

from . import _C

__all__ = ["QuantizedTensor", "qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
           "per_channel_symmetric", "per_channel_affine_float_qparams", "quantize_per_tensor",
           "quantize_per_channel", "dequantize", "_empty_affine_quantized", "_make_per_tensor_quantized_tensor",
           "_make_per_channel_quantized_tensor"]


class qscheme:
    """torch.qscheme: one object per scheme (`torch.per_tensor_affine`, ...)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return self.name  # the module global of that name: the same object comes back


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
QSCHEMES = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric, per_channel_symmetric,
                                per_channel_affine_float_qparams)}

# quantized dtype -> (dtype of its integer values, storage name torch.save uses)
_INT_DTYPES = {"qint8": ("int8", "QInt8Storage"), "quint8": ("uint8", "QUInt8Storage"), "qint32": ("int32", "QInt32Storage")}


def _qname(dtype) -> str | None:
    name = repr(dtype).rsplit(".", 1)[-1]
    return name if name in _INT_DTYPES else None


class QuantizedTensor:
    """A quantized tensor: integer values `int_repr()` that stand for `(int_repr() - zero_point) * scale`."""

    is_quantized = True
    requires_grad = False
    is_leaf = True
    grad = None

    def __init__(self, int_repr, dtype, scheme: qscheme, scales, zero_points, axis: int | None = None):
        self._int, self._dtype, self._qscheme = int_repr, dtype, scheme
        self._scales, self._zps, self._axis = list(scales), list(zero_points), axis

    # --- shape and identity ---
    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._int.shape

    @property
    def device(self):
        return self._int.device

    @property
    def ndim(self) -> int:
        return self._int.dim()

    def size(self, dim=None):
        return self._int.size() if dim is None else self._int.size(dim)

    def dim(self) -> int:
        return self._int.dim()

    def numel(self) -> int:
        return self._int.numel()

    def stride(self, dim=None):
        return self._int.stride() if dim is None else self._int.stride(dim)

    def element_size(self) -> int:
        return self._dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        return True

    def contiguous(self, memory_format=None):
        return self

    def detach(self):
        return self

    def cpu(self):
        return self

    def to(self, *args, **kwargs):
        # Only moves that keep it as it is (torch's quantized tensors live on the CPU).
        for a in list(args) + list(kwargs.values()):
            if str(a) not in ("cpu", "torch.float32") and a is not self._dtype and not isinstance(a, bool):
                raise NotImplementedError(f"moving a quantized tensor to {a} is not supported by candle_bind")
        return self

    def __len__(self) -> int:
        return len(self._int)

    # --- the quantizer ---
    def qscheme(self) -> qscheme:
        return self._qscheme

    def _per_tensor(self) -> None:
        if self._qscheme is not per_tensor_affine:
            raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.")

    def _per_channel(self) -> None:
        if self._qscheme not in (per_channel_affine, per_channel_affine_float_qparams):
            raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || quantizer->qscheme() == "
                               "kPerChannelAffineFloatQParams to be true, but got false.")

    def q_scale(self) -> float:
        self._per_tensor()
        return float(self._scales[0])

    def q_zero_point(self) -> int:
        self._per_tensor()
        return int(self._zps[0])

    def q_per_channel_scales(self):
        self._per_channel()
        return _C.tensor(self._scales, dtype=_C.float64)

    def q_per_channel_zero_points(self):
        self._per_channel()
        return _C.tensor(self._zps, dtype=_C.int64)

    def q_per_channel_axis(self) -> int:
        self._per_channel()
        return int(self._axis)

    # --- values ---
    def int_repr(self):
        return self._int.clone()

    def dequantize(self):
        """(q - zero_point) * scale in float32, per channel along `axis` for per-channel tensors."""
        q = self._int.numpy().astype(np.float32)
        scales = np.asarray(self._scales, np.float32)
        zps = np.asarray(self._zps, np.float32)
        if self._axis is not None:
            shape = [1] * q.ndim
            shape[self._axis] = -1
            scales, zps = scales.reshape(shape), zps.reshape(shape)
        return _C.from_numpy(np.ascontiguousarray((q - zps) * scales, np.float32))

    def tolist(self):
        return self.dequantize().tolist()

    def __repr__(self) -> str:
        from . import _tensor_str

        text = repr(self.dequantize())
        text = text[: text.rfind(")")]
        suffixes = [] if "size=" in text else [f"size={tuple(self.shape)}"]
        suffixes.append(f"dtype={self._dtype!r}")
        suffixes.append(f"quantization_scheme={self._qscheme!r}")
        if self._axis is None:
            suffixes += [f"scale={float(self._scales[0])}", f"zero_point={int(self._zps[0])}"]
        else:
            suffixes += [f"scale={self.q_per_channel_scales()!r}", f"zero_point={self.q_per_channel_zero_points()!r}",
                         f"axis={self._axis}"]
        return _tensor_str.add_suffixes(text, suffixes, len("tensor("))

    def __reduce__(self):
        return (_rebuild, (self._int, repr(self._dtype).rsplit(".", 1)[-1], self._qscheme.name, self._scales,
                           self._zps, self._axis))

    def __deepcopy__(self, memo):
        return QuantizedTensor(self._int.clone(), self._dtype, self._qscheme, self._scales, self._zps, self._axis)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"Tensor.{name} on quantized tensors is not supported by candle_bind (dequantize() first)")


def _rebuild(int_repr, dtype_name, scheme_name, scales, zps, axis):
    return QuantizedTensor(int_repr, getattr(_C, dtype_name), QSCHEMES[scheme_name], scales, zps, axis)


def _check_dtype(dtype) -> str:
    name = _qname(dtype)
    if name is None:
        title = {"int8": "Char", "uint8": "Byte", "int32": "Int", "int64": "Long", "float32": "Float"}.get(
            repr(dtype).rsplit(".", 1)[-1], repr(dtype))
        raise RuntimeError(f"ScalarType {title} is not supported in new_qtensor.")
    return name


def _float_input(t):
    if not (hasattr(t, "dtype") and t.dtype is _C.float32):
        title = {"float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}.get(repr(t.dtype).rsplit(".", 1)[-1],
                                                                                 repr(t.dtype))
        raise RuntimeError(f"Quantize only works on Float Tensor, got {title}")


def _as_list(v, cast) -> list:
    if hasattr(v, "tolist"):
        v = v.tolist()
    return [cast(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


def quantize_per_tensor(input, scale, zero_point, dtype):
    """torch.quantize_per_tensor: `zero_point + round_half_even(input / scale)`, clamped to the dtype's range."""
    name = _check_dtype(dtype)
    if isinstance(input, (list, tuple)):
        return [quantize_per_tensor(t, s, z, dtype) for t, s, z in zip(input, scale.tolist(), zero_point.tolist())]
    _float_input(input)
    s, z = float(scale), int(zero_point)
    q = _C.quantize_affine(input, [s], [z], None, dtype)
    return QuantizedTensor(q, getattr(_C, name), per_tensor_affine, [s], [z])


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """torch.quantize_per_channel: one scale and zero point per index of `axis`."""
    name = _check_dtype(dtype)
    _float_input(input)
    axis = int(axis) % max(input.dim(), 1)
    s, z = _as_list(scales, float), _as_list(zero_points, int)
    if len(s) != input.shape[axis] or len(z) != input.shape[axis]:
        raise RuntimeError(f"length of scales must equal to channel, expected {input.shape[axis]} got, {len(s)}")
    q = _C.quantize_affine(input, s, z, axis, dtype)
    return QuantizedTensor(q, getattr(_C, name), per_channel_affine, s, z, axis)


def dequantize(t):
    """torch.dequantize: a float tensor back (a float tensor is returned as it is)."""
    return t.dequantize() if isinstance(t, QuantizedTensor) else t


def _empty_affine_quantized(size, *, scale=1.0, zero_point=0, dtype=None, **kwargs):
    name = _check_dtype(dtype if dtype is not None else _C.quint8)
    q = _C.zeros(*size, dtype=getattr(_C, _INT_DTYPES[name][0]))
    return QuantizedTensor(q, getattr(_C, name), per_tensor_affine, [float(scale)], [int(zero_point)])


def _int_qdtype(t):
    return {"int8": _C.qint8, "uint8": _C.quint8, "int32": _C.qint32}[repr(t.dtype).rsplit(".", 1)[-1]]


def _make_per_tensor_quantized_tensor(input, scale, zero_point):
    return QuantizedTensor(input.clone(), _int_qdtype(input), per_tensor_affine, [float(scale)], [int(zero_point)])


def _make_per_channel_quantized_tensor(input, scale, zero_point, axis):
    return QuantizedTensor(input.clone(), _int_qdtype(input), per_channel_affine, _as_list(scale, float),
                           _as_list(zero_point, int), int(axis))
