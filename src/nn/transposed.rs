//! Transposed convolution as ordinary ones. Output o = i·s − p + t·d takes, among the taps t, only
//! those with t·d ≡ o + p (mod s): so each residue class of outputs (a *phase*, s₀·s₁·s₂ of them)
//! is a stride-1 convolution of the input with its own taps, flipped, at dilation d / gcd(d, s).
//! The phases run on the forward kernels (Winograd, the direct kernel, im2col tiles, a plain
//! product for the 1x1 phases of a k2 s2 upsampler), with no column buffer and no col2im, and
//! their outputs interleave into the result. Stride 1 is one phase: the flipped, channel-swapped
//! weight over the input in place.

use candle_core::WithDType;

use super::conv::{conv_impl, Geo};
use super::Ptr;
use crate::tensor::kernels::uninit_vec;
use crate::tensor::linalg::Elem;

/// One spatial dim of one phase.
struct Axis {
    /// Outputs of the phase along this dim (o = q·s + r for its residue r).
    out: usize,
    /// Taps of the transposed kernel in the phase kernel's order (descending: the flip).
    taps: Vec<usize>,
    dil: usize,
    /// Zeros the phase convolution reads before and after the input (negative: input elements at
    /// that end that no output of the phase reads).
    before: i64,
    after: i64,
}

impl Axis {
    fn new(r: usize, len: usize, k: usize, s: usize, p: usize, d: usize, out_len: usize) -> Axis {
        let taps: Vec<usize> = (0..k).rev().filter(|&t| t * d % s == (r + p) % s).collect();
        let out = if out_len > r { (out_len - r).div_ceil(s) } else { 0 };
        let dil = d / gcd(d, s);
        let (before, after) = match taps.first() {
            Some(&t) if out > 0 => {
                // Output q reads inputs q + e, e = (r + p − t·d) / s (exact) over the taps.
                let before = ((t * d) as i64 - (r + p) as i64) / s as i64;
                let span = (taps.len() - 1) * dil + 1;
                (before, (out + span - 1) as i64 - len as i64 - before)
            }
            _ => (0, 0),
        };
        Axis { out, taps, dil, before, after }
    }
    /// The symmetric padding that reads the input in place, when some does (a few outputs more
    /// than the phase's, dropped at the interleave), and the outputs skipped at the start.
    fn in_place(&self) -> Option<(usize, usize)> {
        let pad = self.before.max(self.after);
        let extra = (pad - self.before.min(self.after)) as usize;
        (self.before >= 0 && self.after >= 0 && extra * 8 <= self.out.max(8)).then(|| (pad as usize, (pad - self.before) as usize))
    }
    fn padded(&self, len: usize) -> usize {
        (len as i64 + self.before + self.after).max(0) as usize
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// A transposed convolution's phases, planned before the work so the caller can check memory.
pub(super) struct Plan {
    n: usize,
    c_in: usize,
    c_out: usize,
    groups: usize,
    len: [usize; 3],
    k: [usize; 3],
    out: [usize; 3],
    stride: [usize; 3],
    axes: [Vec<Axis>; 3],
}

/// A phase's result: its forward conv's output grid, of which the phase's outputs start at `skip`.
struct Phase<T> {
    y: Vec<T>,
    grid: [usize; 3],
    skip: [usize; 3],
}

impl Plan {
    /// Input (n, c_in, *len), weight (c_in, c_out/groups, *k), output (n, c_out, *out); spatial
    /// dims padded to 3 with leading ones.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        (n, c_in, c_out, groups): (usize, usize, usize, usize),
        len: [usize; 3],
        k: [usize; 3],
        out: [usize; 3],
        stride: [usize; 3],
        pad: [usize; 3],
        dil: [usize; 3],
    ) -> Plan {
        let axes = std::array::from_fn(|i| (0..stride[i]).map(|r| Axis::new(r, len[i], k[i], stride[i], pad[i], dil[i], out[i])).collect());
        Plan { n, c_in, c_out, groups, len, k, out, stride, axes }
    }

    /// The phases, residues in row-major order.
    fn phases(&self) -> impl Iterator<Item = [&Axis; 3]> + '_ {
        let [a, b, c] = &self.axes;
        a.iter().flat_map(move |x| b.iter().flat_map(move |y| c.iter().map(move |z| [x, y, z])))
    }

    /// Whether a phase reads the input in place, and if so its padding and skipped outputs.
    fn in_place(ax: [&Axis; 3]) -> Option<[(usize, usize); 3]> {
        Some([ax[0].in_place()?, ax[1].in_place()?, ax[2].in_place()?])
    }

    /// Whether a phase computes anything: it has outputs, and taps that reach them (otherwise its
    /// outputs are the bias alone).
    fn computes(ax: [&Axis; 3]) -> bool {
        ax.iter().all(|a| a.out > 0 && !a.taps.is_empty())
    }

