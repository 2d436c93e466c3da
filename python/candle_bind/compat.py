"""The zero-edit shim: after `install()`, `import torch` (and `torch.nn`, `torch.nn.functional`,
`torch.nn.init`, `torch.nn.utils`, `torch.nn.modules`, `safetensors.torch`, ...) resolves to
candle_bind for this process, so unmodified PyTorch inference scripts run on Candle.

    python -m candle_bind run script.py [args...]      # or, in code:
    import candle_bind.compat; candle_bind.compat.install()

Anything candle_bind lacks raises `AttributeError: torch.foo is not supported by candle_bind yet`
instead of a confusing error. `uninstall()` puts back whatever the names resolved to before; to opt
out, run the script with plain `python`.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types

__all__ = ["install", "uninstall", "installed"]

# torch module name → candle_bind module that stands in for it.
_MODULES = {
    "torch": "candle_bind",
    "torch.nn": "candle_bind.nn",
    "torch.nn.functional": "candle_bind.nn.functional",
    "torch.nn.init": "candle_bind.nn.init",
    "torch.nn.modules": "candle_bind.nn.modules",
    "torch.nn.modules.module": "candle_bind.nn.modules.module",
    "torch.nn.parameter": "candle_bind.nn.parameter",
    "torch.nn.utils": "candle_bind.nn.utils",
    "torch.nn.utils.rnn": "candle_bind.nn.utils.rnn",
    "torch.nn.utils.parametrizations": "candle_bind.nn.utils.parametrizations",
    "torch.serialization": "candle_bind.serialization",
    "torch.testing": "candle_bind.testing",
    "torch.utils": "candle_bind.utils",
    "torch.utils.data": "candle_bind.utils.data",
    "torch.utils.checkpoint": "candle_bind.utils.checkpoint",
    "torch.utils.dlpack": "candle_bind.utils.dlpack",
    "safetensors.torch": "candle_bind.safetensors",
}

# Modules that bound real torch when imported: re-imported under the shim, put back on uninstall.
_REIMPORTED = ("einops.layers.torch", "einops._torch_specific")

_saved: dict = {}


class _Shim(types.ModuleType):
    """A torch-named module: attributes come from the candle_bind module behind it, plus extras;
    a missing one names the torch API."""

    def __init__(self, name: str, target, extras: dict | None = None):
        super().__init__(name, getattr(target, "__doc__", None))
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_extras", extras or {})

    def __getattr__(self, attr):
        extras = object.__getattribute__(self, "_extras")
        if attr in extras:
            return extras[attr]
        target = object.__getattribute__(self, "_target")
        try:
            return getattr(target, attr)
        except AttributeError:
            pass
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"{self.__name__}.{attr} is not supported by candle_bind yet")

    def __dir__(self):
        return sorted(set(dir(object.__getattribute__(self, "_target"))) | set(object.__getattribute__(self, "_extras")))


def _identity_decorator(fn=None, *args, **kwargs):
    """torch.compile / torch.jit.script: hand the function or module back unchanged."""
    if fn is None:
        return lambda f: f
    return fn


def _trace(fn, *args, **kwargs):
    return fn


class Generator:
    """torch.Generator: `manual_seed` seeds candle_bind's global generator (one stream per process)."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721

    def manual_seed(self, seed):
        import candle_bind

        self._seed = int(seed)
        candle_bind.manual_seed(self._seed)
        return self

    def seed(self):
        import candle_bind

        self._seed = candle_bind.seed()
        return self._seed

    def initial_seed(self):
        return self._seed


