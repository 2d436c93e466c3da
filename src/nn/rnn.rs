//! The time loop of RNN/LSTM/GRU layers in Rust: per step one small gemm (h·W_hhᵀ) and the fused
//! gate arithmetic; the input projection of all steps comes precomputed (one big matmul).

use std::sync::Arc;

use candle_core::{Device, Tensor};
use pyo3::prelude::*;

use crate::error::{runtime_err, IntoPyResult};
use crate::tensor::kernels::{sigmoid_f32, tanh_f32, uninit_vec};
use crate::tensor::PyTensor;

/// Up to this many batch rows a step's h·W_hhᵀ runs on `panels`; past it gemm (which packs W every
/// call, a cost that more rows amortise).
const PANEL_ROWS: usize = 32;
/// Columns of W_hhᵀ per panel: one AVX-512 vector, two AVX2 ones.
const P: usize = 16;

/// W (gates·h × k, row-major) repacked as panels of P consecutive columns of Wᵀ, each k rows of P, so
/// that a step streams W front to back exactly once; made once per weight content (`packed`: the
/// repack and its zeroing took a tenth of a step loop). The panels go by block of P hidden units,
/// then by gate — panel (jb, g) holds columns g·h + jb·P.. — so a run of panels holds every gate of a
/// run of units and one task can finish those units' cell arithmetic by itself. Zero columns pad the
/// last block. Written a panel at a time (its k·P values stay in L1 while W's rows are read along
/// memory; writing W's rows across the whole output missed cache on every value), panels over the
/// pool.
fn panels(w: &[f32], gates: usize, h: usize, k: usize) -> Arc<Vec<f32>> {
    super::packed::cached("rnn panels", [gates, h, k, 0], w, |w| {
        let nb = h.div_ceil(P);
        let mut out = uninit_vec::<f32>(nb * gates * k * P);
        let fill = |pi: usize, panel: &mut [f32]| {
            let (jb, g) = (pi / gates, pi % gates);
            let cols = h.saturating_sub(jb * P).min(P);
            for col in 0..P {
                let dst = panel.iter_mut().skip(col).step_by(P);
                if col < cols {
                    dst.zip(&w[(g * h + jb * P + col) * k..][..k]).for_each(|(d, &v)| *d = v);
                } else {
                    dst.for_each(|d| *d = 0.0);
                }
            }
        };
        let chunk = (k * P).max(1);
        if out.len() >= crate::tensor::kernels::PAR_THRESHOLD {
            crate::pool::chunks_mut(&mut out, chunk, fill);
        } else {
            out.chunks_mut(chunk).enumerate().for_each(|(pi, panel)| fill(pi, panel));
        }
        out
    })
}

/// Accumulators of R rows by Q panels, each P lanes, for one pass over k.
type Acc<const R: usize, const Q: usize> = [[[f32; P]; Q]; R];

/// out[r·ld + q·P + l] = Σ_kk a[r·k + kk] · panel_(p0+q)[kk][l] for the `rows` (≤ R) rows of a (m×k)
/// and the panels p0..p1, Q panels per pass of `block` (a remainder one panel at a time with
/// `single`): one broadcast per row and one panel-row load per panel and kk.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn dots<const R: usize, const Q: usize>(
    a: &[f32], rows: usize, k: usize, wp: &[f32], p0: usize, p1: usize, out: &mut [f32], ld: usize,
    block: impl Fn(&[&[f32]; R], &[&[[f32; P]]; Q]) -> Acc<R, Q>,
    single: impl Fn(&[&[f32]; R], &[&[[f32; P]]; 1]) -> Acc<R, 1>,
) {
    let mut padded = vec![0f32; R * k];
    padded[..rows * k].copy_from_slice(&a[..rows * k]);
    let xs: [&[f32]; R] = std::array::from_fn(|r| &padded[r * k..(r + 1) * k]);
    let panel = |p: usize| &wp[p * k * P..(p + 1) * k * P].as_chunks::<P>().0[..k];
    let mut store = |q0: usize, acc: &[[f32; P]], r: usize| {
        for (q, v) in acc.iter().enumerate() {
            out[r * ld + (q0 + q) * P..][..P].copy_from_slice(v);
        }
    };
    let mut p = p0;
    while p + Q <= p1 {
        let acc = block(&xs, &std::array::from_fn(|q| panel(p + q)));
        (0..rows).for_each(|r| store(p - p0, &acc[r], r));
        p += Q;
    }
    for p in p..p1 {
        let acc = single(&xs, &[panel(p)]);
        (0..rows).for_each(|r| store(p - p0, &acc[r], r));
    }
}

