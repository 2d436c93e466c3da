//! Scaled dot-product attention fused per (batch, head): q·kᵀ into a row buffer, scale, mask and a
//! vectorised softmax in place, then ·v — no (L, S) intermediate tensors, heads in parallel.

use candle_core::{Device, Tensor};
use pyo3::prelude::*;

use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};
use crate::tensor::reduce::softmax_row_f32;
use crate::tensor::PyTensor;

/// c (m×n, row-major) = alpha · a (m×k) · b where b's element (i, j) is at `b[i·rs + j·cs]`; one
/// thread.
#[allow(clippy::too_many_arguments)]
fn gemm_into(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], b_rs: usize, b_cs: usize, c: &mut [f32], alpha: f32) {
    // SAFETY: a holds m·k, b covers (k−1)·rs + (n−1)·cs, c holds m·n elements.
    unsafe {
        gemm::gemm(
            m, n, k, c.as_mut_ptr(), 1, n as isize, false, a.as_ptr(), 1, k as isize, b.as_ptr(), b_cs as isize,
            b_rs as isize, 0.0f32, alpha, false, false, false, gemm::Parallelism::None,
        )
    }
}

/// q (B, L, D), k (B, S, D), v (B, S, Dv) contiguous; mask (Bm, L, S), bool (u8, 1 = attend) or
/// additive float, with head bi reading mask block bi / `mask_group` (Bm = 1: one block for all);
/// `causal` aligns the lower triangle to the top left.
#[pyfunction]
#[pyo3(signature = (q, k, v, mask, causal, scale, mask_group=1))]
#[allow(clippy::too_many_arguments)]
pub fn sdpa(q: &PyTensor, k: &PyTensor, v: &PyTensor, mask: Option<&PyTensor>, causal: bool, scale: f64, mask_group: usize) -> PyResult<PyTensor> {
    let (qd, kd, vd) = (q.dims(), k.dims(), v.dims());
    if qd.len() != 3 || kd.len() != 3 || vd.len() != 3 || qd[0] != kd[0] || kd[0] != vd[0] || qd[2] != kd[2] || kd[1] != vd[1] {
        return Err(runtime_err(format!("sdpa: incompatible shapes {qd:?}, {kd:?}, {vd:?}")));
    }
    let (b, l, d, s, dv) = (qd[0], qd[1], qd[2], kd[1], vd[2]);
    if let Some(m) = mask {
        let md = m.dims();
        if md.len() != 3 || md[1] != l || md[2] != s || mask_group == 0 || (md[0] != 1 && md[0] * mask_group != b) {
            return Err(runtime_err(format!("sdpa: mask of shape {md:?} for scores of shape [{b}, {l}, {s}]")));
        }
    }
    if !crate::device::cpu_kernels(&q.t) {
        return sdpa_dev(q, k, v, mask, causal, scale);
    }
    let (mvals, mbool, mb) = match mask {
        Some(m) => {
            let md = m.dims();
            if md.len() != 3 || md[1] != l || md[2] != s || mask_group == 0 || (md[0] != 1 && md[0] * mask_group != b) {
                return Err(runtime_err(format!("sdpa: mask of shape {md:?} for scores of shape [{b}, {l}, {s}]")));
            }
            (crate::tensor::cpu_vec::<f32>(&m.t)?, m.dtype == DType::Bool, md[0])
        }
        None => (vec![], false, 0),
    };
    let mut out = crate::tensor::kernels::uninit_vec::<f32>(b * l * dv);
    let shape = (b, l, d, s, dv);
    let masking = Masking { values: &mvals, boolean: mbool, batch: mb, group: mask_group, causal };
    // Contiguous f32 q/k/v are read where they are (no copies).
    use crate::tensor::with_f32;
    with_f32(&q.t, |qv| with_f32(&k.t, |kv| with_f32(&v.t, |vv| heads(qv, kv, vv, &mut out, shape, &masking, scale as f32))))???;
    let t = Tensor::from_vec(out, (b, l, dv), &Device::Cpu).py()?;
    let t = if q.dtype == DType::F32 { t } else { crate::tensor::convert(&t, q.dtype.candle())? };
    Ok(PyTensor::new(t, q.dtype))
}

