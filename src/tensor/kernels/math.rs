//! Vectorisable f32 math for the elementwise engine: plain arithmetic and fused multiply-adds, no
//! libm calls, so the loops over them vectorise in the engine's AVX2 / AVX-512 builds; the 16-bit
//! float conversions.

/// exp(x) for f32: range reduction to 2^n·e^r and a degree-6 polynomial fitted on the reduced range (`EXP_POLY`); ~1 ulp.
/// The polynomial and the reduction are fused multiply-adds (`mul_add`): inside the AVX2/AVX-512
/// kernels they are one instruction each (Rust never fuses `a * b + c` by itself), half the
/// instructions of the plain form.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let x = x.clamp(-104.0, 89.0);
    let n = (x * std::f32::consts::LOG2_E).round_ties_even();
    let r = n.mul_add(-1.428_606_8e-6, n.mul_add(-0.693_145_75, x));
    let p = horner(r, EXP_POLY);
    // 2^n split in two steps so n down to -150 stays representable (subnormal results).
    // NaN goes to 0 here (the polynomial already carries it); the cast then needs no saturation
    // checks, which keeps the loop vectorised.
    let n = if n.is_nan() { 0.0 } else { n };
    // SAFETY: n is finite and within [-151, 129] after the clamp above.
    let n: i32 = unsafe { n.to_int_unchecked() };
    let h = n >> 1;
    let s1 = f32::from_bits(((h + 127) as u32) << 23);
    let s2 = f32::from_bits(((n - h + 127) as u32) << 23);
    p * s1 * s2
}

multiversion! {
    /// min(max(x, lo), hi) in place, NaN kept (torch's clamp with number bounds).
    pub fn clamp_in_place<>(d: &mut [f32], lo: f32, hi: f32) where [] {
        for v in d.iter_mut() {
            *v = if v.is_nan() { *v } else { v.max(lo).min(hi) };
        }
    }
}

multiversion! {
    /// The same from `s` into `d`.
    pub fn clamp_slice<>(s: &[f32], d: &mut [f32], lo: f32, hi: f32) where [] {
        for (o, &v) in d.iter_mut().zip(s) {
            *o = if v.is_nan() { v } else { v.max(lo).min(hi) };
        }
    }
}

/// `exp_f32` over a slice, on AVX-512 by `vscalefps`: it scales by 2^n in one instruction (the
/// scalar form's two-step scaling, NaN guard and integer conversion took ten), rounding once where
/// the result is subnormal; elsewhere the same bits as `exp_f32`. 16 lanes at ~7 cycles instead of
/// ~12: exp over 64K in-cache elements 21.8 -> 12 µs at one thread on an Emerald Rapids Xeon
/// (torch 13.3).
pub fn exp_slice(src: &[f32], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::level() == crate::isa::Level::Avx512 {
        // SAFETY: the level says the CPU has AVX-512F.
        return unsafe { exp_slice_avx512(src, dst) };
    }
    // Other CPUs take the elementwise engine's per-ISA loops (`Tensor.exp`); this is the plain form.
    dst.iter_mut().zip(src).for_each(|(d, &x)| *d = exp_f32(x));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn exp_slice_avx512(src: &[f32], dst: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = src.len().min(dst.len());
    let one = |x: __m512| {
        // max(lo, x) and min(hi, ·) return their second operand when it is NaN: NaN passes.
        let x = _mm512_min_ps(_mm512_set1_ps(89.0), _mm512_max_ps(_mm512_set1_ps(-104.0), x));
        let k = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)));
        let r = _mm512_fmadd_ps(k, _mm512_set1_ps(-0.693_145_75), x);
        let r = _mm512_fmadd_ps(k, _mm512_set1_ps(-1.428_606_8e-6), r);
        let mut p = _mm512_set1_ps(EXP_POLY[EXP_POLY.len() - 1]);
        for &c in EXP_POLY[..EXP_POLY.len() - 1].iter().rev() {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
        }
        _mm512_scalef_ps(p, k)
    };
    let mut i = 0;
    // SAFETY: i + 16 ≤ n in the loop; the tail's masked load and store touch only i..n.
    unsafe {
        while i + 16 <= n {
            _mm512_storeu_ps(dst.as_mut_ptr().add(i), one(_mm512_loadu_ps(src.as_ptr().add(i))));
            i += 16;
        }
        if i < n {
            let m: __mmask16 = (1u32 << (n - i)) as u16 - 1;
            let x = _mm512_maskz_loadu_ps(m, src.as_ptr().add(i));
            _mm512_mask_storeu_ps(dst.as_mut_ptr().add(i), m, one(x));
        }
    }
}