/// One pass of `dots` in plain arithmetic.
fn block_plain<const R: usize, const Q: usize>(xs: &[&[f32]; R], pans: &[&[[f32; P]]; Q]) -> Acc<R, Q> {
    let mut acc = [[[0f32; P]; Q]; R];
    for kk in 0..xs[0].len() {
        for q in 0..Q {
            let wv = &pans[q][kk];
            for r in 0..R {
                let x = xs[r][kk];
                for l in 0..P {
                    acc[r][q][l] += x * wv[l];
                }
            }
        }
    }
    acc
}

/// One pass of `dots` on AVX-512 FMAs, a panel row being one vector.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn block_avx512<const R: usize, const Q: usize>(xs: &[&[f32]; R], pans: &[&[[f32; P]]; Q]) -> Acc<R, Q> {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); Q]; R];
    for kk in 0..xs[0].len() {
        // SAFETY: a panel row is P = 16 floats.
        let w: [__m512; Q] = std::array::from_fn(|q| unsafe { _mm512_loadu_ps(pans[q][kk].as_ptr()) });
        for r in 0..R {
            let x = _mm512_set1_ps(xs[r][kk]);
            for q in 0..Q {
                acc[r][q] = _mm512_fmadd_ps(x, w[q], acc[r][q]);
            }
        }
    }
    let mut out = [[[0f32; P]; Q]; R];
    for r in 0..R {
        for q in 0..Q {
            // SAFETY: as above.
            unsafe { _mm512_storeu_ps(out[r][q].as_mut_ptr(), acc[r][q]) };
        }
    }
    out
}

/// One pass of `dots` on AVX2 FMAs, a panel row being two vectors.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn block_avx2<const R: usize, const Q: usize>(xs: &[&[f32]; R], pans: &[&[[f32; P]]; Q]) -> Acc<R, Q> {
    use std::arch::x86_64::*;
    let mut acc = [[[_mm256_setzero_ps(); 2]; Q]; R];
    for kk in 0..xs[0].len() {
        // SAFETY: a panel row is P = 16 floats.
        let w: [[__m256; 2]; Q] = std::array::from_fn(|q| {
            let p = pans[q][kk].as_ptr();
            unsafe { [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))] }
        });
        for r in 0..R {
            let x = _mm256_set1_ps(xs[r][kk]);
            for q in 0..Q {
                for h in 0..2 {
                    acc[r][q][h] = _mm256_fmadd_ps(x, w[q][h], acc[r][q][h]);
                }
            }
        }
    }
    let mut out = [[[0f32; P]; Q]; R];
    for r in 0..R {
        for q in 0..Q {
            for h in 0..2 {
                // SAFETY: as above.
                unsafe { _mm256_storeu_ps(out[r][q][8 * h..].as_mut_ptr(), acc[r][q][h]) };
            }
        }
    }
    out
}

/// `dots` for up to 4 rows, with as many panels per pass as leave 8 vector accumulators (FMA latency
/// times the two FMA ports).
#[allow(clippy::too_many_arguments)]
fn panel_dots(a: &[f32], rows: usize, k: usize, wp: &[f32], p0: usize, p1: usize, out: &mut [f32], ld: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! with {
            ($f:ident, $(($r:literal, $q:literal)),*) => {
                // SAFETY (each closure): the CPU has the features of $f, as the level says.
                match rows {
                    $($r => dots::<$r, $q>(a, rows, k, wp, p0, p1, out, ld, |x, w| unsafe { $f(x, w) }, |x, w| unsafe { $f(x, w) }),)*
                    _ => dots::<4, 1>(a, rows, k, wp, p0, p1, out, ld, |x, w| unsafe { $f(x, w) }, |x, w| unsafe { $f(x, w) }),
                }
            };
        }
        match crate::isa::level() {
            crate::isa::Level::Avx512 => return with!(block_avx512, (1, 8), (2, 4), (3, 2), (4, 2)),
            crate::isa::Level::Avx2 => return with!(block_avx2, (1, 4), (2, 2), (3, 1)),
            _ => {}
        }
    }
    dots::<4, 1>(a, rows, k, wp, p0, p1, out, ld, block_plain, block_plain)
}

