//! Convolutions with 2-3 taps at stride 1 or 5-8 taps at stride 2 along the rows (a 7x7 stride-2
//! stem, 1-D front ends, k3 1-D convs, the 2x2 phases of k4 stride-2 transposed convs) by Winograd
//! along the rows, 4 outputs per tile.
//!
//! - Stride 2, F(4, 4): the even and odd columns of the input are two stride-1 signals, each read
//!   by at most 4 of the kernel's taps; 4 outputs of a 4-tap filter take 7 products instead of 16,
//!   so a 7-tap row costs 14 multiplies per 4 outputs where the direct kernel spends 28. Points 0,
//!   1, -1, 2, -2, 1/2, ∞: in f32 about twice the direct sum's error (2-3e-6 of the output's scale
//!   at worst over 64-term sums, against 1.2e-6).
//! - Stride 1, 3 taps, F(4, 3): 6 products for 4 outputs instead of 12 (points 0, ±1, ±2, ∞).
//! - Stride 1, 2 taps, F(4, 2): 5 products instead of 8 (points 0, ±1, 2, ∞), on rows of 48 or
//!   more outputs (on shorter ones the input transforms cost what the products save).
//! - Stride 2, 3 taps (3x3 stride-2 downsampling): the even columns meet taps 0 and 2, F(4, 2)
//!   again, and the odd columns tap 1 alone, as 4 plain products: 9 instead of 12.
//!
//! The products of a tile are the direct kernel's register tiles over the transformed rows (K =
//! C_in · kernel rows · column phases, a stride along the column dim taken as row phases as the
//! direct kernel does), and each block's products are transformed back while they sit in L1.

use std::arch::x86_64::*;

use super::conv::Geo;
use super::direct::{self, Packed, MR, NR};
use crate::pool::SendPtr;
use crate::tensor::kernels::{lanes16, uninit_vec};