/// e^r on |r| ≤ ln2/2: a degree-6 polynomial fitted for relative error (2e-8, against the Taylor
/// terms' 1.2e-7; the seventh term cost one more multiply-add per element).
const EXP_POLY: &[f32] = &[1.0, 1.0, 0.499_999_94, 0.166_664_32, 0.041_668, 0.008_374_155_5, 0.001_384_365_1];

/// c[0] + x·(c[1] + x·(c[2] + …)) by fused multiply-adds (the slice is a constant, so the loop
/// unrolls away).
#[inline(always)]
pub fn horner(x: f32, c: &[f32]) -> f32 {
    let mut p = c[c.len() - 1];
    for &k in c[..c.len() - 1].iter().rev() {
        p = p.mul_add(x, k);
    }
    p
}

/// tanh(x) as x·P(x²)/Q(x²) on x clamped to ±7.905: the rational minimax form Eigen and XLA use,
/// half the operations of (1 - e^-2|x|)/(1 + e^-2|x|); below 4e-4 tanh(x) rounds to x.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let c = x.clamp(-7.905_311, 7.905_311);
    let x2 = c * c;
    let p = c * horner(x2, &[4.893_524_6e-3, 6.372_619_3e-4, 1.485_722_4e-5, 5.122_297e-8, -8.604_672e-11, 2.000_188e-13, -2.760_768_5e-16]);
    let q = horner(x2, &[4.893_525e-3, 2.268_434_6e-3, 1.185_347_1e-4, 1.198_258_4e-6]);
    let t = if x.abs() < 0.0004 { x } else { p / q };
    // From 9 on tanh rounds to ±1, which the clamped form misses by up to 3 ulp.
    if x.abs() >= 9.0 { 1f32.copysign(x) } else { t }
}

/// e^x where only results that matter next to 1 are needed (sigmoid's 1 + e^-x): one scaling step
/// (normal results only: below e^-87 it gives e^-87, past e^88.7 infinity) and a degree-6 polynomial
/// (`EXP_POLY`); a few instructions fewer than `exp_f32`'s two-step scaling.
#[inline(always)]
pub fn exp_beside_one(x: f32) -> f32 {
    let x = x.clamp(-87.0, 89.0);
    let n = (x * std::f32::consts::LOG2_E).round_ties_even();
    let r = n.mul_add(-1.428_606_8e-6, n.mul_add(-0.693_145_75, x));
    let p = horner(r, EXP_POLY);
    let n = if n.is_nan() { 0.0 } else { n };
    // SAFETY: n is finite and within [-126, 128] after the clamp above.
    let n: i32 = unsafe { n.to_int_unchecked() };
    // n = 128 makes the exponent field all ones: 2^n is then infinity, as e^x is to f32.
    p * f32::from_bits(((n + 127) as u32) << 23)
}

/// 1 / (1 + e^-x); below x ≈ -87 it returns e^-87's sigmoid (≤ 1.7e-38) or 0 where torch returns the
/// subnormal value.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_beside_one(-x))
}

/// erf(x) for f32 (max abs error ~1e-7, small relative error near 0): Taylor series below 0.5,
/// Abramowitz–Stegun 7.1.26 beyond; both are evaluated and selected, so loops vectorise.
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    let r = if x.abs() < 0.5 { erf_small_f32(x) } else { erf_as_f32(x) };
    r.copysign(x)
}

