//! 3×3 stride-1 convolution by Winograd F(2×2, 3×3): every 4×4 input tile and 3×3 filter are
//! transformed so that a 2×2 block of outputs costs 16 multiplies instead of 36. Summed over input
//! channels those products are 16 gemms, (C_out × C_in)·(C_in × tiles), so the arithmetic drops
//! 2.25× and stays in gemm. Tiles go in blocks of whole tile rows sized to stay in L2. Filters are
//! transformed once per weight content and cached (inference weights do not change).

use std::sync::Arc;

use crate::tensor::kernels::{multiversion, uninit_vec};
use crate::tensor::linalg::gemm_serial;

use super::Ptr;

/// What one tile block's transformed input and products may take (f32 elements, ~512 KB).
const BLOCK_ELEMS: usize = 1 << 17;
/// Extra elements between the 16 transformed matrices of a block (see `conv3x3`).
const SKEW: usize = 48;

/// A 3×3 convolution's geometry (one spatial plane of H × W, symmetric zero padding).
pub struct Plan {
    pub n: usize,
    pub cin: usize,
    pub cout: usize,
    pub h: usize,
    pub w: usize,
    pub pad: [usize; 2],
    pub oh: usize,
    pub ow: usize,
}

/// Worth it where gemm stays efficient: enough channels to amortise the transforms and enough
/// tiles per image to fill a block.
pub fn worth_it(cin: usize, cout: usize, oh: usize, ow: usize) -> bool {
    cin >= 16 && cout >= 16 && oh.div_ceil(2) * ow.div_ceil(2) >= 16
}