/// Products per tile at most.
const XI: usize = 9;
/// G of F(4, 4) (filter transform, ξ × tap), exact in f64.
const G44: [[f64; 4]; 7] = [
    [-1.0 / 2.0, 0.0, 0.0, 0.0],
    [-1.0 / 3.0, -1.0 / 3.0, -1.0 / 3.0, -1.0 / 3.0],
    [1.0 / 9.0, -1.0 / 9.0, 1.0 / 9.0, -1.0 / 9.0],
    [1.0 / 36.0, 1.0 / 18.0, 1.0 / 9.0, 2.0 / 9.0],
    [-1.0 / 60.0, 1.0 / 30.0, -1.0 / 15.0, 2.0 / 15.0],
    [32.0 / 45.0, 16.0 / 45.0, 8.0 / 45.0, 4.0 / 45.0],
    [0.0, 0.0, 0.0, 1.0],
];
/// G of F(4, 3).
const G43: [[f64; 4]; 6] = [
    [1.0 / 4.0, 0.0, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0, 0.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0, 0.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0, 0.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
];

/// G of F(4, 2).
const G42: [[f64; 4]; 5] = [
    [1.0 / 2.0, 0.0, 0.0, 0.0],
    [1.0 / 2.0, 1.0 / 2.0, 0.0, 0.0],
    [1.0 / 6.0, -1.0 / 6.0, 0.0, 0.0],
    [1.0 / 6.0, 1.0 / 3.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
];
/// Stride 2 with 3 taps, over the taps: F(4, 2)'s G on taps 0 and 2, then tap 1 for each of the
/// four odd-column products.
const G2S3: [[f64; 4]; 9] = [
    [1.0 / 2.0, 0.0, 0.0, 0.0],
    [1.0 / 2.0, 0.0, 1.0 / 2.0, 0.0],
    [1.0 / 6.0, 0.0, -1.0 / 6.0, 0.0],
    [1.0 / 6.0, 0.0, 1.0 / 3.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
];

/// Which transform a convolution takes: stride 2 over two column phases (F(4, 4)), stride 1 with 3
/// taps (F(4, 3)) or 2 (F(4, 2)), or stride 2 with 3 taps (F(4, 2) on the even columns).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Rule {
    Stride2,
    Taps3,
    Taps2,
    Stride2Taps3,
}

impl Rule {
    /// Products per tile, column phases, taps per phase.
    fn shape(self) -> (usize, usize, usize) {
        match self {
            Rule::Stride2 => (7, 2, 4),
            Rule::Taps3 => (6, 1, 3),
            Rule::Taps2 => (5, 1, 2),
            // One "phase" of 3 taps: the products themselves take the columns apart.
            Rule::Stride2Taps3 => (9, 1, 3),
        }
    }
    fn g(self) -> &'static [[f64; 4]] {
        match self {
            Rule::Stride2 => &G44,
            Rule::Taps3 => &G43,
            Rule::Taps2 => &G42,
            Rule::Stride2Taps3 => &G2S3,
        }
    }
}

/// Packed weights kept per group of channel tiles (bytes), as in the direct kernel.
const A_BYTES: usize = 256 << 10;
/// What one task's transformed input rows may take (bytes): they are read again for every
/// channel tile, from L2.
const T_BYTES: usize = 512 << 10;

/// Which rule this f32 convolution runs by, if any: groups of one, 1-D or 2-D, stride 2 along the
/// columns with 3 or 5-8 taps or stride 1 with 2 or 3, no column dilation, rows at stride 1 or 2
/// without dilation, and enough channels and tiles for the products.
pub(super) fn rule(g: &Geo, c_in: usize, c_out: usize, groups: usize) -> Option<Rule> {
    let rule = match (g.stride[2], g.k[2]) {
        (2, 5..=8) => Rule::Stride2,
        (1, 3) => Rule::Taps3,
        (1, 2) => Rule::Taps2,
        (2, 3) => Rule::Stride2Taps3,
        _ => return None,
    };
    let (_, phases, _) = rule.shape();
    let fits = direct::available()
        && groups == 1
        && g.k[0] == 1
        && g.len[0] == 1
        && g.out[0] == 1
        && g.dil[2] == 1
        && g.dil[1] == 1
        && g.stride[1] <= 2
        && c_out >= 16
        && phases * c_in * g.k[1] >= 16
        && g.out[1] >= 1
        && match rule {
            Rule::Taps2 => g.out[2] >= 48,
            // Rows of 18+ columns (28 after a 3x3 stride-2 conv at 56x56) whose tiles cover at most
            // 15% more than the row. Smaller maps (14 or 7 columns under 256-512 channels) stay
            // with im2col: their few position blocks left a thread idle, and their transformed
            // rows, re-read for every channel tile, outgrew L2.
            Rule::Stride2Taps3 => g.out[2] >= 18 && 20 * 4 * g.out[2].div_ceil(4) <= 23 * g.out[2],
            _ => g.out[2] >= 16,
        };
    fits.then_some(rule)
}

/// Where a task's transformed rows lie: per ξ a block of `xl` elements, in it per (input channel,
/// column phase, row phase) a plane of `hq` rows of `tw` tiles.
struct Layout {
    tw: usize,
    hq: usize,
    /// Column phases, and row phases (min(stride, kernel rows)).
    cp: usize,
    rp: usize,
    xl: usize,
}

impl Layout {
    fn new(c_in: usize, tw: usize, hq: usize, cp: usize, rp: usize) -> Layout {
        // NR elements after the last plane: a block's last vectors read up to there (and drop it).
        Layout { tw, hq, cp, rp, xl: c_in * cp * rp * hq * tw + NR }
    }
    fn plane(&self, c: usize, px: usize, rp: usize) -> usize {
        ((c * self.cp + px) * self.rp + rp) * self.hq * self.tw
    }
}

/// y (n × c_out × oh × ow) = conv(x, w) + b for a geometry that `rule` gave `rule` for.
#[allow(clippy::too_many_arguments)]
pub(super) fn conv(x: &[f32], w: &[f32], b: Option<&[f32]>, g: &Geo, n: usize, c_in: usize, c_out: usize, rule: Rule) -> Vec<f32> {
    let (kh, kw, sh) = (g.k[1], g.k[2], g.stride[1]);
    let (xin, cph, _) = rule.shape();
    let (oh, ow) = (g.out[1], g.out[2]);
    let (il, ol) = (g.in_len(), g.out_len());
    let (tw, rp) = (ow.div_ceil(4), sh.min(kh));
    let kdim = c_in * kh * cph;
    let tiles_c = c_out.div_ceil(MR);
    let ul = tiles_c * kdim * MR;
    let u = filters(w, c_out, c_in, kh, kw, rule);
    let positions = oh * tw;
    let blocks = positions.div_ceil(NR);
    let threads = crate::pool::threads();
    // Pieces of the position blocks: four tasks per thread where images are fewer, and each
    // task's transformed rows (7/4 or 6/4 of its input's share, twice for two column phases)
    // about half an L2.
    let image_rows = xin * c_in * cph * rp * (oh + (kh - 1) / sh) * tw * 4;
    let pieces = if n >= 4 * threads { 1 } else { (4 * threads).div_ceil(n) };
    let pieces = pieces.max(image_rows.div_ceil(T_BYTES)).min(blocks);
    let chunk_tiles = (A_BYTES / (xin * kdim * MR * 4)).max(1);
    let linear = oh == 1 || ow == 4 * tw;
    let mut y = uninit_vec::<f32>(n * c_out * ol);
    let yp = SendPtr(y.as_mut_ptr());
    let u = &u;
    // A task per (image, run of position blocks): it transforms the input rows its output rows
    // read (written and read back in its own L2; whole images' rows went through L3, and the two
    // cores' transforms then products scaled 1.6x), then runs the products and output transforms.
    crate::pool::for_each(n * pieces, &|task| {
        let (bi, piece) = (task / pieces, task % pieces);
        let (b0, b1) = (blocks * piece / pieces, blocks * (piece + 1) / pieces);
        if b0 == b1 {
            return;
        }
        let (p_lo, p_hi) = (b0 * NR, (b1 * NR).min(positions));
        // Output rows oy0..=oy1 read transformed rows oy0..oy1 + (kh - 1) / sh of each plane;
        // within one output row only the tiles cx0..cx0 + width.
        let (oy0, oy1) = (p_lo / tw, (p_hi - 1) / tw);
        let (cx0, width) = if oy0 == oy1 { (p_lo - oy0 * tw, p_hi - p_lo) } else { (0, tw) };
        let lay = Layout::new(c_in, width, oy1 - oy0 + 1 + (kh - 1) / sh, cph, rp);
        let mut t = uninit_vec::<f32>(xin * lay.xl);
        let tp = SendPtr(t.as_mut_ptr());
        let mut q = uninit_vec::<f32>(4 * (width + 1));
        // (Stride 2 with 3 taps reads 16-tile chunks of 8 samples, and one more sample.)
        let mut scratch = uninit_vec::<f32>(8 * width.next_multiple_of(16) + 16);
        let src = &x[bi * c_in * il..(bi + 1) * c_in * il];
        for c in 0..c_in {
            for px in 0..cph {
                for r in 0..rp {
                    for i in 0..lay.hq {
                        // Padded row (oy0 + i)·stride + r; None over the padding.
                        let row = ((oy0 + i) * sh + r).checked_sub(g.pad[1]).filter(|&h| h < g.len[1]).map(|h| &src[c * il + h * g.len[2]..][..g.len[2]]);
                        // SAFETY: row i of the plane, in each ξ block of t.
                        let dst = SendPtr(unsafe { tp.get().add(lay.plane(c, px, r) + i * width) });
                        // SAFETY: `rule` checked AVX-512.
                        unsafe {
                            match rule {
                                Rule::Stride2 => input_row44(row, px, g.pad[2], cx0, width, &mut q, &mut scratch, dst, lay.xl),
                                Rule::Taps3 => input_row43(row, g.pad[2], cx0, width, &mut q, &mut scratch, dst, lay.xl),
                                Rule::Taps2 => input_row42(row, g.pad[2], cx0, width, &mut q, &mut scratch, dst, lay.xl),
                                Rule::Stride2Taps3 => input_row2s3(row, g.pad[2], cx0, width, &mut scratch, dst, lay.xl),
                            }
                        };
                    }
                }
            }
        }
        for xi in 0..xin {
            // The slack after each ξ block's planes (read into dropped lanes): zeros, not NaNs.
            t[xi * lay.xl + lay.xl - NR..(xi + 1) * lay.xl].fill(0.0);
        }
        let mut offs = Vec::with_capacity(kdim);
        for c in 0..c_in {
            for r in 0..kh {
                for px in 0..cph {
                    offs.push(lay.plane(c, px, r % sh) + (r / sh) * width);
                }
            }
        }
        // Position p reads column p - oy0·tw - cx0 of the task's planes.
        let base = t.as_ptr().wrapping_sub(oy0 * tw + cx0);
        let mut m = uninit_vec::<f32>(XI * MR * NR);
        for t0 in (0..tiles_c).step_by(chunk_tiles) {
            for blk in b0..b1 {
                let p0 = blk * NR;
                let left = (positions - p0).min(NR);
                for tc in t0..(t0 + chunk_tiles).min(tiles_c) {
                    let co = tc * MR;
                    let rows = (c_out - co).min(MR);
                    for xi in 0..xin {
                        // SAFETY: U[ξ]'s tile tc holds kdim × MR weights; B rows at base + ξ·xl +
                        // offs[k] + p0 read NR positions from p0 ≥ oy0·tw + cx0, inside the block and
                        // its slack; m[ξ] has MR rows of NR.
                        unsafe {
                            direct::tile_at(Packed(u[xi * ul + tc * kdim * MR..].as_ptr()), &offs, base.wrapping_add(xi * lay.xl + p0), left, m.as_mut_ptr().add(xi * MR * NR), NR, rows)
                        };
                    }
                    let bias = b.map(|b| &b[co..co + rows]);
                    let out = yp.get().wrapping_add((bi * c_out + co) * ol);
                    // SAFETY: positions p0..p0 + left of channels co..co + rows of image bi are
                    // this task's alone.
                    unsafe {
                        match rule {
                            Rule::Stride2 => output_block::<F44>(&m, rows, bias, p0, left, out, ol, ow, tw, linear),
                            Rule::Taps3 => output_block::<F43>(&m, rows, bias, p0, left, out, ol, ow, tw, linear),
                            Rule::Taps2 => output_block::<F42>(&m, rows, bias, p0, left, out, ol, ow, tw, linear),
                            Rule::Stride2Taps3 => output_block::<F2S3>(&m, rows, bias, p0, left, out, ol, ow, tw, linear),
                        }
                    };
                }
            }
        }
    });
    y
}

/// U[ξ] (c_out × kdim) = G · (the taps of each column phase), B row k = (input channel, kernel
/// row, column phase), packed for the register tiles; made once per weight content (the transform
/// in f64 took a tenth of a k3 conv1d over 80 channels, on one thread).
fn filters(w: &[f32], c_out: usize, c_in: usize, kh: usize, kw: usize, rule: Rule) -> std::sync::Arc<Vec<f32>> {
    super::packed::cached("winograd rows", [c_out, c_in, kh * 64 + kw, rule as usize], w, |w| {
        let (xin, cph, taps) = rule.shape();
        let kdim = c_in * kh * cph;
        let mut u = Vec::with_capacity(xin * c_out.div_ceil(MR) * kdim * MR);
        let mut ux = vec![0f32; c_out * kdim];
        for gx in rule.g() {
            for (co, dst) in ux.chunks_exact_mut(kdim).enumerate() {
                for c in 0..c_in {
                    let w_taps = &w[((co * c_in + c) * kh) * kw..][..kh * kw];
                    for r in 0..kh {
                        for px in 0..cph {
                            let s: f64 = (0..taps).filter(|t| cph * t + px < kw).map(|t| gx[t] * w_taps[r * kw + cph * t + px] as f64).sum();
                            dst[(c * kh + r) * cph + px] = s as f32;
                        }
                    }
                }
            }
            u.extend_from_slice(&direct::pack_rows(&ux, c_out, kdim));
        }
        u
    })
}

/// Fills the rows of one transformed input row's ξ blocks (dst + ξ·xl, tw elements each) with zeros.
///
/// # Safety
/// dst + ξ·xl holds tw writable elements for each ξ < xin.
unsafe fn zero_row(dst: SendPtr<f32>, xin: usize, tw: usize, xl: usize) {
    for xi in 0..xin {
        // SAFETY: the caller's row of tw elements in each ξ block.
        unsafe { std::slice::from_raw_parts_mut(dst.get().add(xi * xl), tw) }.fill(0.0);
    }
}

/// Splits d (4n samples) by j mod 4 into q (4 runs of n): q_r[t] = d[4t + r].
#[inline(always)]
fn split4(d: &[f32], q: &mut [f32], n: usize) {
    let (q0, rest) = q[..4 * n].split_at_mut(n);
    let (q1, rest) = rest.split_at_mut(n);
    let (q2, q3) = rest.split_at_mut(n);
    for (t, c) in d[..4 * n].chunks_exact(4).enumerate() {
        q0[t] = c[0];
        q1[t] = c[1];
        q2[t] = c[2];
        q3[t] = c[3];
    }
}

/// d[j] = row[stride·j + shift - pad], zero outside the row: the part inside by a copy or a
/// stride-2 deinterleave (which vectorises as permutes).
#[inline(always)]
fn window(row: &[f32], stride: usize, shift: usize, pad: usize, d: &mut [f32]) {
    let lo = pad.saturating_sub(shift).div_ceil(stride).min(d.len());
    let hi = (row.len() + pad).saturating_sub(shift).div_ceil(stride).clamp(lo, d.len());
    d[..lo].fill(0.0);
    d[hi..].fill(0.0);
    if lo < hi {
        super::conv::gather(&mut d[lo..hi], &row[stride * lo + shift - pad..], stride);
    }
}

/// The start of a scalar row transform (`input_row44/43/42`): `None` over padding, with the row's
/// X ξ blocks zeroed; else the samples d[j] = row[stride·(4·first + j) + px - pad] for j < 4(tw +
/// 1), split by j mod 4 into four runs of q, and the X output rows (tw elements at dst + ξ·xl).
///
/// # Safety
/// dst + ξ·xl holds tw writable elements for each ξ < X, rows no one else writes meanwhile.
#[inline(always)]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
unsafe fn row_start<'a, const X: usize>(
    row: Option<&[f32]>, stride: usize, px: usize, pad: usize, first: usize, tw: usize, q: &'a mut [f32], scratch: &mut [f32], dst: SendPtr<f32>, xl: usize,
) -> Option<([&'a [f32]; 4], [&'a mut [f32]; X])> {
    let Some(row) = row else {
        // SAFETY: the caller's rows.
        unsafe { zero_row(dst, X, tw, xl) };
        return None;
    };
    let n = tw + 1;
    let d = &mut scratch[..4 * n];
    window(row, stride, 4 * stride * first + px, pad, d);
    split4(d, q, n);
    let (q0, rest) = q.split_at(n);
    let (q1, rest) = rest.split_at(n);
    let (q2, q3) = rest.split_at(n);
    // SAFETY: the caller's row of tw elements in each ξ block.
    let out = std::array::from_fn(|xi| unsafe { std::slice::from_raw_parts_mut(dst.get().add(xi * xl), tw) });
    Some(([q0, q1, q2, &q3[..n]], out))
}