/// erf for |x| < 0.5: its Taylor series, accurate to f32 precision (relative error too).
#[inline(always)]
fn erf_small_f32(x: f32) -> f32 {
    let x2 = x * x;
    x.abs() * horner(x2, &[1.128_379_2, -0.376_126_14, 0.112_837_92, -0.026_866_17, 0.005_223_977, -0.000_854_8])
}

/// |erf(x)| by Abramowitz–Stegun 7.1.26 (absolute error < 1.5e-7), the formula torch's vectorised
/// GELU uses; enough wherever erf is added to 1.
#[inline(always)]
pub fn erf_as_f32(x: f32) -> f32 {
    let ax = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * ax);
    let poly = t * horner(t, &[0.254_829_6, -0.284_496_74, 1.421_413_7, -1.453_152_1, 1.061_405_4]);
    // e^-x² past e^-87 leaves r at 1: the one-step exp serves.
    let r = (-poly).mul_add(exp_beside_one(-ax * ax), 1.0);
    if r > 1.0 { 1.0 } else { r }
}

/// erf(x) as x·P(x²)/Q(x²) on x clamped to ±4 (the rational form XLA and Eigen use; max abs error
/// ~4.5e-7): no exp, one division, so about half the work of `erf_as_f32` per element.
#[inline(always)]
pub fn erf_rational_f32(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = horner(x2, &[-1.609_603_3e-2, -2.954_600_1e-3, -7.349_906_3e-4, -5.692_506_4e-5, -2.101_024e-6, 2.770_681_4e-8, -2.726_142_3e-10]);
    let q = horner(x2, &[-1.426_474e-2, -7.373_329_2e-3, -1.682_827e-3, -2.133_740_6e-4, -1.456_607_2e-5]);
    x * p / q
}

/// ln(x) for positive, finite, normal f32 (what softplus feeds it): exponent split and an odd
/// series in t = (m−1)/(m+1), vectorisable (no libm call).
#[inline(always)]
pub fn ln_pos_f32(x: f32) -> f32 {
    let bits = x.to_bits();
    // m in [sqrt(1/2), sqrt(2)): borrow the exponent from 0x3f3504f3 (sqrt(1/2)).
    let e = ((bits.wrapping_sub(0x3f35_04f3)) as i32) >> 23;
    let m = f32::from_bits(bits.wrapping_sub((e as u32) << 23));
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let s = t * horner(t2, &[2.0, 0.666_666_7, 0.4, 0.285_714_3, 0.222_222_22]);
    (e as f32).mul_add(std::f32::consts::LN_2, s)
}


/// x = 2^e · m with m in [√½, √2) (subnormals scaled up first), and ln(m) by Cephes' logf
/// polynomial in f = m - 1 (~1 ulp): the parts of `ln_f32`, `log2_f32` and `log10_f32`, no branches,
/// so loops over them vectorise. Meaningless for x ≤ 0, inf and NaN (the callers' blends).
#[inline(always)]
fn ln_parts(x: f32) -> (f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let (e, y) = ln_parts_normal(if sub { x * 8_388_608.0 } else { x });
    (e - if sub { 23.0 } else { 0.0 }, y)
}

/// `ln_parts` of a positive, normal, finite x (no subnormal scaling).
#[inline(always)]
fn ln_parts_normal(x: f32) -> (f32, f32) {
    let bits = x.to_bits();
    // Exponent counted from √½ (0x3f3504f3), so that the mantissa lands in [√½, √2).
    let e = (bits.wrapping_sub(0x3f35_04f3) as i32) >> 23;
    let m = f32::from_bits(bits.wrapping_sub((e as u32) << 23));
    let f = m - 1.0;
    let z = f * f;
    let p = horner(f, &[3.333_333_1e-1, -2.499_999_4e-1, 2.000_071_4e-1, -1.666_805_7e-1, 1.424_932_3e-1, -1.242_014_1e-1, 1.167_699_9e-1, -1.151_461e-1, 7.037_683_6e-2]);
    let y = (f * z).mul_add(p, (-0.5f32).mul_add(z, f));
    (e as f32, y)
}