/// c (m×n) = a (m×k, row-major) · Wᵀ for W (n×k, row-major) — `wp` its `panels` with one gate, or
/// empty past PANEL_ROWS rows — split over the pool by column once there is enough work.
fn mul_t(m: usize, n: usize, k: usize, a: &[f32], w: &[f32], wp: &[f32], c: &mut [f32]) {
    let parts = if m * n * k >= 1 << 17 { crate::pool::threads() } else { 1 };
    let np = n.div_ceil(P);
    let cp = crate::nn::Ptr(c.as_mut_ptr());
    if !wp.is_empty() {
        let per = np.div_ceil(parts).max(1);
        crate::pool::for_each(np.div_ceil(per), &|i| {
            let (p0, p1) = (i * per, ((i + 1) * per).min(np));
            let mut tile = vec![0f32; 4 * (p1 - p0) * P];
            let (j0, cols) = (p0 * P, (p1 * P).min(n) - p0 * P);
            for r0 in (0..m).step_by(4) {
                let rows = (m - r0).min(4);
                panel_dots(&a[r0 * k..(r0 + rows) * k], rows, k, wp, p0, p1, &mut tile, (p1 - p0) * P);
                for r in 0..rows {
                    // SAFETY: task i alone writes columns j0..j0+cols of the rows of c (m×n).
                    let dst = unsafe { std::slice::from_raw_parts_mut(cp.get().add((r0 + r) * n + j0), cols) };
                    dst.copy_from_slice(&tile[r * (p1 - p0) * P..][..cols]);
                }
            }
        });
        return;
    }
    let step = n.div_ceil(parts).next_multiple_of(16).min(n).max(1);
    let block = |i: usize| {
        let j0 = i * step;
        let cols = step.min(n - j0);
        // SAFETY: a holds m·k and w n·k elements; block i writes columns j0..j0+cols of every row of c.
        unsafe {
            gemm::gemm(
                m, cols, k, cp.get().add(j0), 1, n as isize, false, a.as_ptr(), 1, k as isize, w.as_ptr().add(j0 * k),
                k as isize, 1, 0.0f32, 1.0f32, false, false, false, gemm::Parallelism::None,
            )
        }
    };
    crate::pool::for_each(n.div_ceil(step), &block);
}

/// Where a run of units' gate inputs lie: gate g of the input part at x[g·xs..], of the hidden part
/// at hg[g·hs..], of the bias at b[g·bs..] (whole slices, not one per gate: with a slice per gate
/// the vectoriser gave up on proving them apart from the outputs and left the loop scalar).
#[derive(Clone, Copy)]
struct GateIn<'a> {
    x: &'a [f32],
    xs: usize,
    hg: &'a [f32],
    hs: usize,
    b: &'a [f32],
    bs: usize,
}

crate::tensor::kernels::multiversion! {
    /// LSTM cell arithmetic for a run of units of one row (gates i, f, g, o), vectorised per
    /// instruction set. Every operand is cut to the run's length first: indexing past-the-loop
    /// lengths kept a bounds check per gate and the loop scalar (a fifth of an LSTM step).
    #[allow(clippy::too_many_arguments)]
    fn lstm_gates<>(x: &[f32], xs: usize, hg: &[f32], hs: usize, b: &[f32], bs: usize, c: &mut [f32], hf: &mut [f32], keep: bool) where []
    {
        let u = c.len();
        let hf = &mut hf[..u];
        let (xi, xf, xc, xo) = (&x[..u], &x[xs..xs + u], &x[2 * xs..2 * xs + u], &x[3 * xs..3 * xs + u]);
        let (hi, hff, hc, ho) = (&hg[..u], &hg[hs..hs + u], &hg[2 * hs..2 * hs + u], &hg[3 * hs..3 * hs + u]);
        let (bi, bf, bc, bo) = (&b[..u], &b[bs..bs + u], &b[2 * bs..2 * bs + u], &b[3 * bs..3 * bs + u]);
        for j in 0..u {
            let i_ = sigmoid_f32(xi[j] + (hi[j] + bi[j]));
            let f_ = sigmoid_f32(xf[j] + (hff[j] + bf[j]));
            let g_ = tanh_f32(xc[j] + (hc[j] + bc[j]));
            let o_ = sigmoid_f32(xo[j] + (ho[j] + bo[j]));
            let c2 = f_ * c[j] + i_ * g_;
            hf[j] = o_ * tanh_f32(c2);
            c[j] = if keep { c2 } else { c[j] };
        }
    }
}

