#!/usr/bin/env bash
# Builds candle_bind with the cargo feature `cuda`: nvcc, the CUDA headers and the link libraries
# come from PyPI (CUDA 13.0, whose PTX every driver >= 580 loads), installed into a folder of their
# own so they never touch the environment's torch. No GPU is needed to build: the kernels are
# compiled for CUDA_COMPUTE_CAP (default 90, Hopper; 80 Ampere, 89 Ada, 100/120 Blackwell).
#
#   scripts/build_cuda.sh                 # the wheel, into dist/ (maturin build --release --features cuda)
#   scripts/build_cuda.sh develop         # maturin develop --release --features cuda
#   scripts/build_cuda.sh check           # cargo check --features cuda, warnings fatal (CI: every CUDA path compiles)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-wheel}
toolkit=${CUDA_TOOLKIT_DIR:-$HOME/.cache/candle-bind/cuda-13.0}
if [ ! -x "$toolkit/nvidia/cu13/bin/nvcc" ]; then
    python3 -m pip install --quiet --no-deps --target "$toolkit" \
        'nvidia-cuda-nvcc==13.0.*' 'nvidia-cuda-runtime==13.0.*' 'nvidia-cuda-nvrtc==13.0.*' \
        'nvidia-cublas==13.0.*' 'nvidia-curand==10.4.0.*' 'nvidia-cuda-crt==13.0.*' 'nvidia-nvvm==13.0.*' 'nvidia-cuda-cccl==13.0.*'
fi
cuda=$toolkit/nvidia/cu13
# The link step wants unversioned names (libcublas.so); the wheels carry only the versioned ones.
# libcuda.so is the driver's: link against the toolkit's stub, the real one is found at run time.
for lib in "$cuda"/lib/lib*.so.*[0-9]; do
    base=${lib%%.so.*}.so
    [ -e "$base" ] || ln -s "$(basename "$lib")" "$base"
done
[ -e "$cuda/lib/libcuda.so" ] || ln -s stubs/libcuda.so "$cuda/lib/libcuda.so" 2>/dev/null || true
export CUDA_ROOT=$cuda CUDA_PATH=$cuda CUDA_TOOLKIT_ROOT_DIR=$cuda
export PATH=$cuda/bin:$PATH
export LIBRARY_PATH=$cuda/lib:$cuda/lib/stubs${LIBRARY_PATH:+:$LIBRARY_PATH}
export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
nvcc --version | tail -2
case $mode in
    # libcudart and the CUDA libraries stay outside the wheel: they come from the nvidia-* packages
    # (the `cuda` extra), which candle_bind loads at import.
    wheel) maturin build --release --features cuda --auditwheel skip --compatibility manylinux_2_34 --out dist ;;
    develop) maturin develop --release --features cuda ;;
    check)
        log=$(mktemp)
        cargo check --release --features cuda 2>&1 | tee "$log"
        ! grep -q '^warning\|^error' "$log" ;;
    *) echo "usage: $0 [wheel|develop|check]" >&2; exit 2 ;;
esac
