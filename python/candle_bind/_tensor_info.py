"""Questions torch answers about a tensor or object: is_same_size, is_signed, is_conj, is_neg, is_inference,
typename, is_storage. A family module (see _OP_FAMILIES).
"""

from __future__ import annotations


def is_same_size(self, other) -> bool:
    return tuple(self.shape) == tuple(other.shape)


def is_signed(self) -> bool:
    return self.dtype.is_signed


def is_conj(self) -> bool:
    return False  # conjugation is always materialised here, never a lazy bit


def is_neg(self) -> bool:
    return False


def is_inference(self) -> bool:
    return False  # no tensor carries inference mode's mark; every one can be saved and reused


def typename(obj, /) -> str:
    from . import is_tensor

    if is_tensor(obj):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj, /) -> bool:
    from . import TypedStorage, UntypedStorage

    return isinstance(obj, (TypedStorage, UntypedStorage))


FUNCTIONS = ("is_same_size", "is_signed", "is_conj", "is_neg", "is_inference", "typename", "is_storage")
METHODS = ("is_same_size", "is_signed", "is_conj", "is_neg", "is_inference")
