//! f32 convolution (1-D and 2-D) on AVX-512 as a product whose B rows are shifted views of the
//! input: the input is copied once per call, zero-padded and split into its stride phases, so that
//! every kernel tap reads one contiguous run of the copy for a run of output positions. No im2col
//! buffer and no packing of B: the strided convs (a 7x7 stride-2 stem, 1-D speech front ends, the
//! stride-2 3x3 and 1x1 of a ResNet) run at the FMA rate of a plain product.
//!
//! Output positions are taken over the copy's row width (`wq`, a few columns wider than the output
//! row); the extra columns are computed and dropped by masked stores. Register tiles: 8 output
//! channels (weights broadcast, packed per call as [tap][8]) × 48 positions (3 vectors).

use std::arch::x86_64::*;

use super::conv::{gather, Geo};
use crate::pool::SendPtr;
use crate::tensor::kernels::uninit_vec;

/// Output channels per register tile.
pub(super) const MR: usize = 8;
/// Vectors of 16 positions per register tile (8 × 3 accumulators + 3 B vectors + a broadcast).
const NV: usize = 3;
pub(super) const NR: usize = 16 * NV;
/// Packed weights kept per group of channel tiles (bytes), so they stay in L2 while positions pass.
const A_BYTES: usize = 256 << 10;

/// Whether this CPU (under `CANDLE_BIND_ISA`) runs the kernel.
pub(super) fn available() -> bool {
    crate::isa::level() == crate::isa::Level::Avx512
}

/// The padded, phase-split copy of one input channel: `planes` planes of `hq × wq`, plane
/// (a, b) holding padded element (i·sh + a, j·sw + b) at (i, j). Only the phases some tap reads.
struct Layout {
    hq: usize,
    wq: usize,
    /// Plane index of each row phase (usize::MAX where no tap reads it); the same for columns.
    ph: Vec<usize>,
    pw: Vec<usize>,
    /// Column phases read, and planes per channel.
    nw: usize,
    planes: usize,
}

impl Layout {
    fn new(g: &Geo) -> Layout {
        let (sh, sw) = (g.stride[1], g.stride[2]);
        let (hp, wp) = (g.len[1] + 2 * g.pad[1], g.len[2] + 2 * g.pad[2]);
        let used = |s: usize, k: usize, d: usize| {
            let mut idx = vec![usize::MAX; s];
            let mut count = 0;
            for t in 0..k {
                let p = t * d % s;
                if idx[p] == usize::MAX {
                    idx[p] = count;
                    count += 1;
                }
            }
            (idx, count)
        };
        let (ph, nh) = used(sh, g.k[1], g.dil[1]);
        let (pw, nw) = used(sw, g.k[2], g.dil[2]);
        Layout { hq: hp.div_ceil(sh), wq: wp.div_ceil(sw), ph, pw, nw, planes: nh * nw }
    }
    fn plane_len(&self) -> usize {
        self.hq * self.wq
    }
    fn chan_len(&self) -> usize {
        self.planes * self.plane_len()
    }
    /// Elements past the last plane that the last tiles of a row may read (into garbage columns).
    fn slack(&self) -> usize {
        self.wq + NR
    }
    /// Element offset of every (channel, tap) row of B in a copy of `cin` channels.
    fn offsets(&self, g: &Geo, cin: usize) -> Vec<usize> {
        let (sh, sw) = (g.stride[1], g.stride[2]);
        let mut offs = Vec::with_capacity(cin * g.k[1] * g.k[2]);
        for c in 0..cin {
            for kh in 0..g.k[1] {
                for kw in 0..g.k[2] {
                    let (a, b) = (kh * g.dil[1], kw * g.dil[2]);
                    let plane = c * self.planes + self.ph[a % sh] * self.nw + self.pw[b % sw];
                    offs.push(plane * self.plane_len() + (a / sh) * self.wq + b / sw);
                }
            }
        }
        offs
    }
    /// Writes the planes of one input channel (`src`, h × w) into `dst` (chan_len elements).
    fn fill(&self, g: &Geo, src: &[f32], dst: &mut [f32]) {
        let (sh, sw, h, w) = (g.stride[1], g.stride[2], g.len[1], g.len[2]);
        let (pt, pl) = (g.pad[1], g.pad[2]);
        for (a, &ia) in self.ph.iter().enumerate().filter(|(_, &i)| i != usize::MAX) {
            for (b, &ib) in self.pw.iter().enumerate().filter(|(_, &i)| i != usize::MAX) {
                let plane = &mut dst[(ia * self.nw + ib) * self.plane_len()..][..self.plane_len()];
                // Columns j whose padded column j·sw + b lies inside the input: lo..hi.
                let lo = pl.saturating_sub(b).div_ceil(sw).min(self.wq);
                let hi = (pl + w).saturating_sub(b).div_ceil(sw).clamp(lo, self.wq);
                for (i, row) in plane.chunks_exact_mut(self.wq).enumerate() {
                    let r = i * sh + a;
                    if r < pt || r >= pt + h || lo == hi {
                        row.fill(0.0);
                        continue;
                    }
                    row[..lo].fill(0.0);
                    row[hi..].fill(0.0);
                    let first = lo * sw + b - pl;
                    gather(&mut row[lo..hi], &src[(r - pt) * w + first..], sw);
                }
            }
        }
    }
}