crate::tensor::kernels::multiversion! {
    /// GRU cell arithmetic for a run of units of one row (gates r, z, n), as `lstm_gates`.
    #[allow(clippy::too_many_arguments)]
    fn gru_gates<>(x: &[f32], xs: usize, hg: &[f32], hs: usize, b: &[f32], bs: usize, hp: &[f32], out: &mut [f32]) where []
    {
        let u = out.len();
        let hp = &hp[..u];
        let (xr, xz, xn) = (&x[..u], &x[xs..xs + u], &x[2 * xs..2 * xs + u]);
        let (hr, hz, hn) = (&hg[..u], &hg[hs..hs + u], &hg[2 * hs..2 * hs + u]);
        let (br, bz, bn) = (&b[..u], &b[bs..bs + u], &b[2 * bs..2 * bs + u]);
        for j in 0..u {
            let r = sigmoid_f32(xr[j] + (hr[j] + br[j]));
            let z = sigmoid_f32(xz[j] + (hz[j] + bz[j]));
            let n = tanh_f32(xn[j] + r * (hn[j] + bn[j]));
            out[j] = (1.0 - z) * n + z * hp[j];
        }
    }
}

impl GateIn<'_> {
    fn lstm(self, c: &mut [f32], hf: &mut [f32], keep: bool) {
        lstm_gates(self.x, self.xs, self.hg, self.hs, self.b, self.bs, c, hf, keep)
    }
    fn gru(self, hp: &[f32], out: &mut [f32]) {
        gru_gates(self.x, self.xs, self.hg, self.hs, self.b, self.bs, hp, out)
    }
    /// The single-gate cells: f(x + (hg + b)).
    fn simple(self, out: &mut [f32], f: impl Fn(f32) -> f32) {
        simple_gate(self.x, self.hg, self.b, out, f)
    }
}