pub fn conv3x3(x: &[f32], w: &[f32], bias: Option<&[f32]>, p: &Plan) -> Vec<f32> {
    let (th, tw) = (p.oh.div_ceil(2), p.ow.div_ceil(2));
    // Padded planes cover every tile's 4×4 window: input (h, w) sits at (h + pad, w + pad).
    let (hp, wp) = (2 * th + 2, 2 * tw + 2);
    // On AVX-512 the 16 products run on our register tiles, the filters kept packed for them (the
    // gemm crate packs them again on every call: 16 MB per call at 512 channels).
    #[cfg(target_arch = "x86_64")]
    let packed = super::direct::available();
    #[cfg(not(target_arch = "x86_64"))]
    let packed = false;
    let u = filters(w, p.cout, p.cin, packed);
    let mut rows_per = (BLOCK_ELEMS / (16 * (p.cin + p.cout) * tw).max(1)).clamp(1, th);
    if packed {
        // Our tiles read U once per block: blocks of at least 32 tiles (whole vectors of them).
        rows_per = rows_per.max(32usize.div_ceil(tw)).min(th);
    }
    let blocks = th.div_ceil(rows_per);
    // Padded by (image, block of tile rows), every channel, as the transforms read them: a thread
    // then pads the rows it transforms next (bar the two a block shares with the next), where a
    // split by channel sent half of every block's input across cores.
    let mut padded = uninit_vec::<f32>(p.n * p.cin * hp * wp);
    let pp = Ptr(padded.as_mut_ptr());
    crate::pool::for_each(p.n * blocks, &|i| {
        let (bi, b) = (i / blocks, i % blocks);
        let r0 = 2 * b * rows_per;
        let r1 = if b + 1 == blocks { hp } else { 2 * (b + 1) * rows_per };
        let c0 = p.pad[1].min(wp);
        let n = p.w.min(wp - c0);
        for c in 0..p.cin {
            let plane = bi * p.cin + c;
            // SAFETY: rows r0..r1 of each plane of image bi belong to this task alone (the blocks'
            // row ranges partition 0..hp).
            let dst = unsafe { std::slice::from_raw_parts_mut(pp.get().add((plane * hp + r0) * wp), (r1 - r0) * wp) };
            let src = &x[plane * p.h * p.w..(plane + 1) * p.h * p.w];
            for (rr, drow) in (r0..r1).zip(dst.chunks_exact_mut(wp)) {
                match rr.checked_sub(p.pad[0]).filter(|&r| r < p.h) {
                    Some(r) => {
                        drow[..c0].fill(0.0);
                        drow[c0..c0 + n].copy_from_slice(&src[r * p.w..r * p.w + n]);
                        drow[c0 + n..].fill(0.0);
                    }
                    None => drow.fill(0.0),
                }
            }
        }
    });
    let mut y = uninit_vec::<f32>(p.n * p.cout * p.oh * p.ow);
    let yp = Ptr(y.as_mut_ptr());
    // Block i's tile rows, tiles, and the strides of its 16 transformed inputs and products.
    let shape = |i: usize| {
        let ty0 = (i % blocks) * rows_per;
        let rows = rows_per.min(th - ty0);
        let tb = rows * tw;
        // The 16 matrices sit a little more than their size apart: at a multiple of 4 KB, the 16
        // streams each transform reads or writes would share cache sets (measured: 2x slower).
        (ty0, rows, tb, p.cin * tb + SKEW, p.cout * tb + SKEW)
    };
    let transform_in = |i: usize, v: &mut [f32], scratch: &mut [f32]| {
        let (ty0, rows, tb, sv, _) = shape(i);
        let bi = i / blocks;
        let img = &padded[bi * p.cin * hp * wp..(bi + 1) * p.cin * hp * wp];
        for c in 0..p.cin {
            let plane = &img[c * hp * wp..(c + 1) * hp * wp];
            #[cfg(target_arch = "x86_64")]
            if packed {
                // SAFETY: `packed` holds only where the CPU runs AVX-512.
                unsafe { x86::input_tiles(plane, wp, ty0, rows, tw, v, c * tb, sv) };
                continue;
            }
            input_tiles(plane, wp, ty0, rows, tw, v, c * tb, sv, scratch);
        }
    };
    // Products xi of block i for output channels co0..co1 (co0 a multiple of 8 when packed).
    let products = |i: usize, v: &[f32], m: *mut f32, xi: usize, co0: usize, co1: usize| {
        let (_, _, tb, sv, sm) = shape(i);
        #[cfg(target_arch = "x86_64")]
        if packed {
            let ul = p.cout.next_multiple_of(8) * p.cin;
            // SAFETY: U[xi] is packed cout × cin, V[xi] cin × tb with SKEW after it, M[xi] cout × tb.
            unsafe {
                super::direct::product(super::direct::Packed(u[xi * ul + co0 * p.cin..(xi + 1) * ul].as_ptr()), co1 - co0, p.cin, v[xi * sv..].as_ptr(), tb, m.add(xi * sm + co0 * tb), tb, None)
            };
            return;
        }
        // SAFETY: U[xi] is cout × cin, V[xi] cin × tb, M[xi] cout × tb, all row-major.
        unsafe {
            gemm_serial(
                co1 - co0, p.cin, tb,
                u[xi * p.cout * p.cin + co0 * p.cin..].as_ptr(), p.cin,
                v[xi * sv..].as_ptr(), tb,
                m.add(xi * sm + co0 * tb), tb, false,
            )
        };
    };
    let transform_out = |i: usize, m: &[f32], co: usize, scratch: &mut [f32]| {
        let (ty0, rows, tb, _, sm) = shape(i);
        let bi = i / blocks;
        // This block's output rows: 2·ty0 up to two per tile row, clipped to the plane.
        let (r0, r1) = (2 * ty0, (2 * (ty0 + rows)).min(p.oh));
        // SAFETY: rows r0..r1 of channel co of image bi belong to this call alone.
        let out = unsafe { std::slice::from_raw_parts_mut(yp.get().add(((bi * p.cout + co) * p.oh + r0) * p.ow), (r1 - r0) * p.ow) };
        let b = bias.map_or(0.0, |b| b[co]);
        #[cfg(target_arch = "x86_64")]
        if packed {
            // SAFETY: as in `transform_in`.
            return unsafe { x86::output_tiles(m, co * tb, sm, out, p.ow, rows, tw, b) };
        }
        output_tiles(m, co * tb, sm, out, p.ow, rows, tw, b, scratch);
    };
    let threads = crate::pool::threads();
    if p.n * blocks >= 4 * threads || p.n == 0 {
        // A task per block (four or more per thread, so that the smaller last block evens out): its
        // transforms and its 16 products.
        crate::pool::for_each(p.n * blocks, &|i| {
            let (_, _, _, sv, sm) = shape(i);
            let mut v = uninit_vec::<f32>(16 * sv);
            let mut m = uninit_vec::<f32>(16 * sm);
            let mut scratch = uninit_vec::<f32>(8 * (tw + 1));
            transform_in(i, &mut v, &mut scratch);
            for xi in 0..16 {
                products(i, &v, m.as_mut_ptr(), xi, 0, p.cout);
            }
            for co in 0..p.cout {
                transform_out(i, &m, co, &mut scratch);
            }
        });
    } else {
        // Few blocks (a small map at batch 1): each stage over the pool, the products split by
        // output channels as well, so the threads get even shares.
        let (_, _, _, sv, sm) = shape(0);
        let nb = p.n * blocks;
        let mut v = uninit_vec::<f32>(nb * 16 * sv);
        let mut m = uninit_vec::<f32>(nb * 16 * sm);
        crate::pool::chunks_mut(&mut v, 16 * sv, |i, vi| transform_in(i, vi, &mut uninit_vec::<f32>(8 * (tw + 1))));
        let parts = (4 * threads).div_ceil(16 * nb).min(p.cout.div_ceil(8)).max(1);
        let step = p.cout.div_ceil(parts).next_multiple_of(8);
        let mp = Ptr(m.as_mut_ptr());
        let v = &v;
        crate::pool::for_each(nb * 16 * parts, &|t| {
            let (i, xi, part) = (t / (16 * parts), t / parts % 16, t % parts);
            let (co0, co1) = ((part * step).min(p.cout), ((part + 1) * step).min(p.cout));
            if co0 < co1 {
                // SAFETY: block i's products xi for channels co0..co1 are this task's alone.
                products(i, &v[i * 16 * sv..(i + 1) * 16 * sv], unsafe { mp.get().add(i * 16 * sm) }, xi, co0, co1);
            }
        });
        let m = &m;
        crate::pool::for_each_run(nb * p.cout, &|r| {
            let mut scratch = uninit_vec::<f32>(8 * (tw + 1));
            for t in r {
                let (i, co) = (t / p.cout, t % p.cout);
                transform_out(i, &m[i * 16 * sm..(i + 1) * 16 * sm], co, &mut scratch);
            }
        });
    }
    y
}