/// Whether the direct kernel should run this f32 convolution: 1-D or 2-D, and the positions it
/// computes (the copy's wider rows, whole vectors) at most 8% more than the output's. Small maps
/// (a 7x7 or 14x14 output under a 3x3 kernel) waste more and stay with im2col and gemm.
pub(super) fn suits(g: &Geo) -> bool {
    if !available() || g.k[0] != 1 || g.len[0] != 1 || g.out[0] != 1 || g.out[1] == 0 || g.out[2] == 0 {
        return false;
    }
    let wq = (g.len[2] + 2 * g.pad[2]).div_ceil(g.stride[2]);
    let computed = (g.out[1] * wq).next_multiple_of(16);
    computed * 25 <= g.out[1] * g.out[2] * 27
}

/// A (m × k, row-major) packed for `tile`: per tile of MR rows, [k][MR], zero rows past m.
pub(super) fn pack_rows(a: &[f32], m: usize, k: usize) -> Vec<f32> {
    let mut packed = vec![0f32; m.div_ceil(MR) * k * MR];
    for (r, row) in a.chunks_exact(k.max(1)).take(m).enumerate() {
        let dst = &mut packed[(r / MR) * k * MR..][..k * MR];
        for (j, &v) in row.iter().enumerate() {
            dst[j * MR + r % MR] = v;
        }
    }
    packed
}

/// Where a product reads its weights (A, m × k): per tile of MR rows, a `TileWeights`.
pub(super) trait Weights: Copy {
    type Tile: TileWeights;
    /// The weights of rows co..co + MR.
    fn tile(self, co: usize, k: usize) -> Self::Tile;
}

/// One tile's weights: (row i of the tile, k).
pub(super) trait TileWeights: Copy {
    /// # Safety
    /// i < MR and k below the inner dim.
    unsafe fn at(self, i: usize, k: usize) -> f32;
}

/// Weights packed by `pack_rows`: per tile of MR rows, [k][MR].
#[derive(Clone, Copy)]
pub(super) struct Packed(pub *const f32);

impl Weights for Packed {
    type Tile = Packed;
    fn tile(self, co: usize, k: usize) -> Packed {
        Packed(self.0.wrapping_add(co * k))
    }
}

impl TileWeights for Packed {
    #[inline(always)]
    unsafe fn at(self, i: usize, k: usize) -> f32 {
        // SAFETY: the caller's bounds.
        unsafe { *self.0.add(k * MR + i) }
    }
}

/// Weights read where they are: row-major m × k with rows `ld` apart (a convolution's weight).
#[derive(Clone, Copy)]
pub(super) struct InPlace {
    pub w: *const f32,
    pub m: usize,
    pub ld: usize,
}

/// A tile's rows of an `InPlace` matrix; rows past the matrix read its row co again (their sums
/// are dropped).
#[derive(Clone, Copy)]
pub(super) struct RowPtrs([*const f32; MR]);