/// Stride 2: tiles first..first + tw of row i of one (channel, column phase) plane: the phase's
/// samples d[j] = row[2j + px - pad] (zero outside), split by j mod 4 into q, then for each tile tx
/// the 7 values Bᵀ·d[4tx..4tx+7] to dst + ξ·xl + tx - first.
///
/// # Safety
/// AVX-512; dst + ξ·xl holds tw writable elements for each ξ < 7.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn input_row44(row: Option<&[f32]>, px: usize, pad: usize, first: usize, tw: usize, q: &mut [f32], scratch: &mut [f32], dst: SendPtr<f32>, xl: usize) {
    // SAFETY: the caller's contract.
    let Some(([q0, q1, q2, q3], [o0, o1, o2, o3, o4, o5, o6])) = (unsafe { row_start::<7>(row, 2, px, pad, first, tw, q, scratch, dst, xl) }) else {
        return;
    };
    for tx in 0..tw {
        let (d0, d1, d2, d3, d4, d5, d6) = (q0[tx], q1[tx], q2[tx], q3[tx], q0[tx + 1], q1[tx + 1], q2[tx + 1]);
        o0[tx] = -2.0 * d0 + 4.0 * d1 + 2.5 * d2 - 5.0 * d3 - 0.5 * d4 + d5;
        o1[tx] = 2.0 * d1 - 2.0 * d2 - 4.5 * d3 + 0.5 * d4 + d5;
        o2[tx] = -2.0 * d1 + 6.0 * d2 - 3.5 * d3 - 1.5 * d4 + d5;
        o3[tx] = d1 - 1.5 * d2 - 2.0 * d3 + 1.5 * d4 + d5;
        o4[tx] = -d1 + 2.5 * d2 - 2.5 * d4 + d5;
        o5[tx] = 4.0 * d1 - 5.0 * d3 + d5;
        o6[tx] = -2.0 * d1 + 4.0 * d2 + 2.5 * d3 - 5.0 * d4 - 0.5 * d5 + d6;
    }
}

