"""torch.library: custom operators defined in Python. `custom_op` registers the function so that
`torch.ops.<namespace>.<name>(...)` calls it; fake (meta) and autograd registrations are accepted
and kept (there is no tracing or autograd here to use them)."""

from __future__ import annotations

__all__ = ["custom_op", "register_fake", "register_autograd", "register_kernel", "impl", "define", "Library",
           "triton_op", "wrap_triton", "CustomOpDef"]

# "namespace::name" -> the Python function that computes the op
_OPS: dict = {}


class CustomOpDef:
    """What `custom_op` returns: calls the function; `register_fake`/`register_autograd` store theirs."""

    def __init__(self, qualname: str, fn):
        self._qualname, self._fn = qualname, fn
        self._fake = self._autograd = None
        self.__name__ = qualname.split("::")[-1]
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    @property
    def default(self):
        """`torch.ops.ns.op.default`: the one overload."""
        return self

    def register_fake(self, fn):
        self._fake = fn
        return fn

    def register_autograd(self, backward, *, setup_context=None):
        self._autograd = (backward, setup_context)

    def register_kernel(self, device_types, fn=None):
        return fn if fn is not None else (lambda f: f)


def custom_op(name: str, fn=None, /, *, mutates_args=(), device_types=None, schema=None):
    """`custom_op("ns::name", fn, mutates_args=...)` or as a decorator."""

    def register(f):
        op = CustomOpDef(name, f)
        _OPS[name] = op
        return op

    return register if fn is None else register(fn)


triton_op = custom_op


def wrap_triton(fn):
    return fn


def _op(name):
    op = _OPS.get(name if not isinstance(name, CustomOpDef) else name._qualname)
    if op is None:
        raise RuntimeError(f"torch.library: operator {name} is not registered (custom_op first)")
    return op


def _known(op):
    """The op if registered; None for one that is not (a library registering fake or autograd kernels for its
    compiled ops when those did not load: nothing traces or differentiates here, so nothing is lost)."""
    return _OPS.get(op if not isinstance(op, CustomOpDef) else op._qualname)


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1):
    if fn is None:
        return lambda f: register_fake(op, f)
    found = _known(op)
    return found.register_fake(fn) if found is not None else fn


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    found = _known(op)
    if found is not None:
        found.register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, fn=None, /, *, lib=None):
    return fn if fn is not None else (lambda f: f)


def impl(qualname, types=None, func=None, *, lib=None):
    """Registers `func` as the op's implementation (the op need not be declared with `define`)."""

    def register(f):
        _OPS[qualname] = CustomOpDef(qualname, f)
        return f

    return register if func is None else register(func)


def define(qualname, schema, *, lib=None, tags=()):
    return None


class Library:
    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        self.ns, self.dispatch_key = ns, dispatch_key

    def define(self, schema: str, alias_analysis: str = "", *, tags=()):
        return schema.split("(")[0]

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        # Meta, autocast and autograd kernels wrap the op itself (torchvision's call torch.ops.torchvision.nms
        # inside): recorded nowhere, so they never replace the kernel that computes it.
        if str(dispatch_key or self.dispatch_key).startswith(("Meta", "Autocast", "Autograd", "Functionalize", "Fake")):
            return
        if isinstance(op_name, CustomOpDef):
            op_name = op_name._qualname
        name = op_name if "::" in str(op_name) else f"{self.ns}::{op_name}"
        _OPS[name] = CustomOpDef(name, fn)

    def _destroy(self):
        return None