    /// A computed phase's forward-conv output grid, and its padding and skipped outputs where it
    /// reads the input in place (else the grid is its outputs, over a padded copy).
    fn grid(&self, ax: [&Axis; 3]) -> ([usize; 3], Option<[(usize, usize); 3]>) {
        match Self::in_place(ax) {
            Some(p) => (std::array::from_fn(|i| self.len[i] + 2 * p[i].0 + 1 - ((ax[i].taps.len() - 1) * ax[i].dil + 1)), Some(p)),
            None => ([ax[0].out, ax[1].out, ax[2].out], None),
        }
    }

    /// Elements of the temporaries beside the output at their peak: every phase's output, and the
    /// largest padded copy of the input.
    pub(super) fn scratch_elems(&self) -> usize {
        let (mut outs, mut copy) = (0usize, 0usize);
        for ax in self.phases() {
            let grid = if Self::computes(ax) { self.grid(ax).0 } else { [ax[0].out, ax[1].out, ax[2].out] };
            outs = outs.saturating_add(grid.iter().fold(self.n * self.c_out, |acc, &g| acc.saturating_mul(g)));
            if Self::computes(ax) && Self::in_place(ax).is_none() {
                copy = copy.max((0..3).fold(self.n * self.c_in, |acc, i| acc.saturating_mul(ax[i].padded(self.len[i]))));
            }
        }
        outs.saturating_add(copy)
    }

