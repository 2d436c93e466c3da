"""nn.Module with torch's contract: registration by assignment, state_dict order and keys, strict
loading with torch's messages (and, unlike torch, atomic: a failed load changes nothing), hooks."""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict, namedtuple
from typing import Any, Callable, Iterator

from ... import _C
from ..._C import Tensor
from ..parameter import Buffer, Parameter

__all__ = ["Module"]

# The state_dict key of what `get_extra_state` returns (torch's name).
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
# Per thread, the copies each `load_state_dict` under way makes once every check has passed (innermost last).
_loading = threading.local()


def _load_plans() -> list:
    if not hasattr(_loading, "plans"):
        _loading.plans = []
    return _loading.plans

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class RemovableHandle:
    """What `register_*_hook` returns: `.remove()` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self.hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        self.hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _to_tensor(value: Any) -> Tensor:
    """A checkpoint value as our Tensor: ours, torch's (copied through numpy) or a numpy array."""
    if isinstance(value, Tensor):
        return value
    mod = type(value).__module__
    if mod.startswith("torch"):
        t = value.detach().cpu().contiguous()
        if str(t.dtype) == "torch.bfloat16":
            return _C.from_numpy(t.float().numpy()).to(_C.bfloat16)
        return _C.from_numpy(t.numpy())
    return _C.tensor(value)


class Module:
    """Base class for all layers, with torch's semantics."""

    training: bool
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks_with_kwargs", set())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks_with_kwargs", set())
        object.__setattr__(self, "_state_dict_pre_hooks", OrderedDict())
        object.__setattr__(self, "_state_dict_hooks", OrderedDict())
        object.__setattr__(self, "_load_state_dict_pre_hooks", OrderedDict())
        object.__setattr__(self, "_load_state_dict_post_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())

    forward: Callable[..., Any]

    def _forward_unimplemented(self, *input: Any) -> None:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    forward = _forward_unimplemented  # type: ignore[assignment]

    # ----------------------------------------------------------------- registration
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' (torch.nn.Parameter or None required)")
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replaces (or, unless `strict`, adds) the submodule at the dotted path `target`."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if not isinstance(module, Module):
            raise TypeError(f"`module` is not an nn.Module, found {type(module)}")
        setattr(parent, name, module)

    def get_parameter(self, target: str) -> Parameter:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        return getattr(mod, name)

    def get_buffer(self, target: str) -> Tensor:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ----------------------------------------------------------------- attributes
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' (torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (torch.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (torch.nn.Buffer, torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        keys += list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)

    # ----------------------------------------------------------------- calling
    def __call__(self, *args, **kwargs):
        if not self._forward_pre_hooks and not self._forward_hooks:
            return self.forward(*args, **kwargs)  # the common case: no hooks to copy and walk
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs)")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, out)
            else:
                result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Accepted for scripts that register one; backward never runs here."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle

    register_full_backward_pre_hook = register_backward_hook = register_full_backward_hook

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """`hook(module, prefix, keep_vars)` runs before this module's state_dict entries are saved."""
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata)` after; it may edit the dict in place."""
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)` runs before this module's entries are checked; it may edit `state_dict`."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False) -> RemovableHandle:
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        return self.register_load_state_dict_pre_hook(lambda module, *args: hook(*args))

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """`hook(module, incompatible_keys)` after loading; it may edit the key lists in place."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    # ----------------------------------------------------------------- traversal
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate: bool = True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        return self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        return self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self) -> Iterator[tuple[str, Module]]:
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if id(self) not in memo:
            if remove_duplicate:
                memo.add(id(self))
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def apply(self, fn: Callable[[Module], None]) -> Module:
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ----------------------------------------------------------------- modes and conversion
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """No autograd: there are no gradients to clear."""

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is not None:
                param.data = fn(param)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> Module:
        device, dtype = None, kwargs.get("dtype")
        if "device" in kwargs:
            device = kwargs["device"]
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif a is not None:
                device = a
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            out = t
            if device is not None:
                out = out.to(device)
            if dtype is not None and t.is_floating_point():
                out = out.to(dtype)
            return out

        return self._apply(convert)

    def to_empty(self, *, device=None, recurse: bool = True) -> Module:
        """Moves parameters and buffers to `device` without copying their values (uninitialised
        memory, as torch): how a model built on the meta device gets real storage."""
        from ... import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cpu(self) -> Module:
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> Module:
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type) -> Module:
        return self._apply(lambda t: t.to(dst_type))

    def float(self) -> Module:
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def share_memory(self) -> Module:
        return self

    # ----------------------------------------------------------------- state dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        if args:  # torch's deprecated positional form
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if result is not None:
                destination = result
        return destination

    def get_extra_state(self) -> Any:
        """Override to save extra (picklable) state under `<prefix>_extra_state`."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Checks this module's own entries and records the copies to make in the plan of the `load_state_dict`
        under way (no writes; torch's signature, so overrides that call super() work)."""
        plans = _load_plans()
        plan = plans[-1] if plans else []  # called on its own, outside load_state_dict: copies at the end
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        persistent_buffers = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items()) if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            try:
                input_param = _to_tensor(state_dict[key])
            except Exception as ex:  # noqa: BLE001 - reported like torch's copy errors
                error_msgs.append(f'While copying the parameter named "{key}", an exception occurred : {ex.args}.')
                continue
            # torch's backward compatibility: 0.3 checkpoints store 0-d entries (num_batches_tracked) as shape [1].
            if len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {input_param.shape} from checkpoint, "
                    f"the shape in current model is {param.shape}.")
                continue
            plan.append((self, name, param, input_param))
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                plan.append((self, _EXTRA_STATE_KEY_SUFFIX, None, state_dict[extra_key]))
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if input_name[0] not in self._modules and input_name[0] not in local_state \
                            and input_name[0] != _EXTRA_STATE_KEY_SUFFIX:
                        unexpected_keys.append(key)
        if not plans:
            for module, name, param, value in plan:
                module.set_extra_state(value) if param is None else param.copy_(value)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """torch's load_state_dict; every check runs before the first write, so a failed load
        (missing or unexpected keys under strict, a size mismatch) leaves the module untouched."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        plan: list = []
        metadata = getattr(state_dict, "_metadata", None)

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys,
                                         error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)

        _load_plans().append(plan)
        try:
            load(self, dict(state_dict.items()) if not isinstance(state_dict, dict) else state_dict)
        finally:
            _load_plans().pop()
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(self.__class__.__name__, "\n\t".join(error_msgs)))
        # Every check passed: now write. Casting to each parameter's dtype happens in the copy.
        for module, name, param, value in plan:
            if name == _EXTRA_STATE_KEY_SUFFIX and param is None:
                module.set_extra_state(value)
            elif assign:
                new = value.to(param.device)
                if name in module._parameters:
                    module._parameters[name] = Parameter(new, requires_grad=param.requires_grad)
                else:
                    module._buffers[name] = new
            else:
                param.copy_(value)
        result = _IncompatibleKeys(missing_keys, unexpected_keys)
        for module in self.modules():
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, result)
        return result

    # ----------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return self.__class__.__name__

    def __repr__(self) -> str:
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = repr(module)
            mod_str = _addindent(mod_str, 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str


def _addindent(s_: str, num_spaces: int) -> str:
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)
