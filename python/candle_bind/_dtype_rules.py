"""torch's dtype rules for small integers, uint8 and bool where a native method differs: all/any of uint8
are uint8, square of bool is int64 (pow's promotion), bincount takes every integral dtype, index_add with
alpha wraps in int8/int16/int32/uint8. A family module (see _OP_FAMILIES): it puts these natives behind
Python wrappers that only act on those dtypes.
TODO(rust): fold these rules into the native methods, then drop this module.
"""

from __future__ import annotations

from . import _C
from ._C import Tensor

_U8, _BOOL, _I64 = _C.uint8, _C.bool, _C.int64
_SMALL_INTS = (_C.int8, _C.int16, _C.int32, _C.uint8)


def _all_any(native):
    def method(input, *args, **kwargs):
        r = native(input, *args, **kwargs)
        return r.to(_U8) if input.dtype == _U8 and "out" not in kwargs else r  # torch keeps uint8 (legacy)

    return method


def _square(native):
    def square(input):
        return native(input.to(_I64)) if input.dtype == _BOOL else native(input)

    return square


def _bincount(native):
    def bincount(input, weights=None, minlength=0):
        if input.dtype in _SMALL_INTS:
            input = input.to(_I64)
        return native(input, weights, minlength)

    return bincount


def _index_add(native):
    """Small integer dtypes: the sum in int64, wrapped back into the dtype (a negative alpha on uint8 is
    its two's complement, as torch casts alpha to the dtype)."""

    def index_add(input, dim, index, source, *, alpha=1, **kwargs):
        if input.dtype not in _SMALL_INTS or alpha == 1 or not isinstance(source, Tensor):
            return native(input, dim, index, source, alpha=alpha, **kwargs)
        from ._tensor import check_scalar_fits

        check_scalar_fits(alpha, input.dtype)
        native(input, dim, index, source, **kwargs)  # torch's argument checks (alpha 1)
        r = input.to(_I64).index_add(dim, index, source.to(_I64) * alpha).to(input.dtype)
        return r

    return index_add


def _index_add_(native):
    out_of_place = Tensor.index_add  # the wrapped one (installed before this)

    def index_add_(input, dim, index, source, *, alpha=1, **kwargs):
        if input.dtype not in _SMALL_INTS or alpha == 1 or not isinstance(source, Tensor):
            return native(input, dim, index, source, alpha=alpha, **kwargs)
        return input.copy_(out_of_place(input, dim, index, source, alpha=alpha, **kwargs))

    return index_add_


# Not here, though torch differs: index_select/gather are hot (F.embedding), a Python wrapper would cost every
# call ~1 us; their rules (0-dim input stays 0-dim, an empty index of any integer dtype) belong in Rust.
_WRAPPERS = {"all": _all_any, "any": _all_any, "square": _square, "bincount": _bincount, "index_add": _index_add,
             "index_add_": _index_add_}


def _install() -> None:
    from ._tensor import _Checked, _make_inplace

    g = globals()
    for name, make in _WRAPPERS.items():
        current = getattr(Tensor, name)
        native = Tensor.__dict__[name]
        native = getattr(native, "__wrapped__", native)
        fn = make(current)
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = getattr(native, "__doc__", None)
        setattr(Tensor, name, _Checked(fn, native))
        g[name] = fn
        if name == "square":  # the in-place form from the new method: a bool tensor cannot hold int64
            Tensor.square_ = _make_inplace("square")


_install()

FUNCTIONS = tuple(n for n in _WRAPPERS if not n.endswith("_"))