multiversion! {
    /// V = Bᵀ·d·B for the tiles of rows ty0..ty0+rows of one padded plane (row length wp = 2·tw + 2),
    /// into v[ξ·stride + at + t]. Each input row is split into its even and odd columns first, so
    /// every later load and store runs at unit stride over the tiles of a row (and vectorises).
    #[allow(clippy::too_many_arguments)]
    fn input_tiles<>(plane: &[f32], wp: usize, ty0: usize, rows: usize, tw: usize, v: &mut [f32], at: usize, stride: usize, scratch: &mut [f32])
    where []
    {
        let n = tw + 1;
        let (ev, od) = scratch[..8 * n].split_at_mut(4 * n);
        let vp = v.as_mut_ptr();
        for ty in 0..rows {
            for i in 0..4 {
                let row = &plane[(2 * (ty0 + ty) + i) * wp..][..2 * n];
                for (k, pair) in row.chunks_exact(2).enumerate() {
                    ev[i * n + k] = pair[0];
                    od[i * n + k] = pair[1];
                }
            }
            let t0 = at + ty * tw;
            assert!(15 * stride + t0 + tw <= v.len());
            for tx in 0..tw {
                // Row i of d·B: [d0 - d2, d1 + d2, d2 - d1, d1 - d3] with d0..d3 = e[tx], o[tx], e[tx+1], o[tx+1].
                let mut h = [[0f32; 4]; 4];
                for (i, hi) in h.iter_mut().enumerate() {
                    let (e0, o0, e1, o1) = (ev[i * n + tx], od[i * n + tx], ev[i * n + tx + 1], od[i * n + tx + 1]);
                    *hi = [e0 - e1, o0 + e1, e1 - o0, o0 - o1];
                }
                for j in 0..4 {
                    let vals = [h[0][j] - h[2][j], h[1][j] + h[2][j], h[2][j] - h[1][j], h[1][j] - h[3][j]];
                    for (a, val) in vals.into_iter().enumerate() {
                        // SAFETY: (a·4 + j)·stride + t0 + tx < v.len(), checked above.
                        unsafe { *vp.add((a * 4 + j) * stride + t0 + tx) = val };
                    }
                }
            }
        }
    }
}

