use super::k_quants::{
    BlockQ2K, BlockQ3K, BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5K, BlockQ5_0, BlockQ5_1, BlockQ6K, BlockQ8K,
    BlockQ8_0, BlockQ8_1, QK8_0, QK8_1, QK_K,
};
use byteorder::{ByteOrder, LittleEndian};
use half::f16;

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

#[target_feature(enable = "avx2,fma")]
pub(crate) fn sum_i16_pairs_float(x: __m256i) -> __m256 {
    let ones = _mm256_set1_epi16(1);
    let summed_pairs = _mm256_madd_epi16(ones, x);
    _mm256_cvtepi32_ps(summed_pairs)
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn mul_sum_us8_pairs_float(ax: __m256i, sy: __m256i) -> __m256 {
    let dot = _mm256_maddubs_epi16(ax, sy);
    sum_i16_pairs_float(dot)
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn hsum_float_8(x: __m256) -> f32 {
    let res = _mm256_extractf128_ps(x, 1);
    let res = _mm_add_ps(res, _mm256_castps256_ps128(x));
    let res = _mm_add_ps(res, _mm_movehl_ps(res, res));
    let res = _mm_add_ss(res, _mm_movehdup_ps(res));
    _mm_cvtss_f32(res)
}

/// # Safety
/// `rsi` must point to at least 16 readable bytes.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn bytes_from_nibbles_32(rsi: *const u8) -> __m256i {
    let tmp = unsafe { _mm_loadu_si128(rsi as *const __m128i) };
    let bytes = _mm256_insertf128_si256::<1>(_mm256_castsi128_si256(tmp), _mm_srli_epi16(tmp, 4));
    let low_mask = _mm256_set1_epi8(0xF);
    _mm256_and_si256(low_mask, bytes)
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn mul_sum_i8_pairs_float(x: __m256i, y: __m256i) -> __m256 {
    let ax = _mm256_sign_epi8(x, x);
    let sy = _mm256_sign_epi8(y, x);
    mul_sum_us8_pairs_float(ax, sy)
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q4_0_q8_0(n: usize, xs: &[BlockQ4_0], ys: &[BlockQ8_0]) -> f32 {
    debug_assert!(
        n.is_multiple_of(QK8_0),
        "vec_dot_q4_0_q8_0: {n} is not divisible by {QK8_0}"
    );
    unsafe {
        let mut acc = _mm256_setzero_ps();
        for (x, y) in xs.iter().zip(ys.iter()) {
            let d = _mm256_set1_ps(f16::to_f32(x.d) * f16::to_f32(y.d));
            let bx = bytes_from_nibbles_32(x.qs.as_ptr());
            let off = _mm256_set1_epi8(8);
            let bx = _mm256_sub_epi8(bx, off);
            let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            let q = mul_sum_i8_pairs_float(bx, by);
            acc = _mm256_fmadd_ps(d, q, acc);
        }
        hsum_float_8(acc)
    }
}

/// candle-bind's patch: 0xFF in byte i where bit i of the 32 bits at `x` is set (ggml's
/// bytes_from_bits_32).
///
/// # Safety
/// `x` must point to 4 readable bytes.
#[target_feature(enable = "avx2,fma")]
unsafe fn bytes_from_bits_32(x: *const u8) -> __m256i {
    let x32 = unsafe { std::ptr::read_unaligned(x as *const i32) };
    let shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(x32), shuf);
    let bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1))
}

// candle-bind's patch: Q5_0 and Q5_1 against Q8_0 / Q8_1 activations after ggml's AVX2
// ggml_vec_dot_q5_0_q8_0 / q5_1_q8_1; Candle had only the scalar loops (a tenth of llama.cpp's
// speed on Q4_K-class files, which fall back to Q5_0 where rows are not whole K blocks).
#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q5_0_q8_0(n: usize, xs: &[BlockQ5_0], ys: &[BlockQ8_0]) -> f32 {
    debug_assert!(n.is_multiple_of(QK8_0), "vec_dot_q5_0_q8_0: {n} is not divisible by {QK8_0}");
    unsafe {
        let mut acc = _mm256_setzero_ps();
        for (x, y) in xs.iter().zip(ys.iter()) {
            let d = _mm256_set1_ps(f16::to_f32(x.d) * f16::to_f32(y.d));
            // nibble | 0xF0 where the fifth bit is clear: as i8, q - 16
            let hi = _mm256_andnot_si256(bytes_from_bits_32(x.qh.as_ptr()), _mm256_set1_epi8(0xF0u8 as i8));
            let bx = _mm256_or_si256(bytes_from_nibbles_32(x.qs.as_ptr()), hi);
            let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            acc = _mm256_fmadd_ps(d, mul_sum_i8_pairs_float(bx, by), acc);
        }
        hsum_float_8(acc)
    }
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q5_1_q8_1(n: usize, xs: &[BlockQ5_1], ys: &[BlockQ8_1]) -> f32 {
    debug_assert!(n.is_multiple_of(QK8_1), "vec_dot_q5_1_q8_1: {n} is not divisible by {QK8_1}");
    unsafe {
        let mut acc = _mm256_setzero_ps();
        let mut summs = 0f32;
        for (x, y) in xs.iter().zip(ys.iter()) {
            let dx = _mm256_set1_ps(f16::to_f32(x.d));
            summs += f16::to_f32(x.m) * f16::to_f32(y.s);
            let hi = _mm256_and_si256(bytes_from_bits_32(x.qh.as_ptr()), _mm256_set1_epi8(0x10));
            let bx = _mm256_or_si256(bytes_from_nibbles_32(x.qs.as_ptr()), hi);
            let dy = _mm256_set1_ps(f16::to_f32(y.d));
            let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            acc = _mm256_fmadd_ps(mul_sum_us8_pairs_float(bx, by), _mm256_mul_ps(dx, dy), acc);
        }
        hsum_float_8(acc) + summs
    }
}

// candle-bind's patch: Q4_1 weights (x = d*q + m) against Q8_1 activations (y = d*q, s = d*sum q),
// after ggml's ggml_vec_dot_q4_1_q8_1; Candle had only the scalar loop for Q4_1. The block scales
// convert with F16C, two blocks per step; with AVX512-VNNI (256-bit, VL) one vpdpbusd replaces the
// maddubs + madd pair.
macro_rules! q4_1_q8_1_dot {
    ($xs:expr, $ys:expr, $sum_u8_i8:expr) => {{
        let (xs, ys): (&[BlockQ4_1], &[BlockQ8_1]) = ($xs, $ys);
        let nb = xs.len().min(ys.len());
        let low = _mm256_set1_epi8(0xF);
        let mut acc = [_mm256_setzero_ps(), _mm256_setzero_ps()];
        let mut scales = _mm_setzero_ps(); // lane 1 sums m_x * s_y
        for i in 0..nb {
            let (x, y) = (&xs[i], &ys[i]);
            // [d_x, m_x] * [d_y, s_y]: both pairs sit at the start of their blocks.
            let xdm = _mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(x as *const BlockQ4_1 as *const i32)));
            let yds = _mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(y as *const BlockQ8_1 as *const i32)));
            let p = _mm_mul_ps(xdm, yds);
            scales = _mm_add_ps(scales, p);
            let nib = _mm_loadu_si128(x.qs.as_ptr() as *const __m128i);
            let qx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(nib, 4), nib), low);
            let qy = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            let sums = $sum_u8_i8(qx, qy);
            acc[i & 1] = _mm256_fmadd_ps(_mm256_broadcastss_ps(p), _mm256_cvtepi32_ps(sums), acc[i & 1]);
        }
        hsum_float_8(_mm256_add_ps(acc[0], acc[1])) + _mm_cvtss_f32(_mm_shuffle_ps::<1>(scales, scales))
    }};
}

