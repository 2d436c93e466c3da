"""The zero-edit shim: after `install()`, `import torch` and every `torch.<sub>` module resolve to
candle_bind for this process, so unmodified PyTorch scripts and the libraries built on torch
(Hugging Face transformers, sentence-transformers, einops) run on Candle.

    python -m candle_bind run script.py [args...]      # or, in code:
    import candle_bind.compat; candle_bind.compat.install()

`torch` is candle_bind's namespace under torch's name and version; `torch.X.Y` is the module
`candle_bind.X.Y` itself (an alias, not a proxy: monkeypatching `torch.nn.functional` reaches our
layers). Package metadata answers for torch (`importlib.metadata.version("torch")`), so libraries
that check torch's version accept it whether or not real torch is installed. A module candle_bind
lacks raises `ModuleNotFoundError: torch.X is not supported by candle_bind yet`, a missing
attribute `AttributeError: torch.X is not supported by candle_bind yet`. `uninstall()` puts back
whatever the names resolved to before; to opt out, run the script with plain `python`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import pathlib
import sys
import types

__all__ = ["install", "uninstall", "installed"]

# torch modules whose candle_bind counterpart is not simply `candle_bind.<the rest>`.
_RENAMED = {"safetensors.torch": "candle_bind.safetensors"}

# Modules that bound real torch when imported: re-imported under the shim, put back on uninstall.
_REIMPORTED = ("einops.layers.torch", "einops._torch_specific")

# Third-party modules the shim adjusts as they load (name -> the candle_bind module whose `patch(module)` runs
# right after): their compiled-extension probes, so the package takes its own path for a missing extension.
_AFTER_IMPORT = {"torchaudio._extension.utils": "candle_bind._torchaudio",
                 "torchaudio._extension": "candle_bind._torchaudio"}

_saved: dict = {}
_patched: list = []  # (object, attribute, previous value or _MISSING)
_MISSING = object()


def _target(name: str) -> str | None:
    """The candle_bind module that stands in for the torch module `name`, if `name` is torch's."""
    if name in _RENAMED:
        return _RENAMED[name]
    if name.startswith("torch."):
        return "candle_bind" + name[5:]
    return None


class _TorchModule(types.ModuleType):
    """`torch`: candle_bind's namespace under torch's name and version. Names candle_bind loads
    lazily come through `__getattr__`; writes and deletes also reach candle_bind, so patching
    `torch.foo` changes what candle_bind's own code calls, as with torch."""

    def __getattr__(self, name):
        import candle_bind

        value = getattr(candle_bind, name)  # raises "torch.<name> is not supported by candle_bind yet"
        types.ModuleType.__setattr__(self, name, value)
        return value

    def __setattr__(self, name, value):
        types.ModuleType.__setattr__(self, name, value)
        if not name.startswith("__"):
            import candle_bind

            setattr(candle_bind, name, value)

    def __delattr__(self, name):
        import candle_bind

        found = False
        with contextlib.suppress(AttributeError):
            types.ModuleType.__delattr__(self, name)
            found = True
        if not name.startswith("__") and name in vars(candle_bind):
            delattr(candle_bind, name)
            found = True
        if not found:
            raise AttributeError(name)


def _torch_module() -> _TorchModule:
    import candle_bind
    from candle_bind import version

    torch = _TorchModule("torch", candle_bind.__doc__)
    ns = {k: v for k, v in vars(candle_bind).items() if not k.startswith("__")}
    ns.update(
        __version__=version.__version__,
        __file__=candle_bind.__file__,
        __path__=list(candle_bind.__path__),
        __all__=list(candle_bind.__all__),
        __spec__=importlib.machinery.ModuleSpec("torch", None, origin=candle_bind.__file__, is_package=True),
    )
    ns["__spec__"].submodule_search_locations = list(candle_bind.__path__)
    ns["__spec__"].has_location = True
    vars(torch).update(ns)
    return torch


