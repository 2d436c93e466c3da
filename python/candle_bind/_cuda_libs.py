"""Finds the CUDA libraries of a CUDA build of candle_bind.

The extension links libcudart (Candle's quantized kernels call it) and loads libcublas, libcurand,
libnvrtc and libcudnn when it first uses the GPU. They come from NVIDIA's PyPI packages (the `cuda`
extra: nvidia-cuda-runtime, nvidia-cublas, nvidia-curand, nvidia-cuda-nvrtc, nvidia-cudnn-cu13;
torch's CUDA wheels bring them too) or from a system CUDA on the loader's path. A wheel's libraries are not on that path, so
they are loaded here, by full name, before the extension: the loader then finds them by soname.
Called for a CUDA build (and when importing the extension failed for want of one): the CPU build
never touches this. Without libcudnn, convolutions take Candle's im2col path.
"""

from __future__ import annotations

import ctypes
import os
import sys

# In dependency order (cublas needs cublasLt).
_LIBS = ["libcudart.so.13", "libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", "libnvrtc.so.13",
         "libcudnn.so.9"]


def _dirs():
    for base in sys.path:
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_runtime/lib", "nvidia/cublas/lib", "nvidia/curand/lib",
                    "nvidia/cuda_nvrtc/lib", "nvidia/cudnn/lib"):
            d = os.path.join(base, sub)
            if os.path.isdir(d):
                yield d


def preload() -> list[str]:
    """Loads each library found in a pip-installed NVIDIA package (globally, so that later
    dlopen() calls by name find it); returns what it loaded."""
    loaded = []
    for name in _LIBS:
        for d in _dirs():
            path = os.path.join(d, name)
            if os.path.exists(path):
                try:
                    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                    loaded.append(path)
                except OSError:
                    continue
                break
    return loaded
