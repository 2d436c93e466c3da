// candle_bind's own CUDA kernels: the writes into a tensor's memory behind in-place ops and
// indexed assignment, which Candle has no kernel for. Elements are moved by size (1, 2, 4 or 8
// bytes), so each kernel serves every dtype of that size.
#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// dst[offsets[i]] = src[i] (or src[0] for every i when `one`).
#define WRITE_AT(T, NAME)                                                                          \
    extern "C" __global__ void NAME(T *dst, const int64_t *offsets, const T *src, uint64_t n,       \
                                    uint32_t one) {                                                \
        for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;                  \
             i += (uint64_t)blockDim.x * gridDim.x) {                                              \
            dst[offsets[i]] = src[one ? 0 : i];                                                    \
        }                                                                                          \
    }

// The strided view of `dst` with `rank` dims (info: dims then strides, in elements) starting at
// `base`, written in row-major order from src (or src[0] for every element when `one`).
#define WRITE_STRIDED(T, NAME)                                                                     \
    extern "C" __global__ void NAME(T *dst, uint64_t base, const uint64_t *info, uint32_t rank,    \
                                    const T *src, uint64_t n, uint32_t one) {                      \
        for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;                  \
             i += (uint64_t)blockDim.x * gridDim.x) {                                              \
            uint64_t rem = i, off = base;                                                          \
            for (int d = (int)rank - 1; d >= 0; --d) {                                             \
                uint64_t c = rem % info[d];                                                        \
                rem /= info[d];                                                                    \
                off += c * info[rank + d];                                                         \
            }                                                                                      \
            dst[off] = src[one ? 0 : i];                                                           \
        }                                                                                          \
    }

WRITE_AT(uint8_t, write_at_1)
WRITE_AT(uint16_t, write_at_2)
WRITE_AT(uint32_t, write_at_4)
WRITE_AT(uint64_t, write_at_8)
WRITE_STRIDED(uint8_t, write_strided_1)
WRITE_STRIDED(uint16_t, write_strided_2)
WRITE_STRIDED(uint32_t, write_strided_4)
WRITE_STRIDED(uint64_t, write_strided_8)

// out = pow(a, b) elementwise over contiguous operands: C's pow, as torch computes a tensor power
// (Candle's pow is exp(b·log a), NaN for every negative base).
#define POW(T, F, NAME)                                                                            \
    extern "C" __global__ void NAME(const T *a, const T *b, T *out, uint64_t n) {                  \
        for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;                  \
             i += (uint64_t)blockDim.x * gridDim.x) {                                              \
            out[i] = F(a[i], b[i]);                                                                \
        }                                                                                          \
    }

POW(float, powf, pow_f32)
POW(double, pow, pow_f64)

// relu as torch computes it: x < 0 ? 0 : x, so NaN and -0.0 pass through (Candle's relu drops NaN).
#define RELU(T, TO_F, ZERO, NAME)                                                                  \
    extern "C" __global__ void NAME(const T *x, T *out, uint64_t n) {                              \
        for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;                  \
             i += (uint64_t)blockDim.x * gridDim.x) {                                              \
            out[i] = TO_F(x[i]) < 0.0f ? ZERO : x[i];                                              \
        }                                                                                          \
    }

#define ID(v) (v)
RELU(float, ID, 0.0f, relu_f32)
RELU(double, ID, 0.0, relu_f64)
RELU(__half, __half2float, __float2half(0.0f), relu_f16)
RELU(__nv_bfloat16, __bfloat162float, __float2bfloat16(0.0f), relu_bf16)

// BatchNorm in eval mode in one pass: out = (x - mean[c]) * rsqrt(var[c] + eps) * w[c] + b[c], for x
// of shape (N, C, inner) contiguous; w and b may be null. Statistics and math in float (double for
// double), as torch's kernel.
#define BN_EVAL(T, ACC, LOAD, STORE, RSQRT, NAME)                                                  \
    extern "C" __global__ void NAME(const T *x, const T *mean, const T *var, const T *w, const T *b, \
                                    double eps, uint64_t c_dim, uint64_t inner, uint64_t n, T *out) {  \
        for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;                  \
             i += (uint64_t)blockDim.x * gridDim.x) {                                              \
            uint64_t c = (i / inner) % c_dim;                                                      \
            ACC inv = RSQRT(LOAD(var[c]) + (ACC)eps);                                              \
            ACC y = (LOAD(x[i]) - LOAD(mean[c])) * inv;                                            \
            if (w) y = y * LOAD(w[c]);                                                             \
            if (b) y = y + LOAD(b[c]);                                                             \
            out[i] = STORE(y);                                                                     \
        }                                                                                          \
    }

BN_EVAL(float, float, ID, ID, rsqrtf, bn_eval_f32)
BN_EVAL(double, double, ID, ID, rsqrt, bn_eval_f64)
BN_EVAL(__half, float, __half2float, __float2half, rsqrtf, bn_eval_f16)
BN_EVAL(__nv_bfloat16, float, __bfloat162float, __float2bfloat16, rsqrtf, bn_eval_bf16)

// One LSTM step's cell arithmetic for n rows of h units, fused: a = xg + hg (gates i, f, g, o, each
// h wide), c' = σ(f)·c + σ(i)·tanh(g), h' = σ(o)·tanh(c'). out holds h' then c' (2 × n × h).
__device__ __forceinline__ float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

extern "C" __global__ void lstm_cell_f32(const float *xg, const float *hg, const float *c, float *out,
                                         uint64_t n, uint64_t h) {
    for (uint64_t idx = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; idx < n * h;
         idx += (uint64_t)blockDim.x * gridDim.x) {
        uint64_t r = idx / h, j = idx % h, base = r * 4 * h;
        float i_ = sigmoidf_(xg[base + j] + hg[base + j]);
        float f_ = sigmoidf_(xg[base + h + j] + hg[base + h + j]);
        float g_ = tanhf(xg[base + 2 * h + j] + hg[base + 2 * h + j]);
        float o_ = sigmoidf_(xg[base + 3 * h + j] + hg[base + 3 * h + j]);
        float c2 = f_ * c[idx] + i_ * g_;
        out[idx] = o_ * tanhf(c2);
        out[n * h + idx] = c2;
    }
}

// One GRU step, fused: r = σ(xr + hr), z = σ(xz + hz), m = tanh(xn + r·hn), h' = (1 − z)·m + z·h.
extern "C" __global__ void gru_cell_f32(const float *xg, const float *hg, const float *hp, float *out,
                                        uint64_t n, uint64_t h) {
    for (uint64_t idx = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; idx < n * h;
         idx += (uint64_t)blockDim.x * gridDim.x) {
        uint64_t r = idx / h, j = idx % h, base = r * 3 * h;
        float rg = sigmoidf_(xg[base + j] + hg[base + j]);
        float z = sigmoidf_(xg[base + h + j] + hg[base + h + j]);
        float m = tanhf(xg[base + 2 * h + j] + rg * hg[base + 2 * h + j]);
        out[idx] = (1.0f - z) * m + z * hp[idx];
    }
}