/// Whether x is positive, normal and finite (one unsigned compare of its bits).
#[inline(always)]
fn positive_normal(x: f32) -> bool {
    x.to_bits().wrapping_sub(0x0080_0000) < 0x7f00_0000
}

/// ln (base 0), log2 (1) or log10 (2) over a slice: a vectorised pass for positive normal finite
/// values, without the subnormal scaling and the blends of zero, negatives, inf and NaN (a third
/// of the work per element), then those rare ones redone by `ln_f32`/`log2_f32`/`log10_f32`. The
/// same operations as theirs, so the same bits.
pub fn log_slice(src: &[f32], dst: &mut [f32], base: u8) {
    match base {
        0 => normal_then_any(src, dst, &|x| ln_of(ln_parts_normal(x)), &ln_f32),
        1 => normal_then_any(src, dst, &|x| log2_of(ln_parts_normal(x)), &log2_f32),
        _ => normal_then_any(src, dst, &|x| log10_of(ln_parts_normal(x)), &log10_f32),
    }
}

multiversion! {
    /// `normal` over a slice, vectorised, then the values that are not positive normal finite
    /// numbers redone by `any`.
    fn normal_then_any<F, G>(src: &[f32], dst: &mut [f32], normal: &F, any: &G) where [F: Fn(f32) -> f32, G: Fn(f32) -> f32] {
        let mut rare = false;
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = normal(x);
            rare |= !positive_normal(x);
        }
        if rare {
            for (d, &x) in dst.iter_mut().zip(src) {
                if !positive_normal(x) {
                    *d = any(x);
                }
            }
        }
    }
}

/// The results of x ≤ 0, +inf and NaN, as torch's: ln(±0) = -inf, negative and NaN give NaN.
#[inline(always)]
fn log_specials(x: f32, v: f32) -> f32 {
    let s = if x == 0.0 { f32::NEG_INFINITY } else { f32::NAN };
    let v = if x > 0.0 { v } else { s };
    if x < f32::INFINITY { v } else { x + x }
}

/// ln(x) for every f32, vectorisable (libm's was 8.6x torch's time over (4,128,1536)): e·ln2 in two
/// parts (Cephes' 0.693359375 + -2.12194440e-4) added to ln(m). Within 1.2 ulp.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    log_specials(x, ln_of(ln_parts(x)))
}

/// ln(x) from its parts (e, ln(m)).
#[inline(always)]
fn ln_of((e, y): (f32, f32)) -> f32 {
    e.mul_add(0.693_359_4, e.mul_add(-2.121_944_4e-4, y))
}

/// log2(x): e + ln(m)·log2(e) (within 2.3 ulp), exact at powers of two.
#[inline(always)]
pub fn log2_f32(x: f32) -> f32 {
    log_specials(x, log2_of(ln_parts(x)))
}

#[inline(always)]
fn log2_of((e, y): (f32, f32)) -> f32 {
    y.mul_add(std::f32::consts::LOG2_E, e)
}

/// log10(x): e·log10(2) + ln(m)·log10(e), log10(2) in two parts (the first of 8 bits, so e times
/// it is exact): within 2.3 ulp, and log10(1000) is 3.
#[inline(always)]
pub fn log10_f32(x: f32) -> f32 {
    log_specials(x, log10_of(ln_parts(x)))
}

#[inline(always)]
fn log10_of((e, y): (f32, f32)) -> f32 {
    e.mul_add(0.300_781_25, y.mul_add(std::f32::consts::LOG10_E, e * 2.487_456_7e-4))
}

/// Past this |x| the reduction by π/2 in `sin_quadrant_f32` would lose digits (the third part of
/// π/2 times q): such arguments take libm's full reduction.
pub const TRIG_REDUCED_MAX: f32 = 1_048_576.0;