impl Weights for InPlace {
    type Tile = RowPtrs;
    fn tile(self, co: usize, _: usize) -> RowPtrs {
        let first = self.w.wrapping_add(co * self.ld);
        RowPtrs(std::array::from_fn(|i| if co + i < self.m { first.wrapping_add(i * self.ld) } else { first }))
    }
}

impl TileWeights for RowPtrs {
    #[inline(always)]
    unsafe fn at(self, i: usize, k: usize) -> f32 {
        // SAFETY: the caller's bounds.
        unsafe { *self.0[i].add(k) }
    }
}

/// C (m rows, `ldc` apart, columns 0..n) = A (m × k, from `a`) · B (k × n, row-major, 16 readable
/// elements past its end), sums started from `bias` (m values) when given.
///
/// # Safety
/// `available()`; the bounds above.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn product<A: Weights>(a: A, m: usize, k: usize, b: *const f32, n: usize, c: *mut f32, ldc: usize, bias: Option<&[f32]>) {
    let offs: Vec<usize> = (0..k).map(|i| i * n).collect();
    let d = Dest { wq: n, ow: n, oh: 1, ol: ldc };
    for co in (0..m).step_by(MR) {
        let rows = (m - co).min(MR);
        let (at, bias) = (a.tile(co, k), bias.map(|b| &b[co..co + rows]));
        for p0 in (0..n).step_by(NR) {
            // SAFETY: the caller's bounds; a tile's last vector reads at most 15 past row k - 1.
            unsafe { tile_upto(n - p0, at, &offs, b.add(p0), p0, bias, c.add(co * ldc), rows, d) };
        }
    }
}

/// One register tile of a product whose B row k lies at `base + offs[k]`: C rows 0..rows (≤ MR,
/// `ldc` apart) for positions 0..left (≤ NR).
///
/// # Safety
/// `available()`; `a` holds offs.len() × MR weights, every B row is readable for NR elements, C
/// for `rows` rows of `left`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn tile_at(a: Packed, offs: &[usize], base: *const f32, left: usize, c: *mut f32, ldc: usize, rows: usize) {
    let d = Dest { wq: left, ow: left, oh: 1, ol: ldc };
    // SAFETY: the caller's contract.
    unsafe { tile_upto(left, a, offs, base, 0, None, c, rows, d) }
}

/// Where a tile's rows go: output channel rows of `ol` elements, positions over the copy's rows.
#[derive(Clone, Copy)]
pub(super) struct Dest {
    wq: usize,
    ow: usize,
    oh: usize,
    ol: usize,
}