class _AliasLoader(importlib.abc.Loader):
    """Loads `torch.X` by importing `candle_bind.X` and putting that very module under torch's name
    (the import system returns whatever `sys.modules` holds once `exec_module` is done)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _TorchDistribution(importlib.metadata.Distribution):
    """torch's package metadata as the shim answers it: its version is `torch.__version__`."""

    def read_text(self, filename):
        from candle_bind import version

        if filename == "METADATA":
            return (f"Metadata-Version: 2.1\nName: torch\nVersion: {version.__version__}\n"
                    "Summary: candle_bind standing in for torch\n")
        if filename == "top_level.txt":
            return "torch\n"
        return None

    def locate_file(self, path):
        import candle_bind

        return pathlib.Path(candle_bind.__file__).parent / path


class _Finder(importlib.abc.MetaPathFinder):
    """First on `sys.meta_path` while the shim is on: torch's module names and torch's metadata."""

    def find_spec(self, name, path=None, target=None):
        if name in _AFTER_IMPORT:
            return self._patched_spec(name, path, target)
        real = _target(name)
        if real is None:
            return None
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(f"{name} is not supported by candle_bind yet", name=name)
        return importlib.machinery.ModuleSpec(name, _AliasLoader(real))

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
        if context.name in (None, "torch"):
            yield _TorchDistribution()

    def _patched_spec(self, name, path, target):
        """The module's own spec (from the finders after this one), its loader wrapped to patch it once run."""
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _PatchingLoader(spec.loader, _AFTER_IMPORT[name])
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    """Runs a module with its own loader, then candle_bind's `patch(module)` for it (see `_AFTER_IMPORT`)."""

    def __init__(self, loader, patcher: str):
        self.loader, self.patcher = loader, patcher

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        importlib.import_module(self.patcher).patch(module)

    def __getattr__(self, name):  # get_source, get_filename, ... (inspect, linecache) from the real loader
        return getattr(self.loader, name)


_finder = _Finder()


_CPP_EXTENSIONS = ()  # torchaudio runs without its compiled library (_AFTER_IMPORT)


def installed() -> bool:
    return isinstance(sys.modules.get("torch"), _TorchModule)


def _patch(obj, attr: str, value) -> None:
    _patched.append((obj, attr, getattr(obj, attr, _MISSING)))
    setattr(obj, attr, value)


def install() -> None:
    """Makes torch's module names resolve to candle_bind for the rest of this process."""
    if installed():
        return
    import candle_bind

    # Whatever torch (or an earlier shim) left in sys.modules is saved and put back by uninstall().
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.") or n in _RENAMED]:
        _saved[name] = sys.modules.pop(name)
    for name in _REIMPORTED:
        _saved[name] = sys.modules.pop(name, None)
    sys.meta_path.insert(0, _finder)
    _saved.setdefault("torch", None)
    sys.modules["torch"] = _torch_module()
    # Packages built around torch's C++ core cannot run on candle_bind: they look absent (a None in
    # sys.modules makes find_spec say so), so libraries that use them when present (transformers'
    # image utilities import torchvision) take their other path.
    for name in _CPP_EXTENSIONS:
        if name not in sys.modules:
            _saved.setdefault(name, None)
            sys.modules[name] = None
    _stand_in_for_safetensors(candle_bind)


def _stand_in_for_safetensors(candle_bind) -> None:
    """safetensors.torch is ours; `safetensors.safe_open(..., framework="pt")` reads through ours
    too. Without the safetensors package installed, candle_bind's reader stands in for it."""
    from candle_bind import safetensors as ours

    try:
        package = importlib.import_module("safetensors")
    except ImportError:
        _saved.setdefault("safetensors", None)
        sys.modules["safetensors"] = package = ours
        return
    if package is ours:
        return
    real_open = package.safe_open

    def safe_open(filename, framework, device="cpu", **kwargs):
        if framework in ("pt", "torch"):
            return ours.safe_open(filename, framework, device)
        return real_open(filename, framework, device, **kwargs)

    _patch(package, "safe_open", safe_open)
    # Recorded before the import, which itself sets `package.torch` to ours.
    _patched.append((package, "torch", getattr(package, "torch", _MISSING)))
    importlib.import_module("safetensors.torch")


def uninstall() -> None:
    """Restores the modules that `install()` replaced."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.") or n in _RENAMED]:
        if name not in _saved:
            sys.modules.pop(name)
    for name, old in _saved.items():
        if old is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = old
    for obj, attr, old in reversed(_patched):
        with contextlib.suppress(Exception):
            delattr(obj, attr) if old is _MISSING else setattr(obj, attr, old)
    _saved.clear()
    _patched.clear()