// candle-bind's patch: four Q4_1 weight rows against one Q8_1 activation row, each activation
// block loaded and its scales converted once (the prefill matmul's inner step).
macro_rules! q4_1_q8_1_dot4 {
    ($xs:expr, $ys:expr, $sum_u8_i8:expr) => {{
        let (xs, ys): ([&[BlockQ4_1]; 4], &[BlockQ8_1]) = ($xs, $ys);
        let nb = ys.len().min(xs.iter().map(|x| x.len()).min().unwrap_or(0));
        let low = _mm256_set1_epi8(0xF);
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut scales = [_mm_setzero_ps(); 4];
        for i in 0..nb {
            let y = &ys[i];
            let yds = _mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(y as *const BlockQ8_1 as *const i32)));
            let qy = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            for r in 0..4 {
                let x = &xs[r][i];
                let xdm = _mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(x as *const BlockQ4_1 as *const i32)));
                let p = _mm_mul_ps(xdm, yds);
                scales[r] = _mm_add_ps(scales[r], p);
                let nib = _mm_loadu_si128(x.qs.as_ptr() as *const __m128i);
                let qx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(nib, 4), nib), low);
                acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(p), _mm256_cvtepi32_ps($sum_u8_i8(qx, qy)), acc[r]);
            }
        }
        let out = |r: usize| hsum_float_8(acc[r]) + _mm_cvtss_f32(_mm_shuffle_ps::<1>(scales[r], scales[r]));
        (out(0), out(1), out(2), out(3))
    }};
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot4_q4_1_q8_1(xs: [&[BlockQ4_1]; 4], ys: &[BlockQ8_1]) -> (f32, f32, f32, f32) {
    let ones = _mm256_set1_epi16(1);
    unsafe { q4_1_q8_1_dot4!(xs, ys, |a, b| _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones)) }
}

/// # Safety
/// The CPU must have AVX2, FMA, F16C, AVX512-VL and AVX512-VNNI.
#[target_feature(enable = "avx2,fma,f16c,avx512vl,avx512vnni")]
pub(crate) unsafe fn vec_dot4_q4_1_q8_1_vnni(xs: [&[BlockQ4_1]; 4], ys: &[BlockQ8_1]) -> (f32, f32, f32, f32) {
    unsafe { q4_1_q8_1_dot4!(xs, ys, |a, b| _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b)) }
}

// candle-bind's patch: four Q4_1 weight rows against R Q8_1 activation rows (the matmul's step for
// several rows: batched decoding, prefill tiles). Each weight block is unpacked once for all R rows
// instead of once per row. Every result is bitwise `q4_1_q8_1_dot4`'s: the same products (d_x·d_y,
// m_x·s_y, each of two f32 values) summed in the same order, only laid out differently in registers.
macro_rules! q4_1_q8_1_dot4_rows {
    ($xs:expr, $ys:expr, $out:expr, $r:expr, $sum_u8_i8:expr) => {{
        let (xs, ys, out): ([&[BlockQ4_1]; 4], &[&[BlockQ8_1]], &mut [[f32; 4]]) = ($xs, $ys, $out);
        let nb = xs.iter().map(|x| x.len()).chain(ys.iter().map(|y| y.len())).min().unwrap_or(0);
        let low = _mm256_set1_epi8(0xF);
        let mut acc = [[_mm256_setzero_ps(); 4]; $r];
        let mut mins = [_mm_setzero_ps(); $r]; // lane w sums m_x(w) * s_y
        for i in 0..nb {
            // d_x of the four weight blocks in lanes 0..3, m_x in lanes 4..7: one conversion.
            let dm = _mm256_cvtph_ps(_mm_set_epi16(
                xs[3][i].m.to_bits() as i16, xs[2][i].m.to_bits() as i16, xs[1][i].m.to_bits() as i16, xs[0][i].m.to_bits() as i16,
                xs[3][i].d.to_bits() as i16, xs[2][i].d.to_bits() as i16, xs[1][i].d.to_bits() as i16, xs[0][i].d.to_bits() as i16,
            ));
            let mx = _mm256_extractf128_ps::<1>(dm);
            let dx = [
                _mm256_permutevar8x32_ps(dm, _mm256_set1_epi32(0)),
                _mm256_permutevar8x32_ps(dm, _mm256_set1_epi32(1)),
                _mm256_permutevar8x32_ps(dm, _mm256_set1_epi32(2)),
                _mm256_permutevar8x32_ps(dm, _mm256_set1_epi32(3)),
            ];
            let qx: [__m256i; 4] = std::array::from_fn(|w| {
                let nib = _mm_loadu_si128(xs[w][i].qs.as_ptr() as *const __m128i);
                _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(nib, 4), nib), low)
            });
            for j in 0..$r {
                let y = &ys[j][i];
                let yds = _mm_cvtph_ps(_mm_cvtsi32_si128(std::ptr::read_unaligned(y as *const BlockQ8_1 as *const i32)));
                mins[j] = _mm_add_ps(mins[j], _mm_mul_ps(mx, _mm_shuffle_ps::<0b01_01_01_01>(yds, yds)));
                let dy = _mm256_broadcastss_ps(yds);
                let qy = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
                for w in 0..4 {
                    let sums = $sum_u8_i8(qx[w], qy);
                    acc[j][w] = _mm256_fmadd_ps(_mm256_mul_ps(dx[w], dy), _mm256_cvtepi32_ps(sums), acc[j][w]);
                }
            }
        }
        for j in 0..$r {
            let mut m = [0f32; 4];
            _mm_storeu_ps(m.as_mut_ptr(), mins[j]);
            out[j] = std::array::from_fn(|w| hsum_float_8(acc[j][w]) + m[w]);
        }
    }};
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C; `ys` and `out` hold R rows.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot4_rows_q4_1_q8_1<const R: usize>(xs: [&[BlockQ4_1]; 4], ys: &[&[BlockQ8_1]], out: &mut [[f32; 4]]) {
    let ones = _mm256_set1_epi16(1);
    unsafe { q4_1_q8_1_dot4_rows!(xs, ys, out, R, |a, b| _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones)) }
}