crate::tensor::kernels::multiversion! {
    /// f(x + (hg + b)) over a run of units, compiled per instruction set (tanh's fused
    /// multiply-adds are single instructions only there).
    fn simple_gate<F>(x: &[f32], hg: &[f32], b: &[f32], out: &mut [f32], f: F) where [F: Fn(f32) -> f32] {
        let u = out.len();
        for (((o, &x), &h), &b) in out.iter_mut().zip(&x[..u]).zip(&hg[..u]).zip(&b[..u]) {
            *o = f(x + (h + b));
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Cell {
    Lstm,
    Gru,
    Tanh,
    Relu,
}

/// A layer's time loop without a projection (h has H units), on the panels of `panels(W_hh, gates,
/// H, H)`.
struct Scan<'a> {
    cell: Cell,
    gates: usize,
    l: usize,
    n: usize,
    h: usize,
    gi: &'a [f32],
    wp: &'a [f32],
    b: Option<&'a [f32]>,
    mask: Option<&'a [f32]>,
    reverse: bool,
}

impl Scan<'_> {
    /// Runs every step: hs (N×H) and cs (N×H, LSTM only) carry the state, out (L×N×H) gets the outputs.
    /// A step's units are split into one block range per task; a task computes its units' gate
    /// pre-activations for every row and then their new h (and c), so the pool syncs once per step.
    fn run(&self, hs: &mut [f32], cs: &mut [f32], out: &mut [f32]) {
        let (n, h, gates) = (self.n, self.h, self.gates);
        let gh = gates * h;
        let nb = h.div_ceil(P);
        let parts = if n * gh * h >= 1 << 17 { crate::pool::threads() } else { 1 };
        let per = nb.div_ceil(parts).max(1);
        let zeros = vec![0f32; h];
        // Without a mask every row takes every step: a step writes its h straight into its output
        // rows and the next step reads them there. With one, new h goes to `hnew` and is copied to
        // the rows that take the step.
        let mut hnew = if self.mask.is_some() { vec![0f32; n * h] } else { vec![] };
        let (op, cp) = (crate::nn::Ptr(out.as_mut_ptr()), crate::nn::Ptr(cs.as_mut_ptr()));
        let hp = crate::nn::Ptr(hnew.as_mut_ptr());
        let mut prev_t: Option<usize> = None;
        for step in 0..self.l {
            let t = if self.reverse { self.l - 1 - step } else { step };
            let x = &self.gi[t * n * gh..(t + 1) * n * gh];
            let keep = |r: usize| self.mask.is_none_or(|m| m[t * n + r] != 0.0);
            // SAFETY: step prev_t's output rows are not written during this step (t differs).
            let prev: &[f32] = match prev_t {
                Some(pt) => unsafe { std::slice::from_raw_parts(op.get().add(pt * n * h), n * h) },
                None => hs,
            };
            let dst = if self.mask.is_some() { hp } else { crate::nn::Ptr(op.get().wrapping_add(t * n * h)) };
            crate::pool::for_each(nb.div_ceil(per), &|i| {
                let (b0, b1) = (i * per, ((i + 1) * per).min(nb));
                let width = (b1 - b0) * gates * P;
                let (u0, u, wu) = (b0 * P, (b1 * P).min(h) - b0 * P, (b1 - b0) * P);
                let mut tile = vec![0f32; 4 * width];
                let mut hgb = uninit_vec::<f32>(gates * wu);
                for r0 in (0..n).step_by(4) {
                    let rows = (n - r0).min(4);
                    panel_dots(&prev[r0 * h..(r0 + rows) * h], rows, h, self.wp, b0 * gates, b1 * gates, &mut tile, width);
                    for r in r0..r0 + rows {
                        let (xr, tr) = (&x[r * gh..(r + 1) * gh], &tile[(r - r0) * width..(r - r0 + 1) * width]);
                        // The hidden parts gate by gate (the tile holds them by block of P units,
                        // then gate), so that one call does the task's units of this row; the
                        // input parts and biases are read where they are, gate g at g·h.
                        for jb in 0..b1 - b0 {
                            for g in 0..gates {
                                hgb[g * wu + jb * P..][..P].copy_from_slice(&tr[(jb * gates + g) * P..][..P]);
                            }
                        }
                        let (b, bs) = self.b.map_or((&zeros[..], 0), |b| (&b[u0..], h));
                        let gin = GateIn { x: &xr[u0..], xs: h, hg: &hgb, hs: wu, b, bs };
                        // SAFETY: task i alone writes units u0..u0+u of row r of dst and cs (N×H).
                        let hn = unsafe { std::slice::from_raw_parts_mut(dst.get().add(r * h + u0), u) };
                        match self.cell {
                            // SAFETY: as above.
                            Cell::Lstm => gin.lstm(unsafe { std::slice::from_raw_parts_mut(cp.get().add(r * h + u0), u) }, hn, keep(r)),
                            Cell::Gru => gin.gru(&prev[r * h + u0..r * h + u0 + u], hn),
                            Cell::Tanh => gin.simple(hn, tanh_f32),
                            Cell::Relu => gin.simple(hn, |v| v.max(0.0)),
                        }
                    }
                }
            });
            if self.mask.is_none() {
                prev_t = Some(t);
                continue;
            }
            for r in (0..n).filter(|&r| keep(r)) {
                let src = &hnew[r * h..(r + 1) * h];
                out[(t * n + r) * h..(t * n + r + 1) * h].copy_from_slice(src);
                hs[r * h..(r + 1) * h].copy_from_slice(src);
            }
        }
        if let Some(pt) = prev_t {
            hs.copy_from_slice(&out[pt * n * h..(pt + 1) * n * h]);
        }
    }
}

/// One layer, one direction. `gi` (L, N, G·H) is x·W_ihᵀ + b_ih for every step; `mask` (L, N) marks
/// the steps each row really has (packed sequences). Returns (outputs (L, N, Hout), h_n, c_n).
#[pyfunction]
#[pyo3(signature = (mode, gi, h0, c0, w_hh, b_hh, w_hr, mask, reverse))]
#[allow(clippy::too_many_arguments)]
pub fn rnn_scan(
    mode: &str,
    gi: &PyTensor,
    h0: &PyTensor,
    c0: Option<&PyTensor>,
    w_hh: &PyTensor,
    b_hh: Option<&PyTensor>,
    w_hr: Option<&PyTensor>,
    mask: Option<&PyTensor>,
    reverse: bool,
) -> PyResult<(PyTensor, PyTensor, Option<PyTensor>)> {
    let gates = match mode {
        "RNN_TANH" | "RNN_RELU" => 1,
        "LSTM" => 4,
        "GRU" => 3,
        m => return Err(runtime_err(format!("unknown recurrent mode {m}"))),
    };
    let (l, n, gh) = match gi.dims() {
        [l, n, g] => (*l, *n, *g),
        d => return Err(runtime_err(format!("rnn_scan: gi must be (L, N, G·H), got {d:?}"))),
    };
    let h = gh / gates;
    let hout = h0.dims().last().copied().unwrap_or(0);
    if w_hh.dims() != [gh, hout] || h0.numel() != n * hout || (mode == "LSTM" && c0.is_none_or(|c| c.numel() != n * h)) {
        return Err(runtime_err("rnn_scan: inconsistent shapes of gi, h0, c0 and w_hh"));
    }
    let proj_ok = match w_hr {
        Some(w) => w.dims() == [hout, h] && mode == "LSTM",
        None => hout == h,
    };
    if gh % gates != 0 || !proj_ok || b_hh.is_some_and(|b| b.numel() != gh) || mask.is_some_and(|m| m.numel() != l * n) {
        return Err(runtime_err("rnn_scan: inconsistent shapes of gi, w_hh, b_hh, w_hr and the mask"));
    }
    if !crate::device::cpu_kernels(&gi.t) {
        return scan_dev(mode, gi, h0, c0, w_hh, b_hh, w_hr, mask, reverse);
    }
    // Without a projection every step is one parallel pass: each task multiplies h by the gates of its
    // block of units and finishes their cell arithmetic. W_hh and gi are then read where they are
    // (copying them took a tenth of a 2-layer h256 LSTM call).
    let fused = w_hr.is_none() && n <= PANEL_ROWS;
    let b = b_hh.map(|b| crate::tensor::cpu_vec::<f32>(&b.t)).transpose()?;
    let wr = w_hr.map(|w| crate::tensor::cpu_vec::<f32>(&w.t)).transpose()?;
    let wrp = match &wr { Some(wr) if n <= PANEL_ROWS => panels(wr, 1, hout, h), _ => Arc::default() };
    let m = mask.map(|m| crate::tensor::cpu_vec::<f32>(&m.t)).transpose()?;
    let mut hs = crate::tensor::cpu_vec::<f32>(&h0.t)?;
    let mut cs = match c0 {
        Some(c) => crate::tensor::cpu_vec::<f32>(&c.t)?,
        None => vec![],
    };
    let mut out = vec![0f32; l * n * hout];
    if fused {
        let cell = match mode { "LSTM" => Cell::Lstm, "GRU" => Cell::Gru, "RNN_TANH" => Cell::Tanh, _ => Cell::Relu };
        let wp = crate::tensor::with_f32(&w_hh.t, |w| panels(w, gates, h, hout))?;
        crate::tensor::with_f32(&gi.t, |gi| {
            let scan = Scan { cell, gates, l, n, h, gi, wp: &wp, b: b.as_deref(), mask: m.as_deref(), reverse };
            Python::attach(|py| py.detach(|| scan.run(&mut hs, &mut cs, &mut out)))
        })?;
        let dt = h0.dtype;
        let wrap = |v: Vec<f32>, dims: &[usize]| -> PyResult<PyTensor> {
            let t = Tensor::from_vec(v, dims, &Device::Cpu).py()?;
            Ok(PyTensor::new(crate::tensor::convert(&t, dt.candle())?, dt))
        };
        let c_n = if mode == "LSTM" { Some(wrap(cs, &[n, h])?) } else { None };
        return Ok((wrap(out, &[l, n, hout])?, wrap(hs, &[n, hout])?, c_n));
    }
    let gi = crate::tensor::cpu_vec::<f32>(&gi.t)?;
    let w = crate::tensor::cpu_vec::<f32>(&w_hh.t)?;
    let wp = if n <= PANEL_ROWS { panels(&w, 1, gh, hout) } else { Arc::default() };
    let run = || {
        let mut g = vec![0f32; n * gh];
        let mut hnew = vec![0f32; n * hout];
        let mut hfull = vec![0f32; n * h];
        let zeros = vec![0f32; h];
        for step in 0..l {
            let t = if reverse { l - 1 - step } else { step };
            mul_t(n, gh, hout, &hs, &w, &wp, &mut g);
            let x = &gi[t * n * gh..(t + 1) * n * gh];
            for r in 0..n {
                let (xr, hr) = (&x[r * gh..(r + 1) * gh], &g[r * gh..(r + 1) * gh]);
                let (b, bs) = b.as_ref().map_or((&zeros[..], 0), |b| (&b[..], h));
                let gin = GateIn { x: xr, xs: h, hg: hr, hs: h, b, bs };
                let keep = m.as_ref().is_none_or(|m| m[t * n + r] != 0.0);
                match mode {
                    "LSTM" => gin.lstm(&mut cs[r * h..(r + 1) * h], &mut hfull[r * h..(r + 1) * h], keep),
                    "GRU" => gin.gru(&hs[r * hout..(r + 1) * hout], &mut hnew[r * hout..(r + 1) * hout]),
                    "RNN_TANH" => gin.simple(&mut hnew[r * hout..(r + 1) * hout], tanh_f32),
                    _ => gin.simple(&mut hnew[r * hout..(r + 1) * hout], |v| v.max(0.0)),
                }
            }
            if mode == "LSTM" {
                match &wr {
                    Some(wr) => mul_t(n, hout, h, &hfull, wr, &wrp, &mut hnew),
                    None => hnew.copy_from_slice(&hfull),
                }
            }
            for r in 0..n {
                let keep = m.as_ref().is_none_or(|m| m[t * n + r] != 0.0);
                let (src, dst) = (&hnew[r * hout..(r + 1) * hout], &mut out[(t * n + r) * hout..(t * n + r + 1) * hout]);
                if keep {
                    dst.copy_from_slice(src);
                    hs[r * hout..(r + 1) * hout].copy_from_slice(src);
                }
            }
        }
    };
    Python::attach(|py| py.detach(run));
    let dt = h0.dtype;
    let wrap = |v: Vec<f32>, dims: &[usize]| -> PyResult<PyTensor> {
        let t = Tensor::from_vec(v, dims, &Device::Cpu).py()?;
        Ok(PyTensor::new(crate::tensor::convert(&t, dt.candle())?, dt))
    };
    let c_n = if mode == "LSTM" { Some(wrap(cs, &[n, h])?) } else { None };
    Ok((wrap(out, &[l, n, hout])?, wrap(hs, &[n, hout])?, c_n))
}

/// `rnn_scan` on other devices: the same recurrence as Candle ops, one small matmul and the gate
/// arithmetic per step.
#[allow(clippy::too_many_arguments)]
fn scan_dev(
    mode: &str, gi: &PyTensor, h0: &PyTensor, c0: Option<&PyTensor>, w_hh: &PyTensor, b_hh: Option<&PyTensor>,
    w_hr: Option<&PyTensor>, mask: Option<&PyTensor>, reverse: bool,
) -> PyResult<(PyTensor, PyTensor, Option<PyTensor>)> {
    use candle_nn::ops::sigmoid;
    let mut ts = vec![&gi.t, &h0.t, &w_hh.t];
    ts.extend(c0.iter().map(|t| &t.t).chain(b_hh.iter().map(|t| &t.t)).chain(w_hr.iter().map(|t| &t.t)).chain(mask.iter().map(|t| &t.t)));
    crate::device::common(&ts)?;
    let (l, n, gh) = (gi.dims()[0], gi.dims()[1], gi.dims()[2]);
    let hout = h0.dims().last().copied().unwrap_or(0);
    let dt = gi.t.dtype();
    let gates = match mode { "LSTM" => 4, "GRU" => 3, _ => 1 };
    let h = gh / gates;
    let wt = w_hh.t.to_dtype(dt).py()?.t().py()?;
    let b = b_hh.map(|b| b.t.to_dtype(dt).py()?.reshape((1, gh)).py()).transpose()?;
    let wr = w_hr.map(|w| w.t.to_dtype(dt).py()?.t().py()).transpose()?;
    let keep_all = mask.map(|m| m.t.ne(&m.t.zeros_like().py()?).py()).transpose()?;
    let mut hs = h0.t.to_dtype(dt).py()?.reshape((n, hout)).py()?;
    let mut cs = c0.map(|c| c.t.to_dtype(dt).py()?.reshape((n, h)).py()).transpose()?;
    let gate = |x: &Tensor, i: usize| x.narrow(1, i * h, h);
    let mut outs: Vec<Tensor> = Vec::with_capacity(l);
    for step in 0..l {
        let t = if reverse { l - 1 - step } else { step };
        let mut g = hs.matmul(&wt).py()?;
        if let Some(b) = &b {
            g = g.broadcast_add(b).py()?;
        }
        let x = gi.t.get(t).py()?.to_dtype(dt).py()?;
        #[cfg(feature = "cuda")]
        if dt == candle_core::DType::F32 && x.device().is_cuda() && keep_all.is_none() && matches!(mode, "LSTM" | "GRU") {
            // The gate arithmetic as one kernel of ours (a dozen Candle ops otherwise).
            let hn = if mode == "LSTM" {
                let c = cs.as_ref().ok_or_else(|| runtime_err("rnn_scan: LSTM needs c0"))?;
                let both = crate::cuda::rnn_cell("lstm_cell", &x, &g, c)?;
                cs = Some(both.get(1).py()?);
                let hf = both.get(0).py()?;
                match &wr { Some(wr) => hf.matmul(wr).py()?, None => hf }
            } else {
                crate::cuda::rnn_cell("gru_cell", &x, &g, &hs)?
            };
            outs.push(hn.clone());
            hs = hn;
            continue;
        }
        let (hnew, cnew) = match mode {
            "LSTM" => {
                let a = (&x + &g).py()?;
                let (i_, f_) = (sigmoid(&gate(&a, 0).py()?).py()?, sigmoid(&gate(&a, 1).py()?).py()?);
                let (g_, o_) = (gate(&a, 2).py()?.tanh().py()?, sigmoid(&gate(&a, 3).py()?).py()?);
                let c = cs.as_ref().ok_or_else(|| runtime_err("rnn_scan: LSTM needs c0"))?;
                let c2 = ((f_ * c).py()? + (i_ * g_).py()?).py()?;
                let hf = (o_ * c2.tanh().py()?).py()?;
                let hn = match &wr { Some(wr) => hf.matmul(wr).py()?, None => hf };
                (hn, Some(c2))
            }
            "GRU" => {
                let r = sigmoid(&(gate(&x, 0).py()? + gate(&g, 0).py()?).py()?).py()?;
                let z = sigmoid(&(gate(&x, 1).py()? + gate(&g, 1).py()?).py()?).py()?;
                let nn = (gate(&x, 2).py()? + (r * gate(&g, 2).py()?).py()?).py()?.tanh().py()?;
                let hn = ((&nn - (&z * &nn).py()?).py()? + (&z * &hs).py()?).py()?;
                (hn, None)
            }
            "RNN_TANH" => ((&x + &g).py()?.tanh().py()?, None),
            _ => (crate::tensor::unary::dev::relu(&(&x + &g).py()?)?, None),
        };
        match &keep_all {
            Some(keep) => {
                // Packed sequences: a row past its length keeps its state and outputs zeros.
                let k = keep.get(t).py()?.reshape((n, 1)).py()?;
                let kh = k.broadcast_as((n, hout)).py()?;
                outs.push(kh.where_cond(&hnew, &hnew.zeros_like().py()?).py()?);
                hs = kh.where_cond(&hnew, &hs).py()?;
                if let (Some(c2), Some(c)) = (cnew, &cs) {
                    cs = Some(k.broadcast_as((n, h)).py()?.where_cond(&c2, c).py()?);
                }
            }
            None => {
                outs.push(hnew.clone());
                hs = hnew;
                if cnew.is_some() {
                    cs = cnew;
                }
            }
        }
    }
    if reverse {
        outs.reverse();
    }
    let dtl = h0.dtype;
    let wrap = |t: Tensor| -> PyResult<PyTensor> { Ok(PyTensor::new(t.to_dtype(dtl.candle()).py()?, dtl)) };
    let out = if l == 0 { Tensor::zeros((0, n, hout), dt, gi.t.device()).py()? } else { Tensor::stack(&outs, 0).py()? };
    let c_n = if mode == "LSTM" { cs.map(wrap).transpose()? } else { None };
    Ok((wrap(out)?, wrap(hs)?, c_n))
}
