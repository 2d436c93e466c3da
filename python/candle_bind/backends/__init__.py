"""torch.backends: the flags scripts set or read (all off here: candle_bind has no cuDNN, MPS or
oneDNN); writable, so `torch.backends.cuda.matmul.allow_tf32 = True` works and reads back."""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
import types

__all__ = ["cpu", "cuda", "cudnn", "mha", "mkldnn", "mps", "opt_einsum", "quantized"]


def _submodule(name: str, doc: str, **attrs) -> types.ModuleType:
    """A real module `candle_bind.backends.<name>` (importable as `torch.backends.<name>`)."""
    full = f"{__name__}.{name}"
    m = types.ModuleType(full, doc)
    m.__spec__ = importlib.machinery.ModuleSpec(full, None)
    vars(m).update(attrs)
    sys.modules[full] = m
    return m


def _no():
    return False


class _Matmul(types.SimpleNamespace):
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True
    fp32_precision = "ieee"


@contextlib.contextmanager
def _sdp_kernel(*args, **kwargs):
    yield


cuda = _submodule(
    "cuda", "torch.backends.cuda", matmul=_Matmul(), is_built=_no, flash_sdp_enabled=_no,
    mem_efficient_sdp_enabled=_no, math_sdp_enabled=lambda: True, cudnn_sdp_enabled=_no,
    enable_flash_sdp=lambda enabled: None, enable_mem_efficient_sdp=lambda enabled: None,
    enable_math_sdp=lambda enabled: None, enable_cudnn_sdp=lambda enabled: None, sdp_kernel=_sdp_kernel,
    preferred_linalg_library=lambda backend=None: None)
cudnn = _submodule("cudnn", "torch.backends.cudnn", enabled=False, benchmark=False, deterministic=False,
                   allow_tf32=False, is_available=_no, version=lambda: None)
mps = _submodule("mps", "torch.backends.mps", is_available=_no, is_built=_no)
mkldnn = _submodule("mkldnn", "torch.backends.mkldnn", enabled=False, is_available=_no)
mha = _submodule("mha", "torch.backends.mha", get_fastpath_enabled=_no, set_fastpath_enabled=lambda value: None)
opt_einsum = _submodule("opt_einsum", "torch.backends.opt_einsum", enabled=False, is_available=_no, strategy=None)


def _cpu_capability() -> str:
    """torch's name for the vector ISA our kernels run ("AVX512", "AVX2" or "DEFAULT"): the best the
    CPU has, or lower where CANDLE_BIND_ISA caps it (as ATEN_CPU_CAPABILITY does for torch)."""
    from .. import _C

    return _C.cpu_capability()[0]


cpu = _submodule("cpu", "torch.backends.cpu", get_cpu_capability=_cpu_capability)


class _QuantizedEngine(types.ModuleType):
    """torch.backends.quantized: `engine` takes torch's names and reads back; the int8 kernels
    (quantize_dynamic) always follow fbgemm's numerics, torch's x86/fbgemm engines' ("qnnpack" would
    round differently in torch)."""

    supported_engines = ["qnnpack", "onednn", "x86", "fbgemm"]
    _engine = "x86"

    @property
    def engine(self) -> str:
        return self._engine

    @engine.setter
    def engine(self, value: str) -> None:
        if value not in self.supported_engines and value != "none":
            raise RuntimeError(f"{value} is not a valid value for quantized engine")
        self._engine = value


quantized = _submodule("quantized", "torch.backends.quantized")
quantized.__class__ = _QuantizedEngine