/// # Safety
/// The CPU must have AVX2, FMA, F16C, AVX512-VL and AVX512-VNNI; `ys` and `out` hold R rows.
#[target_feature(enable = "avx2,fma,f16c,avx512vl,avx512vnni")]
pub(crate) unsafe fn vec_dot4_rows_q4_1_q8_1_vnni<const R: usize>(xs: [&[BlockQ4_1]; 4], ys: &[&[BlockQ8_1]], out: &mut [[f32; 4]]) {
    unsafe { q4_1_q8_1_dot4_rows!(xs, ys, out, R, |a, b| _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b)) }
}

// candle-bind's patch: four Q8_0 weight rows against R Q8_0 activation rows, each weight block's
// magnitude taken once for all R rows; bitwise `q8_0_dot4`'s results (the same products and sums).
// AVX2 only: with AVX512-VNNI the 512-bit kernel below runs instead.
macro_rules! q8_0_dot4_rows {
    ($xs:expr, $ys:expr, $out:expr, $r:expr, $sum_u8_i8:expr) => {{
        let (xs, ys, out): ([&[BlockQ8_0]; 4], &[&[BlockQ8_0]], &mut [[f32; 4]]) = ($xs, $ys, $out);
        let nb = xs.iter().map(|x| x.len()).chain(ys.iter().map(|y| y.len())).min().unwrap_or(0);
        let mut acc = [[_mm256_setzero_ps(); 4]; $r];
        for i in 0..nb {
            let dw = _mm_cvtph_ps(_mm_set_epi16(
                0, 0, 0, 0,
                xs[3][i].d.to_bits() as i16, xs[2][i].d.to_bits() as i16, xs[1][i].d.to_bits() as i16, xs[0][i].d.to_bits() as i16,
            ));
            let bx: [__m256i; 4] = std::array::from_fn(|w| _mm256_loadu_si256(xs[w][i].qs.as_ptr() as *const __m256i));
            let ax: [__m256i; 4] = std::array::from_fn(|w| _mm256_sign_epi8(bx[w], bx[w]));
            for j in 0..$r {
                let y = &ys[j][i];
                let d = _mm_mul_ps(dw, _mm_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(y.d.to_bits() as i32))));
                let ds = [
                    _mm256_broadcastss_ps(d),
                    _mm256_broadcastss_ps(_mm_shuffle_ps::<0b01_01_01_01>(d, d)),
                    _mm256_broadcastss_ps(_mm_shuffle_ps::<0b10_10_10_10>(d, d)),
                    _mm256_broadcastss_ps(_mm_shuffle_ps::<0b11_11_11_11>(d, d)),
                ];
                let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
                for w in 0..4 {
                    let q = $sum_u8_i8(ax[w], _mm256_sign_epi8(by, bx[w]));
                    acc[j][w] = _mm256_fmadd_ps(ds[w], _mm256_cvtepi32_ps(q), acc[j][w]);
                }
            }
        }
        for j in 0..$r {
            out[j] = std::array::from_fn(|w| hsum_float_8(acc[j][w]));
        }
    }};
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C; `ys` and `out` hold R rows.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot4_rows_q8_0_q8_0<const R: usize>(xs: [&[BlockQ8_0]; 4], ys: &[&[BlockQ8_0]], out: &mut [[f32; 4]]) {
    let ones = _mm256_set1_epi16(1);
    unsafe { q8_0_dot4_rows!(xs, ys, out, R, |a, b| _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones)) }
}

// candle-bind's patch: Q8_0 weights against Q8_0 activations on 512-bit registers, W weight rows
// against R activation rows per call, two blocks per instruction. The activations are offset to
// unsigned (a + 128, one xor) so that one vpdpbusd multiplies them with the signed weights; the
// offset's share, 128·Σw per lane, is computed once per weight block pair for all R rows and is the
// accumulator vpdpbusd starts from (negated). Integer sums are exact, so only the float steps set
// the result: per block d_w·d_y times the sum, accumulated lane-wise with the even blocks in the low
// half and the odd ones in the high half, reduced at the end. Each (weight row, activation row)
// result goes through the same operations whatever W and R are, so the matmul can call this kernel
// for every row count (W = 1, one weight row after another: one sequential stream from memory, for
// a decoded row; W = 4 for several rows) and a row's result never depends on its neighbours.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(crate) unsafe fn vec_dot_rows_q8_0_q8_0_512<const W: usize, const R: usize>(
    xs: [&[BlockQ8_0]; W],
    ys: &[&[BlockQ8_0]],
    out: &mut [[f32; 4]],
) {
    let nb = xs.iter().map(|x| x.len()).chain(ys.iter().map(|y| y.len())).min().unwrap_or(0);
    let zero = _mm512_setzero_si512();
    let k128 = _mm512_set1_epi8(-128);
    // The 2·W scale products sit in lanes w + W·g (weight row w, block b + g).
    let idx: [__m512i; W] = std::array::from_fn(|w| {
        _mm512_inserti64x4::<1>(_mm512_set1_epi32(w as i32), _mm256_set1_epi32((W + w) as i32))
    });
    let idx_y = if W == 4 { _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1) } else { _mm256_setr_epi32(0, 1, 1, 1, 1, 1, 1, 1) };
    let mut acc = [[_mm512_setzero_ps(); W]; R];
    let load_pair = |lo: *const i8, hi: Option<*const i8>| -> __m512i {
        let l = _mm512_castsi256_si512(unsafe { _mm256_loadu_si256(lo as *const __m256i) });
        match hi {
            Some(h) => _mm512_inserti64x4::<1>(l, unsafe { _mm256_loadu_si256(h as *const __m256i) }),
            None => _mm512_inserti64x4::<1>(l, _mm256_setzero_si256()),
        }
    };
    let mut b = 0;
    while b < nb {
        let two = b + 1 < nb;
        let d0 = |w: usize| xs[w.min(W - 1)][b].d.to_bits() as i16;
        let d1 = |w: usize| if two { xs[w.min(W - 1)][b + 1].d.to_bits() as i16 } else { 0 };
        let wx: [__m512i; W] = std::array::from_fn(|w| load_pair(xs[w][b].qs.as_ptr(), two.then(|| xs[w][b + 1].qs.as_ptr())));
        let negc: [__m512i; W] = std::array::from_fn(|w| _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k128, wx[w])));
        let dw = if W == 4 {
            _mm256_cvtph_ps(_mm_set_epi16(d1(3), d1(2), d1(1), d1(0), d0(3), d0(2), d0(1), d0(0)))
        } else {
            _mm256_cvtph_ps(_mm_set_epi16(0, 0, 0, 0, 0, 0, d1(0), d0(0)))
        };
        for j in 0..R {
            let y = ys[j];
            let ay = _mm512_xor_si512(load_pair(y[b].qs.as_ptr(), two.then(|| y[b + 1].qs.as_ptr())), k128);
            let y1 = if two { y[b + 1].d.to_bits() } else { 0 };
            let dy2 = _mm_cvtph_ps(_mm_cvtsi32_si128(y[b].d.to_bits() as i32 | (y1 as i32) << 16));
            let prod = _mm512_castps256_ps512(_mm256_mul_ps(dw, _mm256_permutevar8x32_ps(_mm256_castps128_ps256(dy2), idx_y)));
            for w in 0..W {
                let q = _mm512_dpbusd_epi32(negc[w], ay, wx[w]);
                acc[j][w] = _mm512_fmadd_ps(_mm512_permutexvar_ps(idx[w], prod), _mm512_cvtepi32_ps(q), acc[j][w]);
            }
        }
        b += 2;
    }
    for j in 0..R {
        for w in 0..W {
            out[j][w] = _mm512_reduce_add_ps(acc[j][w]);
        }
    }
}