/// y (n × c_out × oh × ow) = conv(x, w) + b for a geometry that `suits`, with outputs and input
/// channels (the caller answers the empty cases).
#[allow(clippy::too_many_arguments)]
pub(super) fn conv(x: &[f32], w: &[f32], b: Option<&[f32]>, g: &Geo, n: usize, c_in: usize, c_out: usize, groups: usize) -> Vec<f32> {
    let (cin_g, cout_g) = (c_in / groups, c_out / groups);
    let lay = Layout::new(g);
    let (il, ol) = (g.in_len(), g.out_len());
    let kdim = cin_g * g.k[1] * g.k[2];
    let offs = lay.offsets(g, cin_g);
    let per = cin_g * lay.chan_len() + lay.slack();
    // The copies of every (batch, group), channels over the pool.
    let mut copy = uninit_vec::<f32>(n * groups * per);
    {
        let cp = SendPtr(copy.as_mut_ptr());
        crate::pool::for_each_run(n * c_in, &|r| {
            for t in r {
                let (bg, c) = (t / cin_g, t % cin_g);
                // SAFETY: channel t's planes are its own block of the copy.
                let dst = unsafe { std::slice::from_raw_parts_mut(cp.get().add(bg * per + c * lay.chan_len()), lay.chan_len()) };
                lay.fill(g, &x[t * il..(t + 1) * il], dst);
                if c == cin_g - 1 {
                    // SAFETY: the slack after the group's last channel, also this task's alone.
                    unsafe { std::slice::from_raw_parts_mut(cp.get().add(bg * per + cin_g * lay.chan_len()), lay.slack()) }.fill(0.0);
                }
            }
        });
    }
    // Weights packed per tile of MR channels as [tap][MR], per group.
    let tiles_c = cout_g.div_ceil(MR);
    let mut packed = Vec::with_capacity(groups * tiles_c * kdim * MR);
    for wg in w.chunks_exact(cout_g * kdim).take(groups) {
        packed.extend_from_slice(&pack_rows(wg, cout_g, kdim));
    }
    let dest = Dest { wq: lay.wq, ow: g.out[2], oh: g.out[1], ol };
    let blocks = (g.out[1] * lay.wq).div_ceil(NR);
    // Pieces of the position blocks: enough for four per thread when (batch, group)s are fewer.
    let threads = crate::pool::threads();
    let pieces = if n * groups >= 4 * threads { 1 } else { (4 * threads).div_ceil(n * groups).min(blocks) };
    let chunk_tiles = (A_BYTES / (kdim * MR * 4)).max(1);
    let mut y = uninit_vec::<f32>(n * c_out * ol);
    let yp = SendPtr(y.as_mut_ptr());
    let (copy, packed, offs) = (&copy, &packed, &offs);
    crate::pool::for_each(n * groups * pieces, &|task| {
        let (bg, piece) = (task / pieces, task % pieces);
        let (bi, gi) = (bg / groups, bg % groups);
        let (b0, b1) = (blocks * piece / pieces, blocks * (piece + 1) / pieces);
        let base = copy[bg * per..].as_ptr();
        for t0 in (0..tiles_c).step_by(chunk_tiles) {
            for blk in b0..b1 {
                let p0 = blk * NR;
                let left = dest.oh * dest.wq - p0;
                // SAFETY: p0 < the copy's row positions.
                let src = unsafe { base.add(p0) };
                for t in t0..(t0 + chunk_tiles).min(tiles_c) {
                    let co = t * MR;
                    let rows = (cout_g - co).min(MR);
                    let a = packed[(gi * tiles_c + t) * kdim * MR..].as_ptr();
                    let bias = b.map(|b| &b[gi * cout_g + co..gi * cout_g + co + rows]);
                    // SAFETY: this task alone writes positions of block blk for channels co..co+rows
                    // of (bi, gi); `a` holds kdim × MR weights; every B row read lies in the copy
                    // (offsets + positions < per, see Layout::slack).
                    unsafe { tile_upto(left, Packed(a), offs, src, p0, bias, yp.get().add((bi * c_out + gi * cout_g + co) * ol), rows, dest) };
                }
            }
        }
    });
    y
}

/// `tile` with as many vectors as `left` positions need (up to NV). A tail of 8 or fewer positions
/// goes to `tile8`: a 256-bit FMA issues twice per cycle where a 512-bit one issues once, so half a
/// vector costs half (a Winograd block of 56 tiles spent 12% of its products on such a tail).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn tile_upto<A: TileWeights>(left: usize, a: A, offs: &[usize], base: *const f32, p0: usize, bias: Option<&[f32]>, out: *mut f32, rows: usize, d: Dest) {
    let (full, rem) = (left / 16, left % 16);
    // SAFETY: the caller's contract; the tail's positions are the last `rem` of this tile's.
    unsafe {
        if left < NR && (1..=8).contains(&rem) {
            match full {
                0 => {}
                1 => tile::<1, A>(a, offs, base, p0, bias, out, rows, d),
                _ => tile::<2, A>(a, offs, base, p0, bias, out, rows, d),
            }
            return tile8(a, offs, base.add(16 * full), p0 + 16 * full, bias, out, rows, d);
        }
        match left.div_ceil(16).min(NV) {
            1 => tile::<1, A>(a, offs, base, p0, bias, out, rows, d),
            2 => tile::<2, A>(a, offs, base, p0, bias, out, rows, d),
            _ => tile::<3, A>(a, offs, base, p0, bias, out, rows, d),
        }
    }
}