    pub(super) fn run<T: Elem + WithDType>(&self, x: &[T], w: &[T], b: Option<&[T]>) -> Vec<T> {
        let weights = self.weights(w);
        let axes: Vec<[&Axis; 3]> = self.phases().collect();
        let threads = crate::pool::threads();
        let phases: Vec<Phase<T>> = if threads > 1 && axes.len() >= threads {
            // As many phases as threads or more (a stride-2 2-D upsampler's four): each phase on
            // one thread (its kernels run serially inside a pool task), biggest first; a phase's
            // own split over the pool left small ones poorly balanced (k3 s2 on a 32x32 map).
            let cost = |ax: &[&Axis; 3]| ax.iter().map(|a| a.taps.len() * a.out).product::<usize>();
            let mut order: Vec<usize> = (0..axes.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(cost(&axes[i])));
            let slots: Vec<std::sync::Mutex<Option<Phase<T>>>> = axes.iter().map(|_| std::sync::Mutex::new(None)).collect();
            crate::pool::for_each(order.len(), &|t| {
                let i = order[t];
                let phase = self.phase(x, &weights[i], b, axes[i]);
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(phase);
            });
            slots.into_iter().filter_map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner())).collect()
        } else {
            axes.iter().zip(&weights).map(|(ax, wp)| self.phase(x, wp, b, *ax)).collect()
        };
        match &phases[..] {
            // One phase computed exactly: it is the result.
            [p] if p.grid == self.out && p.skip == [0; 3] => phases.into_iter().next().map(|p| p.y).unwrap_or_default(),
            _ => self.interleave(&phases),
        }
    }

    /// Every phase's forward weight (c_out, c_in/groups, its taps), flipped, in one pass over the
    /// transposed weight (c_in, c_out/groups, k) in blocks of input channels, so that its reads
    /// and the phases' writes both run along memory (a weight of 256·128·2·2 took 0.5 ms read
    /// column by column).
    fn weights<T: Elem>(&self, w: &[T]) -> Vec<Vec<T>> {
        let (groups, kk) = (self.groups, self.k.iter().product::<usize>());
        let (cin_g, cout_g) = (self.c_in / groups, self.c_out / groups);
        // Each phase's taps as offsets into a kernel of w, in the phase kernel's order.
        let taps: Vec<Vec<usize>> = self
            .phases()
            .map(|ax| {
                let mut offs = Vec::new();
                for &t0 in &ax[0].taps {
                    for &t1 in &ax[1].taps {
                        offs.extend(ax[2].taps.iter().map(|&t2| (t0 * self.k[1] + t1) * self.k[2] + t2));
                    }
                }
                if !Self::computes(ax) {
                    offs.clear();
                }
                offs
            })
            .collect();
        let mut out: Vec<Vec<T>> = taps.iter().map(|t| uninit_vec::<T>(self.c_out * cin_g * t.len())).collect();
        // Per block of input channels (their weights stay in L1/L2 while every phase reads them),
        // per phase, output channel and tap: a strided copy down the block's channels. Loops over
        // a phase's few taps per (output, input) channel pair cost 4-5 cycles a weight, more than
        // the rest of a small transposed conv (U-Net's k2 s2 over a 4x6 map: 2/3 of its time).
        // The blocks write disjoint parts of every phase's weight: over the pool when large.
        const BLOCK: usize = 16;
        let per_in = cout_g * kk;
        let blocks = cin_g.div_ceil(BLOCK);
        let dsts: Vec<(Ptr<T>, usize)> = out.iter_mut().map(|d| (Ptr(d.as_mut_ptr()), d.len())).collect();
        let block = |task: usize| {
            let (gi, c0) = (task / blocks, task % blocks * BLOCK);
            let c1 = (c0 + BLOCK).min(cin_g);
            let src = &w[(gi * cin_g + c0) * per_in..(gi * cin_g + c1) * per_in];
            for (&(dst, len), offs) in dsts.iter().zip(&taps) {
                let l = offs.len();
                for o in 0..cout_g {
                    let at = ((gi * cout_g + o) * cin_g + c0) * l;
                    debug_assert!(at + (c1 - c0) * l <= len);
                    // SAFETY: in bounds of the phase's weight (len); this task alone writes input
                    // channels c0..c1 of group gi.
                    let d = unsafe { std::slice::from_raw_parts_mut(dst.get().add(at), (c1 - c0) * l) };
                    for (j, &off) in offs.iter().enumerate() {
                        let from = src[o * kk + off..].iter().step_by(per_in);
                        d[j..].iter_mut().step_by(l).zip(from).for_each(|(x, &v)| *x = v);
                    }
                }
            }
        };
        if w.len() >= crate::tensor::kernels::PAR_THRESHOLD {
            crate::pool::for_each(groups * blocks, &block);
        } else {
            (0..groups * blocks).for_each(block);
        }
        out
    }

    /// One phase as a forward convolution with its weight `wp` (from `weights`).
    fn phase<T: Elem + WithDType>(&self, x: &[T], wp: &[T], b: Option<&[T]>, ax: [&Axis; 3]) -> Phase<T> {
        let (n, c_in, c_out, groups) = (self.n, self.c_in, self.c_out, self.groups);
        let out = [ax[0].out, ax[1].out, ax[2].out];
        if !Self::computes(ax) {
            // No output, or no tap lands on these outputs: the bias alone.
            let ql: usize = out.iter().product();
            let y = (0..n * c_out * ql).map(|i| b.map_or(T::default(), |b| b[i / ql % c_out])).collect();
            return Phase { y, grid: out, skip: [0; 3] };
        }
        let m = [ax[0].taps.len(), ax[1].taps.len(), ax[2].taps.len()];
        let dil = [ax[0].dil, ax[1].dil, ax[2].dil];
        if let (grid, Some(p)) = self.grid(ax) {
            let pad = p.map(|p| p.0);
            let g = Geo { len: self.len, k: m, out: grid, stride: [1; 3], pad, dil };
            return Phase { y: conv_impl(x, wp, b, &g, n, c_in, c_out, groups), grid, skip: p.map(|p| p.1) };
        }
        let padded = [ax[0].padded(self.len[0]), ax[1].padded(self.len[1]), ax[2].padded(self.len[2])];
        let xp = pad_planes(x, n * c_in, self.len, [ax[0].before, ax[1].before, ax[2].before], padded);
        let g = Geo { len: padded, k: m, out, stride: [1; 3], pad: [0; 3], dil };
        Phase { y: conv_impl(&xp, wp, b, &g, n, c_in, c_out, groups), grid: out, skip: [0; 3] }
    }

    /// The result from the phases' outputs: output o = q·s + r along a dim is output q (+ skip) of
    /// the phases of residue r. One pass in output order, rows over the pool.
    fn interleave<T: Copy + Send + Sync + 'static>(&self, phases: &[Phase<T>]) -> Vec<T> {
        let [o0, o1, o2] = self.out;
        let [s0, s1, s2] = self.stride;
        let planes = self.n * self.c_out;
        let mut y = uninit_vec::<T>(planes * o0 * o1 * o2);
        let yp = Ptr(y.as_mut_ptr());
        // Output row (c, a, b) of the result from row (c, a/s0, b/s1) of each phase (a%s0, b%s1, r).
        let widths: Vec<usize> = (0..s2).map(|r| (o2 + s2 - 1 - r) / s2).collect();
        let rows = |range: std::ops::Range<usize>| {
            // The range's first row as (plane, a, b), then counted up row by row.
            let (mut c, mut a, mut bb) = (range.start / (o0 * o1), range.start / o1 % o0, range.start % o1);
            for row in range {
                // SAFETY: output row `row` belongs to this task alone.
                let dst = unsafe { yp.block(row, o2) };
                let first = ((a % s0) * s1 + bb % s1) * s2;
                let src = |r: usize| {
                    let p = &phases[first + r];
                    let [g0, g1, g2] = p.grid;
                    let at = ((c * g0 + a / s0 + p.skip[0]) * g1 + bb / s1 + p.skip[1]) * g2 + p.skip[2];
                    &p.y[at..at + widths[r]]
                };
                match s2 {
                    1 => dst.copy_from_slice(src(0)),
                    2 => zip2(dst, src(0), src(1)),
                    _ => {
                        for r in 0..s2.min(o2) {
                            dst[r..].iter_mut().step_by(s2).zip(src(r)).for_each(|(d, &v)| *d = v);
                        }
                    }
                }
                bb += 1;
                if bb == o1 {
                    (bb, a) = (0, a + 1);
                    if a == o0 {
                        (a, c) = (0, c + 1);
                    }
                }
            }
        };
        let n_rows = planes * o0 * o1;
        if n_rows * o2 >= crate::tensor::kernels::PAR_THRESHOLD {
            crate::pool::for_each_run(n_rows, &rows);
        } else {
            rows(0..n_rows);
        }
        y
    }
}

