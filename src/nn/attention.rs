//! Scaled dot-product attention fused per (batch, head): q·kᵀ into a row buffer, scale, mask and a
//! vectorised softmax in place, then ·v — no (L, S) intermediate tensors, heads in parallel.

use candle_core::{Device, Tensor};
use pyo3::prelude::*;

use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};
use crate::tensor::reduce::softmax_row_f32;
use crate::tensor::PyTensor;

/// c (m×n, row-major) = a (m×k) · b where b's element (i, j) is at `b[i·rs + j·cs]`; one thread.
#[allow(clippy::too_many_arguments)]
fn gemm_into(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], b_rs: usize, b_cs: usize, c: &mut [f32]) {
    // SAFETY: a holds m·k, b covers (k−1)·rs + (n−1)·cs, c holds m·n elements.
    unsafe {
        gemm::gemm(
            m, n, k, c.as_mut_ptr(), 1, n as isize, false, a.as_ptr(), 1, k as isize, b.as_ptr(), b_cs as isize,
            b_rs as isize, 0.0f32, 1.0f32, false, false, false, gemm::Parallelism::None,
        )
    }
}

/// q (B, L, D), k (B, S, D), v (B, S, Dv) contiguous; mask (Bm, L, S) with Bm 1 or B: bool (u8, 1 =
/// attend) or additive float; `causal` aligns the lower triangle to the top left.
#[pyfunction]
#[pyo3(signature = (q, k, v, mask, causal, scale))]
pub fn sdpa(q: &PyTensor, k: &PyTensor, v: &PyTensor, mask: Option<&PyTensor>, causal: bool, scale: f64) -> PyResult<PyTensor> {
    let (qd, kd, vd) = (q.dims(), k.dims(), v.dims());
    if qd.len() != 3 || kd.len() != 3 || vd.len() != 3 || qd[0] != kd[0] || kd[0] != vd[0] || qd[2] != kd[2] || kd[1] != vd[1] {
        return Err(runtime_err(format!("sdpa: incompatible shapes {qd:?}, {kd:?}, {vd:?}")));
    }
    let (b, l, d, s, dv) = (qd[0], qd[1], qd[2], kd[1], vd[2]);
    let (qv, kv, vv) = (crate::tensor::cpu_vec::<f32>(&q.t)?, crate::tensor::cpu_vec::<f32>(&k.t)?, crate::tensor::cpu_vec::<f32>(&v.t)?);
    let (mvals, mbool, mb) = match mask {
        Some(m) => {
            let md = m.dims();
            if md.len() != 3 || md[1] != l || md[2] != s || (md[0] != 1 && md[0] != b) {
                return Err(runtime_err(format!("sdpa: mask of shape {md:?} for scores of shape [{b}, {l}, {s}]")));
            }
            (crate::tensor::cpu_vec::<f32>(&m.t)?, m.dtype == DType::Bool, md[0])
        }
        None => (vec![], false, 0),
    };
    let scale = scale as f32;
    let mut out = crate::tensor::kernels::uninit_vec::<f32>(b * l * dv);
    let op = crate::nn::Ptr(out.as_mut_ptr());
    let work = |bi: usize| {
        let mut scores = vec![0f32; l * s];
        let mut probs = vec![0f32; s];
        gemm_into(l, s, d, &qv[bi * l * d..(bi + 1) * l * d], &kv[bi * s * d..], 1, d, &mut scores);
        let mrow = |i: usize| if mb == 0 { None } else { Some(&mvals[((if mb == 1 { 0 } else { bi }) * l + i) * s..][..s]) };
        for i in 0..l {
            let row = &mut scores[i * s..(i + 1) * s];
            row.iter_mut().for_each(|x| *x *= scale);
            if causal {
                row.iter_mut().skip(i + 1).for_each(|x| *x = f32::NEG_INFINITY);
            }
            if let Some(m) = mrow(i) {
                if mbool {
                    row.iter_mut().zip(m).for_each(|(x, &keep)| if keep == 0.0 { *x = f32::NEG_INFINITY });
                } else {
                    row.iter_mut().zip(m).for_each(|(x, &add)| *x += add);
                }
            }
            if row.iter().all(|&x| x == f32::NEG_INFINITY) {
                row.fill(0.0); // a row with nothing to attend to gives zeros, as torch's safe softmax
                continue;
            }
            softmax_row_f32(row, &mut probs, false);
            row.copy_from_slice(&probs);
        }
        // SAFETY: head bi writes its own (L, Dv) block of the output.
        let o = unsafe { op.block(bi, l * dv) };
        gemm_into(l, dv, s, &scores, &vv[bi * s * dv..], dv, 1, o);
    };
    Python::attach(|py| py.detach(|| crate::pool::for_each(b, &work)));
    let t = Tensor::from_vec(out, (b, l, dv), &Device::Cpu).py()?;
    let t = if q.dtype == DType::F32 { t } else { crate::tensor::convert(&t, q.dtype.candle())? };
    Ok(PyTensor::new(t, q.dtype))
}