/// Fused attention on the GPU (`cuda::flash`: tensor cores, memory linear in the length) for q
/// (B, Hq, Lq, D) and k/v (B, Hkv, Lk, D) with Hkv dividing Hq (GQA), 16-bit floats; `mask` bool
/// (true = attend) or additive, broadcastable to (B, Hq, Lq, Lk). None where it does not apply
/// (other devices, dtypes or head dims): the caller then takes `sdpa`.
#[pyfunction]
#[pyo3(signature = (q, k, v, mask, causal, scale))]
#[allow(unused_variables)]
pub fn flash_attention(q: &PyTensor, k: &PyTensor, v: &PyTensor, mask: Option<&PyTensor>, causal: bool, scale: f64) -> PyResult<Option<PyTensor>> {
    #[cfg(feature = "cuda")]
    {
        let mut ts = vec![&q.t, &k.t, &v.t];
        ts.extend(mask.map(|m| &m.t));
        crate::device::common(&ts)?;
        let m = mask.map(|m| (&m.t, m.dtype == DType::Bool));
        if let Some(t) = crate::cuda::flash(&q.t, &k.t, &v.t, m, causal, scale)? {
            return Ok(Some(PyTensor::new(t, q.dtype)));
        }
    }
    Ok(None)
}

/// `sdpa` on other devices: q·kᵀ (cuBLAS), the masks, candle-nn's fused softmax and ·v, with the
/// scores as one (B, L, S) tensor (torch's math path; a flash kernel would not need them).
fn sdpa_dev(q: &PyTensor, k: &PyTensor, v: &PyTensor, mask: Option<&PyTensor>, causal: bool, scale: f64) -> PyResult<PyTensor> {
    let mut ts = vec![&q.t, &k.t, &v.t];
    ts.extend(mask.map(|m| &m.t));
    let dev = crate::device::common(&ts)?;
    if dev.is_cpu() && matches!(q.dtype, DType::F16 | DType::BF16) {
        // The generic test mode: Candle's CPU matmul would accumulate in 16 bits (cuBLAS: f32).
        let wide = |t: &PyTensor| -> PyResult<PyTensor> { Ok(PyTensor::new(t.t.to_dtype(candle_core::DType::F32).py()?, DType::F32)) };
        let r = sdpa_dev(&wide(q)?, &wide(k)?, &wide(v)?, mask, causal, scale)?;
        return Ok(PyTensor::new(r.t.to_dtype(q.t.dtype()).py()?, q.dtype));
    }
    let (b, l, s) = (q.dims()[0], q.dims()[1], k.dims()[1]);
    let dt = q.t.dtype();
    let mut scores = (q.t.matmul(&k.t.t().py()?).py()? * scale).py()?;
    let neg_inf = Tensor::new(f32::NEG_INFINITY, dev).py()?.to_dtype(dt).py()?;
    let mut masked = false;
    if causal {
        // Lower triangle aligned to the top left, as torch's is_causal when L != S: no row is
        // empty, so no safe-softmax pass.
        let keep = causal_mask(l, s, dev)?.broadcast_as((b, l, s)).py()?;
        scores = keep.where_cond(&scores, &neg_inf.broadcast_as((b, l, s)).py()?).py()?;
    }
    if let Some(m) = mask {
        // Head bi reads mask block bi / group: the scores seen as (Bm, B / Bm, L, S).
        let bm = m.dims()[0];
        let s4 = scores.reshape((bm, b / bm, l, s)).py()?;
        let m4 = m.t.unsqueeze(1).py()?.broadcast_as((bm, b / bm, l, s)).py()?;
        let s4 = if m.dtype == DType::Bool {
            m4.where_cond(&s4, &neg_inf.broadcast_as((bm, b / bm, l, s)).py()?).py()?
        } else {
            (s4 + m4.to_dtype(dt).py()?).py()?
        };
        scores = s4.reshape((b, l, s)).py()?;
        masked = true;
    }
    let mut p = candle_nn::ops::softmax_last_dim(&scores.contiguous().py()?).py()?;
    if masked {
        // A row with nothing to attend to gives zeros, as torch's safe softmax.
        let dead = scores.max_keepdim(2).py()?.broadcast_eq(&neg_inf).py()?.broadcast_as((b, l, s)).py()?;
        p = dead.where_cond(&p.zeros_like().py()?, &p).py()?;
    }
    Ok(PyTensor::new(p.matmul(&v.t).py()?, q.dtype))
}