/// sin(x + quarter·π/2) for |x| ≤ `TRIG_REDUCED_MAX` (sin: quarter 0, cos: 1), vectorisable. The
/// multiple m·π/2 nearest x with m even (sin) or odd (cos) leaves r = x - m·π/2 in [-π/2, π/2],
/// where the result is ±sin(r): one polynomial, no select. m is rounded by adding 1.5·2^23 (its
/// parity, the sign, is then in the sum's low bit); r = x - m·P1 - m·P2 - m·P3 by fused
/// multiply-adds with π/2 = P1 + P2 + P3 in f32 parts (the first step exact, each later one rounded
/// relative to r itself, so results near a zero keep their digits); sin(r) = r + r³·P(r²), fitted
/// for relative error on [-π/2, π/2] (1.3e-8). Within 3 ulp of the exact value, 2 below |x| = 10^5
/// (torch's Sleef kernel 0.6). NaN and ±inf give NaN, -0.0 stays -0.0.
#[inline(always)]
pub fn sin_quadrant_f32(x: f32, quarter: i32) -> f32 {
    const ROUND: f32 = 12_582_912.0;
    let h = quarter as f32 * 0.5;
    let t = x.mul_add(std::f32::consts::FRAC_1_PI, -h) + ROUND;
    let m = 2.0f32.mul_add(t - ROUND, 2.0 * h);
    let r = (-m).mul_add(1.570_796_4, x);
    let r = (-m).mul_add(-4.371_138_8e-8, r);
    let r = (-m).mul_add(-1.715_124_5e-15, r);
    let z = r * r;
    let s = (r * z).mul_add(horner(z, &[-0.166_666_6, 0.008_333_066, -1.980_955_1e-4, 2.605_660_7e-6]), r);
    // sin(±0) = ±0 (x - 0·P1 is +0 for -0), and x itself where x³ is below the smallest float.
    let s = if quarter == 0 && z == 0.0 { x } else { s };
    // (m/2 rounded) odd for sin, even for cos: the sign flips.
    f32::from_bits(s.to_bits() ^ (t.to_bits().wrapping_add(quarter as u32) << 31))
}

/// sin(x) (quarter 0) or cos(x) (quarter 1) of any f32: `sin_quadrant_f32`, libm past its range.
#[inline(always)]
pub fn sin_quadrant_any(x: f32, quarter: i32) -> f32 {
    if x.abs() > TRIG_REDUCED_MAX {
        if quarter == 0 { x.sin() } else { x.cos() }
    } else {
        sin_quadrant_f32(x, quarter)
    }
}

/// `sin_quadrant_any` over a slice (libm's sin was 8.9 ms for 1M elements at one thread, torch's 10.2).
pub fn sin_quadrant_slice(src: &[f32], dst: &mut [f32], quarter: i32) {
    reduced_then_libm(src, dst, &|x| sin_quadrant_f32(x, quarter), &|x| sin_quadrant_any(x, quarter));
}

multiversion! {
    /// `reduced` over a slice, vectorised, then the rare arguments past `TRIG_REDUCED_MAX` (and
    /// ±inf) redone by `libm`: the slice kernels of the functions reduced by π/2.
    fn reduced_then_libm<F, G>(src: &[f32], dst: &mut [f32], reduced: &F, libm: &G) where [F: Fn(f32) -> f32, G: Fn(f32) -> f32] {
        let mut big = false;
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = reduced(x);
            big |= x.abs() > TRIG_REDUCED_MAX;
        }
        if big {
            for (d, &x) in dst.iter_mut().zip(src) {
                if x.abs() > TRIG_REDUCED_MAX {
                    *d = libm(x);
                }
            }
        }
    }
}

/// ln(1 + x): ln(u)·x/(u − 1) with u = 1 + x rounded (Goldberg's correction: the rounding of u
/// cancels to first order), x itself where u rounds to 1; the vectorised `ln_f32` underneath (libm's
/// was 13x torch's time). Within 2.5 ulp; -1 gives -inf, below it NaN, +inf stays +inf.
#[inline(always)]
pub fn log1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    let v = ln_f32(u) * (x / (u - 1.0));
    let v = if u == 1.0 { x } else { v };
    if x == f32::INFINITY { x } else { v }
}

