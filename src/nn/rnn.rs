//! The time loop of RNN/LSTM/GRU layers in Rust: per step one small gemm (h·W_hhᵀ) and the fused
//! gate arithmetic; the input projection of all steps comes precomputed (one big matmul).

use candle_core::{Device, Tensor};
use pyo3::prelude::*;

use crate::error::{runtime_err, IntoPyResult};
use crate::tensor::kernels::{sigmoid_f32, tanh_f32};
use crate::tensor::PyTensor;

/// c (m×n) = a (m×k, row-major) · Wᵀ for W (n×k, row-major): gemm on column blocks of W's rows,
/// the blocks split over the pool once there is enough work.
fn mul_t(m: usize, n: usize, k: usize, a: &[f32], w: &[f32], c: &mut [f32]) {
    let parts = if m * n * k >= 1 << 17 { crate::pool::threads() } else { 1 };
    let step = n.div_ceil(parts).next_multiple_of(16).min(n).max(1);
    let cp = crate::nn::Ptr(c.as_mut_ptr());
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
    let gi = crate::tensor::cpu_vec::<f32>(&gi.t)?;
    let w = crate::tensor::cpu_vec::<f32>(&w_hh.t)?;
    let b = b_hh.map(|b| crate::tensor::cpu_vec::<f32>(&b.t)).transpose()?;
    let wr = w_hr.map(|w| crate::tensor::cpu_vec::<f32>(&w.t)).transpose()?;
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
            mul_t(n, gh, hout, &hs, &w, &mut g);
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
                    Some(wr) => mul_t(n, hout, h, &hfull, wr, &mut hnew),
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
