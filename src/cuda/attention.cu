// Fused scaled-dot-product attention for 16-bit floats on tensor cores (FlashAttention-2's scheme):
// scores, the online softmax and the weighted sum of values stay in registers, so memory is linear
// in the sequence length and q·kᵀ is never written out.
//
// One block of 8 warps takes 128 rows of one (batch, key/value head); each warp 16 of them. A row
// is (query head of the group, query position): the query heads sharing a key/value head (GQA) are
// stacked, so a decoded token's heads fill one tile and every key/value tile is read once for all
// of them. Key/value tiles of BN keys are copied into shared memory with cp.async, the next one
// while the current one is used (double buffering). Per tile: S = Q·Kᵀ with mma.m16n8k16 (f32
// accumulation; K fragments by ldmatrix), scale, causal / key bound / additive mask, running row
// max and sum (exp2), O rescaled and O += P·V, P taken from the score registers as the A operand and
// V's fragments by ldmatrix.trans. Shared rows are padded by 8 elements (no bank conflicts).
//
// Decoding (one row tile for a long cache) splits the keys over several blocks (split-KV): each
// writes its partial O, row max and row sum in f32, and `flash_combine` merges them.
//
// Layout: q/k/v/out are (B, H, L, D) with any strides of whole 16-byte groups (the launcher checks;
// the last dim is contiguous); mask is f32 additive (-inf = masked), broadcast by stride 0.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define WARPS 8
#define BM (WARPS * 16)

template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

template <typename T> __device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared, asynchronously; zero-filled when !valid (src is then not read).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
// Four 8x8 b16 matrices; lane i gives the address of row i % 8 of matrix i / 8.
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p))
                 : "memory");
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p))
                 : "memory");
}

struct Strides {
    long long b, h, l;
};

struct Params {
    int lq, lk, hq, group;  // query/key lengths, query heads, query heads per key/value head
    Strides q, k, v, o, m;  // m: the mask's (b, h, query) strides; its key stride is 1
    float scale_log2;       // softmax scale · log2(e)
    int causal;             // key j visible to query i iff j <= i (top-left aligned, as torch)
    int splits;             // key ranges per row tile (1: no split-KV)
    int tiles_per_split;    // key tiles in each range
    int hkv;                // key/value heads
};

// The largest query position among rows [first, last] (rows of several heads span all positions).
__device__ __forceinline__ int max_pos(int first, int last, int lq) {
    return first / lq == last / lq ? last % lq : lq - 1;
}