/// Stride 1, 3 taps: as `input_row44` for d[j] = row[j - pad] and the 6 values Bᵀ·d[4tx..4tx+6].
///
/// # Safety
/// AVX-512; dst + ξ·xl holds tw writable elements for each ξ < 6.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn input_row43(row: Option<&[f32]>, pad: usize, first: usize, tw: usize, q: &mut [f32], scratch: &mut [f32], dst: SendPtr<f32>, xl: usize) {
    // SAFETY: the caller's contract.
    let Some(([q0, q1, q2, q3], [o0, o1, o2, o3, o4, o5])) = (unsafe { row_start::<6>(row, 1, 0, pad, first, tw, q, scratch, dst, xl) }) else {
        return;
    };
    for tx in 0..tw {
        let (d0, d1, d2, d3, d4, d5) = (q0[tx], q1[tx], q2[tx], q3[tx], q0[tx + 1], q1[tx + 1]);
        o0[tx] = 4.0 * d0 - 5.0 * d2 + d4;
        o1[tx] = -4.0 * d1 - 4.0 * d2 + d3 + d4;
        o2[tx] = 4.0 * d1 - 4.0 * d2 - d3 + d4;
        o3[tx] = -2.0 * d1 - d2 + 2.0 * d3 + d4;
        o4[tx] = 2.0 * d1 - d2 - 2.0 * d3 + d4;
        o5[tx] = 4.0 * d1 - 5.0 * d3 + d5;
    }
}

