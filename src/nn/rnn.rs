//! The time loop of RNN/LSTM/GRU layers in Rust: per step one small gemm (h·W_hhᵀ) and the fused
//! gate arithmetic; the input projection of all steps comes precomputed (one big matmul).

use candle_core::{Device, Tensor};
use pyo3::prelude::*;

use crate::error::{runtime_err, IntoPyResult};
use crate::tensor::kernels::{sigmoid_f32, tanh_f32};
use crate::tensor::PyTensor;

/// From 2 up to this many batch rows a step's h·W_hhᵀ runs on `panels`; past it gemm (which packs
/// W every call, a cost that more rows amortise), and for one row gemm's gemv.
const PANEL_ROWS: usize = 32;
/// Columns of W_hhᵀ per panel: two AVX2 vectors.
const P: usize = 16;

/// W (n×k, row-major) repacked once per call as n/P panels, each k rows of P consecutive columns of
/// Wᵀ, so that a step streams W front to back exactly once (zero columns pad the last panel).
fn panels(w: &[f32], n: usize, k: usize) -> Vec<f32> {
    let np = n.div_ceil(P);
    let mut out = vec![0f32; np * k * P];
    for (j, row) in w.chunks_exact(k.max(1)).enumerate().take(n) {
        let (pi, col) = (j / P, j % P);
        for (kk, &v) in row.iter().enumerate() {
            out[(pi * k + kk) * P + col] = v;
        }
    }
    out
}

