//! Depthwise convolution (one filter per channel, groups == channels): every plane's weighted taps
//! straight from the input, planes split over the pool. Stride-1 2-D planes are zero-padded once so
//! that each tap is a fixed offset, and run in f32 register tiles (AVX-512 / AVX2 FMA).

use crate::tensor::kernels::{as_f32_mut, multiversion};
use crate::tensor::linalg::Elem;

use super::conv::{as_f32, Geo};
use super::Ptr;

/// One filter per channel (groups == channels): each plane's weighted taps straight from the
/// input (bias as the starting value), planes in parallel.
pub(super) fn depthwise<T: Elem>(x: &[T], w: &[T], b: Option<&[T]>, y: &mut [T], g: &Geo, planes: usize, channels: usize) {
    let (kk, ol, il) = (g.kernel(), g.out_len(), g.in_len());
    let yp = Ptr(y.as_mut_ptr());
    // Runs of planes per task, sharing one padded scratch plane (its zero border is written once).
    let work = |run: std::ops::Range<usize>| {
        let mut scratch = Vec::new();
        for p in run {
            // SAFETY: plane p owns its output block.
            let out = unsafe { yp.block(p, ol) };
            let c = p % channels;
            let bias = b.map_or(T::default(), |b| b[c]);
            depthwise_plane(g, &x[p * il..(p + 1) * il], &w[c * kk..(c + 1) * kk], out, bias, &mut scratch);
        }
    };
    crate::pool::for_each_run(planes, &work);
}

multiversion! {
    fn depthwise_plane<T>(g: &Geo, plane: &[T], weights: &[T], out: &mut [T], bias: T, scratch: &mut Vec<T>)
    where [T: Elem]
    {
        if g.k[0] == 1 && g.len[0] == 1 && g.stride[1] == 1 && g.stride[2] == 1 {
            g.taps_over_padded(plane, weights, out, bias, scratch);
        } else {
            g.weighted_taps(plane, weights, out, bias);
        }
    }
}

impl Geo {
    /// One plane of a depthwise convolution straight from the input: for every kernel tap, the
    /// in-range run of each output row gets `weight · input` added (the taps im2col would copy out).
    #[inline(always)]
    fn weighted_taps<T: Elem>(&self, plane: &[T], weights: &[T], out: &mut [T], bias: T) {
        out.iter_mut().for_each(|v| *v = bias);
        let o2 = self.out[2];
        let mut t = 0;
        for a in 0..self.k[0] {
            for b in 0..self.k[1] {
                for c in 0..self.k[2] {
                    let wt = weights[t];
                    t += 1;
                    let (lo, hi, shift) = self.column_run(c);
                    let s2 = self.stride[2] as i64;
                    if lo >= hi {
                        continue;
                    }
                    for (r, row) in out.chunks_exact_mut(o2.max(1)).enumerate() {
                        let Some(src) = self.source_row(plane, a, b, r) else { continue };
                        let dst = &mut row[lo..hi];
                        if s2 == 1 {
                            let from = (lo as i64 + shift) as usize;
                            dst.iter_mut().zip(&src[from..from + hi - lo]).for_each(|(o, &v)| *o = *o + wt * v);
                        } else {
                            for (j, o) in dst.iter_mut().enumerate() {
                                *o = *o + wt * src[((lo + j) as i64 * s2 + shift) as usize];
                            }
                        }
                    }
                }
            }
        }
    }
}