/// Stride 1, 2 taps: as `input_row43` for the 5 values Bᵀ·d[4tx..4tx+5] of F(4, 2).
///
/// # Safety
/// AVX-512; dst + ξ·xl holds tw writable elements for each ξ < 5.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn input_row42(row: Option<&[f32]>, pad: usize, first: usize, tw: usize, q: &mut [f32], scratch: &mut [f32], dst: SendPtr<f32>, xl: usize) {
    // SAFETY: the caller's contract.
    let Some(([q0, q1, q2, q3], [o0, o1, o2, o3, o4])) = (unsafe { row_start::<5>(row, 1, 0, pad, first, tw, q, scratch, dst, xl) }) else {
        return;
    };
    for tx in 0..tw {
        let (d0, d1, d2, d3, d4) = (q0[tx], q1[tx], q2[tx], q3[tx], q0[tx + 1]);
        o0[tx] = 2.0 * d0 - d1 - 2.0 * d2 + d3;
        o1[tx] = 2.0 * d1 + d2 - d3;
        o2[tx] = -2.0 * d1 + 3.0 * d2 - d3;
        o3[tx] = d3 - d1;
        o4[tx] = 2.0 * d1 - d2 - 2.0 * d3 + d4;
    }
}

/// Stride 2, 3 taps: ξ 0-4 the F(4, 2) values (as `input_row42`) of the even columns e[j] =
/// row[2j - pad] (taps 0 and 2), ξ 5 + r the odd columns row[2(4tx + r) + 1 - pad] as they are
/// (tap 1). Tile tx reads p[8tx + m] (m ≤ 8) of the row from tile `first` on: 16 tiles at a time,
/// the 128 samples split 8 ways by three rounds of two-way permutes. Such rows are short (a 3x3
/// stride-2 conv over 28 columns has 7 tiles), and scalar loops or gathers over them cost a third
/// of their products.
///
/// # Safety
/// AVX-512; dst + ξ·xl holds tw writable elements for each ξ < 9; scratch holds 8·(tw rounded up
/// to 16) + 16 elements.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma")]
unsafe fn input_row2s3(row: Option<&[f32]>, pad: usize, first: usize, tw: usize, scratch: &mut [f32], dst: SendPtr<f32>, xl: usize) {
    let Some(row) = row else {
        // SAFETY: the caller's rows.
        return unsafe { zero_row(dst, 9, tw, xl) };
    };
    // p[x] = row[8·first + x - pad], zero outside the row, over whole chunks and one sample more.
    let len = 8 * tw.next_multiple_of(16) + 16;
    let p = &mut scratch[..len];
    window(row, 1, 8 * first, pad, p);
    let evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    let odds = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    let split = |a, b| split2(a, b, evens, odds);
    let (two, three) = (_mm512_set1_ps(2.0), _mm512_set1_ps(3.0));
    for c0 in (0..tw).step_by(16) {
        let mask = lanes16(tw - c0);
        // SAFETY: p[8·c0 .. 8·c0 + 129] lies below len.
        // (Loops, not array::from_fn or map: their closures were called out of line.)
        let mut z = [_mm512_setzero_ps(); 8];
        for (k, zk) in z.iter_mut().enumerate() {
            *zk = unsafe { _mm512_loadu_ps(p.as_ptr().add(8 * c0 + 16 * k)) };
        }
        let next = _mm512_set1_ps(p[8 * c0 + 128]);
        // By x mod 2, then mod 4, then mod 8: run m holds p[8t + m] for the 16 tiles t.
        let ((e0, o0), (e1, o1), (e2, o2), (e3, o3)) = (split(z[0], z[1]), split(z[2], z[3]), split(z[4], z[5]), split(z[6], z[7]));
        let ((ee0, eo0), (ee1, eo1)) = (split(e0, e1), split(e2, e3));
        let ((oe0, oo0), (oe1, oo1)) = (split(o0, o1), split(o2, o3));
        let ((m0, m4), (m2, m6)) = (split(ee0, ee1), split(eo0, eo1));
        let ((m1, m5), (m3, m7)) = (split(oe0, oe1), split(oo0, oo1));
        // p[8(t + 1)]: run 0 one tile on, the next chunk's first sample last.
        let m8 = _mm512_castsi512_ps(_mm512_alignr_epi32::<1>(_mm512_castps_si512(next), _mm512_castps_si512(m0)));
        let (d0, d1, d2, d3, d4) = (m0, m2, m4, m6, m8);
        let vals = [
            _mm512_fmsub_ps(two, _mm512_sub_ps(d0, d2), _mm512_sub_ps(d1, d3)),
            _mm512_fmadd_ps(two, d1, _mm512_sub_ps(d2, d3)),
            _mm512_fmsub_ps(three, d2, _mm512_fmadd_ps(two, d1, d3)),
            _mm512_sub_ps(d3, d1),
            _mm512_fmadd_ps(two, _mm512_sub_ps(d1, d3), _mm512_sub_ps(d4, d2)),
            m1,
            m3,
            m5,
            m7,
        ];
        for (xi, v) in vals.into_iter().enumerate() {
            // SAFETY: the caller's row of tw elements in each ξ block; lanes past tw masked off.
            unsafe { _mm512_mask_storeu_ps(dst.get().add(xi * xl + c0), mask, v) };
        }
    }
}