class autocast:
    """torch.autocast / torch.amp.autocast: accepted; candle_bind computes in the tensors' own dtypes
    (cast the model with `.to(dtype)` for reduced precision)."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device_type, self.fast_dtype, self.enabled = device_type, dtype, enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, func):
        def wrapped(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapped


def _namespace(name: str, **attrs) -> types.ModuleType:
    m = _Shim(name, types.SimpleNamespace(), attrs)
    return m


def _torch_extras(cb) -> dict:
    backends = _namespace(
        "torch.backends",
        cudnn=types.SimpleNamespace(enabled=False, benchmark=False, deterministic=False, allow_tf32=False,
                                    is_available=lambda: False),
        cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False), is_built=lambda: False),
        mps=types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False),
        mkldnn=types.SimpleNamespace(enabled=False, is_available=lambda: False),
    )
    jit = _namespace("torch.jit", script=_identity_decorator, trace=_trace, ignore=_identity_decorator,
                     unused=_identity_decorator, export=_identity_decorator)
    amp = _namespace("torch.amp", autocast=autocast)
    version = _namespace("torch.version", cuda=None, hip=None, git_version="candle_bind",
                         __version__="2.8.0+candle_bind", debug=False)
    return {
        "amp": amp,
        "autocast": autocast,
        "version": version,
        "compile": _identity_decorator,
        "Generator": Generator,
        "backends": backends,
        "jit": jit,
        "__version__": "2.8.0+candle_bind",
        "set_float32_matmul_precision": lambda precision: None,
        "get_float32_matmul_precision": lambda: "highest",
        "use_deterministic_algorithms": lambda mode, warn_only=False: None,
        "set_default_dtype": _set_default_dtype,
        "get_default_dtype": lambda: cb.float32,
    }


def _set_default_dtype(dtype):
    import candle_bind

    if dtype != candle_bind.float32:
        raise NotImplementedError("torch.set_default_dtype: candle_bind keeps float32 as the default float dtype")


class _MissingFinder:
    """Meta-path finder for torch submodules candle_bind does not stand in for: importing one raises
    an error that names it, instead of "'torch' is not a package"."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith("torch.") and name not in sys.modules:
            raise ModuleNotFoundError(f"{name} is not supported by candle_bind yet", name=name)
        return None


_finder = _MissingFinder()


def installed() -> bool:
    return isinstance(sys.modules.get("torch"), _Shim)


def install() -> None:
    """Makes torch's module names resolve to candle_bind for the rest of this process."""
    if installed():
        return
    import candle_bind as cb

    for torch_name, cb_name in _MODULES.items():
        target = importlib.import_module(cb_name)
        extras = _torch_extras(cb) if torch_name == "torch" else {}
        if torch_name == "safetensors.torch" and "safetensors" not in sys.modules:
            try:
                importlib.import_module("safetensors")
            except ImportError:  # not installed: candle_bind's reader stands in for the package too
                _saved["safetensors"] = None
                sys.modules["safetensors"] = _Shim("safetensors", target)
        _saved[torch_name] = sys.modules.get(torch_name)
        sys.modules[torch_name] = _Shim(torch_name, target, extras)
    # Parents expose their children as attributes (`torch.nn.functional`).
    for name in _MODULES:
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and isinstance(sys.modules[parent], _Shim):
            object.__getattribute__(sys.modules[parent], "_extras")[child] = sys.modules[name]
    if "safetensors" in sys.modules and not isinstance(sys.modules["safetensors"], _Shim):
        with contextlib.suppress(Exception):
            sys.modules["safetensors"].torch = sys.modules["safetensors.torch"]
    for name in _REIMPORTED:
        _saved[name] = sys.modules.pop(name, None)
    sys.meta_path.insert(0, _finder)
    torch = sys.modules["torch"]
    for sub in ("backends", "jit", "amp", "version"):
        _saved.setdefault(f"torch.{sub}", sys.modules.get(f"torch.{sub}"))
        sys.modules[f"torch.{sub}"] = object.__getattribute__(torch, "_extras")[sub]


def uninstall() -> None:
    """Restores the modules that `install()` replaced."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name, old in _saved.items():
        if old is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = old
        # A real parent package (safetensors) also held the shim as an attribute.
        parent, _, child = name.rpartition(".")
        holder = sys.modules.get(parent)
        if holder is not None and not isinstance(holder, _Shim) and isinstance(getattr(holder, child, None), _Shim):
            with contextlib.suppress(Exception):
                setattr(holder, child, old) if old is not None else delattr(holder, child)
    _saved.clear()
