"""torch.utils.cpp_extension: importable, so libraries that try to JIT-build a C++/CUDA kernel (peft's
BOFT, for one) reach their own fallback; candle_bind cannot build extensions against torch's C++ ABI,
so every builder raises the RuntimeError torch raises when it cannot build (caught by those fallbacks)."""

from __future__ import annotations

__all__ = ["load", "load_inline", "CppExtension", "CUDAExtension", "BuildExtension", "include_paths",
           "CUDA_HOME", "ROCM_HOME", "SYCL_HOME", "IS_HIP_EXTENSION"]

CUDA_HOME = None
ROCM_HOME = None
SYCL_HOME = None
IS_HIP_EXTENSION = False


def _cannot_build(what: str):
    raise RuntimeError(f"torch.utils.cpp_extension.{what}: candle_bind cannot build C++/CUDA extensions (they "
                       "link against torch's C++ ABI); use the library's pure-Python path, or run with real torch")


def load(name, sources, *args, **kwargs):
    _cannot_build("load")


def load_inline(name, cpp_sources, *args, **kwargs):
    _cannot_build("load_inline")


def CppExtension(name, sources, *args, **kwargs):  # noqa: N802 - torch's name
    _cannot_build("CppExtension")


def CUDAExtension(name, sources, *args, **kwargs):  # noqa: N802
    _cannot_build("CUDAExtension")


class BuildExtension:
    def __init__(self, *args, **kwargs):
        _cannot_build("BuildExtension")

    @classmethod
    def with_options(cls, **options):
        return cls


def include_paths(device_type: str = "cpu") -> list:
    return []