template <typename T, int D, int BN>
__device__ __forceinline__ void flash_fwd(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                                          T *__restrict__ out, const float *__restrict__ mask, float *__restrict__ ws,
                                          const Params p) {
    constexpr int RS = D + 8;  // padded shared row, in elements
    extern __shared__ __align__(128) unsigned char smem[];
    T *ks = reinterpret_cast<T *>(smem);  // [2][BN][RS]
    T *vs = ks + 2 * BN * RS;             // [2][BN][RS]

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int b = blockIdx.z, kvh = blockIdx.y;
    const int rows = p.group * p.lq;
    const int split = blockIdx.x % p.splits, r0 = (blockIdx.x / p.splits) * BM;
    // This thread's two rows (g and g + 8 of its warp's 16) and their query head / position.
    int row[2], pos[2], head[2];
    bool valid[2];
    for (int i = 0; i < 2; i++) {
        row[i] = r0 + warp * 16 + g + 8 * i;
        valid[i] = row[i] < rows;
        int rr = valid[i] ? row[i] : 0;
        head[i] = kvh * p.group + rr / p.lq;
        pos[i] = rr % p.lq;
    }

    // Q fragments (A operand, row-major), kept in registers for the whole key loop.
    uint32_t qf[D / 16][4];
    for (int kk = 0; kk < D / 16; kk++) {
        for (int i = 0; i < 2; i++) {
            const T *qr = q + (long long)b * p.q.b + (long long)head[i] * p.q.h + (long long)pos[i] * p.q.l;
            uint32_t lo = 0, hi = 0;
            if (valid[i]) {
                lo = *reinterpret_cast<const uint32_t *>(qr + kk * 16 + 2 * t);
                hi = *reinterpret_cast<const uint32_t *>(qr + kk * 16 + 2 * t + 8);
            }
            qf[kk][i] = lo;      // a0 (row g), a1 (row g + 8)
            qf[kk][2 + i] = hi;  // a2, a3: columns + 8
        }
    }

    float o[D / 8][4];
    for (int n = 0; n < D / 8; n++)
        for (int e = 0; e < 4; e++) o[n][e] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

    // Keys this block needs: all, or (causal) up to its largest query position; then this split's.
    int kend = p.lk;
    if (p.causal) kend = min(p.lk, max_pos(r0, min(r0 + BM, rows) - 1, p.lq) + 1);
    const int ntiles = (kend + BN - 1) / BN;
    const int t_begin = split * p.tiles_per_split, t_end = min(ntiles, t_begin + p.tiles_per_split);
    const int wfirst = r0 + warp * 16;
    const bool warp_rows = wfirst < rows;
    const int wmax = warp_rows ? max_pos(wfirst, min(wfirst + 15, rows - 1), p.lq) : -1;

    const T *kb = k + (long long)b * p.k.b + (long long)kvh * p.k.h;
    const T *vb = v + (long long)b * p.v.b + (long long)kvh * p.v.h;
    auto load = [&](int tile, int buf) {
        const int k0 = tile * BN;
        T *kd = ks + buf * BN * RS, *vd = vs + buf * BN * RS;
        for (int idx = tid; idx < BN * (D / 8); idx += WARPS * 32) {
            const int r = idx / (D / 8), c = (idx % (D / 8)) * 8, key = k0 + r;
            const bool ok = key < p.lk;
            const long long at = ok ? key : 0;
            cp_async16(kd + r * RS + c, kb + at * p.k.l + c, ok);
            cp_async16(vd + r * RS + c, vb + at * p.v.l + c, ok);
        }
        cp_commit();
    };

    if (t_begin < t_end) load(t_begin, 0);
    for (int tile = t_begin; tile < t_end; tile++) {
        const int buf = (tile - t_begin) & 1;
        if (tile + 1 < t_end) {
            load(tile + 1, buf ^ 1);
            cp_wait<1>();
        } else {
            cp_wait<0>();
        }
        __syncthreads();
        const int k0 = tile * BN;
        // A warp whose rows all precede this tile (causal) has nothing to add from it.
        if (warp_rows && !(p.causal && k0 > wmax)) {
            const T *kt = ks + buf * BN * RS, *vt = vs + buf * BN * RS;
            // S = Q·Kᵀ for this warp's 16 rows and BN keys: BN/8 tiles of 16×8.
            float s[BN / 8][4];
            for (int j = 0; j < BN / 8; j++)
                for (int e = 0; e < 4; e++) s[j][e] = 0.f;
            for (int j = 0; j < BN / 8; j += 2) {
                const T *kr = kt + ((j + (lane >> 4)) * 8 + (lane & 7)) * RS + ((lane >> 3) & 1) * 8;
                for (int kk = 0; kk < D / 16; kk++) {
                    uint32_t bk[4];  // b0, b1 of key tile j, then of j + 1
                    ldsm_x4(bk, kr + kk * 16);
                    mma<T>(s[j], qf[kk], bk[0], bk[1]);
                    mma<T>(s[j + 1], qf[kk], bk[2], bk[3]);
                }
            }
            // Scale (to log2 units), masks, row maxima.
            float mx[2] = {-INFINITY, -INFINITY};
            for (int j = 0; j < BN / 8; j++) {
                for (int e = 0; e < 4; e++) {
                    const int i = e / 2, key = k0 + j * 8 + 2 * t + (e & 1);
                    float x = s[j][e] * p.scale_log2;
                    if (key >= p.lk || (p.causal && key > pos[i])) {
                        x = -INFINITY;
                    } else if (mask != nullptr && valid[i]) {
                        x += mask[(long long)b * p.m.b + (long long)head[i] * p.m.h + (long long)pos[i] * p.m.l + key] *
                             1.4426950408889634f;
                    }
                    s[j][e] = x;
                    mx[i] = fmaxf(mx[i], x);
                }
            }
            float alpha[2], base[2];
            for (int i = 0; i < 2; i++) {
                mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffff, mx[i], 1));
                mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffff, mx[i], 2));
                const float m_new = fmaxf(m_run[i], mx[i]);
                // A row that has seen only masked keys keeps m = -inf: its p and alpha are 0.
                base[i] = m_new == -INFINITY ? 0.f : m_new;
                alpha[i] = exp2f(m_run[i] - base[i]);
                m_run[i] = m_new;
                l_run[i] *= alpha[i];
            }
            for (int n = 0; n < D / 8; n++) {
                o[n][0] *= alpha[0];
                o[n][1] *= alpha[0];
                o[n][2] *= alpha[1];
                o[n][3] *= alpha[1];
            }
            // P = exp2(S - m), summed per row, packed straight into A fragments (16 keys per step).
            for (int kk = 0; kk < BN / 16; kk++) {
                uint32_t a[4];
                for (int h = 0; h < 2; h++) {
                    const float *sj = s[2 * kk + h];
                    const float p0 = exp2f(sj[0] - base[0]), p1 = exp2f(sj[1] - base[0]);
                    const float p2 = exp2f(sj[2] - base[1]), p3 = exp2f(sj[3] - base[1]);
                    l_run[0] += p0 + p1;
                    l_run[1] += p2 + p3;
                    a[2 * h] = pack2<T>(p0, p1);      // row g: keys 2t, 2t+1 (+8 for h = 1)
                    a[2 * h + 1] = pack2<T>(p2, p3);  // row g + 8
                }
                const T *vr = vt + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * RS + (lane >> 4) * 8;
                for (int n = 0; n < D / 8; n += 2) {
                    uint32_t bv[4];  // b0, b1 of value columns n·8.., then (n+1)·8..
                    ldsm_x4_trans(bv, vr + n * 8);
                    mma<T>(o[n], a, bv[0], bv[1]);
                    mma<T>(o[n + 1], a, bv[2], bv[3]);
                }
            }
        }
        __syncthreads();  // every warp is done with buf before the load two tiles on refills it
    }

    for (int i = 0; i < 2; i++) {
        l_run[i] += __shfl_xor_sync(0xffffffff, l_run[i], 1);
        l_run[i] += __shfl_xor_sync(0xffffffff, l_run[i], 2);
    }
    if (p.splits == 1) {
        // O / l; rows with nothing to attend to give zeros (torch's safe softmax).
        for (int i = 0; i < 2; i++) {
            if (!valid[i]) continue;
            const float inv = l_run[i] > 0.f ? 1.f / l_run[i] : 0.f;
            T *orow = out + (long long)b * p.o.b + (long long)head[i] * p.o.h + (long long)pos[i] * p.o.l;
            for (int n = 0; n < D / 8; n++)
                *reinterpret_cast<uint32_t *>(orow + n * 8 + 2 * t) = pack2<T>(o[n][2 * i] * inv, o[n][2 * i + 1] * inv);
        }
    } else {
        // This split's unnormalised O, row max and row sum, for flash_combine.
        for (int i = 0; i < 2; i++) {
            if (!valid[i]) continue;
            const long long at = (((long long)b * p.hkv + kvh) * p.splits + split) * rows + row[i];
            float *wo = ws + at * D;
            for (int n = 0; n < D / 8; n++) {
                wo[n * 8 + 2 * t] = o[n][2 * i];
                wo[n * 8 + 2 * t + 1] = o[n][2 * i + 1];
            }
            if (t == 0) {
                float *ml = ws + (long long)gridDim.z * p.hkv * p.splits * rows * D + at * 2;
                ml[0] = m_run[i];
                ml[1] = l_run[i];
            }
        }
    }
}