/// candle-bind's patch: ggml's AVX2 quantize_row_q8_1: per 32 floats, d = max|x| / 127, q = x / d
/// rounded to nearest (ties to even, as ggml's SIMD path), s = d * sum(q).
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `xs` holds 32 floats per block of `ys`.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn quantize_row_q8_1(xs: &[f32], ys: &mut [BlockQ8_1]) {
    for (y, x) in ys.iter_mut().zip(xs.chunks_exact(QK8_1)) {
        let (amax, sum) = unsafe { quantize_block_q8(x, &mut y.qs) };
        let d = amax / 127.0;
        y.d = f16::from_f32(d);
        y.s = f16::from_f32(sum as f32 * d);
    }
}

/// candle-bind's patch: one block of `quantize_row_q8_1` (its 32 values into `qs`, x / d rounded
/// to nearest with d = max|x| / 127): (max|x|, the sum of the quantized values). Shared with the
/// tile kernels' activation blocks (`repack_x86::quantize_row_act`).
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `x` holds at least 32 floats.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn quantize_block_q8(x: &[f32], qs: &mut [i8; QK8_1]) -> (f32, i32) {
    let sign = _mm256_set1_ps(-0.0);
    let perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let v: [__m256; 4] = std::array::from_fn(|j| unsafe { _mm256_loadu_ps(x[..QK8_1].as_ptr().add(8 * j)) });
    let m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                          _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    let m = _mm_max_ps(_mm256_extractf128_ps::<1>(m), _mm256_castps256_ps128(m));
    let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    let amax = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
    let id = _mm256_set1_ps(if amax != 0.0 { 127.0 / amax } else { 0.0 });
    let q: [__m256i; 4] = std::array::from_fn(|j| {
        _mm256_cvtps_epi32(_mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(v[j], id)))
    });
    let sum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    let sum = _mm_add_epi32(_mm256_extracti128_si256::<1>(sum), _mm256_castsi256_si128(sum));
    let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b01_00_11_10>(sum));
    let sum = _mm_cvtsi128_si32(_mm_add_epi32(sum, _mm_shuffle_epi32::<0b10_11_00_01>(sum)));
    let packed = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    unsafe { _mm256_storeu_si256(qs.as_mut_ptr() as *mut __m256i, _mm256_permutevar8x32_epi32(packed, perm)) };
    (amax, sum)
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot_q4_1_q8_1(n: usize, xs: &[BlockQ4_1], ys: &[BlockQ8_1]) -> f32 {
    debug_assert!(n.is_multiple_of(QK8_1), "vec_dot_q4_1_q8_1: {n} is not divisible by {QK8_1}");
    let ones = _mm256_set1_epi16(1);
    unsafe { q4_1_q8_1_dot!(xs, ys, |a, b| _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones)) }
}

/// # Safety
/// The CPU must have AVX2, FMA, F16C, AVX512-VL and AVX512-VNNI.
#[target_feature(enable = "avx2,fma,f16c,avx512vl,avx512vnni")]
pub(crate) unsafe fn vec_dot_q4_1_q8_1_vnni(n: usize, xs: &[BlockQ4_1], ys: &[BlockQ8_1]) -> f32 {
    debug_assert!(n.is_multiple_of(QK8_1), "vec_dot_q4_1_q8_1: {n} is not divisible by {QK8_1}");
    unsafe { q4_1_q8_1_dot!(xs, ys, |a, b| _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b)) }
}

/// candle-bind's patch: Q8_0 x Q8_0 with one vpdpbusd per block (|x| unsigned times y with x's
/// sign) and the two scales converted together by F16C.
///
/// # Safety
/// The CPU must have AVX2, FMA, F16C, AVX512-VL and AVX512-VNNI.
#[target_feature(enable = "avx2,fma,f16c,avx512vl,avx512vnni")]
pub(crate) unsafe fn vec_dot_q8_0_q8_0_vnni(n: usize, xs: &[BlockQ8_0], ys: &[BlockQ8_0]) -> f32 {
    debug_assert!(n.is_multiple_of(QK8_0), "vec_dot_q8_0_q8_0: {n} is not divisible by {QK8_0}");
    let mut acc = [_mm256_setzero_ps(), _mm256_setzero_ps()];
    for (i, (x, y)) in xs.iter().zip(ys.iter()).enumerate() {
        let dd = _mm_cvtph_ps(_mm_cvtsi32_si128(x.d.to_bits() as i32 | (y.d.to_bits() as i32) << 16));
        let d = _mm256_broadcastss_ps(_mm_mul_ss(dd, _mm_movehdup_ps(dd)));
        let bx = unsafe { _mm256_loadu_si256(x.qs.as_ptr() as *const __m256i) };
        let by = unsafe { _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i) };
        let q = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(bx, bx), _mm256_sign_epi8(by, bx));
        acc[i & 1] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(q), acc[i & 1]);
    }
    hsum_float_8(_mm256_add_ps(acc[0], acc[1]))
}

// candle-bind's patch: four Q8_0 weight rows against one Q8_0 activation row, each activation block
// loaded and its scale converted once, the four weight scales converted together (the matmul's
// inner step, decode and prefill).
macro_rules! q8_0_dot4 {
    ($xs:expr, $ys:expr, $sum_u8_i8:expr) => {{
        let (xs, ys): ([&[BlockQ8_0]; 4], &[BlockQ8_0]) = ($xs, $ys);
        let nb = ys.len().min(xs.iter().map(|x| x.len()).min().unwrap_or(0));
        let mut acc = [_mm256_setzero_ps(); 4];
        for i in 0..nb {
            let y = &ys[i];
            // The activation's scale in lane 4, the four weight scales in lanes 0..3: one conversion.
            let dd = _mm256_cvtph_ps(_mm_set_epi16(
                0, 0, 0, y.d.to_bits() as i16,
                xs[3][i].d.to_bits() as i16, xs[2][i].d.to_bits() as i16,
                xs[1][i].d.to_bits() as i16, xs[0][i].d.to_bits() as i16,
            ));
            let d = _mm_mul_ps(_mm256_castps256_ps128(dd), _mm_broadcastss_ps(_mm256_extractf128_ps::<1>(dd)));
            let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            let bs = [
                _mm256_broadcastss_ps(d),
                _mm256_broadcastss_ps(_mm_shuffle_ps::<0b01_01_01_01>(d, d)),
                _mm256_broadcastss_ps(_mm_shuffle_ps::<0b10_10_10_10>(d, d)),
                _mm256_broadcastss_ps(_mm_shuffle_ps::<0b11_11_11_11>(d, d)),
            ];
            for r in 0..4 {
                let bx = _mm256_loadu_si256(xs[r][i].qs.as_ptr() as *const __m256i);
                let q = $sum_u8_i8(_mm256_sign_epi8(bx, bx), _mm256_sign_epi8(by, bx));
                acc[r] = _mm256_fmadd_ps(bs[r], _mm256_cvtepi32_ps(q), acc[r]);
            }
        }
        (hsum_float_8(acc[0]), hsum_float_8(acc[1]), hsum_float_8(acc[2]), hsum_float_8(acc[3]))
    }};
}