multiversion! {
    /// Y = Aᵀ·M·A + bias for one output channel's `rows` tile rows (m[ξ·stride + at + t]) into `out`,
    /// the output rows they cover (the last tile row may have only one). The four outputs of each
    /// tile go to four unit-stride rows first and are interleaved into the plane after.
    #[allow(clippy::too_many_arguments)]
    fn output_tiles<>(m: &[f32], at: usize, stride: usize, out: &mut [f32], ow: usize, rows: usize, tw: usize, bias: f32, scratch: &mut [f32])
    where []
    {
        let (y00, rest) = scratch[..4 * tw].split_at_mut(tw);
        let (y01, rest) = rest.split_at_mut(tw);
        let (y10, y11) = rest.split_at_mut(tw);
        for ty in 0..rows {
            let t0 = at + ty * tw;
            assert!(15 * stride + t0 + tw <= m.len());
            for tx in 0..tw {
                // SAFETY: k·stride + t0 + tx < m.len() for k ≤ 15, checked above.
                let g = |k: usize| unsafe { *m.get_unchecked(k * stride + t0 + tx) };
                // t = Aᵀ·M (2×4), then Y = t·A (2×2).
                let mut t = [[0f32; 4]; 2];
                for j in 0..4 {
                    let (m0, m1, m2, m3) = (g(j), g(4 + j), g(8 + j), g(12 + j));
                    t[0][j] = m0 + m1 + m2;
                    t[1][j] = m1 - m2 - m3;
                }
                y00[tx] = t[0][0] + t[0][1] + t[0][2] + bias;
                y01[tx] = t[0][1] - t[0][2] - t[0][3] + bias;
                y10[tx] = t[1][0] + t[1][1] + t[1][2] + bias;
                y11[tx] = t[1][1] - t[1][2] - t[1][3] + bias;
            }
            let r = 2 * ty;
            interleave(&mut out[r * ow..(r + 1) * ow], y00, y01);
            if (r + 2) * ow <= out.len() {
                interleave(&mut out[(r + 1) * ow..(r + 2) * ow], y10, y11);
            }
        }
    }
}

/// The two transforms on AVX-512, 16 tiles of a tile row per vector: loads split into even and odd
/// columns by permutes, tails masked (the portable versions above leave half of this to scalar code:
/// they took a quarter of a 64-channel layer's time).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use crate::tensor::kernels::lanes16 as lanes;

    /// `input_tiles` (without its scratch rows).
    ///
    /// # Safety
    /// AVX-512 F; the bounds are checked.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn input_tiles(plane: &[f32], wp: usize, ty0: usize, rows: usize, tw: usize, v: &mut [f32], at: usize, stride: usize) {
        assert!(wp == 2 * tw + 2 && (2 * (ty0 + rows) + 2) * wp <= plane.len());
        let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
        let vp = v.as_mut_ptr();
        for ty in 0..rows {
            let t0 = at + ty * tw;
            assert!(15 * stride + t0 + tw <= v.len());
            for tx0 in (0..tw).step_by(16) {
                // Row elements from 2·tx0 on: 2·(tw - tx0) + 2, all inside the row.
                let avail = wp - 2 * tx0;
                let mut h = [[_mm512_setzero_ps(); 4]; 4];
                for (i, hi) in h.iter_mut().enumerate() {
                    let r = plane.as_ptr().wrapping_add((2 * (ty0 + ty) + i) * wp + 2 * tx0);
                    // SAFETY: masked to the row's elements (masked-off lanes are not read).
                    let ld = |off: usize| unsafe { _mm512_maskz_loadu_ps(lanes(avail.saturating_sub(off)), r.wrapping_add(off)) };
                    let (a0, b0, a2, b2) = (ld(0), ld(16), ld(2), ld(18));
                    let (e0, o0) = (_mm512_permutex2var_ps(a0, even, b0), _mm512_permutex2var_ps(a0, odd, b0));
                    let (e1, o1) = (_mm512_permutex2var_ps(a2, even, b2), _mm512_permutex2var_ps(a2, odd, b2));
                    // Row i of d·B (see the portable version).
                    *hi = [_mm512_sub_ps(e0, e1), _mm512_add_ps(o0, e1), _mm512_sub_ps(e1, o0), _mm512_sub_ps(o0, o1)];
                }
                let mask = lanes(tw - tx0);
                for j in 0..4 {
                    let vals = [
                        _mm512_sub_ps(h[0][j], h[2][j]),
                        _mm512_add_ps(h[1][j], h[2][j]),
                        _mm512_sub_ps(h[2][j], h[1][j]),
                        _mm512_sub_ps(h[1][j], h[3][j]),
                    ];
                    for (a, val) in vals.into_iter().enumerate() {
                        // SAFETY: (a·4 + j)·stride + t0 + tx < v.len() for the unmasked tx, checked above.
                        unsafe { _mm512_mask_storeu_ps(vp.add((a * 4 + j) * stride + t0 + tx0), mask, val) };
                    }
                }
            }
        }
    }

    /// `output_tiles` (without its scratch rows): each tile's two output columns interleaved by
    /// permutes and stored masked to the row.
    ///
    /// # Safety
    /// AVX-512 F; the bounds are checked.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn output_tiles(m: &[f32], at: usize, stride: usize, out: &mut [f32], ow: usize, rows: usize, tw: usize, bias: f32) {
        assert!(ow <= 2 * tw && 2 * tw <= ow + 1 && (2 * rows - 1) * ow <= out.len());
        let lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        let hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
        let b = _mm512_set1_ps(bias);
        let op = out.as_mut_ptr();
        // Columns 2·tx0.. of row `r`: a[t], b[t] interleaved, `cols` of them.
        let store = |r: usize, tx0: usize, a: __m512, c: __m512| {
            let cols = ow - 2 * tx0;
            let p = op.wrapping_add(r * ow + 2 * tx0);
            // SAFETY: masked to the row's columns; the row lies in `out` (checked by the caller).
            unsafe {
                _mm512_mask_storeu_ps(p, lanes(cols), _mm512_permutex2var_ps(a, lo, c));
                _mm512_mask_storeu_ps(p.wrapping_add(16), lanes(cols.saturating_sub(16)), _mm512_permutex2var_ps(a, hi, c));
            }
        };
        for ty in 0..rows {
            let t0 = at + ty * tw;
            assert!(15 * stride + t0 + tw <= m.len());
            for tx0 in (0..tw).step_by(16) {
                let mask = lanes(tw - tx0);
                // SAFETY: k·stride + t0 + tx < m.len() for the unmasked tx, checked above.
                let g = |k: usize| unsafe { _mm512_maskz_loadu_ps(mask, m.as_ptr().add(k * stride + t0 + tx0)) };
                // t = Aᵀ·M (2×4), then Y = t·A (2×2).
                let (mut t0r, mut t1r) = ([_mm512_setzero_ps(); 4], [_mm512_setzero_ps(); 4]);
                for j in 0..4 {
                    let (m0, m1, m2, m3) = (g(j), g(4 + j), g(8 + j), g(12 + j));
                    t0r[j] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
                    t1r[j] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
                }
                let y = |t: &[__m512; 4]| {
                    (
                        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(t[0], t[1]), t[2]), b),
                        _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(t[1], t[2]), t[3]), b),
                    )
                };
                let ((y00, y01), (y10, y11)) = (y(&t0r), y(&t1r));
                store(2 * ty, tx0, y00, y01);
                if (2 * ty + 2) * ow <= out.len() {
                    store(2 * ty + 1, tx0, y10, y11);
                }
            }
        }
    }
}