impl Geo {
    /// Stride-1 depthwise over 1-2 dims: the plane is zero-padded once into rows of width
    /// Wp = W + 2·pad, so that each tap of an output row is a contiguous multiply-add at a fixed
    /// offset (a·dil·Wp + b·dil).
    #[inline(always)]
    fn taps_over_padded<T: Elem>(&self, plane: &[T], weights: &[T], out: &mut [T], bias: T, padded: &mut Vec<T>) {
        let ([_, h, w], [_, ph, pw], [_, dh, dw]) = (self.len, self.pad, self.dil);
        let (hp, wp) = (h + 2 * ph, w + 2 * pw);
        let (oh, ow) = (self.out[1], self.out[2]);
        // DW more zeros at the end, so that a register block (below) may read past the last row.
        // The border stays zero from one plane to the next: only the interior is written.
        if padded.len() != hp * wp + DW {
            *padded = vec![T::default(); hp * wp + DW];
        }
        let padded = &mut padded[..];
        for (r, src) in plane.chunks_exact(w.max(1)).enumerate().take(h) {
            padded[(r + ph) * wp + pw..(r + ph) * wp + pw + w].copy_from_slice(src);
        }
        let (kh, kw) = (self.k[1], self.k[2]);
        #[cfg(target_arch = "x86_64")]
        if dh == 1 && crate::isa::level() == crate::isa::Level::Avx512 {
            if let (Some(p), Some(wf), Some(o)) = (as_f32(&padded), as_f32(weights), as_f32_mut(out)) {
                let b = as_f32(std::slice::from_ref(&bias)).map_or(0.0, |b| b[0]);
                if dw_rows_avx512(p, wf, b, &DwShape { wp, kh, kw, dh, dw }, o, oh, ow) {
                    return;
                }
            }
        }
        // Sums at every position r·Wp + c of the padded plane's rows (pad columns included),
        // rounded up to whole register blocks.
        let long = (oh.max(1) - 1) * wp + ow;
        let mut acc = vec![bias; long.next_multiple_of(DW)];
        let mut done = false;
        #[cfg(target_arch = "x86_64")]
        if let (Some(p), Some(wf), Some(a)) = (as_f32(&padded), as_f32(weights), as_f32_mut(&mut acc)) {
            let b = as_f32(std::slice::from_ref(&bias)).map_or(0.0, |b| b[0]);
            let shape = DwShape { wp, kh, kw, dh, dw };
            // SAFETY: the CPU has the features each kernel was compiled for (isa::level), and
            // `padded` holds DW elements past the plane, which bounds the last block's reads.
            done = match crate::isa::level() {
                crate::isa::Level::Avx512 => unsafe { dw_blocks_avx512(p, wf, b, &shape, a); true },
                crate::isa::Level::Avx2 => unsafe { dw_blocks_avx2(p, wf, b, &shape, a); true },
                crate::isa::Level::Portable => false,
            };
        }
        if !done {
            // Each tap one long multiply-add over all positions at once.
            for a in 0..kh {
                for b in 0..kw {
                    let (wt, off) = (weights[a * kw + b], a * dh * wp + b * dw);
                    acc[..long].iter_mut().zip(&padded[off..off + long]).for_each(|(o, &v)| *o = *o + wt * v);
                }
            }
        }
        for r in 0..oh {
            out[r * ow..(r + 1) * ow].copy_from_slice(&acc[r * wp..r * wp + ow]);
        }
    }
}

/// Positions per register block of the depthwise kernels (eight AVX-512 registers of f32).
const DW: usize = 128;

/// The geometry a depthwise register-block kernel walks: padded rows of `wp`, a kh × kw kernel
/// dilated by (dh, dw), stride 1.
struct DwShape {
    wp: usize,
    kh: usize,
    kw: usize,
    dh: usize,
    dw: usize,
}

/// Depthwise f32 over the padded plane's positions (output (r, c) sits at r·Wp + c of `long`
/// positions, so a block spans rows and wastes only the pad columns), 128 positions held in eight
/// AVX-512 registers through every tap: one load and one FMA per tap and 16 outputs, one store per
/// block (a pass over the whole plane per tap, as the portable path does, also loads and stores the
/// sums each time). Returns the sums at every position; the caller copies out the valid columns.
///
/// # Safety
/// AVX-512F must be present; `p` must hold DW elements past the padded plane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn dw_blocks_avx512(p: &[f32], w: &[f32], bias: f32, s: &DwShape, acc: &mut [f32]) {
    use std::arch::x86_64::*;
    for q0 in (0..acc.len()).step_by(DW) {
        // Eight independent sums: enough in flight to cover the FMA latency.
        let mut v = [_mm512_set1_ps(bias); DW / 16];
        for a in 0..s.kh {
            for b in 0..s.kw {
                let at = q0 + a * s.dh * s.wp + b * s.dw;
                // Checked once per tap: every read below is inside p[at..at + DW].
                let src = p[at..at + DW].as_ptr();
                let wt = _mm512_set1_ps(w[a * s.kw + b]);
                for (i, v) in v.iter_mut().enumerate() {
                    // SAFETY: src points at DW = 8 × 16 readable elements.
                    *v = _mm512_fmadd_ps(wt, unsafe { _mm512_loadu_ps(src.add(16 * i)) }, *v);
                }
            }
        }
        let dst = acc[q0..q0 + DW].as_mut_ptr();
        for (i, v) in v.iter().enumerate() {
            // SAFETY: dst points at DW writable elements (acc is whole blocks long).
            unsafe { _mm512_storeu_ps(dst.add(16 * i), *v) };
        }
    }
}