/// dst[2i] = even[i], dst[2i + 1] = odd[i] (an odd-length dst ends with even's last): a k3 s2
/// upsampler's output rows interleave two phases. f32 on AVX-512 in 16-pair shuffles (the
/// compiler leaves the loop scalar: 2 stores a pair, 5% of such a conv).
fn zip2<T: Copy + 'static>(dst: &mut [T], even: &[T], odd: &[T]) {
    #[cfg(target_arch = "x86_64")]
    use crate::tensor::kernels::{as_f32 as f32s, as_f32_mut as f32s_mut};
    let h = dst.len() / 2;
    let (even, odd) = (&even[..dst.len() - h], &odd[..h]);
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if let (Some(d), Some(e), Some(o)) = (f32s_mut(dst), f32s(even), f32s(odd)) {
        if crate::isa::level() == crate::isa::Level::Avx512 {
            // SAFETY: the CPU has AVX-512F; the slices are as long as the function needs.
            done = unsafe { zip2_f32_512(d, e, o) };
        }
    }
    for i in done..h {
        dst[2 * i] = even[i];
        dst[2 * i + 1] = odd[i];
    }
    if dst.len() % 2 == 1 {
        dst[2 * h] = even[h];
    }
}

/// `zip2`'s pairs in whole 16s; returns how many pairs it wrote.
///
/// # Safety
/// The CPU has AVX-512F, and even and odd hold at least dst.len() / 2 values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn zip2_f32_512(dst: &mut [f32], even: &[f32], odd: &[f32]) -> usize {
    use std::arch::x86_64::*;
    let h = dst.len() / 2;
    let lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    let hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    let mut i = 0;
    while i + 16 <= h {
        let (e, o) = (_mm512_loadu_ps(even.as_ptr().add(i)), _mm512_loadu_ps(odd.as_ptr().add(i)));
        _mm512_storeu_ps(dst.as_mut_ptr().add(2 * i), _mm512_permutex2var_ps(e, lo, o));
        _mm512_storeu_ps(dst.as_mut_ptr().add(2 * i + 16), _mm512_permutex2var_ps(e, hi, o));
        i += 16;
    }
    i
}

/// A copy of `planes` planes of `len` with `before` zeros at the start of each dim (negative:
/// elements dropped) and `padded` elements per dim in all.
fn pad_planes<T: Elem>(x: &[T], planes: usize, len: [usize; 3], before: [i64; 3], padded: [usize; 3]) -> Vec<T> {
    let (il, pl) = (len.iter().product::<usize>(), padded.iter().product::<usize>());
    let mut xp = vec![T::default(); planes * pl];
    // Destination index j along dim i reads source j − before[i] when that is inside the input.
    let range = |i: usize| {
        let lo = before[i].clamp(0, padded[i] as i64) as usize;
        let hi = (before[i] + len[i] as i64).clamp(lo as i64, padded[i] as i64) as usize;
        (lo, hi)
    };
    let [(a0, a1), (b0, b1), (c0, c1)] = [range(0), range(1), range(2)];
    let copy = |p: usize, dst: &mut [T]| {
        let src = &x[p * il..(p + 1) * il];
        for a in a0..a1 {
            let sa = (a as i64 - before[0]) as usize;
            for bb in b0..b1 {
                let sb = (bb as i64 - before[1]) as usize;
                let sc = (c0 as i64 - before[2]) as usize;
                let from = &src[(sa * len[1] + sb) * len[2] + sc..][..c1 - c0];
                dst[(a * padded[1] + bb) * padded[2] + c0..][..c1 - c0].copy_from_slice(from);
            }
        }
    };
    if planes * pl >= crate::tensor::kernels::PAR_THRESHOLD {
        crate::pool::chunks_mut(&mut xp, pl.max(1), copy);
    } else {
        xp.chunks_mut(pl.max(1)).enumerate().for_each(|(p, dst)| copy(p, dst));
    }
    xp
}