/// e^x − 1: x = n·ln2 + r with |r| ≤ ln2/2 (n capped at 127, r then up to ln2), e^r − 1 by its
/// Taylor series to r⁹ (exact leading term, so tiny x keep their digits), then 2^n·(e^r − 1) +
/// (2^n − 1) in one fused step. Within 2 ulp; -0.0 stays -0.0, below -18 it is -1, past ln(MAX) inf.
#[inline(always)]
pub fn expm1_f32(x: f32) -> f32 {
    let c = x.clamp(-18.0, 89.0);
    let n = (c * std::f32::consts::LOG2_E).round_ties_even().min(127.0);
    let r = n.mul_add(-1.428_606_8e-6, n.mul_add(-0.693_145_75, c));
    let p = r * r * horner(r, &[0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0, 1.0 / 40320.0, 1.0 / 362_880.0]) + r;
    let n = if n.is_nan() { 0.0 } else { n };
    // SAFETY: n is finite and within [-26, 127] after the clamp and the cap above.
    let n: i32 = unsafe { n.to_int_unchecked() };
    let s = f32::from_bits(((n + 127) as u32) << 23);
    let v = p.mul_add(s, s - 1.0);
    if x == 0.0 { x } else { v }
}

/// sinh(x): with u = e^|x| − 1 (`expm1_f32`), (u + u/(u + 1))/2 keeps small arguments' digits; past
/// |x| = 88, where e^|x| overflows, e^(|x|/2)·e^(|x|/2)/2 reaches float32's last finite values. Within 3
/// ulp; the sign copied from x (-0.0 stays -0.0), ±inf and NaN through.
#[inline(always)]
pub fn sinh_f32(x: f32) -> f32 {
    let a = x.abs();
    let u = expm1_f32(a);
    let s = 0.5 * (u + u / (u + 1.0));
    let h = exp_f32(0.5 * a);
    let s = if a > 88.0 { (0.5 * h) * h } else { s };
    s.copysign(x)
}

/// cosh(x): (e^|x| + e^−|x|)/2 by `exp_f32`, and as `sinh_f32` past |x| = 88. Within 3 ulp; ±inf give
/// +inf, NaN NaN.
#[inline(always)]
pub fn cosh_f32(x: f32) -> f32 {
    let a = x.abs();
    let e = exp_f32(a);
    let c = 0.5 * e + 0.5 / e;
    let h = exp_f32(0.5 * a);
    if a > 88.0 { (0.5 * h) * h } else { c }
}

/// atan(x): Cephes' atanf, branch-free: |x| past tan(3π/8) as π/2 + atan(-1/|x|), past tan(π/8) as
/// π/4 + atan((|x|-1)/(|x|+1)), then an odd polynomial on |t| ≤ tan(π/8). Within 3 ulp; ±inf give ±π/2.
#[inline(always)]
pub fn atan_f32(x: f32) -> f32 {
    let a = x.abs();
    let big = a > 2.414_213_5;
    let mid = a > 0.414_213_57;
    // One division for the three ranges: numerator and denominator picked first.
    let num = if big { -1.0 } else if mid { a - 1.0 } else { a };
    let den = if big { a } else if mid { a + 1.0 } else { 1.0 };
    let t = num / den;
    let y0 = if big { std::f32::consts::FRAC_PI_2 } else if mid { std::f32::consts::FRAC_PI_4 } else { 0.0 };
    let z = t * t;
    let y = (z * t).mul_add(horner(z, &[-3.333_294_9e-1, 1.997_771_1e-1, -1.387_768_6e-1, 8.053_744_5e-2]), t);
    (y0 + y).copysign(x)
}

/// asin(s) for |s| ≤ 1/2: Cephes' asinf polynomial, s + s·z·P(z) with z = s².
#[inline(always)]
fn asin_small(s: f32) -> f32 {
    let z = s * s;
    (s * z).mul_add(horner(z, &[1.666_675_2e-1, 7.495_300_3e-2, 4.547_002_6e-2, 2.418_131_1e-2, 4.216_32e-2]), s)
}

