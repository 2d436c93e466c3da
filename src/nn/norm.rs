//! Layer norm and RMS norm over the trailing `n` elements of every row, fused into one pass per row
//! (statistics, normalisation and the affine transform), rows split over the thread pool.

use candle_core::{Device, Tensor};
use pyo3::prelude::*;

use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};
use crate::tensor::PyTensor;

/// Σ(x−k) and Σ(x−k)² over 16-element blocks, in 16 f32 lanes each. Explicit AVX: LLVM left the
/// portable lane loop (kept as the fallback) scalar inside the row kernel, 3x slower.
#[inline(always)]
fn lane_sums(x: &[f32], k: f32) -> ([f32; 16], [f32; 16]) {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::level() >= crate::isa::Level::Avx2 {
        // SAFETY: the CPU has AVX.
        return unsafe { lane_sums_avx(x, k) };
    }
    let (mut s1, mut s2) = ([0f32; 16], [0f32; 16]);
    for c in x.chunks_exact(16) {
        for ((a, q), &v) in s1.iter_mut().zip(s2.iter_mut()).zip(c) {
            let d = v - k;
            *a += d;
            *q += d * d;
        }
    }
    (s1, s2)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn lane_sums_avx(x: &[f32], k: f32) -> ([f32; 16], [f32; 16]) {
    use std::arch::x86_64::*;
    let kk = _mm256_set1_ps(k);
    let (mut a0, mut a1, mut q0, mut q1) = (_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps());
    for c in x.chunks_exact(16) {
        // SAFETY: c holds 16 floats; unaligned loads.
        let (d0, d1) = unsafe { (_mm256_sub_ps(_mm256_loadu_ps(c.as_ptr()), kk), _mm256_sub_ps(_mm256_loadu_ps(c.as_ptr().add(8)), kk)) };
        a0 = _mm256_add_ps(a0, d0);
        a1 = _mm256_add_ps(a1, d1);
        q0 = _mm256_add_ps(q0, _mm256_mul_ps(d0, d0));
        q1 = _mm256_add_ps(q1, _mm256_mul_ps(d1, d1));
    }
    let (mut s1, mut s2) = ([0f32; 16], [0f32; 16]);
    // SAFETY: each array holds 16 floats; unaligned stores.
    unsafe {
        _mm256_storeu_ps(s1.as_mut_ptr(), a0);
        _mm256_storeu_ps(s1.as_mut_ptr().add(8), a1);
        _mm256_storeu_ps(s2.as_mut_ptr(), q0);
        _mm256_storeu_ps(s2.as_mut_ptr().add(8), q1);
    }
    (s1, s2)
}

crate::tensor::kernels::multiversion! {
    /// One row: y = (x − mean)/sqrt(var + eps)·w + b (or x/sqrt(mean(x²) + eps)·w for RMS norm).
    fn norm_row<>(x: &[f32], y: &mut [f32], w: Option<&[f32]>, b: Option<&[f32]>, eps: f32, rms: bool) where []
    {
        let n = x.len() as f64;
        // One pass of shifted sums in 16 lanes: the shift (the first element) keeps the variance
        // formula free of cancellation for rows far from zero; RMS norm uses no shift.
        let k = if rms || x.is_empty() { 0.0 } else { x[0] };
        let (s1, s2) = lane_sums(x, k);
        let rest = &x[x.len() / 16 * 16..];
        let fold = |a: &[f32; 16], tail: f64| a.iter().map(|&v| v as f64).sum::<f64>() + tail;
        let sum = fold(&s1, rest.iter().map(|&v| (v - k) as f64).sum());
        let sq = fold(&s2, rest.iter().map(|&v| ((v - k) * (v - k)) as f64).sum());
        let (mean, var) = if rms {
            (0.0f32, (sq / n) as f32)
        } else {
            let m = sum / n;
            ((m + k as f64) as f32, (sq / n - m * m).max(0.0) as f32)
        };
        let inv = 1.0 / (var + eps).sqrt();
        // Zipped iterators (no indexing), so each variant is one bounds-check-free vector loop.
        let norm = x.iter().map(|&v| (v - mean) * inv);
        match (w, b) {
            (Some(w), Some(b)) => y.iter_mut().zip(norm.zip(w).zip(b)).for_each(|(o, ((v, &w), &b))| *o = v * w + b),
            (Some(w), None) => y.iter_mut().zip(norm.zip(w)).for_each(|(o, (v, &w))| *o = v * w),
            (None, Some(b)) => y.iter_mut().zip(norm.zip(b)).for_each(|(o, (v, &b))| *o = v + b),
            (None, None) => y.iter_mut().zip(norm).for_each(|(o, v)| *o = v),
        }
    }
}

/// `norm_row` over every row of `n` in `x` into `y`, blocks of rows split over the pool.
fn norm_all(x: &[f32], n: usize, w: Option<&[f32]>, b: Option<&[f32]>, eps: f32, rms: bool, y: &mut [f32]) {
    let per = (16384 / n).max(1);
    crate::pool::chunks_mut(y, per * n, |i, out| {
        for (r, o) in out.chunks_mut(n).enumerate() {
            let row = i * per + r;
            norm_row(&x[row * n..(row + 1) * n], o, w, b, eps, rms);
        }
    })
}

/// RMS norm of every row of `x` by `w` for the native engines: `norm_row` on a contiguous f32 CPU
/// tensor (candle-nn's sums a row one element at a time: a batch-8 decode step spent 3% there),
/// candle-nn's kernel anywhere else.
pub(crate) fn rms_norm(x: &Tensor, w: &Tensor, eps: f32) -> candle_core::Result<Tensor> {
    use candle_core::{DType as D, Storage};
    let n = x.dims().last().copied().unwrap_or(0);
    let plain = |t: &Tensor| t.device().is_cpu() && t.dtype() == D::F32 && t.is_contiguous();
    if n == 0 || !plain(x) || !plain(w) || w.elem_count() != n {
        return candle_nn::ops::rms_norm(x, w, eps);
    }
    let w = w.flatten_all()?.to_vec1::<f32>()?;
    let (guard, layout) = x.storage_and_layout();
    let Storage::Cpu(cpu) = &*guard else { candle_core::bail!("rms_norm: expected a CPU tensor") };
    let total = x.elem_count();
    let xs = &cpu.as_slice::<f32>()?[layout.start_offset()..][..total];
    let mut y = crate::tensor::kernels::uninit_vec::<f32>(total);
    norm_all(xs, n, Some(&w), None, eps, true, &mut y);
    drop(guard);
    Tensor::from_vec(y, x.dims(), &Device::Cpu)
}

/// `x + a` and its RMS norm by `w`, in one call for the native engines' residual add and the next
/// block's norm (two small ops and their dispatches were 3% of a decoded step); the same numbers as
/// the add followed by `rms_norm`.
pub(crate) fn add_rms_norm(x: &Tensor, a: &Tensor, w: &Tensor, eps: f32) -> candle_core::Result<(Tensor, Tensor)> {
    use candle_core::{DType as D, Storage};
    let plain = |t: &Tensor| t.device().is_cpu() && t.dtype() == D::F32 && t.is_contiguous();
    let s = if plain(x) && plain(a) && x.dims() == a.dims() {
        let total = x.elem_count();
        let mut s = crate::tensor::kernels::uninit_vec::<f32>(total);
        {
            let (gx, lx) = x.storage_and_layout();
            let (ga, la) = a.storage_and_layout();
            let (Storage::Cpu(cx), Storage::Cpu(ca)) = (&*gx, &*ga) else { candle_core::bail!("add_rms_norm: expected CPU tensors") };
            let xs = &cx.as_slice::<f32>()?[lx.start_offset()..][..total];
            let as_ = &ca.as_slice::<f32>()?[la.start_offset()..][..total];
            s.iter_mut().zip(xs.iter().zip(as_)).for_each(|(o, (&x, &a))| *o = x + a);
        }
        Tensor::from_vec(s, x.dims(), &Device::Cpu)?
    } else {
        (x + a)?
    };
    let h = rms_norm(&s, w, eps)?;
    Ok((s, h))
}

/// Normalises every row of `n` trailing elements (layer norm, or RMS norm when `rms`).
#[pyfunction]
#[pyo3(signature = (input, n, weight=None, bias=None, eps=1e-5, rms=false))]
pub fn norm_rows(input: &PyTensor, n: usize, weight: Option<&PyTensor>, bias: Option<&PyTensor>, eps: f64, rms: bool) -> PyResult<PyTensor> {
    if !input.dtype.is_float() {
        return Err(runtime_err(format!("\"LayerNormKernelImpl\" not implemented for '{}'", input.dtype.title())));
    }
    let total = input.numel();
    if n == 0 || total % n != 0 {
        return Err(runtime_err(format!("norm: {n} does not divide the input's {total} elements")));
    }
    for (name, p) in [("weight", weight), ("bias", bias)] {
        if let Some(p) = p {
            if p.numel() != n {
                return Err(crate::error::shape_err(format!("norm: {name} has {} elements, expected {n}", p.numel())));
            }
        }
    }
    if !crate::device::cpu_kernels(&input.t) {
        return norm_rows_dev(input, n, weight, bias, eps, rms);
    }
    // A contiguous f32 input is read in place; anything else is converted once.
    let owned;
    let guard;
    let x: &[f32] = if input.dtype == DType::F32 && input.t.is_contiguous() && input.t.device().is_cpu() {
        guard = input.t.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*guard.0 else { return Err(runtime_err("expected a CPU tensor")) };
        let o = guard.1.start_offset();
        &cpu.as_slice::<f32>().py()?[o..o + total]
    } else {
        owned = crate::tensor::cpu_vec::<f32>(&input.t)?;
        &owned
    };
    let w = weight.map(|w| crate::tensor::cpu_vec::<f32>(&w.t)).transpose()?;
    let b = bias.map(|b| crate::tensor::cpu_vec::<f32>(&b.t)).transpose()?;
    let mut y = crate::tensor::kernels::uninit_vec::<f32>(total);
    let rows = total / n;
    let mut work = || norm_all(x, n, w.as_deref(), b.as_deref(), eps as f32, rms, &mut y);
    if total >= crate::tensor::kernels::PAR_THRESHOLD && rows > 1 {
        Python::attach(|py| py.detach(&mut work));
    } else {
        work();
    }
    let out = Tensor::from_vec(y, input.dims(), &Device::Cpu).py()?;
    let out = if input.dtype == DType::F32 { out } else { crate::tensor::convert(&out, input.dtype.candle())? };
    Ok(PyTensor::new(out.to_device(input.t.device()).py()?, input.dtype))
}

/// `norm_rows` on other devices: candle-nn's fused layer_norm / rms_norm kernels over (rows, n).
fn norm_rows_dev(input: &PyTensor, n: usize, weight: Option<&PyTensor>, bias: Option<&PyTensor>, eps: f64, rms: bool) -> PyResult<PyTensor> {
    let mut ts = vec![&input.t];
    ts.extend(weight.iter().map(|w| &w.t).chain(bias.iter().map(|b| &b.t)));
    let dev = crate::device::common(&ts)?;
    let dt = input.t.dtype();
    let param = |p: Option<&PyTensor>, v: f64| -> PyResult<Tensor> {
        match p {
            Some(p) => p.t.flatten_all().py()?.to_dtype(dt).py(),
            None => Tensor::ones(n, dt, dev).py()?.affine(v, 0.0).py(),
        }
    };
    let x = input.t.contiguous().py()?.reshape((input.numel() / n, n)).py()?;
    if x.elem_count() == 0 {
        return Ok(input.same(input.t.copy().py()?));
    }
    let w = param(weight, 1.0)?;
    let y = if rms {
        candle_nn::ops::rms_norm(&x, &w, eps as f32).py()?
    } else {
        candle_nn::ops::layer_norm(&x, &w, &param(bias, 0.0)?, eps as f32).py()?
    };
    let y = if rms && bias.is_some() { y.broadcast_add(&param(bias, 0.0)?).py()? } else { y };
    Ok(PyTensor::new(y.reshape(input.dims()).py()?, input.dtype))
}

crate::tensor::kernels::multiversion! {
    /// y = x·scale + shift over one channel plane.
    fn affine_plane<>(x: &[f32], y: &mut [f32], scale: f32, shift: f32) where [] {
        y.iter_mut().zip(x).for_each(|(o, &v)| *o = v * scale + shift);
    }
}

/// BatchNorm in eval mode (and any per-channel affine): y[n, c, ...] = x·scale[c] + shift[c] in one
/// pass, for contiguous float32 input of shape (N, C, *); planes split over the pool.
#[pyfunction]
pub fn channel_affine(input: &PyTensor, scale: &PyTensor, shift: &PyTensor) -> PyResult<PyTensor> {
    let dims = input.dims();
    if !crate::device::cpu_kernels(&input.t) && dims.len() >= 2 {
        crate::device::common(&[&input.t, &scale.t, &shift.t])?;
        let mut bd = vec![1; dims.len()];
        bd[1] = dims[1];
        let dt = input.t.dtype();
        let sc = scale.t.to_dtype(dt).py()?.reshape(bd.as_slice()).py()?;
        let sh = shift.t.to_dtype(dt).py()?.reshape(bd.as_slice()).py()?;
        return Ok(input.same(input.t.broadcast_mul(&sc).py()?.broadcast_add(&sh).py()?));
    }
    if input.dtype != DType::F32 || !input.t.is_contiguous() || !input.t.device().is_cpu() || dims.len() < 2 {
        return Err(runtime_err("channel_affine: expects a contiguous float32 CPU tensor (N, C, *)"));
    }
    let c = dims[1];
    if scale.numel() != c || shift.numel() != c {
        return Err(crate::error::shape_err(format!("channel_affine: scale and shift need {c} elements")));
    }
    let (sc, sh) = (crate::tensor::cpu_vec::<f32>(&scale.t)?, crate::tensor::cpu_vec::<f32>(&shift.t)?);
    let total = input.numel();
    let plane = dims[2..].iter().product::<usize>();
    let mut y = crate::tensor::kernels::uninit_vec::<f32>(total);
    {
        let (storage, layout) = input.t.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
        let x = &cpu.as_slice::<f32>().py()?[layout.start_offset()..layout.start_offset() + total];
        // Whole planes per task, about 16k elements each.
        let per = (16384 / plane.max(1)).max(1);
        let mut work = || {
            crate::pool::chunks_mut(&mut y, per * plane.max(1), |i, out| {
                for (k, o) in out.chunks_mut(plane.max(1)).enumerate() {
                    let p = i * per + k;
                    affine_plane(&x[p * plane..(p + 1) * plane], o, sc[p % c], sh[p % c]);
                }
            })
        };
        if total >= crate::tensor::kernels::PAR_THRESHOLD {
            Python::attach(|py| py.detach(&mut work));
        } else {
            work();
        }
    }
    Ok(PyTensor::new(Tensor::from_vec(y, dims, &Device::Cpu).py()?, DType::F32))
}

/// BatchNorm in eval mode off the CPU: (x − mean)·rsqrt(var + eps)·weight + bias per channel of
/// x (N, C, *), one kernel of ours on CUDA (Candle ops elsewhere) instead of the half-dozen small
/// ops over the statistics plus two passes over x.
#[pyfunction]
#[pyo3(signature = (input, mean, var, weight, bias, eps))]
pub fn batch_norm_eval(input: &PyTensor, mean: &PyTensor, var: &PyTensor, weight: Option<&PyTensor>, bias: Option<&PyTensor>, eps: f64) -> PyResult<PyTensor> {
    let mut ts = vec![&input.t, &mean.t, &var.t];
    ts.extend(weight.iter().map(|w| &w.t).chain(bias.iter().map(|b| &b.t)));
    crate::device::common(&ts)?;
    let dims = input.dims();
    if dims.len() < 2 || !input.dtype.is_float() {
        return Err(runtime_err("batch_norm_eval: expects a float tensor (N, C, *)"));
    }
    let c = dims[1];
    for p in [Some(mean), Some(var), weight, bias].into_iter().flatten() {
        if p.numel() != c {
            return Err(crate::error::shape_err(format!("batch_norm: parameters need {c} elements, got {}", p.numel())));
        }
    }
    #[cfg(feature = "cuda")]
    if input.t.device().is_cuda() {
        let y = crate::cuda::batch_norm_eval(&input.t, &mean.t, &var.t, weight.map(|w| &w.t), bias.map(|b| &b.t), eps)?;
        return Ok(input.same(y));
    }
    let mut bd = vec![1; dims.len()];
    bd[1] = c;
    let dt = input.t.dtype();
    let p = |t: &Tensor| -> PyResult<Tensor> { t.to_dtype(dt).py()?.reshape(bd.as_slice()).py() };
    let inv = (p(&var.t)? + eps).py()?.sqrt().py()?.recip().py()?;
    let mut y = input.t.broadcast_sub(&p(&mean.t)?).py()?.broadcast_mul(&inv).py()?;
    if let Some(w) = weight {
        y = y.broadcast_mul(&p(&w.t)?).py()?;
    }
    if let Some(b) = bias {
        y = y.broadcast_add(&p(&b.t)?).py()?;
    }
    Ok(input.same(y))
}
