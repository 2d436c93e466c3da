//! bfloat16 matrix products on the CPU's bf16 dot-product instruction (AVX512-BF16 `vdpbf16ps`: 32
//! bf16 products per instruction, summed in pairs into 16 f32 lanes), as torch's oneDNN runs them:
//! products of the bf16 inputs accumulated in f32, rounded to bf16 once at the end.
//!
//! Shapes: C (m×n) = A (m×k) · B (k×n), any strides.
//! - Many rows (prefill, batches): register tiles of 12 rows × 32 columns. B is packed per tile of
//!   32 columns with the columns in the lanes (pairs of k interleaved, as the instruction reads
//!   them; W's rows transposed 16×16 in registers); A is packed once per call so that a row's k-pair
//!   is one 32-bit broadcast. Packing per call costs O(k·(m+n)) against the product's O(m·k·n) and
//!   leaves weights untouched in memory: nothing to cache, nothing to invalidate when a weight is
//!   written. Results leave the registers as whole rows (a bias or activation could join there).
//! - A few rows (a decode step, `x @ W.T` with W's rows contiguous in k): dot products straight from
//!   W's rows, 32 elements a step, memory-bound as they must be.

use crate::pool::SendPtr;

/// Rows of A in one register tile (each a 32-bit broadcast per k-pair).
const MR: usize = 12;
/// Columns of B in one register tile: two vectors of 16 f32 lanes (12 × 2 accumulators + 2 B
/// vectors + 1 broadcast ≤ 32 zmm).
const NV: usize = 32;
/// Up to this many rows of A, products are dot products against B's columns.
pub const DOT_ROWS: usize = 4;
/// Products below this many multiply-adds run on the calling thread.
const SERIAL_MACS: usize = 1 << 17;
/// Packed A kept per block of rows (bytes), so a block stays in L2 while B's tiles stream past it.
const A_BLOCK_BYTES: usize = 384 << 10;
/// k-pairs per slice of a long inner dim: a packed B tile slice (32 columns) is then 32 KB, in L1.
const KC: usize = 256;
/// f32 inner dims up to this stay in one slice (B's tile then streams from L2, prefetched), with
/// blocks of A of this many bytes: no partial sums through memory (measured at k = 768: 4-8%).
const F32_WHOLE_K: usize = 1024;
const F32_A_BLOCK_BYTES: usize = 600 << 10;

/// Whether this CPU (under the `CANDLE_BIND_ISA` cap) runs the bf16 dot-product kernels.
pub fn available() -> bool {
    crate::isa::has_avx512_bf16()
}

/// One operand: element (i, j) at `ptr + i·rs + j·cs` (bf16 bit patterns).
#[derive(Clone, Copy)]
pub struct Operand<T = u16> {
    pub ptr: *const T,
    pub rs: usize,
    pub cs: usize,
}
// SAFETY: operands are read-only views of storage the caller keeps alive for the call.
unsafe impl<T> Send for Operand<T> {}
unsafe impl<T> Sync for Operand<T> {}

impl<T: Copy> Operand<T> {
    /// The same operand `elements` further on.
    pub fn offset(self, elements: usize) -> Operand<T> {
        Operand { ptr: self.ptr.wrapping_add(elements), ..self }
    }
    #[inline(always)]
    unsafe fn at(&self, i: usize, j: usize) -> T {
        // SAFETY: the caller's bounds (i < rows, j < cols of the operand).
        unsafe { *self.ptr.add(i * self.rs + j * self.cs) }
    }
}

/// out (m×n, row stride `ldo`) = A (m×k) · B (k×n) in bf16 with f32 accumulation. `serial`: the
/// caller already runs one product per thread.
///
/// # Safety
/// `available()` must be true; A and B must be in bounds at their strides for every (i, k, j), and
/// out must hold m rows of `ldo` ≥ n elements that nothing else touches meanwhile.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm(m: usize, n: usize, k: usize, a: Operand, b: Operand, out: *mut u16, ldo: usize, serial: bool) {
    if m == 0 || n == 0 {
        return;
    }
    let out = SendPtr(out);
    let threads = if serial || m * n * k < SERIAL_MACS { 1 } else { crate::pool::threads() };
    // SAFETY (both arms): the caller's contract.
    if m <= DOT_ROWS && b.rs == 1 {
        unsafe { dot_rows(m, n, k, a, b, out, ldo, threads) }
    } else {
        unsafe { tiles::<u16>(m, n, k, a, b, out, ldo, threads) }
    }
}

// ------------------------------------------------------------------------------------- dot rows