/// asin(x): `asin_small` up to 1/2, beyond it π/2 − 2·asin(√((1 − |x|)/2)) (Cephes' asinf without
/// branches). Within 2 ulp; |x| > 1 and NaN give NaN.
#[inline(always)]
pub fn asin_f32(x: f32) -> f32 {
    let a = x.abs();
    let big = a > 0.5;
    let s = if big { (0.5 * (1.0 - a)).sqrt() } else { a };
    let r = asin_small(s);
    // π/2 in two parts, so that results next to π/2 keep the last bits.
    let r = if big { (1.570_796_4 - (r + r)) + -4.371_139e-8 } else { r };
    r.copysign(x)
}

/// acos(x): 2·asin(√((1 − |x|)/2)) past 1/2 in magnitude (π minus that for negative x), else
/// π/2 − asin(x), each by `asin_small`. Within 2 ulp; |x| > 1 and NaN give NaN.
#[inline(always)]
pub fn acos_f32(x: f32) -> f32 {
    let a = x.abs();
    let big = a > 0.5;
    let s = if big { (0.5 * (1.0 - a)).sqrt() } else { x };
    let r = asin_small(s);
    let far = r + r;
    let far = if x < 0.0 { (3.141_592_7 - far) + -8.742_278e-8 } else { far };
    if big { far } else { (1.570_796_4 - r) + -4.371_139e-8 }
}

/// tan(x) for |x| ≤ `TRIG_REDUCED_MAX`: r = x − m·π/2 by the three-part reduction of
/// `sin_quadrant_f32` (m any integer, |r| ≤ π/4), Cephes' tanf polynomial for tan(r), and −1/tan(r)
/// for odd m. Within 3 ulp; ±inf and NaN give NaN, -0.0 stays -0.0.
#[inline(always)]
pub fn tan_reduced_f32(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0;
    let t = x.mul_add(std::f32::consts::FRAC_2_PI, ROUND);
    let m = t - ROUND;
    let r = (-m).mul_add(1.570_796_4, x);
    let r = (-m).mul_add(-4.371_138_8e-8, r);
    let r = (-m).mul_add(-1.715_124_5e-15, r);
    // 2/π's rounding to f32 can pick the neighbouring m past |x| ~ 10^5 (r then up to 0.82, where
    // the polynomial drifts to 10 ulp): one more step of π/2 brings r into [-π/4, π/4].
    let k: f32 = if r > std::f32::consts::FRAC_PI_4 { 1.0 } else if r < -std::f32::consts::FRAC_PI_4 { -1.0 } else { 0.0 };
    let r = (-k).mul_add(1.570_796_4, r);
    let r = (-k).mul_add(-4.371_138_8e-8, r);
    let z = r * r;
    let y = (z * r).mul_add(horner(z, &[3.333_315_7e-1, 1.333_879_9e-1, 5.341_128e-2, 2.443_013_5e-2, 3.119_922_3e-3, 9.385_402e-3]), r);
    // tan(±0) = ±0 (the reduction's second step turns -0 into +0), x itself where x³ underflows.
    let y = if z == 0.0 { x } else { y };
    let odd = (t.to_bits() & 1 == 1) != (k != 0.0);
    if odd { -1.0 / y } else { y }
}

/// tan(x) of any f32: `tan_reduced_f32`, libm past its range.
#[inline(always)]
pub fn tan_any(x: f32) -> f32 {
    if x.abs() > TRIG_REDUCED_MAX { x.tan() } else { tan_reduced_f32(x) }
}

/// `tan_any` over a slice (libm's tan was 9x torch's time).
pub fn tan_slice(src: &[f32], dst: &mut [f32]) {
    reduced_then_libm(src, dst, &tan_reduced_f32, &f32::tan);
}

/// 16-bit floats to and from f32 without branches, so loops over them vectorise (Candle converts
/// element by element through the `half` crate's scalar code).
pub trait Half: candle_core::WithDType {
    fn widen(self) -> f32;
    /// Round to nearest, ties to even; NaN stays NaN, overflow goes to infinity.
    fn narrow(x: f32) -> Self;
}

