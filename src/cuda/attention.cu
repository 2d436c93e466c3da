// Fused scaled-dot-product attention for 16-bit floats on tensor cores (FlashAttention-2's scheme):
// scores, the online softmax and the weighted sum of values stay in registers, so memory is linear
// in the sequence length and q·kᵀ is never written out.
//
// One block of 4 warps takes 64 rows of one (batch, key/value head); each warp 16 of them. A row is
// (query head of the group, query position): the query heads sharing a key/value head (GQA) are
// stacked, so a decoded token's heads fill one tile and every key/value tile is read once for all of
// them. Per key tile of BN keys: S = Q·Kᵀ with mma.m16n8k16 (f32 accumulation), scale, causal / key
// bound / additive mask, running row max and sum (exp2), O rescaled and O += P·V with P taken from
// the score registers as the A operand. K is staged in shared memory as is, V transposed, both with
// 8 elements of padding per row (no bank conflicts on the fragment loads).
//
// Layout: q/k/v/out are (B, H, L, D) with any strides of whole 16-byte groups (the launcher checks;
// the last dim is contiguous); mask is f32 additive (-inf = masked), broadcast by stride 0.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define BM 64
#define WARPS 4

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

struct Strides {
    long long b, h, l;
};

struct Params {
    int lq, lk, hq, group;  // query/key lengths, query heads, query heads per key/value head
    Strides q, k, v, o, m;  // m: the mask's (b, h, query) strides; its key stride is 1
    float scale_log2;       // softmax scale · log2(e)
    int causal;             // key j visible to query i iff j <= i (top-left aligned, as torch)
};