/// A's rows copied contiguous and zero-padded to a multiple of 32, then for each group of 4
/// columns of B (rows of W): 32-element steps, W read once for all of A's rows.
#[allow(clippy::too_many_arguments)]
unsafe fn dot_rows(m: usize, n: usize, k: usize, a: Operand, b: Operand, out: SendPtr<u16>, ldo: usize, threads: usize) {
    let kp = k.next_multiple_of(32);
    let mut arows = vec![0u16; m * kp];
    for i in 0..m {
        for p in 0..k {
            // SAFETY: i < m, p < k.
            arows[i * kp + p] = unsafe { a.at(i, p) };
        }
    }
    let chunk = if threads == 1 { n } else { n.div_ceil(4 * threads).next_multiple_of(4).max(64) };
    let tasks = n.div_ceil(chunk);
    let arows = &arows;
    let task = |t: usize| {
        let (j0, j1) = (t * chunk, ((t + 1) * chunk).min(n));
        // SAFETY: available() was checked by the caller; columns j0..j1 of B are rows of W
        // contiguous in k (b.rs == 1), and this task writes only columns j0..j1 of out.
        unsafe {
            match m {
                1 => dot_kernel::<1>(arows, kp, k, b, j0, j1, out, ldo),
                2 => dot_kernel::<2>(arows, kp, k, b, j0, j1, out, ldo),
                3 => dot_kernel::<3>(arows, kp, k, b, j0, j1, out, ldo),
                _ => dot_kernel::<4>(arows, kp, k, b, j0, j1, out, ldo),
            }
        }
    };
    if tasks == 1 {
        task(0)
    } else {
        crate::pool::for_each(tasks, &task)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
#[allow(clippy::too_many_arguments)]
unsafe fn dot_kernel<const R: usize>(arows: &[u16], kp: usize, k: usize, b: Operand, j0: usize, j1: usize, out: SendPtr<u16>, ldo: usize) {
    use std::arch::x86_64::*;
    let steps = k / 32;
    let tail = k % 32;
    let tail_mask: __mmask32 = if tail == 0 { 0 } else { (1u32 << tail) - 1 };
    let a = arows.as_ptr();
    let mut j = j0;
    // SAFETY (all loads): W row j holds k elements from b.ptr + j·cs; the tail load is masked to the
    // row's last elements; A's rows hold kp ≥ k elements (zeros past k).
    unsafe {
        while j + 4 <= j1 {
            let w = [0, 1, 2, 3].map(|q| b.ptr.add((j + q) * b.cs));
            let mut acc = [[_mm512_setzero_ps(); 4]; R];
            for s in 0..steps {
                let wv = w.map(|p| _mm512_loadu_si512(p.add(s * 32) as *const __m512i));
                for (r, accr) in acc.iter_mut().enumerate() {
                    let av: __m512bh = std::mem::transmute(_mm512_loadu_si512(a.add(r * kp + s * 32) as *const __m512i));
                    for q in 0..4 {
                        accr[q] = _mm512_dpbf16_ps(accr[q], av, std::mem::transmute::<__m512i, __m512bh>(wv[q]));
                    }
                }
            }
            if tail != 0 {
                let wv = w.map(|p| _mm512_maskz_loadu_epi16(tail_mask, p.add(steps * 32) as *const i16));
                for (r, accr) in acc.iter_mut().enumerate() {
                    let av: __m512bh = std::mem::transmute(_mm512_loadu_si512(a.add(r * kp + steps * 32) as *const __m512i));
                    for q in 0..4 {
                        accr[q] = _mm512_dpbf16_ps(accr[q], av, std::mem::transmute::<__m512i, __m512bh>(wv[q]));
                    }
                }
            }
            for (r, accr) in acc.iter().enumerate() {
                for q in 0..4 {
                    *out.get().add(r * ldo + j + q) = half::bf16::from_f32(_mm512_reduce_add_ps(accr[q])).to_bits();
                }
            }
            j += 4;
        }
        while j < j1 {
            let w = b.ptr.add(j * b.cs);
            let mut acc = [_mm512_setzero_ps(); R];
            for s in 0..steps {
                let wv: __m512bh = std::mem::transmute(_mm512_loadu_si512(w.add(s * 32) as *const __m512i));
                for (r, accr) in acc.iter_mut().enumerate() {
                    let av: __m512bh = std::mem::transmute(_mm512_loadu_si512(a.add(r * kp + s * 32) as *const __m512i));
                    *accr = _mm512_dpbf16_ps(*accr, av, wv);
                }
            }
            if tail != 0 {
                let wv: __m512bh = std::mem::transmute(_mm512_maskz_loadu_epi16(tail_mask, w.add(steps * 32) as *const i16));
                for (r, accr) in acc.iter_mut().enumerate() {
                    let av: __m512bh = std::mem::transmute(_mm512_loadu_si512(a.add(r * kp + steps * 32) as *const __m512i));
                    *accr = _mm512_dpbf16_ps(*accr, av, wv);
                }
            }
            for (r, accr) in acc.iter().enumerate() {
                *out.get().add(r * ldo + j) = half::bf16::from_f32(_mm512_reduce_add_ps(*accr)).to_bits();
            }
            j += 1;
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn dot_kernel<const R: usize>(_: &[u16], _: usize, _: usize, _: Operand, _: usize, _: usize, _: SendPtr<u16>, _: usize) {
    unreachable!("available() is false off x86-64")
}

// ---------------------------------------------------------------------------------------- tiles

/// A packed for the tile kernel: per tile of 12 rows, per k-pair, 12 u32 of (A[r][2p], A[r][2p+1])
/// (rows past m and the odd k's partner are zeros), so a row's pair is one 32-bit broadcast.
fn pack_a<T: Lane>(m: usize, k: usize, a: Operand<T>, threads: usize) -> Vec<u32> {
    let k2 = k.div_ceil(T::PER);
    let tiles = m.div_ceil(MR);
    let mut ap = vec![0u32; tiles * k2 * MR];
    let pack = |t: usize, dst: &mut [u32]| {
        for i in 0..MR.min(m - t * MR) {
            let r = t * MR + i;
            if a.cs == 1 {
                // A row's lanes are consecutive u32 (an odd k's last bf16 pairs with a zero).
                // SAFETY: row r holds k elements from a.ptr + r·rs.
                let row = unsafe { a.ptr.add(r * a.rs) };
                for q in 0..k / T::PER {
                    dst[q * MR + i] = unsafe { (row.add(T::PER * q) as *const u32).read_unaligned() };
                }
                if k % T::PER != 0 {
                    dst[(k2 - 1) * MR + i] = unsafe { *row.add(k - 1) }.bits();
                }
                continue;
            }
            for q in 0..k2 {
                // SAFETY: r < m and every element read is below k.
                dst[q * MR + i] = unsafe { lane(k, q, |p| a.at(r, p)) };
            }
        }
    };
    if threads == 1 || tiles == 1 {
        ap.chunks_mut(k2 * MR).enumerate().for_each(|(t, d)| pack(t, d));
    } else {
        crate::pool::chunks_mut(&mut ap, k2 * MR, pack);
    }
    ap
}

/// The 32-bit lane q of a row of k elements read by `at`: one f32, or the bf16 pair (2q, 2q + 1)
/// with a zero past k.
#[inline(always)]
unsafe fn lane<T: Lane>(k: usize, q: usize, at: impl Fn(usize) -> T) -> u32 {
    if T::PER == 1 {
        return at(q).bits();
    }
    let lo = at(2 * q).bits();
    let hi = if 2 * q + 1 < k { at(2 * q + 1).bits() } else { 0 };
    lo | (hi << 16)
}

/// An element type of the tile kernels: `PER` elements of k per 32-bit lane.
pub trait Lane: Copy + Send + Sync + 'static {
    const PER: usize;
    fn bits(self) -> u32;
    /// The register tile kernel for this type (see `tile_kernel`).
    #[allow(clippy::too_many_arguments)]
    unsafe fn kernel(ap: *const u32, bp: *const u32, k2: usize, part: (*mut f32, usize), stage: Stage, out: *mut Self, ldo: usize, rows: usize, cols: usize);
}

impl Lane for u16 {
    const PER: usize = 2;
    fn bits(self) -> u32 {
        self as u32
    }
    unsafe fn kernel(ap: *const u32, bp: *const u32, k2: usize, part: (*mut f32, usize), stage: Stage, out: *mut u16, ldo: usize, rows: usize, cols: usize) {
        // SAFETY: the caller's contract (and has_avx512_bf16()).
        unsafe { tile_kernel(ap, bp, k2, part, stage, out, ldo, rows, cols) }
    }
}

impl Lane for f32 {
    const PER: usize = 1;
    fn bits(self) -> u32 {
        self.to_bits()
    }
    unsafe fn kernel(ap: *const u32, bp: *const u32, k2: usize, part: (*mut f32, usize), stage: Stage, out: *mut f32, ldo: usize, rows: usize, cols: usize) {
        // SAFETY: the caller's contract (and an AVX-512 level).
        unsafe { tile_kernel_f32(ap, bp, k2, part, stage, out, ldo, rows, cols) }
    }
}

/// Columns j0..j0+32 of B, k-pairs q0..q1: per pair 32 u32 lanes of (B[2q][j], B[2q+1][j]) (zeros
/// past n and k). Columns that are rows of W contiguous in k (`b.rs == 1`) are transposed 16×16
/// pairs at a time in registers; other layouts element by element.
fn pack_b_tile<T: Lane>(k: usize, n: usize, b: Operand<T>, j0: usize, (q0, q1): (usize, usize), dst: &mut [u32]) {
    let cols = NV.min(n - j0);
    let mut q = q0;
    if b.rs == 1 && cols == NV && crate::isa::level() == crate::isa::Level::Avx512 {
        // Whole blocks of 16 lanes for both halves of the tile (none reaching past k).
        let full = ((q1 - q0).min((k / T::PER).saturating_sub(q0)) / 16) * 16;
        let unit = std::mem::size_of::<T>() / 2;
        for h in 0..2 {
            // SAFETY: rows j0 + 16h .. +16 of W hold k elements each; the blocks read lanes
            // q0..q0 + full, all below k / PER (addressed in u16 units).
            unsafe {
                let w = b.ptr.add((j0 + 16 * h) * b.cs + T::PER * q0) as *const u16;
                transpose_pairs(w, b.cs * unit, full, dst[16 * h..].as_mut_ptr())
            };
        }
        q += full;
    }
    for c in 0..NV {
        for p in q..q1 {
            // SAFETY: j0 + c < n, and every element read is below k.
            dst[(p - q0) * NV + c] = if c < cols { unsafe { lane(k, p, |e| b.at(e, j0 + c)) } } else { 0 };
        }
    }
}

/// dst[q·32 + r] = 32-bit lane q of row r (16 rows at `w`, `ld` u16 apart; a lane is a bf16 pair
/// or one f32) for q < `pairs` (a multiple of 16): 16×16 transposes of u32.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn transpose_pairs(w: *const u16, ld: usize, pairs: usize, dst: *mut u32) {
    use std::arch::x86_64::*;
    // SAFETY: the caller's bounds: 16 rows of ≥ 2·pairs elements; dst holds pairs rows of 32.
    unsafe {
        for q0 in (0..pairs).step_by(16) {
            let r = transpose16(std::array::from_fn(|i| _mm512_loadu_si512(w.add(i * ld + 2 * q0) as *const __m512i)));
            for (i, v) in r.iter().enumerate() {
                _mm512_storeu_si512(dst.add((q0 + TRANSPOSE_ORDER[i]) * NV) as *mut __m512i, *v);
            }
        }
    }
}

/// The 16×16 transpose of 32-bit lanes: register i of the result holds lane TRANSPOSE_ORDER[i] of
/// every input register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[inline]
pub(crate) unsafe fn transpose16(mut r: [std::arch::x86_64::__m512i; 16]) -> [std::arch::x86_64::__m512i; 16] {
    use std::arch::x86_64::*;
    // Four butterfly stages: 32-bit, 64-bit, 128-bit and 256-bit blocks swap across rows.
    let mut t = [_mm512_setzero_si512(); 16];
    for i in (0..16).step_by(2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for i in (0..16).step_by(4) {
        for j in 0..2 {
            r[i + j] = _mm512_unpacklo_epi64(t[i + j], t[i + j + 2]);
            r[i + j + 2] = _mm512_unpackhi_epi64(t[i + j], t[i + j + 2]);
        }
    }
    // Rows now hold 4×4 transposed blocks within each 128-bit lane; move the lanes.
    for i in (0..16).step_by(8) {
        for j in 0..4 {
            t[i + j] = _mm512_shuffle_i32x4::<0x88>(r[i + j], r[i + j + 4]);
            t[i + j + 4] = _mm512_shuffle_i32x4::<0xdd>(r[i + j], r[i + j + 4]);
        }
    }
    for j in 0..8 {
        r[j] = _mm512_shuffle_i32x4::<0x88>(t[j], t[j + 8]);
        r[j + 8] = _mm512_shuffle_i32x4::<0xdd>(t[j], t[j + 8]);
    }
    // (the 64-bit stage swaps columns 1 and 2 of each 4)
    r
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn transpose_pairs(_: *const u16, _: usize, _: usize, _: *mut u32) {
    unreachable!("only called when has_avx512_bf16()")
}

/// Which column of the 16×16 block each register holds after the butterflies above.
pub(crate) const TRANSPOSE_ORDER: [usize; 16] = [0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15];

#[allow(clippy::too_many_arguments)]
unsafe fn tiles<T: Lane>(m: usize, n: usize, k: usize, a: Operand<T>, b: Operand<T>, out: SendPtr<T>, ldo: usize, threads: usize) {
    let k2 = k.div_ceil(T::PER);
    let ap = pack_a(m, k, a, threads);
    let mtiles = m.div_ceil(MR);
    let ntiles = n.div_ceil(NV);
    // The loop nest of a blocked gemm: a slice of k (B's tile slice stays in L1), a block of rows (A's
    // slice stays in L2), the tiles. Long inner dims keep f32 partial sums between slices.
    let whole_f32 = T::PER == 1 && k2 <= F32_WHOLE_K;
    let kc = if k2 <= 2 * KC || whole_f32 { k2 } else { KC };
    let kslices = k2.div_ceil(kc);
    let block = (if whole_f32 { F32_A_BLOCK_BYTES } else { A_BLOCK_BYTES } / (kc * MR * 4)).clamp(1, mtiles);
    // Split the columns when there are enough of them, else the rows.
    let by_cols = ntiles >= 2 * threads || ntiles >= mtiles;
    let tasks = if by_cols { threads.min(ntiles) } else { threads.min(mtiles) };
    let ap = &ap;
    let task = |t: usize| {
        let (t0, t1) = if by_cols { split(ntiles, tasks, t) } else { (0, ntiles) };
        let (p0, p1) = if by_cols { (0, mtiles) } else { split(mtiles, tasks, t) };
        let mut bp = vec![0u32; kc * NV];
        // f32 partial sums of this task's rows × columns, only when k is sliced.
        let width = (t1 - t0) * NV;
        let mut part = if kslices > 1 { vec![0f32; block * MR * width] } else { Vec::new() };
        let mut pb = p0;
        while pb < p1 {
            let pe = (pb + block).min(p1);
            for s in 0..kslices {
                let (q0, q1) = (s * kc, ((s + 1) * kc).min(k2));
                let stage = Stage { first: s == 0, last: s + 1 == kslices };
                for ti in t0..t1 {
                    let j0 = ti * NV;
                    pack_b_tile(k, n, b, j0, (q0, q1), &mut bp);
                    let cols = NV.min(n - j0);
                    for p in pb..pe {
                        let rows = MR.min(m - p * MR);
                        let acc = if kslices > 1 { part[(p - pb) * MR * width + (ti - t0) * NV..].as_mut_ptr() } else { std::ptr::null_mut() };
                        // SAFETY: available() was checked by the caller; the packed tiles hold the
                        // slice's pairs; rows p·MR.. and columns j0..j0 + cols of out are in bounds and
                        // this task's own, as is the partial-sum block (MR rows of `width`).
                        unsafe {
                            T::kernel(ap[(p * k2 + q0) * MR..].as_ptr(), bp.as_ptr(), q1 - q0, (acc, width), stage, out.get().add(p * MR * ldo + j0), ldo, rows, cols)
                        };
                    }
                }
            }
            pb = pe;
        }
    };
    if tasks <= 1 {
        task(0)
    } else {
        crate::pool::for_each(tasks, &task)
    }
}

/// Where a k-slice sits: the first starts its sums at zero, the last rounds them into the output;
/// the others carry f32 partial sums.
#[derive(Clone, Copy)]
pub struct Stage {
    first: bool,
    last: bool,
}

/// Part `t` of `0..len` split into `parts` near-equal ranges.
fn split(len: usize, parts: usize, t: usize) -> (usize, usize) {
    (len * t / parts, len * (t + 1) / parts)
}

/// out[i][c] = bf16(Σ_p A_tile[p][i] · B_tile[p][c]) for `rows` ≤ 12 rows and `cols` ≤ 32 columns,
/// over one k-slice: sums start at zero or from `part` (f32, row stride `ldp`), and go to `part` or,
/// on the last slice, to out.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile_kernel(ap: *const u32, bp: *const u32, k2: usize, (part, ldp): (*mut f32, usize), stage: Stage, out: *mut u16, ldo: usize, rows: usize, cols: usize) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    // SAFETY: ap holds k2·12 and bp k2·32 u32 (the caller's packing); part (when k is sliced) holds
    // 12 rows of ldp ≥ 32; out holds `rows` rows of `ldo` from which `cols` columns are written.
    unsafe {
        if !stage.first {
            for (i, acci) in acc.iter_mut().enumerate() {
                acci[0] = _mm512_loadu_ps(part.add(i * ldp));
                acci[1] = _mm512_loadu_ps(part.add(i * ldp + 16));
            }
        }
        for p in 0..k2 {
            let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(bp.add(p * NV) as *const __m512i));
            let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(bp.add(p * NV + 16) as *const __m512i));
            let aq = ap.add(p * MR);
            for (i, acci) in acc.iter_mut().enumerate() {
                let av: __m512bh = std::mem::transmute(_mm512_set1_epi32(*aq.add(i) as i32));
                acci[0] = _mm512_dpbf16_ps(acci[0], av, b0);
                acci[1] = _mm512_dpbf16_ps(acci[1], av, b1);
            }
        }
        if !stage.last {
            for (i, acci) in acc.iter().enumerate() {
                _mm512_storeu_ps(part.add(i * ldp), acci[0]);
                _mm512_storeu_ps(part.add(i * ldp + 16), acci[1]);
            }
            return;
        }
        let mask = if cols >= 32 { u32::MAX } else { (1u32 << cols) - 1 };
        for (i, acci) in acc.iter().enumerate().take(rows) {
            let lo: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(acci[0]));
            let hi: __m256i = std::mem::transmute(_mm512_cvtneps_pbh(acci[1]));
            let o = out.add(i * ldo);
            if cols == 32 {
                _mm256_storeu_si256(o as *mut __m256i, lo);
                _mm256_storeu_si256(o.add(16) as *mut __m256i, hi);
            } else {
                _mm256_mask_storeu_epi16(o as *mut i16, mask as __mmask16, lo);
                _mm256_mask_storeu_epi16(o.add(16) as *mut i16, (mask >> 16) as __mmask16, hi);
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn tile_kernel(_: *const u32, _: *const u32, _: usize, _: (*mut f32, usize), _: Stage, _: *mut u16, _: usize, _: usize, _: usize) {
    unreachable!("available() is false off x86-64")
}

/// `tile_kernel` for f32: the same tile, FMAs of one f32 per lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile_kernel_f32(ap: *const u32, bp: *const u32, k2: usize, (part, ldp): (*mut f32, usize), stage: Stage, out: *mut f32, ldo: usize, rows: usize, cols: usize) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    // SAFETY: as in `tile_kernel`.
    unsafe {
        if !stage.first {
            for (i, acci) in acc.iter_mut().enumerate() {
                acci[0] = _mm512_loadu_ps(part.add(i * ldp));
                acci[1] = _mm512_loadu_ps(part.add(i * ldp + 16));
            }
        }
        for p in 0..k2 {
            // B's tile comes from L2 (96 KB at k = 768, past L1): its lines 16 steps ahead into L1
            // (6% of a 1024-row Linear's time on a Sapphire Rapids-class Xeon).
            _mm_prefetch::<_MM_HINT_T0>(bp.wrapping_add((p + 16) * NV) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(bp.wrapping_add((p + 16) * NV + 16) as *const i8);
            let b0 = _mm512_loadu_ps(bp.add(p * NV) as *const f32);
            let b1 = _mm512_loadu_ps(bp.add(p * NV + 16) as *const f32);
            let aq = ap.add(p * MR) as *const f32;
            for (i, acci) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*aq.add(i));
                acci[0] = _mm512_fmadd_ps(av, b0, acci[0]);
                acci[1] = _mm512_fmadd_ps(av, b1, acci[1]);
            }
        }
        let (dst, ld) = if stage.last { (out, ldo) } else { (part, ldp) };
        let rows = if stage.last { rows } else { MR };
        let mask = if cols >= 32 || !stage.last { u32::MAX } else { (1u32 << cols) - 1 };
        for (i, acci) in acc.iter().enumerate().take(rows) {
            let o = dst.add(i * ld);
            if mask == u32::MAX {
                _mm512_storeu_ps(o, acci[0]);
                _mm512_storeu_ps(o.add(16), acci[1]);
            } else {
                _mm512_mask_storeu_ps(o, mask as __mmask16, acci[0]);
                _mm512_mask_storeu_ps(o.add(16), (mask >> 16) as __mmask16, acci[1]);
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn tile_kernel_f32(_: *const u32, _: *const u32, _: usize, _: (*mut f32, usize), _: Stage, _: *mut f32, _: usize, _: usize, _: usize) {
    unreachable!("only at the AVX-512 level")
}

/// Whether f32 products may run on the register tiles (they need AVX-512's 32 registers).
pub fn f32_tiles_available() -> bool {
    crate::isa::level() == crate::isa::Level::Avx512
}

/// out (m×n, row stride `ldo`) = A (m×k) · B (k×n) in f32 on the register tiles, split over our
/// pool by columns (or rows): gemm's own threading scales poorly at a transformer's prefill sizes.
///
/// # Safety
/// `f32_tiles_available()`; A and B in bounds at their strides; out holds m rows of `ldo` ≥ n.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_f32(m: usize, n: usize, k: usize, a: Operand<f32>, b: Operand<f32>, out: *mut f32, ldo: usize, serial: bool) {
    if m == 0 || n == 0 {
        return;
    }
    let threads = if serial || m * n * k < SERIAL_MACS { 1 } else { crate::pool::threads() };
    // SAFETY: the caller's contract.
    unsafe {
        // Many rows of x on Intel: the packed tiles, whose output rows leave as whole lines
        // (`w_tiles` writes 12-column strips of 32 rows: 12% slower at 512-1024 rows of 768 on a
        // Sapphire Rapids-class Xeon); below that, and on AMD, W read in place saves the packing.
        let many_rows = crate::isa::intel() && (m >= 512 || (k <= 512 && m >= 128));
        // Past W_TILES_MAX_K (in slices of k) only for few rows, where packing all of W costs most, and
        // W's rows not 4 KB apart (then they share one L1 set and evict each other): 96 rows of 4864
        // into 896 at 0.83 of torch's time against 1.03 packed, 3072 (aliased) no faster (Emerald
        // Rapids Xeon, 1 thread).
        let long_k_ok = m <= 128 && (b.cs * 4) % 4096 != 0;
        if b.rs == 1 && a.cs == 1 && (k <= W_TILES_MAX_K || long_k_ok) && !many_rows {
            w_tiles(m, n, k, a, b, SendPtr(out), ldo, threads)
        } else {
            tiles::<f32>(m, n, k, a, b, SendPtr(out), ldo, threads)
        }
    }
}

/// Rows of W per tile of `w_kernel` (broadcast straight from W's rows).
const WR: usize = 12;
/// Bytes of x's panels that `w_tiles` runs all W tiles past before the next ones (within L2).
const PASS_BYTES: usize = 768 << 10;
/// Past this inner dim a tile's 12 rows of W and its panel no longer sit in L2 beside each other
/// (measured: 8% slower than the packed tiles at k = 3072); the packed tiles slice k.
const W_TILES_MAX_K: usize = 2048;
/// Inner dims past `W_SLICE_K` go through `w_tiles` in slices of about `W_SLICE`.
const W_SLICE_K: usize = 1024;
const W_SLICE: usize = 768;

/// `x @ W.T` with x's and W's rows contiguous in k: tiles of 12 rows of W (output columns) × 32
/// rows of x (output rows, in the lanes). W is read as it is, its elements broadcast, so nothing of
/// it is packed (packing transposed the whole weight on every call: a tenth of a transformer's
/// prefill); x goes to [k][32] panels (the smaller transpose when x has fewer rows than W).
#[allow(clippy::too_many_arguments)]
unsafe fn w_tiles(m: usize, n: usize, k: usize, a: Operand<f32>, b: Operand<f32>, out: SendPtr<f32>, ldo: usize, threads: usize) {
    let mtiles = m.div_ceil(NV);
    // xᵀ panels: B' = xᵀ has element (k, i) at x's (i, k), i.e. columns that are rows contiguous in k.
    let xt = Operand { ptr: a.ptr, rs: a.cs, cs: a.rs };
    let mut panels = vec![0u32; mtiles * k * NV];
    let pack = |t: usize, dst: &mut [u32]| pack_b_tile(k, m, xt, t * NV, (0, k), dst);
    if threads == 1 || mtiles == 1 {
        panels.chunks_mut(k * NV).enumerate().for_each(|(t, d)| pack(t, d));
    } else {
        crate::pool::chunks_mut(&mut panels, k * NV, pack);
    }
    let ntiles = n.div_ceil(WR);
    let tasks = threads.min(ntiles);
    let panels = &panels;
    // A long inner dim goes in slices, each summed into the output: a whole panel of k = 3072 left
    // one panel per pass, so W (9 MB for 3072 into 768) came from L3 once per 32 rows of x (197 rows:
    // 1.47x torch's time at 1 thread on an Emerald Rapids Xeon).
    let kc = if k <= W_SLICE_K { k } else { k.div_ceil(k.div_ceil(W_SLICE)) };
    // x's panels in passes that stay in L2 while every W tile of the task goes past them: all of
    // x read again per W tile came from L3 (1024 rows of 768: 768 MB a call, at half the FMA rate
    // on a mesh-L3 Xeon); W is read once per pass instead.
    let group = (PASS_BYTES / (kc * NV * 4)).max(1);
    let task = |t: usize| {
        let (t0, t1) = split(ntiles, tasks, t);
        for k0 in (0..k).step_by(kc) {
            let (kl, sum) = (kc.min(k - k0), k0 > 0);
            for g0 in (0..mtiles).step_by(group) {
                for ti in t0..t1 {
                    let (j0, rows) = (ti * WR, WR.min(n - ti * WR));
                    for p in g0..(g0 + group).min(mtiles) {
                        let (i0, cols) = (p * NV, NV.min(m - p * NV));
                        // SAFETY: W rows j0..j0 + rows hold k elements at b.cs apart; panel p holds k × 32
                        // ([k][32], so its slice k0.. starts at k0 · 32); output rows i0.. and columns
                        // j0.. are this task's own.
                        unsafe {
                            let w = b.offset(j0 * b.cs).ptr.add(k0);
                            let (xt, o) = (panels[p * k * NV + k0 * NV..].as_ptr() as *const f32, out.get().add(i0 * ldo + j0));
                            // The pass's first panel also asks for the next tile's rows of W: a weight is
                            // read once per forward, from memory, in 12 short streams the hardware
                            // prefetcher is slow to follow (18 ms of a 135M model's 128-token prefill).
                            let next = if p == g0 && ti + 1 < t1 { (b.offset((j0 + WR) * b.cs).ptr.add(k0), WR.min(n - j0 - WR)) } else { (w, 0) };
                            if cols <= 16 {
                                w_kernel::<1>(w, b.cs, xt, kl, o, ldo, rows, cols, next, sum)
                            } else {
                                w_kernel::<2>(w, b.cs, xt, kl, o, ldo, rows, cols, next, sum)
                            }
                        };
                    }
                }
            }
        }
    };
    // One task runs on this thread (the pool does not wake for it).
    crate::pool::for_each(tasks, &task)
}

/// out[i][j] = Σ_p xᵀ[p][i] · W[j][p] for `rows` ≤ 12 rows of W (from `w`, `ldw` apart) and `cols`
/// ≤ 16·V rows of x (panel `xt`, [k][32]); results leave the registers through a small transpose.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn w_kernel<const V: usize>(
    w: *const f32, ldw: usize, xt: *const f32, k: usize, out: *mut f32, ldo: usize, rows: usize, cols: usize, (ahead_ptr, ahead_rows): (*const f32, usize),
    sum: bool,
) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); V]; WR];
    // Rows past `rows` read row 0 again (their sums are dropped): no read past W.
    let wr: [*const f32; WR] = std::array::from_fn(|i| if i < rows { w.wrapping_add(i * ldw) } else { w });
    let ahead = ahead_rows == WR;
    // SAFETY: the caller's bounds.
    unsafe {
        for p0 in (0..k).step_by(16) {
            // One line of each of the next tile's rows into L2 per 16 steps (one line of this tile's
            // rows): outside the steps, whose loop then holds only loads and FMAs (the per-step
            // prefetch's address arithmetic made it front-end bound).
            if ahead {
                for i in 0..WR {
                    _mm_prefetch::<_MM_HINT_T1>(ahead_ptr.wrapping_add(i * ldw + p0) as *const i8);
                }
            }
            for p in p0..(p0 + 16).min(k) {
                let xv: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(xt.add(p * NV + 16 * v)));
                for (i, acci) in acc.iter_mut().enumerate() {
                    let wv = _mm512_set1_ps(*wr[i].add(p));
                    for v in 0..V {
                        acci[v] = _mm512_fmadd_ps(wv, xv[v], acci[v]);
                    }
                }
            }
        }
        // Out through 16×16 transposes: row c of the output gets its `rows` values in one masked
        // store (element by element, the 12-column strips of 32 rows cost 14% of a 1024-row product).
        let mask = ((1u32 << rows) - 1) as __mmask16;
        for v in 0..V {
            let r = transpose16(std::array::from_fn(|i| acc.get(i).map_or(_mm512_setzero_si512(), |a| _mm512_castps_si512(a[v]))));
            for (t, x) in r.iter().enumerate() {
                let c = 16 * v + TRANSPOSE_ORDER[t];
                if c < cols {
                    let o = out.add(c * ldo);
                    // A later slice of k adds to what the earlier ones left.
                    let x = if sum { _mm512_castps_si512(_mm512_add_ps(_mm512_maskz_loadu_ps(mask, o), _mm512_castsi512_ps(*x))) } else { *x };
                    _mm512_mask_storeu_epi32(o as *mut i32, mask, x);
                }
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
#[allow(clippy::too_many_arguments)]
unsafe fn w_kernel<const V: usize>(_: *const f32, _: usize, _: *const f32, _: usize, _: *mut f32, _: usize, _: usize, _: usize, _: (*const f32, usize), _: bool) {
    unreachable!("only at the AVX-512 level")
}