impl Half for half::bf16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
    #[inline(always)]
    fn narrow(x: f32) -> Self {
        let b = x.to_bits();
        let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
        half::bf16::from_bits(if x.is_nan() { ((b >> 16) as u16) | 0x40 } else { rounded })
    }
}

impl Half for half::f16 {
    /// The exponent is rebiased by a multiply, which also normalises subnormals; infinities and
    /// NaNs get the full exponent back.
    #[inline(always)]
    fn widen(self) -> f32 {
        let h = self.to_bits() as u32;
        let em = h & 0x7fff;
        let v = f32::from_bits(em << 13) * f32::from_bits(0x7780_0000); // · 2^112
        let v = if em >= 0x7c00 { f32::from_bits(v.to_bits() | 0x7f80_0000) } else { v };
        f32::from_bits(v.to_bits() | ((h & 0x8000) << 16))
    }
    /// Subnormal results come from an add that lets the FPU round; normal ones from rounding the
    /// mantissa bits (ties to even).
    #[inline(always)]
    fn narrow(x: f32) -> Self {
        let b = x.to_bits();
        let sign = (b >> 16) & 0x8000;
        let a = b & 0x7fff_ffff;
        let big = if a > 0x7f80_0000 { 0x7e00 } else { 0x7c00 }; // NaN, or overflow / infinity
        const DENORM_MAGIC: u32 = ((127 - 15) + (23 - 10) + 1) << 23;
        let sub = (f32::from_bits(a) + f32::from_bits(DENORM_MAGIC)).to_bits().wrapping_sub(DENORM_MAGIC);
        let norm = (a.wrapping_add(((15u32.wrapping_sub(127)) << 23).wrapping_add(0xfff)).wrapping_add((a >> 13) & 1)) >> 13;
        let o = if a >= (127 + 16) << 23 { big } else if a < 113 << 23 { sub } else { norm };
        half::f16::from_bits((o | sign) as u16)
    }
}

/// f32 → f16 over a slice, rounding to nearest even as `Half::narrow`: by the CPU's conversion
/// instruction where it has one (AVX-512F: 16 at a time; F16C: 8), else `narrow` per element.
pub fn narrow_f16_slice(src: &[f32], dst: &mut [half::f16]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        /// # Safety
        /// AVX-512F must be present.
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512(src: &[f32], dst: &mut [half::f16]) -> usize {
            let n = src.len().min(dst.len()) / 16 * 16;
            for i in (0..n).step_by(16) {
                // SAFETY: i + 16 <= n, within both slices; f16 is a u16 in memory.
                unsafe {
                    let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_loadu_ps(src.as_ptr().add(i)));
                    _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, h);
                }
            }
            n
        }
        /// # Safety
        /// AVX and F16C must be present.
        #[target_feature(enable = "avx,f16c")]
        unsafe fn f16c(src: &[f32], dst: &mut [half::f16]) -> usize {
            let n = src.len().min(dst.len()) / 8 * 8;
            for i in (0..n).step_by(8) {
                // SAFETY: as above, 8 at a time.
                unsafe {
                    let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(src.as_ptr().add(i)));
                    _mm_storeu_si128(dst.as_mut_ptr().add(i) as *mut __m128i, h);
                }
            }
            n
        }
        let done = match crate::isa::level() {
            // SAFETY: the level says the CPU has AVX-512F.
            crate::isa::Level::Avx512 => unsafe { avx512(src, dst) },
            // SAFETY: checked just before.
            crate::isa::Level::Avx2 if std::is_x86_feature_detected!("f16c") => unsafe { f16c(src, dst) },
            _ => 0,
        };
        for (d, &x) in dst[done..].iter_mut().zip(&src[done..]) {
            *d = half::f16::narrow(x);
        }
        return;
    }
    #[allow(unreachable_code)]
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = half::f16::narrow(x);
    }
}