/// The even- and odd-indexed values of a|b (32 values), given the index vectors.
#[target_feature(enable = "avx512f")]
#[inline]
fn split2(a: __m512, b: __m512, evens: __m512i, odds: __m512i) -> (__m512, __m512) {
    (_mm512_permutex2var_ps(a, evens, b), _mm512_permutex2var_ps(a, odds, b))
}

/// Output transforms (`output_block`'s kind).
const F44: u8 = 0;
const F43: u8 = 1;
const F42: u8 = 2;
const F2S3: u8 = 3;

/// Y = Aᵀ·M + bias for a block's `rows` channels × `left` tiles (m[ξ][row][NR]) into the output
/// planes at `out` (rows `ol` apart): tile p's four outputs go to output row p / tw, columns
/// 4·(p mod tw)..+4 (those below ow). `linear` where that is simply 4p..4p + 4 (one row, or rows
/// of whole tiles).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn output_block<const KIND: u8>(m: &[f32], rows: usize, bias: Option<&[f32]>, p0: usize, left: usize, out: *mut f32, ol: usize, ow: usize, tw: usize, linear: bool) {
    let end = 4 * (p0 + left);
    for i in 0..rows {
        let bv = _mm512_set1_ps(bias.map_or(0.0, |b| b[i]));
        let dst = out.wrapping_add(i * ol);
        for v in 0..left.div_ceil(16) {
            // SAFETY: m holds XI × MR × NR values, the rule's first products written.
            let xin = [7, 6, 5, 9][KIND as usize];
            // (A loop, not array::from_fn: that closure was called out of line, its vectors through memory.)
            let mut mk = [_mm512_setzero_ps(); XI];
            for (xi, mx) in mk.iter_mut().enumerate().take(xin) {
                *mx = unsafe { _mm512_loadu_ps(m.as_ptr().add((xi * MR + i) * NR + 16 * v)) };
            }
            let (s12, d12) = (_mm512_add_ps(mk[1], mk[2]), _mm512_sub_ps(mk[1], mk[2]));
            let (s34, d34) = (_mm512_add_ps(mk[3], mk[4]), _mm512_sub_ps(mk[3], mk[4]));
            // Aᵀ of F(4, 4) (the point 1/2 adds m5 / 2^j, ∞ the last product to y3), of F(4, 3), or
            // of F(4, 2) (points 0, ±1, 2, ∞), to which stride 2 with 3 taps adds the odd columns'.
            let (y0, y1, y2, y3) = match KIND {
                F44 => (
                    _mm512_add_ps(_mm512_add_ps(mk[0], s12), _mm512_add_ps(s34, _mm512_add_ps(mk[5], bv))),
                    _mm512_fmadd_ps(_mm512_set1_ps(2.0), d34, _mm512_fmadd_ps(_mm512_set1_ps(0.5), mk[5], _mm512_add_ps(d12, bv))),
                    _mm512_fmadd_ps(_mm512_set1_ps(4.0), s34, _mm512_fmadd_ps(_mm512_set1_ps(0.25), mk[5], _mm512_add_ps(s12, bv))),
                    _mm512_fmadd_ps(_mm512_set1_ps(8.0), d34, _mm512_fmadd_ps(_mm512_set1_ps(0.125), mk[5], _mm512_add_ps(_mm512_add_ps(d12, mk[6]), bv))),
                ),
                F43 => (
                    _mm512_add_ps(_mm512_add_ps(mk[0], s12), _mm512_add_ps(s34, bv)),
                    _mm512_fmadd_ps(_mm512_set1_ps(2.0), d34, _mm512_add_ps(d12, bv)),
                    _mm512_fmadd_ps(_mm512_set1_ps(4.0), s34, _mm512_add_ps(s12, bv)),
                    _mm512_fmadd_ps(_mm512_set1_ps(8.0), d34, _mm512_add_ps(_mm512_add_ps(d12, mk[5]), bv)),
                ),
                _ => {
                    // Bias, and for stride 2 the odd columns' products (the zero vectors otherwise).
                    let odd = [_mm512_add_ps(mk[5], bv), _mm512_add_ps(mk[6], bv), _mm512_add_ps(mk[7], bv), _mm512_add_ps(mk[8], bv)];
                    (
                        _mm512_add_ps(_mm512_add_ps(mk[0], s12), _mm512_add_ps(mk[3], odd[0])),
                        _mm512_fmadd_ps(_mm512_set1_ps(2.0), mk[3], _mm512_add_ps(d12, odd[1])),
                        _mm512_fmadd_ps(_mm512_set1_ps(4.0), mk[3], _mm512_add_ps(s12, odd[2])),
                        _mm512_fmadd_ps(_mm512_set1_ps(8.0), mk[3], _mm512_add_ps(_mm512_add_ps(d12, mk[4]), odd[3])),
                    )
                }
            };
            // Interleave: lane l of y_j is tile 16v + l's output j. Within 128-bit lanes first
            // (tiles 4a + b of lane a), then the 128-bit lanes transposed.
            let (a, c) = (_mm512_unpacklo_ps(y0, y2), _mm512_unpacklo_ps(y1, y3));
            let (e, f) = (_mm512_unpackhi_ps(y0, y2), _mm512_unpackhi_ps(y1, y3));
            let r = [_mm512_unpacklo_ps(a, c), _mm512_unpackhi_ps(a, c), _mm512_unpacklo_ps(e, f), _mm512_unpackhi_ps(e, f)];
            let t0 = _mm512_shuffle_f32x4::<0b01_00_01_00>(r[0], r[1]);
            let t1 = _mm512_shuffle_f32x4::<0b01_00_01_00>(r[2], r[3]);
            let t2 = _mm512_shuffle_f32x4::<0b11_10_11_10>(r[0], r[1]);
            let t3 = _mm512_shuffle_f32x4::<0b11_10_11_10>(r[2], r[3]);
            let outs = [
                _mm512_shuffle_f32x4::<0b10_00_10_00>(t0, t1),
                _mm512_shuffle_f32x4::<0b11_01_11_01>(t0, t1),
                _mm512_shuffle_f32x4::<0b10_00_10_00>(t2, t3),
                _mm512_shuffle_f32x4::<0b11_01_11_01>(t2, t3),
            ];
            let q0 = 4 * (p0 + 16 * v);
            if linear {
                let limit = end.min(ol);
                for (k, &o) in outs.iter().enumerate() {
                    let at = q0 + 16 * k;
                    // SAFETY: the unmasked lanes are output positions below ol of this block.
                    unsafe { _mm512_mask_storeu_ps(dst.wrapping_add(at), lanes16(limit.saturating_sub(at)), o) };
                }
                continue;
            }
            let mut vals = [0f32; 64];
            for (k, &o) in outs.iter().enumerate() {
                // SAFETY: 16 of vals' 64 elements.
                unsafe { _mm512_storeu_ps(vals.as_mut_ptr().add(16 * k), o) };
            }
            for l in 0..16.min(end.saturating_sub(q0) / 4) {
                let p = p0 + 16 * v + l;
                let (oy, c0) = (p / tw, 4 * (p % tw));
                for j in 0..4.min(ow.saturating_sub(c0)) {
                    // SAFETY: row oy < oh (p < oh·tw), column c0 + j < ow.
                    unsafe { *dst.add(oy * ow + c0 + j) = vals[4 * l + j] };
                }
            }
        }
    }
}