/// c (m×n) = a (m×k, row-major) · Wᵀ for W (n×k, row-major) — `wp` its `panels` — with the panels
/// split over the pool once there is enough work.
fn mul_t(m: usize, n: usize, k: usize, a: &[f32], w: &[f32], wp: &[f32], c: &mut [f32]) {
    let parts = if m * n * k >= 1 << 17 { crate::pool::threads() } else { 1 };
    let np = n.div_ceil(P);
    let cp = crate::nn::Ptr(c.as_mut_ptr());
    if (2..=PANEL_ROWS).contains(&m) {
        let per = np.div_ceil(parts).max(1);
        crate::pool::for_each(np.div_ceil(per), &|i| {
            let panels = i * per..((i + 1) * per).min(np);
            for r0 in (0..m).step_by(4) {
                let rows = (m - r0).min(4);
                // SAFETY: task i alone writes columns panels·P.. of rows r0..r0+rows of c (m×n).
                let out = unsafe { std::slice::from_raw_parts_mut(cp.get().add(r0 * n), (rows - 1) * n + n) };
                panel_dots(&a[r0 * k..(r0 + rows) * k], rows, k, wp, panels.clone(), n, out);
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

crate::tensor::kernels::multiversion! {
    /// out[r·n + j] = Σ_kk a[r·k + kk] · Wᵀ[kk][j] for `rows` ≤ 4 rows and the columns of `panels`:
    /// 4 × P accumulators in registers, one broadcast per row and one panel row load per kk.
    fn panel_dots<>(a: &[f32], rows: usize, k: usize, wp: &[f32], panels: std::ops::Range<usize>, n: usize, out: &mut [f32]) where []
    {
        let mut padded = vec![0f32; 4 * k];
        padded[..rows * k].copy_from_slice(&a[..rows * k]);
        let (a0, rest) = padded.split_at(k);
        let (a1, rest) = rest.split_at(k);
        let (a2, a3) = rest.split_at(k);
        for pi in panels {
            let panel = wp[pi * k * P..(pi + 1) * k * P].as_chunks::<P>().0;
            let mut acc = [[0f32; P]; 4];
            for (kk, wv) in panel.iter().enumerate() {
                let (x0, x1, x2, x3) = (a0[kk], a1[kk], a2[kk], a3[kk]);
                for l in 0..P {
                    acc[0][l] += x0 * wv[l];
                    acc[1][l] += x1 * wv[l];
                    acc[2][l] += x2 * wv[l];
                    acc[3][l] += x3 * wv[l];
                }
            }
            let (j0, cols) = (pi * P, P.min(n - pi * P));
            for (r, acc_r) in acc.iter().enumerate().take(rows) {
                out[r * n + j0..r * n + j0 + cols].copy_from_slice(&acc_r[..cols]);
            }
        }
    }
}

crate::tensor::kernels::multiversion! {
    /// LSTM cell arithmetic for one row (gates i, f, g, o), vectorised per instruction set.
    fn lstm_gates<>(xg: &[f32], hg: &[f32], c: &mut [f32], hf: &mut [f32], keep: bool) where []
    {
        let h = c.len();
        for j in 0..h {
            let i_ = sigmoid_f32(xg[j] + hg[j]);
            let f_ = sigmoid_f32(xg[h + j] + hg[h + j]);
            let g_ = tanh_f32(xg[2 * h + j] + hg[2 * h + j]);
            let o_ = sigmoid_f32(xg[3 * h + j] + hg[3 * h + j]);
            let c2 = f_ * c[j] + i_ * g_;
            hf[j] = o_ * tanh_f32(c2);
            c[j] = if keep { c2 } else { c[j] };
        }
    }
}

crate::tensor::kernels::multiversion! {
    /// GRU cell arithmetic for one row (gates r, z, n).
    fn gru_gates<>(xg: &[f32], hg: &[f32], hp: &[f32], out: &mut [f32]) where []
    {
        let h = out.len();
        for j in 0..h {
            let r = sigmoid_f32(xg[j] + hg[j]);
            let z = sigmoid_f32(xg[h + j] + hg[h + j]);
            let n = tanh_f32(xg[2 * h + j] + r * hg[2 * h + j]);
            out[j] = (1.0 - z) * n + z * hp[j];
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
    if !crate::device::cpu_kernels(&gi.t) {
        return scan_dev(mode, gi, h0, c0, w_hh, b_hh, w_hr, mask, reverse);
    }
    let gi = crate::tensor::cpu_vec::<f32>(&gi.t)?;
    let w = crate::tensor::cpu_vec::<f32>(&w_hh.t)?;
    let wp = if (2..=PANEL_ROWS).contains(&n) { panels(&w, gh, hout) } else { vec![] };
    let b = b_hh.map(|b| crate::tensor::cpu_vec::<f32>(&b.t)).transpose()?;
    let wr = w_hr.map(|w| crate::tensor::cpu_vec::<f32>(&w.t)).transpose()?;
    let wrp = match &wr { Some(wr) if (2..=PANEL_ROWS).contains(&n) => panels(wr, hout, h), _ => vec![] };
    let m = mask.map(|m| crate::tensor::cpu_vec::<f32>(&m.t)).transpose()?;
    let mut hs = crate::tensor::cpu_vec::<f32>(&h0.t)?;
    let mut cs = match c0 {
        Some(c) => crate::tensor::cpu_vec::<f32>(&c.t)?,
        None => vec![],
    };
    let mut out = vec![0f32; l * n * hout];
    let run = || {
        let mut g = vec![0f32; n * gh];
        let mut hnew = vec![0f32; n * hout];
        let mut hfull = vec![0f32; n * h];
        for step in 0..l {
            let t = if reverse { l - 1 - step } else { step };
            mul_t(n, gh, hout, &hs, &w, &wp, &mut g);
            let x = &gi[t * n * gh..(t + 1) * n * gh];
            for r in 0..n {
                let (xg, hg) = (&x[r * gh..(r + 1) * gh], &mut g[r * gh..(r + 1) * gh]);
                if let Some(b) = &b {
                    hg.iter_mut().zip(b).for_each(|(v, bb)| *v += bb);
                }
                let keep = m.as_ref().is_none_or(|m| m[t * n + r] != 0.0);
                match mode {
                    "LSTM" => lstm_gates(xg, hg, &mut cs[r * h..(r + 1) * h], &mut hfull[r * h..(r + 1) * h], keep),
                    "GRU" => gru_gates(xg, hg, &hs[r * hout..(r + 1) * hout], &mut hnew[r * hout..(r + 1) * hout]),
                    _ => {
                        let hr = &mut hnew[r * hout..(r + 1) * hout];
                        for j in 0..h {
                            let v = xg[j] + hg[j];
                            hr[j] = if mode == "RNN_TANH" { tanh_f32(v) } else { v.max(0.0) };
                        }
                    }
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
            _ => (crate::tensor::arith::dev::relu(&(&x + &g).py()?)?, None),
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