/// `tile` for the last 8 or fewer positions (p0 + 8 at or past the end of the copy's rows, so
/// `store` masks off the upper lanes).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile8<A: TileWeights>(a: A, offs: &[usize], base: *const f32, p0: usize, bias: Option<&[f32]>, out: *mut f32, rows: usize, d: Dest) {
    // SAFETY: as `tile`, reading 8 elements of each B row where it reads 16.
    unsafe {
        let mut acc = [_mm256_setzero_ps(); MR];
        if let Some(bias) = bias {
            let b = row_values(bias);
            for (i, acci) in acc.iter_mut().enumerate() {
                *acci = _mm256_set1_ps(b[i]);
            }
        }
        for (k, &off) in offs.iter().enumerate() {
            let bv = _mm256_loadu_ps(base.add(off));
            for (i, acci) in acc.iter_mut().enumerate() {
                *acci = _mm256_fmadd_ps(_mm256_set1_ps(a.at(i, k)), bv, *acci);
            }
        }
        for (i, &acci) in acc.iter().enumerate() {
            if i < rows {
                store(out.add(i * d.ol), _mm512_zextps256_ps512(acci), p0, d);
            }
        }
    }
}

/// One register tile: `rows` (≤ MR) output channels × positions p0..p0 + 16·V, B row k at
/// `base + offs[k]` (base already at p0), weights from `a`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<const V: usize, A: TileWeights>(a: A, offs: &[usize], base: *const f32, p0: usize, bias: Option<&[f32]>, out: *mut f32, rows: usize, d: Dest) {
    // SAFETY: the caller's bounds (see `conv` and `product`).
    unsafe {
        // Set from the bias in one step (the array may live on the stack: zeroing it first, then
        // writing rows at run-time indices, took a memset call per tile).
        let b = bias.map_or([0.0; MR], row_values);
        let mut acc: [[__m512; V]; MR] = std::array::from_fn(|i| [_mm512_set1_ps(b[i]); V]);
        for (k, &off) in offs.iter().enumerate() {
            let bp = base.add(off);
            let bv: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(bp.add(16 * v)));
            for (i, acci) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(a.at(i, k));
                for v in 0..V {
                    acci[v] = _mm512_fmadd_ps(av, bv[v], acci[v]);
                }
            }
        }
        for (i, acci) in acc.iter().enumerate() {
            for (v, &val) in acci.iter().enumerate() {
                if i < rows {
                    store(out.add(i * d.ol), val, p0 + 16 * v, d);
                }
            }
        }
    }
}

/// A tile's bias values, zeros past the rows it has.
#[inline(always)]
fn row_values(bias: &[f32]) -> [f32; MR] {
    // Element by element: a copy of a run-time length is a memcpy call.
    std::array::from_fn(|i| bias.get(i).copied().unwrap_or(0.0))
}

/// Stores the 16 positions q0.. of the copy's rows that are output positions (column < ow, row
/// < oh) to their places in the output row `dst`. Inlined into each tile, whose rows share `d`.
#[inline(always)]
unsafe fn store(dst: *mut f32, v: __m512, q0: usize, d: Dest) {
    if d.oh == 1 {
        // One row (a product, a 1-D conv): lanes up to its end, no row arithmetic.
        // SAFETY: the unmasked lanes are output positions of the row.
        return unsafe { _mm512_mask_storeu_ps(dst.wrapping_add(q0), crate::tensor::kernels::lanes16(d.ow.saturating_sub(q0)), v) };
    }
    let gap = d.wq - d.ow;
    let mut r = q0 / d.wq;
    while r < d.oh && r * d.wq < q0 + 16 {
        let row0 = r * d.wq;
        let (lo, hi) = (row0.max(q0), (row0 + d.ow).min(q0 + 16));
        if lo < hi {
            let mask = (((1u32 << (hi - q0)) - 1) & !((1u32 << (lo - q0)) - 1)) as __mmask16;
            // Lane l holds position q0 + l, output column q0 + l - r·gap; masked-off lanes are
            // neither read nor written, so the base may lie before the row.
            let p = dst.wrapping_add(q0).wrapping_sub(r * gap);
            // SAFETY: the unmasked lanes are output positions of this row.
            unsafe { _mm512_mask_storeu_ps(p, mask, v) };
        }
        r += 1;
    }
}