// Merges the splits' partial results: O = Σ 2^(m_s - M) O_s / Σ 2^(m_s - M) l_s. One thread per output value.
template <typename T, int D>
__device__ __forceinline__ void flash_combine(const float *__restrict__ ws, T *__restrict__ out, const Params p, int batch) {
    const int rows = p.group * p.lq;
    const long long total = (long long)batch * p.hkv * rows * D;
    const float *mls = ws + (long long)batch * p.hkv * p.splits * rows * D;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total; idx += (long long)gridDim.x * blockDim.x) {
        const int d = idx % D;
        long long rest = idx / D;
        const int row = rest % rows;
        rest /= rows;
        const int kvh = rest % p.hkv, b = rest / p.hkv;
        const long long first = ((long long)b * p.hkv + kvh) * p.splits * rows + row;  // split s at first + s·rows
        float mx = -INFINITY;
        for (int s = 0; s < p.splits; s++) mx = fmaxf(mx, mls[(first + (long long)s * rows) * 2]);
        const float base = mx == -INFINITY ? 0.f : mx;
        float l = 0.f, acc = 0.f;
        for (int s = 0; s < p.splits; s++) {
            const long long at = first + (long long)s * rows;
            const float w = exp2f(mls[at * 2] - base);
            l += w * mls[at * 2 + 1];
            acc += w * ws[at * D + d];
        }
        const int head = kvh * p.group + row / p.lq, pos = row % p.lq;
        out[(long long)b * p.o.b + (long long)head * p.o.h + (long long)pos * p.o.l + d] = T(l > 0.f ? acc / l : 0.f);
    }
}

#define FLASH(SUFFIX, T, D, BN)                                                                                   \
    extern "C" __global__ void __launch_bounds__(WARPS * 32)                                                       \
        flash_fwd_##SUFFIX(const T *q, const T *k, const T *v, T *out, const float *mask, float *ws, const Params p) { \
        flash_fwd<T, D, BN>(q, k, v, out, mask, ws, p);                                                             \
    }                                                                                                               \
    extern "C" __global__ void flash_combine_##SUFFIX(const float *ws, T *out, const Params p, int batch) {        \
        flash_combine<T, D>(ws, out, p, batch);                                                                     \
    }

FLASH(bf16_64, __nv_bfloat16, 64, 64)
FLASH(bf16_80, __nv_bfloat16, 80, 64)
FLASH(bf16_96, __nv_bfloat16, 96, 64)
FLASH(bf16_128, __nv_bfloat16, 128, 64)
FLASH(f16_64, __half, 64, 64)
FLASH(f16_80, __half, 80, 64)
FLASH(f16_96, __half, 96, 64)
FLASH(f16_128, __half, 128, 64)