/// Stride-1, row-dilation-1 depthwise f32 over the padded plane `p` (rows of `s.wp`, DW elements of
/// slack after the last) into `out` (oh × ow), in tiles of up to 4 output rows × 64 columns.
#[cfg(target_arch = "x86_64")]
fn dw_rows_avx512(p: &[f32], w: &[f32], bias: f32, s: &DwShape, out: &mut [f32], oh: usize, ow: usize) -> bool {
    // The reads below stay inside `p` and the writes inside `out` when these hold (checked once;
    // false leaves `out` to the caller's other path).
    let reach = (oh + s.kh - 1) * s.wp + DW;
    if p.len() < reach || w.len() < s.kh * s.kw || out.len() < oh * ow || ow + (s.kw - 1) * s.dw > s.wp {
        return false;
    }
    macro_rules! tile {
        ($r:literal, $c:literal, $at:expr, $o:expr, $cols:expr) => {
            // SAFETY: AVX-512F is the level in force (checked by the caller); the tile reads rows
            // r0..r0 + R + kh - 1 of `p` up to 16·C + (kw-1)·dw - 1 ≤ wp + 15 past its first column,
            // inside `reach`, and writes R rows × `cols` ≤ ow - c0 columns of `out`.
            unsafe { dw_tile_avx512::<$r, $c>(p.as_ptr().add($at), w, bias, s, out.as_mut_ptr().add($o), ow, $cols) }
        };
    }
    for r0 in (0..oh).step_by(4) {
        let rows = (oh - r0).min(4);
        for c0 in (0..ow).step_by(64) {
            let cols = (ow - c0).min(64);
            let (at, o) = (r0 * s.wp + c0, r0 * ow + c0);
            match (rows, cols.div_ceil(16)) {
                (4, 4) => tile!(4, 4, at, o, cols),
                (4, 3) => tile!(4, 3, at, o, cols),
                (4, 2) => tile!(4, 2, at, o, cols),
                (4, _) => tile!(4, 1, at, o, cols),
                (3, 4) => tile!(3, 4, at, o, cols),
                (3, 3) => tile!(3, 3, at, o, cols),
                (3, 2) => tile!(3, 2, at, o, cols),
                (3, _) => tile!(3, 1, at, o, cols),
                (2, 4) => tile!(2, 4, at, o, cols),
                (2, 3) => tile!(2, 3, at, o, cols),
                (2, 2) => tile!(2, 2, at, o, cols),
                (2, _) => tile!(2, 1, at, o, cols),
                (_, 4) => tile!(1, 4, at, o, cols),
                (_, 3) => tile!(1, 3, at, o, cols),
                (_, 2) => tile!(1, 2, at, o, cols),
                (_, _) => tile!(1, 1, at, o, cols),
            }
        }
    }
    true
}

/// R output rows × C vectors of 16 columns held in registers over all taps: each input vector is
/// loaded once and feeds every output row of the tile that reads it (up to min(R, kh) of them), so
/// loads per FMA fall from 1 to (R + kh - 1) / (R·kh). Sums start at the bias and are added tap by
/// tap in the same order as the other paths (row a, then column b).
///
/// # Safety
/// AVX-512F must be present; `p` must be readable for rows 0..R + kh - 1 (stride s.wp) up to
/// 16·C + (kw-1)·dw columns each, `out` writable for R rows (stride ow) of `cols` ≤ 16·C columns.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn dw_tile_avx512<const R: usize, const C: usize>(p: *const f32, w: &[f32], bias: f32, s: &DwShape, out: *mut f32, ow: usize, cols: usize) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_set1_ps(bias); C]; R];
    // Taps in (a, b) order per output row, as the portable path sums them: input row i feeds output
    // row o with kernel row a = i - o, so walking i upwards visits each row's taps in order.
    for i in 0..R + s.kh - 1 {
        for b in 0..s.kw {
            // SAFETY: inside the rows and columns the caller vouches for.
            let src = unsafe { p.add(i * s.wp + b * s.dw) };
            let x: [__m512; C] = std::array::from_fn(|c| unsafe { _mm512_loadu_ps(src.add(16 * c)) });
            for (o, acc) in acc.iter_mut().enumerate() {
                let a = i.wrapping_sub(o);
                if a < s.kh {
                    let wt = _mm512_set1_ps(w[a * s.kw + b]);
                    for (v, x) in acc.iter_mut().zip(&x) {
                        *v = _mm512_fmadd_ps(wt, *x, *v);
                    }
                }
            }
        }
    }
    for (o, acc) in acc.iter().enumerate() {
        for (c, v) in acc.iter().enumerate() {
            let n = cols.saturating_sub(16 * c).min(16);
            let mask = ((1u32 << n) - 1) as u16;
            // SAFETY: row o, columns 16c..16c + n < cols of the caller's block.
            unsafe { _mm512_mask_storeu_ps(out.add(o * ow + 16 * c), mask, *v) };
        }
    }
}

/// `dw_blocks_avx512` in sixteen AVX2 registers of 8.
///
/// # Safety
/// AVX2 and FMA must be present; `p` as for `dw_blocks_avx512`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dw_blocks_avx2(p: &[f32], w: &[f32], bias: f32, s: &DwShape, acc: &mut [f32]) {
    use std::arch::x86_64::*;
    for q0 in (0..acc.len()).step_by(DW) {
        let mut v = [_mm256_set1_ps(bias); DW / 8];
        for a in 0..s.kh {
            for b in 0..s.kw {
                let at = q0 + a * s.dh * s.wp + b * s.dw;
                let src = p[at..at + DW].as_ptr();
                let wt = _mm256_set1_ps(w[a * s.kw + b]);
                for (i, v) in v.iter_mut().enumerate() {
                    // SAFETY: src points at DW = 16 × 8 readable elements.
                    *v = _mm256_fmadd_ps(wt, unsafe { _mm256_loadu_ps(src.add(8 * i)) }, *v);
                }
            }
        }
        let dst = acc[q0..q0 + DW].as_mut_ptr();
        for (i, v) in v.iter().enumerate() {
            // SAFETY: dst points at DW = 16 × 8 writable elements.
            unsafe { _mm256_storeu_ps(dst.add(8 * i), *v) };
        }
    }
}