/// row[2i] = a[i], row[2i + 1] = b[i], for as much of the row as there is.
#[inline(always)]
fn interleave(row: &mut [f32], a: &[f32], b: &[f32]) {
    let half = row.len() / 2;
    let mut pairs = row.chunks_exact_mut(2);
    for ((p, &x), &y) in (&mut pairs).zip(a).zip(b) {
        p[0] = x;
        p[1] = y;
    }
    if let Some(last) = pairs.into_remainder().first_mut() {
        *last = a[half];
    }
}

/// U = G·g·Gᵀ for every filter, as 16 matrices (C_out × C_in; `packed`: as `direct::pack_rows`
/// packs them): transformed once per weight content.
fn filters(w: &[f32], cout: usize, cin: usize, packed: bool) -> Arc<Vec<f32>> {
    super::packed::cached("winograd", [cout, cin, packed as usize, 0], w, |w| {
        let u = transform_filters(w, cout, cin);
        #[cfg(target_arch = "x86_64")]
        if packed {
            let mut all = Vec::with_capacity(16 * cout.next_multiple_of(8) * cin);
            for ux in u.chunks_exact(cout * cin) {
                all.extend_from_slice(&super::direct::pack_rows(ux, cout, cin));
            }
            return all;
        }
        u
    })
}

fn transform_filters(w: &[f32], cout: usize, cin: usize) -> Vec<f32> {
    let mut u = uninit_vec::<f32>(16 * cout * cin);
    for (f, g) in w.chunks_exact(9).enumerate() {
        // Gg (4×3), rows of g combined; then (Gg)·Gᵀ, columns combined the same way.
        let gg = [
            [g[0], g[1], g[2]],
            [(g[0] + g[3] + g[6]) * 0.5, (g[1] + g[4] + g[7]) * 0.5, (g[2] + g[5] + g[8]) * 0.5],
            [(g[0] - g[3] + g[6]) * 0.5, (g[1] - g[4] + g[7]) * 0.5, (g[2] - g[5] + g[8]) * 0.5],
            [g[6], g[7], g[8]],
        ];
        for (i, r) in gg.iter().enumerate() {
            let row = [r[0], (r[0] + r[1] + r[2]) * 0.5, (r[0] - r[1] + r[2]) * 0.5, r[2]];
            for (j, val) in row.into_iter().enumerate() {
                u[(i * 4 + j) * cout * cin + f] = val;
            }
        }
    }
    u
}
