//! Inclusive scans (cumsum, cumprod) along a dim: on the host, rows of the dim moved last, split
//! over the pool; on a device, log2(n) shifted adds.
//!
//! torch sums an f32 row in f64 (its CPU accumulation type) and rounds each prefix to f32; so do
//! we. On AVX-512 eight prefixes at a time: the in-vector prefix of eight values (three shifted
//! adds) plus the running total, so that the dependency from one vector to the next is one add
//! instead of one add per element (a sequential scan runs at the add's latency, 3-4 cycles an
//! element). Its order of additions differs from torch's only within eight f64 values, far below
//! an f32's last bit.

use candle_core::{Device, Storage, Tensor};
use pyo3::prelude::*;

use super::kernels::{as_f32, as_f32_mut};
use super::{cast, norm_dim, with_dtype, PyTensor};
use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};

/// Inclusive scan of `x` along `dim` in log2(n) shifted adds (or products): exact for integers,
/// no (n × n) matrix as Candle's cumsum builds.
fn scan_dev(x: &Tensor, dim: usize, prod: bool) -> PyResult<Tensor> {
    let n = x.dims()[dim];
    let mut x = x.contiguous().py()?;
    let mut s = 1;
    while s < n {
        let mut pad_dims = x.dims().to_vec();
        pad_dims[dim] = s;
        let pad = if prod { Tensor::ones(pad_dims, x.dtype(), x.device()) } else { Tensor::zeros(pad_dims, x.dtype(), x.device()) }.py()?;
        let shifted = Tensor::cat(&[&pad, &x.narrow(dim, 0, n - s).py()?], dim).py()?;
        x = if prod { (&x * &shifted).py()? } else { (&x + &shifted).py()? };
        s *= 2;
    }
    Ok(x)
}

/// Running sums of one f32 row, accumulated in f64.
fn cumsum_f32(src: &[f32], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::level() == crate::isa::Level::Avx512 {
        // SAFETY: the CPU runs AVX-512F and VL (the AVX-512 level has both); the slices have the same length.
        return unsafe { cumsum_f32_512(src, dst) };
    }
    let mut acc = 0f64;
    for (s, d) in src.iter().zip(dst.iter_mut()) {
        acc += *s as f64;
        *d = acc as f32;
    }
}

/// # Safety
/// AVX-512F and VL; `dst.len() == src.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn cumsum_f32_512(src: &[f32], dst: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = src.len();
    let last = _mm512_set1_epi64(7);
    let mut total = _mm512_setzero_pd();
    // The in-vector prefix of eight values, plus the running total; the total moves on by the
    // vector's own sum, off the prefix's dependency chain.
    let step = |x: __m512d, total: &mut __m512d| {
        let shift = |x: __m512d, by: u8, keep: __mmask8| {
            let idx = _mm512_set_epi64(7 - by as i64, 6 - by as i64, 5 - by as i64, 4 - by as i64, 3 - by as i64, 2 - by as i64, 1 - by as i64, 0);
            _mm512_maskz_permutexvar_pd(keep, idx, x)
        };
        let x = _mm512_add_pd(x, shift(x, 1, 0xfe));
        let x = _mm512_add_pd(x, shift(x, 2, 0xfc));
        let x = _mm512_add_pd(x, shift(x, 4, 0xf0));
        let out = _mm512_add_pd(x, *total);
        *total = _mm512_add_pd(*total, _mm512_permutexvar_pd(last, x));
        _mm512_cvtpd_ps(out)
    };
    let mut i = 0;
    while i + 8 <= n {
        let x = _mm512_cvtps_pd(_mm256_loadu_ps(src.as_ptr().add(i)));
        _mm256_storeu_ps(dst.as_mut_ptr().add(i), step(x, &mut total));
        i += 8;
    }
    if i < n {
        let m: __mmask8 = (1u8 << (n - i)) - 1;
        let x = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, src.as_ptr().add(i)));
        _mm256_mask_storeu_ps(dst.as_mut_ptr().add(i), m, step(x, &mut total));
    }
}

impl PyTensor {
    pub(super) fn scan(&self, dim: i64, dtype: Option<DType>, prod: bool) -> PyResult<PyTensor> {
        let out_dt = dtype.unwrap_or(if self.dtype.is_float() { self.dtype } else { DType::I64 });
        let work_dt = match out_dt { DType::F16 | DType::BF16 => DType::F32, DType::Bool | DType::U8 | DType::I32 => DType::I64, d => d };
        if self.rank() == 0 {
            return Ok(PyTensor::new(cast(&self.t, self.dtype, out_dt)?, out_dt));
        }
        let d = norm_dim(dim, self.rank())?;
        if !super::is_cpu(&self.t) {
            let src = cast(&self.t, self.dtype, work_dt)?;
            return Ok(PyTensor::new(cast(&scan_dev(&src, d, prod)?, work_dt, out_dt)?, out_dt));
        }
        let last = self.rank() - 1;
        let src = cast(&self.t, self.dtype, work_dt)?.transpose(d, last).py()?.contiguous().py()?;
        let n = src.dims()[last];
        let out = with_dtype!(src.dtype(), T => {
            let (storage, layout) = src.storage_and_layout();
            let Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
            let o = layout.start_offset();
            let s: &[T] = &cpu.as_slice::<T>().py()?[o..o + src.elem_count()];
            let mut v = super::kernels::uninit_vec::<T>(s.len());
            if n > 0 {
                // Rows `first..` of the source into `rows` of the result.
                let scan = |first: usize, rows: &mut [T]| {
                    for (r, row) in rows.chunks_exact_mut(n).enumerate() {
                        let s = &s[(first + r) * n..][..n];
                        if !prod {
                            if let (Some(s), Some(row)) = (as_f32(s), as_f32_mut(row)) {
                                cumsum_f32(s, row);
                                continue;
                            }
                        }
                        row[0] = s[0];
                        for i in 1..n {
                            row[i] = if prod { row[i - 1] * s[i] } else { row[i - 1] + s[i] };
                        }
                    }
                };
                if v.len() >= super::kernels::PAR_THRESHOLD {
                    let rows = (v.len() / n).div_ceil(4 * crate::pool::threads()).max(1);
                    Python::attach(|py| py.detach(|| crate::pool::chunks_mut(&mut v, rows * n, |i, part| scan(i * rows, part))));
                } else {
                    scan(0, &mut v);
                }
            }
            drop(storage);
            Tensor::from_vec(v, src.dims(), &Device::Cpu).py()
        })?;
        let out = out.transpose(d, last).py()?.contiguous().py()?;
        Ok(PyTensor::new(cast(&out, work_dt, out_dt)?, out_dt))
    }
}