template <typename T, int D, int BN>
__device__ __forceinline__ void flash_fwd(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                                          T *__restrict__ out, const float *__restrict__ mask, const Params p) {
    constexpr int KD = D + 8;   // K tile row (padded)
    constexpr int VN = BN + 8;  // transposed V tile row (padded)
    __shared__ __align__(16) T ks[BN * KD];
    __shared__ __align__(16) T vt[D * VN];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int b = blockIdx.z, kvh = blockIdx.y;
    const int rows = p.group * p.lq;
    const int r0 = blockIdx.x * BM;
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
            qf[kk][i] = lo;       // a0 (row g), a1 (row g + 8)
            qf[kk][2 + i] = hi;   // a2, a3: columns + 8
        }
    }

    float o[D / 8][4];
    for (int n = 0; n < D / 8; n++)
        for (int e = 0; e < 4; e++) o[n][e] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

    // Keys this block needs: all, or (causal) up to its largest query position.
    int kend = p.lk;
    if (p.causal) {
        int last = min(r0 + BM, rows) - 1;
        int maxpos = (r0 / p.lq == last / p.lq) ? last % p.lq : p.lq - 1;
        kend = min(p.lk, maxpos + 1);
    }
    const T *kb = k + (long long)b * p.k.b + (long long)kvh * p.k.h;
    const T *vb = v + (long long)b * p.v.b + (long long)kvh * p.v.h;

    for (int k0 = 0; k0 < kend; k0 += BN) {
        __syncthreads();  // the previous tile's readers are done
        // K: a row's 16-byte groups to consecutive threads (coalesced reads).
        for (int idx = tid; idx < BN * (D / 8); idx += WARPS * 32) {
            int r = idx / (D / 8), c = (idx % (D / 8)) * 8, key = k0 + r;
            uint4 kv4 = make_uint4(0, 0, 0, 0);
            if (key < p.lk) kv4 = *reinterpret_cast<const uint4 *>(kb + (long long)key * p.k.l + c);
            *reinterpret_cast<uint4 *>(&ks[r * KD + c]) = kv4;
        }
        // V: consecutive keys to consecutive threads, so the transposed writes hit distinct banks.
        for (int idx = tid; idx < BN * (D / 8); idx += WARPS * 32) {
            int r = idx % BN, c = (idx / BN) * 8, key = k0 + r;
            uint4 vv4 = make_uint4(0, 0, 0, 0);
            if (key < p.lk) vv4 = *reinterpret_cast<const uint4 *>(vb + (long long)key * p.v.l + c);
            const T *ve = reinterpret_cast<const T *>(&vv4);
            for (int e = 0; e < 8; e++) vt[(c + e) * VN + r] = ve[e];
        }
        __syncthreads();

        // S = Q·Kᵀ for this warp's 16 rows and BN keys: BN/8 tiles of 16×8.
        float s[BN / 8][4];
        for (int j = 0; j < BN / 8; j++) {
            for (int e = 0; e < 4; e++) s[j][e] = 0.f;
            const T *kr = &ks[(j * 8 + g) * KD + 2 * t];
            for (int kk = 0; kk < D / 16; kk++) {
                uint32_t b0 = *reinterpret_cast<const uint32_t *>(kr + kk * 16);
                uint32_t b1 = *reinterpret_cast<const uint32_t *>(kr + kk * 16 + 8);
                mma<T>(s[j], qf[kk], b0, b1);
            }
        }
        // Scale (to log2 units), masks, row maxima.
        float mx[2] = {-INFINITY, -INFINITY};
        for (int j = 0; j < BN / 8; j++) {
            for (int e = 0; e < 4; e++) {
                int i = e / 2, key = k0 + j * 8 + 2 * t + (e & 1);
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
            float m_new = fmaxf(m_run[i], mx[i]);
            // A row that has seen only masked keys keeps m = -inf: its p and alpha are 0 and 1.
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
        // P = exp2(S - m), summed per row, packed straight into A fragments (16 keys per k-step).
        for (int kk = 0; kk < BN / 16; kk++) {
            uint32_t a[4];
            for (int h = 0; h < 2; h++) {
                float *sj = s[2 * kk + h];
                float p0 = exp2f(sj[0] - base[0]), p1 = exp2f(sj[1] - base[0]);
                float p2 = exp2f(sj[2] - base[1]), p3 = exp2f(sj[3] - base[1]);
                l_run[0] += p0 + p1;
                l_run[1] += p2 + p3;
                a[2 * h] = pack2<T>(p0, p1);      // row g: keys 2t, 2t+1 (+8 for h = 1)
                a[2 * h + 1] = pack2<T>(p2, p3);  // row g + 8
            }
            // a holds (a0, a1, a2, a3) = (row g, row g+8, row g keys+8, row g+8 keys+8): reorder.
            uint32_t af[4] = {a[0], a[1], a[2], a[3]};
            for (int n = 0; n < D / 8; n++) {
                const T *vr = &vt[(n * 8 + g) * VN + kk * 16 + 2 * t];
                uint32_t b0 = *reinterpret_cast<const uint32_t *>(vr);
                uint32_t b1 = *reinterpret_cast<const uint32_t *>(vr + 8);
                mma<T>(o[n], af, b0, b1);
            }
        }
    }

    // O / l; rows with nothing to attend to give zeros (torch's safe softmax).
    for (int i = 0; i < 2; i++) {
        l_run[i] += __shfl_xor_sync(0xffffffff, l_run[i], 1);
        l_run[i] += __shfl_xor_sync(0xffffffff, l_run[i], 2);
        l_run[i] = l_run[i] > 0.f ? 1.f / l_run[i] : 0.f;
    }
    for (int i = 0; i < 2; i++) {
        if (!valid[i]) continue;
        T *orow = out + (long long)b * p.o.b + (long long)head[i] * p.o.h + (long long)pos[i] * p.o.l;
        for (int n = 0; n < D / 8; n++) {
            *reinterpret_cast<uint32_t *>(orow + n * 8 + 2 * t) = pack2<T>(o[n][2 * i] * l_run[i], o[n][2 * i + 1] * l_run[i]);
        }
    }
}

#define FLASH(NAME, T, D, BN)                                                                                   \
    extern "C" __global__ void __launch_bounds__(WARPS * 32)                                                     \
        NAME(const T *q, const T *k, const T *v, T *out, const float *mask, const Params p) {                     \
        flash_fwd<T, D, BN>(q, k, v, out, mask, p);                                                               \
    }

FLASH(flash_fwd_bf16_64, __nv_bfloat16, 64, 64)
FLASH(flash_fwd_bf16_80, __nv_bfloat16, 80, 64)
FLASH(flash_fwd_bf16_96, __nv_bfloat16, 96, 64)
FLASH(flash_fwd_bf16_128, __nv_bfloat16, 128, 64)
FLASH(flash_fwd_f16_64, __half, 64, 64)
FLASH(flash_fwd_f16_80, __half, 80, 64)
FLASH(flash_fwd_f16_96, __half, 96, 64)
FLASH(flash_fwd_f16_128, __half, 128, 64)