/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(crate) unsafe fn vec_dot4_q8_0_q8_0(xs: [&[BlockQ8_0]; 4], ys: &[BlockQ8_0]) -> (f32, f32, f32, f32) {
    let ones = _mm256_set1_epi16(1);
    unsafe { q8_0_dot4!(xs, ys, |a, b| _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones)) }
}

/// # Safety
/// The CPU must have AVX2, FMA, F16C, AVX512-VL and AVX512-VNNI.
#[target_feature(enable = "avx2,fma,f16c,avx512vl,avx512vnni")]
pub(crate) unsafe fn vec_dot4_q8_0_q8_0_vnni(xs: [&[BlockQ8_0]; 4], ys: &[BlockQ8_0]) -> (f32, f32, f32, f32) {
    unsafe { q8_0_dot4!(xs, ys, |a, b| _mm256_dpbusd_epi32(_mm256_setzero_si256(), a, b)) }
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q8_0_q8_0(n: usize, xs: &[BlockQ8_0], ys: &[BlockQ8_0]) -> f32 {
    debug_assert!(
        n.is_multiple_of(QK8_0),
        "vec_dot_q8_0_q8_0: {n} is not divisible by {QK8_0}"
    );
    unsafe {
        let mut acc = _mm256_setzero_ps();
        for (x, y) in xs.iter().zip(ys.iter()) {
            let d = _mm256_set1_ps(f16::to_f32(x.d) * f16::to_f32(y.d));
            let bx = _mm256_loadu_si256(x.qs.as_ptr() as *const __m256i);
            let by = _mm256_loadu_si256(y.qs.as_ptr() as *const __m256i);
            let q = mul_sum_i8_pairs_float(bx, by);
            acc = _mm256_fmadd_ps(d, q, acc);
        }
        hsum_float_8(acc)
    }
}

/// # Safety
/// `i` must be less than 8.
#[target_feature(enable = "avx2,fma")]
unsafe fn get_scale_shuffle(i: usize) -> __m128i {
    const K_SHUFFLE: [u8; 128] = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3,
        3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7,
        7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10,
        11, 11, 11, 11, 11, 11, 11, 11, 12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13,
        13, 14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15,
    ];
    unsafe { _mm_loadu_si128((K_SHUFFLE.as_ptr() as *const __m128i).add(i)) }
}

/// # Safety
/// `i` must be less than 8.
#[target_feature(enable = "avx2,fma")]
unsafe fn get_scale_shuffle_k4(i: usize) -> __m256i {
    const K_SHUFFLE: [u8; 256] = [
        0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
        0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
        2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5,
        4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7,
        6, 7, 6, 7, 6, 7, 6, 7, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9,
        8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10,
        11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 12, 13, 12, 13, 12, 13,
        12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12,
        13, 12, 13, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15,
        14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15,
    ];
    unsafe { _mm256_loadu_si256((K_SHUFFLE.as_ptr() as *const __m256i).add(i)) }
}

/// # Safety
/// `i` must be less than 4.
#[target_feature(enable = "avx2,fma")]
unsafe fn get_scale_shuffle_q3k(i: usize) -> __m256i {
    const K_SHUFFLE: [u8; 128] = [
        0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
        2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7,
        6, 7, 6, 7, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11,
        10, 11, 10, 11, 10, 11, 10, 11, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12,
        13, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15,
    ];
    unsafe { _mm256_loadu_si256((K_SHUFFLE.as_ptr() as *const __m256i).add(i)) }
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q6k_q8k(n: usize, xs: &[BlockQ6K], ys: &[BlockQ8K]) -> f32 {
    debug_assert!(
        n.is_multiple_of(QK_K),
        "vec_dot_q6k_8k: {n} is not divisible by {QK_K}"
    );

    unsafe {
        let m4 = _mm256_set1_epi8(0xF);
        let m2 = _mm256_set1_epi8(3);
        let m32s = _mm256_set1_epi8(32);
        let mut acc = _mm256_setzero_ps();
        for (x, y) in xs.iter().zip(ys.iter()) {
            let d = y.d * x.d.to_f32();
            let mut q4 = x.ql.as_ptr();
            let mut qh = x.qh.as_ptr();
            let mut q8 = y.qs.as_ptr();

            let scales = _mm_loadu_si128(x.scales.as_ptr() as *const __m128i);
            let mut sumi = _mm256_setzero_si256();

            for j in 0..QK_K / 128 {
                let is = j * 4;
                let scale_0 = _mm_shuffle_epi8(scales, get_scale_shuffle(is));
                let scale_1 = _mm_shuffle_epi8(scales, get_scale_shuffle(is + 1));
                let scale_2 = _mm_shuffle_epi8(scales, get_scale_shuffle(is + 2));
                let scale_3 = _mm_shuffle_epi8(scales, get_scale_shuffle(is + 3));

                let q4bits1 = _mm256_loadu_si256(q4 as *const __m256i);
                q4 = q4.add(32);
                let q4bits2 = _mm256_loadu_si256(q4 as *const __m256i);
                q4 = q4.add(32);
                let q4bits_h = _mm256_loadu_si256(qh as *const __m256i);
                qh = qh.add(32);

                let q4h_0 = _mm256_slli_epi16(_mm256_and_si256(q4bits_h, m2), 4);
                let q4h_1 =
                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(q4bits_h, 2), m2), 4);
                let q4h_2 =
                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(q4bits_h, 4), m2), 4);
                let q4h_3 =
                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(q4bits_h, 6), m2), 4);

                let q4_0 = _mm256_or_si256(_mm256_and_si256(q4bits1, m4), q4h_0);
                let q4_1 = _mm256_or_si256(_mm256_and_si256(q4bits2, m4), q4h_1);
                let q4_2 =
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits1, 4), m4), q4h_2);
                let q4_3 =
                    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits2, 4), m4), q4h_3);

                let q8_0 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_1 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_2 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_3 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);

                let q8s_0 = _mm256_maddubs_epi16(m32s, q8_0);
                let q8s_1 = _mm256_maddubs_epi16(m32s, q8_1);
                let q8s_2 = _mm256_maddubs_epi16(m32s, q8_2);
                let q8s_3 = _mm256_maddubs_epi16(m32s, q8_3);

                let p16_0 = _mm256_maddubs_epi16(q4_0, q8_0);
                let p16_1 = _mm256_maddubs_epi16(q4_1, q8_1);
                let p16_2 = _mm256_maddubs_epi16(q4_2, q8_2);
                let p16_3 = _mm256_maddubs_epi16(q4_3, q8_3);

                let p16_0 = _mm256_sub_epi16(p16_0, q8s_0);
                let p16_1 = _mm256_sub_epi16(p16_1, q8s_1);
                let p16_2 = _mm256_sub_epi16(p16_2, q8s_2);
                let p16_3 = _mm256_sub_epi16(p16_3, q8s_3);

                let p16_0 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scale_0), p16_0);
                let p16_1 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scale_1), p16_1);
                let p16_2 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scale_2), p16_2);
                let p16_3 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(scale_3), p16_3);

                sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16_0, p16_1));
                sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16_2, p16_3));
            }
            acc = _mm256_fmadd_ps(_mm256_broadcast_ss(&d), _mm256_cvtepi32_ps(sumi), acc);
        }
        hsum_float_8(acc)
    }
}