/// The (L, S) keep-mask of causal attention on `dev` (1 where column ≤ row), built once per size: a
/// decoding loop asks for the same few again and again.
fn causal_mask(l: usize, s: usize, dev: &candle_core::Device) -> PyResult<Tensor> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static CACHE: Mutex<Option<HashMap<(usize, usize, String), Tensor>>> = Mutex::new(None);
    let key = (l, s, format!("{:?}", dev.location()));
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    if let Some(t) = cache.get(&key) {
        return Ok(t.clone());
    }
    let v: Vec<u8> = (0..l).flat_map(|i| (0..s).map(move |j| (j <= i) as u8)).collect();
    let t = Tensor::from_vec(v, (l, s), dev).py()?;
    if cache.len() >= 64 {
        cache.clear();
    }
    cache.insert(key, t.clone());
    Ok(t)
}

/// Query rows per block in causal attention.
const CAUSAL_BLOCK: usize = 32;
/// Scores per block of query rows in non-causal attention (f32: 1 MiB, and as much again of probs).
const NONCAUSAL_SCORES: usize = 1 << 18;

/// How scores are masked: values (Bm, L, S) as bool (1 = attend) or additive, Bm = `batch`, head
/// bi reading block bi / `group`.
#[derive(Clone, Copy)]
struct Masking<'a> {
    values: &'a [f32],
    boolean: bool,
    batch: usize,
    group: usize,
    causal: bool,
}

/// Every (batch·head) of attention, heads in parallel, into `out` (B, L, Dv).
fn heads(qv: &[f32], kv: &[f32], vv: &[f32], out: &mut [f32], shape: (usize, usize, usize, usize, usize), masking: &Masking<'_>, scale: f32) {
    let (b, l, d, s, dv) = shape;
    let Masking { values: mvals, boolean: mbool, batch: mb, group, causal } = *masking;
    let op = crate::nn::Ptr(out.as_mut_ptr());
    // Causal attention runs in blocks of query rows, each against only the keys it can see (about
    // half the work of the full score matrix); otherwise in blocks of rows whose scores fit in about
    // 1 MiB (a 4096-token image's whole score matrix is 64 MiB a head, far out of cache).
    let block = if causal { CAUSAL_BLOCK } else { (NONCAUSAL_SCORES / s.max(1)).clamp(1, l.max(1)) };
    let work = |bi: usize| {
        let mut scores = crate::tensor::kernels::uninit_vec::<f32>(block.min(l) * s);
        let mut probs = crate::tensor::kernels::uninit_vec::<f32>(block.min(l) * s);
        let mrow = |i: usize| if mb == 0 { None } else { Some(&mvals[((if mb == 1 { 0 } else { bi / group }) * l + i) * s..][..s]) };
        // SAFETY: head bi writes its own (L, Dv) block of the output.
        let o = unsafe { op.block(bi, l * dv) };
        for r0 in (0..l).step_by(block) {
            let r1 = (r0 + block).min(l);
            let cols = if causal { r1.min(s) } else { s };
            let (sc, pr) = (&mut scores[..(r1 - r0) * cols], &mut probs[..(r1 - r0) * cols]);
            // The scale rides on the product (gemm's alpha): no pass over the scores for it.
            gemm_into(r1 - r0, cols, d, &qv[(bi * l + r0) * d..(bi * l + r1) * d], &kv[bi * s * d..], 1, d, sc, scale);
            for ((i, row), p) in (r0..r1).zip(sc.chunks_exact_mut(cols.max(1))).zip(pr.chunks_exact_mut(cols.max(1))) {
                if causal {
                    row.iter_mut().skip(i + 1).for_each(|x| *x = f32::NEG_INFINITY);
                }
                if let Some(m) = mrow(i) {
                    let m = &m[..cols];
                    if mbool {
                        // An add, not `if !keep { x = -inf }`: that compiles to AVX2 masked stores (slow on AMD).
                        row.iter_mut().zip(m).for_each(|(x, &keep)| *x += if keep == 0.0 { f32::NEG_INFINITY } else { 0.0 });
                    } else {
                        row.iter_mut().zip(m).for_each(|(x, &add)| *x += add);
                    }
                    if row.iter().all(|&x| x == f32::NEG_INFINITY) {
                        p.fill(0.0); // a row with nothing to attend to gives zeros, as torch's safe softmax
                        continue;
                    }
                }
                softmax_row_f32(row, p, false);
            }
            gemm_into(r1 - r0, dv, cols, pr, &vv[bi * s * dv..], dv, 1, &mut o[r0 * dv..r1 * dv], 1.0);
        }
    };
    Python::attach(|py| py.detach(|| crate::pool::for_each(b, &work)));
}