#[target_feature(enable = "avx2,fma")]
fn mm256_set_m128i(a: __m128i, b: __m128i) -> __m256i {
    _mm256_insertf128_si256(_mm256_castsi128_si256(b), a, 1)
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q2k_q8k(n: usize, xs: &[BlockQ2K], ys: &[BlockQ8K]) -> f32 {
    debug_assert!(
        n.is_multiple_of(QK_K),
        "vec_dot_q2k_q8k: {n} is not divisible by {QK_K}"
    );

    unsafe {
        let m3 = _mm256_set1_epi8(3);
        let m4 = _mm_set1_epi8(0xF);

        let mut acc = _mm256_setzero_ps();

        for (x, y) in xs.iter().zip(ys.iter()) {
            let d = y.d * x.d.to_f32();
            let dmin = -y.d * x.dmin.to_f32();

            let mut q2 = x.qs.as_ptr();
            let mut q8 = y.qs.as_ptr();

            let mins_and_scales = _mm_loadu_si128(x.scales.as_ptr() as *const __m128i);
            let scales8 = _mm_and_si128(mins_and_scales, m4);
            let mins8 = _mm_and_si128(_mm_srli_epi16(mins_and_scales, 4), m4);
            let mins = _mm256_cvtepi8_epi16(mins8);
            let prod =
                _mm256_madd_epi16(mins, _mm256_loadu_si256(y.bsums.as_ptr() as *const __m256i));

            acc = _mm256_fmadd_ps(_mm256_broadcast_ss(&dmin), _mm256_cvtepi32_ps(prod), acc);

            let all_scales = _mm256_cvtepi8_epi16(scales8);
            let l_scales = _mm256_extracti128_si256(all_scales, 0);
            let h_scales = _mm256_extracti128_si256(all_scales, 1);
            let scales = [
                mm256_set_m128i(l_scales, l_scales),
                mm256_set_m128i(h_scales, h_scales),
            ];

            let mut sumi = _mm256_setzero_si256();

            for scale in scales {
                let q2bits = _mm256_loadu_si256(q2 as *const __m256i);
                q2 = q2.add(32);

                let q8_0 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_1 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_2 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_3 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);

                let q2_0 = _mm256_and_si256(q2bits, m3);
                let q2_1 = _mm256_and_si256(_mm256_srli_epi16(q2bits, 2), m3);
                let q2_2 = _mm256_and_si256(_mm256_srli_epi16(q2bits, 4), m3);
                let q2_3 = _mm256_and_si256(_mm256_srli_epi16(q2bits, 6), m3);

                let p0 = _mm256_maddubs_epi16(q2_0, q8_0);
                let p1 = _mm256_maddubs_epi16(q2_1, q8_1);
                let p2 = _mm256_maddubs_epi16(q2_2, q8_2);
                let p3 = _mm256_maddubs_epi16(q2_3, q8_3);

                let p0 =
                    _mm256_madd_epi16(_mm256_shuffle_epi8(scale, get_scale_shuffle_q3k(0)), p0);
                let p1 =
                    _mm256_madd_epi16(_mm256_shuffle_epi8(scale, get_scale_shuffle_q3k(1)), p1);
                let p2 =
                    _mm256_madd_epi16(_mm256_shuffle_epi8(scale, get_scale_shuffle_q3k(2)), p2);
                let p3 =
                    _mm256_madd_epi16(_mm256_shuffle_epi8(scale, get_scale_shuffle_q3k(3)), p3);

                let p0 = _mm256_add_epi32(p0, p1);
                let p2 = _mm256_add_epi32(p2, p3);

                sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p2));
            }
            acc = _mm256_fmadd_ps(_mm256_broadcast_ss(&d), _mm256_cvtepi32_ps(sumi), acc);
        }

        hsum_float_8(acc)
    }
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q3k_q8k(n: usize, xs: &[BlockQ3K], ys: &[BlockQ8K]) -> f32 {
    debug_assert!(
        n.is_multiple_of(QK_K),
        "vec_dot_q3k_q8k: {n} is not divisible by {QK_K}"
    );

    const KMASK1: u32 = 0x03030303;
    const KMASK2: u32 = 0x0f0f0f0f;

    let mut aux = [0u32; 3];

    unsafe {
        let m3 = _mm256_set1_epi8(3);
        let mone = _mm256_set1_epi8(1);
        let m32 = _mm_set1_epi8(32);

        let mut acc = _mm256_setzero_ps();
        for (x, y) in xs.iter().zip(ys.iter()) {
            let d = y.d * x.d.to_f32();

            let mut q3 = x.qs.as_ptr();
            let mut q8 = y.qs.as_ptr();

            LittleEndian::read_u32_into(&x.scales, &mut aux);
            let scales128 = _mm_set_epi32(
                (((aux[1] >> 4) & KMASK2) | (((aux[2] >> 6) & KMASK1) << 4)) as i32,
                (((aux[0] >> 4) & KMASK2) | (((aux[2] >> 4) & KMASK1) << 4)) as i32,
                ((aux[1] & KMASK2) | (((aux[2] >> 2) & KMASK1) << 4)) as i32,
                ((aux[0] & KMASK2) | (((aux[2]) & KMASK1) << 4)) as i32,
            );
            let scales128 = _mm_sub_epi8(scales128, m32);
            let all_scales = _mm256_cvtepi8_epi16(scales128);
            let l_scales = _mm256_extracti128_si256(all_scales, 0);
            let h_scales = _mm256_extracti128_si256(all_scales, 1);
            let scales = [
                mm256_set_m128i(l_scales, l_scales),
                mm256_set_m128i(h_scales, h_scales),
            ];

            // high bit
            let hbits = _mm256_loadu_si256(x.hmask.as_ptr() as *const __m256i);

            let mut sumi = _mm256_setzero_si256();

            for (j, scale) in scales.iter().enumerate() {
                // load low 2 bits
                let q3bits = _mm256_loadu_si256(q3 as *const __m256i);
                q3 = q3.add(32);

                // Prepare low and high bits
                // We hardcode the shifts here to avoid loading them into a separate register
                let q3l_0 = _mm256_and_si256(q3bits, m3);
                let q3h_0 = if j == 0 {
                    _mm256_srli_epi16(_mm256_andnot_si256(hbits, _mm256_slli_epi16(mone, 0)), 0)
                } else {
                    _mm256_srli_epi16(_mm256_andnot_si256(hbits, _mm256_slli_epi16(mone, 4)), 4)
                };
                let q3h_0 = _mm256_slli_epi16(q3h_0, 2);

                let q3l_1 = _mm256_and_si256(_mm256_srli_epi16(q3bits, 2), m3);
                let q3h_1 = if j == 0 {
                    _mm256_srli_epi16(_mm256_andnot_si256(hbits, _mm256_slli_epi16(mone, 1)), 1)
                } else {
                    _mm256_srli_epi16(_mm256_andnot_si256(hbits, _mm256_slli_epi16(mone, 5)), 5)
                };
                let q3h_1 = _mm256_slli_epi16(q3h_1, 2);

                let q3l_2 = _mm256_and_si256(_mm256_srli_epi16(q3bits, 4), m3);
                let q3h_2 = if j == 0 {
                    _mm256_srli_epi16(_mm256_andnot_si256(hbits, _mm256_slli_epi16(mone, 2)), 2)
                } else {
                    _mm256_srli_epi16(_mm256_andnot_si256(hbits, _mm256_slli_epi16(mone, 6)), 6)
                };
                let q3h_2 = _mm256_slli_epi16(q3h_2, 2);

                let q3l_3 = _mm256_and_si256(_mm256_srli_epi16(q3bits, 6), m3);
                let q3h_3 = if j == 0 {
                    _mm256_srli_epi16(_mm256_andnot_si256(hbits, _mm256_slli_epi16(mone, 3)), 3)
                } else {
                    _mm256_srli_epi16(_mm256_andnot_si256(hbits, _mm256_slli_epi16(mone, 7)), 7)
                };
                let q3h_3 = _mm256_slli_epi16(q3h_3, 2);

                // load Q8 quants
                let q8_0 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_1 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_2 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_3 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);

                // Dot product: we multiply the 2 low bits and 1 high bit part separately, so we
                // can use _mm256_maddubs_epi16, and then subtract. The high bit part has the 2
                // already subtracted (and so, it is zero if the high bit was not set, and 2 if the
                // high bit was set)
                let q8s_0 = _mm256_maddubs_epi16(q3h_0, q8_0);
                let q8s_1 = _mm256_maddubs_epi16(q3h_1, q8_1);
                let q8s_2 = _mm256_maddubs_epi16(q3h_2, q8_2);
                let q8s_3 = _mm256_maddubs_epi16(q3h_3, q8_3);

                let p16_0 = _mm256_maddubs_epi16(q3l_0, q8_0);
                let p16_1 = _mm256_maddubs_epi16(q3l_1, q8_1);
                let p16_2 = _mm256_maddubs_epi16(q3l_2, q8_2);
                let p16_3 = _mm256_maddubs_epi16(q3l_3, q8_3);

                let p16_0 = _mm256_sub_epi16(p16_0, q8s_0);
                let p16_1 = _mm256_sub_epi16(p16_1, q8s_1);
                let p16_2 = _mm256_sub_epi16(p16_2, q8s_2);
                let p16_3 = _mm256_sub_epi16(p16_3, q8s_3);

                // multiply with scales
                let p16_0 =
                    _mm256_madd_epi16(_mm256_shuffle_epi8(*scale, get_scale_shuffle_q3k(0)), p16_0);
                let p16_1 =
                    _mm256_madd_epi16(_mm256_shuffle_epi8(*scale, get_scale_shuffle_q3k(1)), p16_1);
                let p16_2 =
                    _mm256_madd_epi16(_mm256_shuffle_epi8(*scale, get_scale_shuffle_q3k(2)), p16_2);
                let p16_3 =
                    _mm256_madd_epi16(_mm256_shuffle_epi8(*scale, get_scale_shuffle_q3k(3)), p16_3);

                // accumulate
                let p16_0 = _mm256_add_epi32(p16_0, p16_1);
                let p16_2 = _mm256_add_epi32(p16_2, p16_3);
                sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16_0, p16_2));
            }

            // multiply with block scale and accumulate
            acc = _mm256_fmadd_ps(_mm256_broadcast_ss(&d), _mm256_cvtepi32_ps(sumi), acc);
        }
        hsum_float_8(acc)
    }
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q4k_q8k(n: usize, xs: &[BlockQ4K], ys: &[BlockQ8K]) -> f32 {
    debug_assert!(
        n.is_multiple_of(QK_K),
        "vec_dot_q4k_q8k: {n} is not divisible by {QK_K}"
    );
    let mut utmp = [0u32; 4];
    const KMASK1: u32 = 0x3f3f3f3f;
    const KMASK2: u32 = 0x0f0f0f0f;
    const KMASK3: u32 = 0x03030303;

    unsafe {
        let m4 = _mm256_set1_epi8(0xF);

        let mut acc = _mm256_setzero_ps();
        let mut acc_m = _mm_setzero_ps();

        for (x, y) in xs.iter().zip(ys.iter()) {
            let d = y.d * x.d.to_f32();
            let dmin = -y.d * x.dmin.to_f32();

            LittleEndian::read_u32_into(&x.scales, &mut utmp[0..3]);

            utmp[3] = ((utmp[2] >> 4) & KMASK2) | (((utmp[1] >> 6) & KMASK3) << 4);
            let uaux = utmp[1] & KMASK1;
            utmp[1] = (utmp[2] & KMASK2) | (((utmp[0] >> 6) & KMASK3) << 4);
            utmp[2] = uaux;
            utmp[0] &= KMASK1;

            let mut q4 = x.qs.as_ptr();
            let mut q8 = y.qs.as_ptr();

            let mins_and_scales = _mm256_cvtepu8_epi16(_mm_set_epi32(
                utmp[3] as i32,
                utmp[2] as i32,
                utmp[1] as i32,
                utmp[0] as i32,
            ));

            let q8sums = _mm256_loadu_si256(y.bsums.as_ptr() as *const __m256i);
            let q8s = _mm_hadd_epi16(
                _mm256_extracti128_si256(q8sums, 0),
                _mm256_extracti128_si256(q8sums, 1),
            );
            let prod = _mm_madd_epi16(_mm256_extracti128_si256(mins_and_scales, 1), q8s);
            acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m);

            let sc128 = _mm256_extracti128_si256(mins_and_scales, 0);
            let scales = mm256_set_m128i(sc128, sc128);

            let mut sumi = _mm256_setzero_si256();

            for j in 0..QK_K / 64 {
                let scale_l = _mm256_shuffle_epi8(scales, get_scale_shuffle_k4(2 * j));
                let scale_h = _mm256_shuffle_epi8(scales, get_scale_shuffle_k4(2 * j + 1));

                let q4bits = _mm256_loadu_si256(q4 as *const __m256i);
                q4 = q4.add(32);
                let q4l = _mm256_and_si256(q4bits, m4);
                let q4h = _mm256_and_si256(_mm256_srli_epi16(q4bits, 4), m4);

                let q8l = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let p16l = _mm256_maddubs_epi16(q4l, q8l);
                let p16l = _mm256_madd_epi16(scale_l, p16l);
                sumi = _mm256_add_epi32(sumi, p16l);

                let q8h = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let p16h = _mm256_maddubs_epi16(q4h, q8h);
                let p16h = _mm256_madd_epi16(scale_h, p16h);
                sumi = _mm256_add_epi32(sumi, p16h);
            }

            let vd = _mm256_set1_ps(d);
            acc = _mm256_fmadd_ps(vd, _mm256_cvtepi32_ps(sumi), acc);
        }

        let acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
        let acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));

        hsum_float_8(acc) + _mm_cvtss_f32(acc_m)
    }
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q5k_q8k(n: usize, xs: &[BlockQ5K], ys: &[BlockQ8K]) -> f32 {
    debug_assert!(
        n.is_multiple_of(QK_K),
        "vec_dot_q5k_q8k: {n} is not divisible by {QK_K}"
    );
    let mut utmp = [0u32; 4];
    const KMASK1: u32 = 0x3f3f3f3f;
    const KMASK2: u32 = 0x0f0f0f0f;
    const KMASK3: u32 = 0x03030303;

    unsafe {
        let m4 = _mm256_set1_epi8(0xF);
        let mzero = _mm_setzero_si128();
        let mone = _mm256_set1_epi8(1);

        let mut acc = _mm256_setzero_ps();
        let mut summs = 0.0;

        for (x, y) in xs.iter().zip(ys.iter()) {
            let d = y.d * x.d.to_f32();
            let dmin = -y.d * x.dmin.to_f32();

            LittleEndian::read_u32_into(&x.scales, &mut utmp[0..3]);

            utmp[3] = ((utmp[2] >> 4) & KMASK2) | (((utmp[1] >> 6) & KMASK3) << 4);
            let uaux = utmp[1] & KMASK1;
            utmp[1] = (utmp[2] & KMASK2) | (((utmp[0] >> 6) & KMASK3) << 4);
            utmp[2] = uaux;
            utmp[0] &= KMASK1;

            let mut q5 = x.qs.as_ptr();
            let mut q8 = y.qs.as_ptr();

            let mins_and_scales = _mm256_cvtepu8_epi16(_mm_set_epi32(
                utmp[3] as i32,
                utmp[2] as i32,
                utmp[1] as i32,
                utmp[0] as i32,
            ));

            let q8sums = _mm256_loadu_si256(y.bsums.as_ptr() as *const __m256i);
            let q8s = _mm_hadd_epi16(
                _mm256_extracti128_si256(q8sums, 0),
                _mm256_extracti128_si256(q8sums, 1),
            );
            let prod = _mm_madd_epi16(_mm256_extracti128_si256(mins_and_scales, 1), q8s);
            let hsum = _mm_hadd_epi32(_mm_hadd_epi32(prod, mzero), mzero);
            summs += dmin * _mm_extract_epi32(hsum, 0) as f32;

            let sc128 = _mm256_extracti128_si256(mins_and_scales, 0);
            let scales = mm256_set_m128i(sc128, sc128);

            let hbits = _mm256_loadu_si256(x.qh.as_ptr() as *const __m256i);
            let mut hmask = mone;

            let mut sumi = _mm256_setzero_si256();

            for j in 0..QK_K / 64 {
                let scale_0 = _mm256_shuffle_epi8(scales, get_scale_shuffle_k4(2 * j));
                let scale_1 = _mm256_shuffle_epi8(scales, get_scale_shuffle_k4(2 * j + 1));

                let q5bits = _mm256_loadu_si256(q5 as *const __m256i);
                q5 = q5.add(32);

                //Similar to q3k we hardcode the shifts here to avoid loading them into a separate register
                let q5l_0 = _mm256_and_si256(q5bits, m4);
                let q5l_0_shift_input = _mm256_and_si256(hbits, hmask);
                let q5l_0_right_shift = match j {
                    0 => _mm256_srli_epi16(q5l_0_shift_input, 0),
                    1 => _mm256_srli_epi16(q5l_0_shift_input, 2),
                    2 => _mm256_srli_epi16(q5l_0_shift_input, 4),
                    3 => _mm256_srli_epi16(q5l_0_shift_input, 6),
                    _ => unreachable!(),
                };
                let q5h_0 = _mm256_slli_epi16(q5l_0_right_shift, 4);
                let q5_0 = _mm256_add_epi8(q5l_0, q5h_0);
                hmask = _mm256_slli_epi16(hmask, 1);

                let q5l_1 = _mm256_and_si256(_mm256_srli_epi16(q5bits, 4), m4);
                let q5l_1_shift_input = _mm256_and_si256(hbits, hmask);
                let q5l_1_right_shift = match j {
                    0 => _mm256_srli_epi16(q5l_1_shift_input, 1),
                    1 => _mm256_srli_epi16(q5l_1_shift_input, 3),
                    2 => _mm256_srli_epi16(q5l_1_shift_input, 5),
                    3 => _mm256_srli_epi16(q5l_1_shift_input, 7),
                    _ => unreachable!(),
                };

                let q5h_1 = _mm256_slli_epi16(q5l_1_right_shift, 4);
                let q5_1 = _mm256_add_epi8(q5l_1, q5h_1);
                hmask = _mm256_slli_epi16(hmask, 1);

                let q8_0 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);
                let q8_1 = _mm256_loadu_si256(q8 as *const __m256i);
                q8 = q8.add(32);

                let p16_0 = _mm256_maddubs_epi16(q5_0, q8_0);
                let p16_1 = _mm256_maddubs_epi16(q5_1, q8_1);

                let p16_0 = _mm256_madd_epi16(scale_0, p16_0);
                let p16_1 = _mm256_madd_epi16(scale_1, p16_1);

                sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p16_0, p16_1));
            }
            let vd = _mm256_set1_ps(d);
            acc = _mm256_fmadd_ps(vd, _mm256_cvtepi32_ps(sumi), acc);
        }
        hsum_float_8(acc) + summs
    }
}

#[target_feature(enable = "avx2,fma")]
pub(crate) fn vec_dot_q8k_q8k(n: usize, xs: &[BlockQ8K], ys: &[BlockQ8K]) -> f32 {
    debug_assert!(
        n.is_multiple_of(QK_K),
        "vec_dot_q8k_8k: {n} is not divisible by {QK_K}"
    );
    unsafe {
        let mut acc = _mm256_setzero_ps();
        for (xs, ys) in xs.iter().zip(ys.iter()) {
            let mut sumi = _mm256_setzero_si256();
            let x_qs = xs.qs.as_ptr();
            let y_qs = ys.qs.as_ptr();
            for j in (0..QK_K).step_by(32) {
                let xs = _mm256_loadu_si256(x_qs.add(j) as *const __m256i);
                let ys = _mm256_loadu_si256(y_qs.add(j) as *const __m256i);

                let xs0 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(xs, 0));
                let ys0 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(ys, 0));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(xs0, ys0));

                let xs1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(xs, 1));
                let ys1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(ys, 1));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(xs1, ys1));
            }
            let d = _mm256_set1_ps(xs.d * ys.d);
            acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc);
        }
        hsum_float_8(acc)
    }
}
