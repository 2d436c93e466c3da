//! max, min, amax, amin, argmax and argmin: NaN-propagating extremes over any dims (rows moved
//! last as `reduce.rs` moves them, or columns read in place) and the first position holding one.

use candle_core::{Storage, WithDType};
use pyo3::prelude::*;

use super::reduce::{nan_rows, outer_view, reduce_dims, rows, rows_batched, rows_dev, values_indices};
use super::{norm_dim, with_dtype, PyTensor};
use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};

super::kernels::multiversion! {
    /// Column max (or min) over `rows` rows `stride` apart; a NaN wins, as torch's.
    fn extreme_cols<T>(x: &[T], stride: usize, rows: usize, out: &mut [T], max: bool) where [T: WithDType]
    {
        let n = out.len();
        out.copy_from_slice(&x[..n]);
        for k in 1..rows {
            let row = &x[k * stride..k * stride + n];
            if max {
                out.iter_mut().zip(row).for_each(|(m, &v)| *m = pick_max(*m, v));
            } else {
                out.iter_mut().zip(row).for_each(|(m, &v)| *m = pick_min(*m, v));
            }
        }
    }
}

/// `v` when it is larger than `m` or NaN: a branch-free select that vectorises, and once `m` is NaN
/// nothing replaces it (a comparison with NaN is false).
#[inline(always)]
#[allow(clippy::eq_op)]
fn pick_max<T: PartialOrd + Copy>(m: T, v: T) -> T {
    // `|`, not `||`: both compares always run, so the select needs no branch and vectorises.
    if (v > m) | (v != v) { v } else { m }
}

#[inline(always)]
#[allow(clippy::eq_op)]
fn pick_min<T: PartialOrd + Copy>(m: T, v: T) -> T {
    if (v < m) | (v != v) { v } else { m }
}

super::kernels::multiversion! {
    /// Max (or min) of every `row`-long row of `data` into `out`, NaN propagating: independent
    /// lanes per row so the compare-and-select loop vectorises.
    fn extreme_rows<T>(data: &[T], row: usize, out: &mut [T], max: bool) where [T: WithDType]
    {
        // 64 lanes: four independent vector registers for 4-byte types, enough to hide the latency.
        const L: usize = 64;
        for (o, r) in out.iter_mut().zip(data.chunks_exact(row.max(1))) {
            if r.len() < L {
                // A short row: a plain fold costs less than setting up and folding the lanes.
                let mut m = r[0];
                for &v in r {
                    m = if max { pick_max(m, v) } else { pick_min(m, v) };
                }
                *o = m;
                continue;
            }
            let mut lanes = [r[0]; L];
            // NaNs are looked for alongside (a NaN seen anywhere makes the result NaN), so the lane
            // loop is one max/min instruction per vector plus an unordered compare, not a blend.
            let mut nan = [false; L];
            let mut chunks = r.chunks_exact(L);
            // Fixed-size chunks, so the lane loop compiles to whole vector compares and blends.
            let whole = chunks.by_ref().filter_map(|c| <&[T; L]>::try_from(c).ok());
            if max {
                for c in whole {
                    for i in 0..L {
                        lanes[i] = if c[i] > lanes[i] { c[i] } else { lanes[i] };
                        #[allow(clippy::eq_op)]
                        let bad = c[i] != c[i];
                        nan[i] |= bad;
                    }
                }
            } else {
                for c in whole {
                    for i in 0..L {
                        lanes[i] = if c[i] < lanes[i] { c[i] } else { lanes[i] };
                        #[allow(clippy::eq_op)]
                        let bad = c[i] != c[i];
                        nan[i] |= bad;
                    }
                }
            }
            if let Some(i) = nan.iter().position(|&b| b) {
                // The first NaN lane's value: pick_* below carries a NaN through every fold.
                let v = r[..r.len() - chunks.remainder().len()].iter().skip(i).step_by(L).copied().find(|v| v != v);
                if let Some(v) = v {
                    lanes[i] = v;
                }
            }
            // The lanes folded in halves (vector ops down to the last few), then the tail.
            let mut half = L / 2;
            while half > 0 {
                for i in 0..half {
                    lanes[i] = if max { pick_max(lanes[i], lanes[i + half]) } else { pick_min(lanes[i], lanes[i + half]) };
                }
                half /= 2;
            }
            let mut m = lanes[0];
            for &v in chunks.remainder() {
                m = if max { pick_max(m, v) } else { pick_min(m, v) };
            }
            *o = m;
        }
    }
}

/// `extreme_rows` for f32 rows of 64 or more on AVX-512: one max (min) per vector into four
/// accumulators and an unordered compare ORed into a mask (a NaN anywhere makes the row's result
/// NaN); false where it does not apply (the caller runs `extreme_rows`).
fn extreme_rows_f32<T: 'static>(data: &[T], row: usize, out: &mut [T], max: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let (Some(data), Some(out), true) = (super::kernels::as_f32(data), super::kernels::as_f32_mut(out), row >= 64 && crate::isa::level() == crate::isa::Level::Avx512) {
        for (o, r) in out.iter_mut().zip(data.chunks_exact(row)) {
            // SAFETY: the CPU runs AVX-512F (the level checked); every row holds 64 or more values.
            *o = unsafe { extreme_row_f32_512(r, max) };
        }
        return true;
    }
    let _ = (data, row, out, max);
    false
}

/// # Safety
/// AVX-512F; `r.len() >= 64`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn extreme_row_f32_512(r: &[f32], max: bool) -> f32 {
    use std::arch::x86_64::*;
    let p = r.as_ptr();
    let n = r.len();
    // The new value first: on a tie the accumulator (the earlier value) stays, as `pick_max`.
    let pick = |v: __m512, acc: __m512| if max { _mm512_max_ps(v, acc) } else { _mm512_min_ps(v, acc) };
    let mut acc = [_mm512_loadu_ps(p); 4];
    let mut nan: __mmask16 = 0;
    let mut i = 0;
    while i + 64 <= n {
        for (k, a) in acc.iter_mut().enumerate() {
            let v = _mm512_loadu_ps(p.add(i + 16 * k));
            nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            *a = pick(v, *a);
        }
        i += 64;
    }
    while i < n {
        let m: __mmask16 = if n - i >= 16 { 0xffff } else { (1u16 << (n - i)) - 1 };
        // Lanes past the row keep the accumulator's own values.
        let v = _mm512_mask_loadu_ps(acc[0], m, p.add(i));
        nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        acc[0] = pick(v, acc[0]);
        i += 16;
    }
    if nan != 0 {
        // The first NaN of the row, as the scalar fold returns it.
        return r.iter().copied().find(|v| v.is_nan()).unwrap_or(f32::NAN);
    }
    let a = pick(pick(acc[0], acc[1]), pick(acc[2], acc[3]));
    if max { _mm512_reduce_max_ps(a) } else { _mm512_reduce_min_ps(a) }
}

impl PyTensor {
    /// max/min over `dims` (values only), NaN propagating for floats. `name` is the op torch's
    /// errors name; `explicit`, whether the caller named the dims (torch's error then names the
    /// empty one, as an IndexError).
    pub(super) fn extreme(&self, dims: &[usize], keepdim: bool, max: bool, name: &str, explicit: bool) -> PyResult<PyTensor> {
        if let Some(&d) = dims.iter().find(|&&d| self.dims().get(d) == Some(&0)) {
            return Err(if explicit {
                crate::error::index_err(format!("{name}(): Expected reduction dim {d} to have non-zero size."))
            } else {
                runtime_err(format!(
                    "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
                ))
            });
        }
        if !super::is_cpu(&self.t) {
            let src = self.t.clone();
            let r = rows_dev(&src, dims, keepdim, |x, _| {
                let r = if max { x.max_keepdim(1) } else { x.min_keepdim(1) }.py()?;
                nan_rows(x, r)
            })?;
            return Ok(self.same(r));
        }
        let src = if matches!(self.dtype, DType::F16 | DType::BF16) { super::convert(&self.t, candle_core::DType::F32)? } else { self.t.clone() };
        let r = with_dtype!(src.dtype(), T => {
            let outer = {
                let (storage, _) = src.storage_and_layout();
                match &*storage {
                    Storage::Cpu(cpu) => match outer_view::<T>(&src, cpu, dims, keepdim)? {
                        Some(v) => Some(v.run::<T>(|x, stride, o| extreme_cols(x, stride, v.r, o, max))?),
                        None => None,
                    },
                    _ => None,
                }
            };
            match outer {
                Some(r) => Ok(r),
                None => rows_batched::<T, T, _>(&src, dims, keepdim, |d, row, o| {
                    if !extreme_rows_f32(d, row, o, max) {
                        extreme_rows(d, row, o, max)
                    }
                }),
            }
        })?;
        Ok(self.same(r.to_dtype(self.dtype.candle()).py()?))
    }

    /// argmax/argmin along one dim (first occurrence; NaN counts as the extreme, as torch).
    pub(super) fn arg_extreme(&self, dim: usize, keepdim: bool, max: bool) -> PyResult<PyTensor> {
        if self.rank() > 0 && self.dims()[dim] == 0 {
            return Err(crate::error::index_err(format!(
                "{}(): Expected reduction dim {dim} to have non-zero size.",
                if max { "argmax" } else { "argmin" }
            )));
        }
        let dims: Vec<usize> = if self.rank() == 0 { vec![] } else { vec![dim] };
        if !super::is_cpu(&self.t) {
            let r = rows_dev(&self.t, &dims, keepdim, |x, _| {
                let i = if max { x.argmax_keepdim(1) } else { x.argmin_keepdim(1) }.py()?;
                let i = i.to_dtype(candle_core::DType::I64).py()?;
                if !x.dtype().is_float() {
                    return Ok(i);
                }
                // The first NaN wins, as torch's argmax/argmin.
                let isnan = x.ne(x).py()?;
                let has = isnan.max_keepdim(1).py()?;
                has.where_cond(&isnan.argmax_keepdim(1).py()?.to_dtype(candle_core::DType::I64).py()?, &i).py()
            })?;
            return Ok(PyTensor::new(r, DType::I64));
        }
        let src = if matches!(self.dtype, DType::F16 | DType::BF16) { super::convert(&self.t, candle_core::DType::F32)? } else { self.t.clone() };
        let r = with_dtype!(src.dtype(), T => rows::<T, i64, _>(&src, &dims, keepdim, |r| {
            if let Some(i) = arg_row_f32(r, max) {
                return i as i64;
            }
            let mut best = 0usize;
            for (i, &v) in r.iter().enumerate() {
                #[allow(clippy::eq_op)]
                if v != v { return i as i64; }
                if (max && v > r[best]) || (!max && v < r[best]) { best = i; }
            }
            best as i64
        }))?;
        Ok(PyTensor::new(r, DType::I64))
    }


    fn extreme_api(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, max: bool) -> PyResult<Py<PyAny>> {
        match dim.filter(|d| !d.is_none()) {
            None => Ok(Py::new(py, self.extreme(&(0..self.rank()).collect::<Vec<_>>(), false, max, if max { "max" } else { "min" }, false)?)?.into_any()),
            Some(d) if d.cast::<PyTensor>().is_ok() => {
                let other = d.cast::<PyTensor>()?.borrow();
                let op = if max { super::arith::BinOp::Maximum } else { super::arith::BinOp::Minimum };
                Ok(Py::new(py, super::arith::binary(self, super::Operand::T(&other), op, false)?)?.into_any())
            }
            Some(d) => {
                let dim = norm_dim(d.extract::<i64>()?, self.rank())?;
                let dims: Vec<usize> = if self.rank() == 0 { vec![] } else { vec![dim] };
                let values = self.extreme(&dims, keepdim, max, if max { "max" } else { "min" }, true)?;
                let indices = self.arg_extreme(dim, keepdim, max)?;
                values_indices(py, if max { "max" } else { "min" }, values, indices)
            }
        }
    }

    fn arg_api(&self, dim: Option<i64>, keepdim: bool, max: bool) -> PyResult<PyTensor> {
        match dim {
            Some(d) => self.arg_extreme(norm_dim(d, self.rank())?, keepdim, max),
            None => {
                let flat = self.same(self.t.flatten_all().py()?);
                let r = flat.arg_extreme(0, false, max)?;
                if keepdim {
                    let ones = vec![1usize; self.rank()];
                    return Ok(r.same(r.t.reshape(ones).py()?));
                }
                Ok(r)
            }
        }
    }
}

#[pymethods]
impl PyTensor {
    /// max(), max(dim, keepdim) → (values, indices), or max(other) → maximum.
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn max(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<Py<PyAny>> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        self.extreme_api(py, dim, keepdim, true)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn min(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<Py<PyAny>> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        self.extreme_api(py, dim, keepdim, false)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn amax(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let explicit = dim.is_some_and(|d| !d.is_none());
        self.extreme(&reduce_dims(dim, self.rank())?, keepdim, true, "amax", explicit)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn amin(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let explicit = dim.is_some_and(|d| !d.is_none());
        self.extreme(&reduce_dims(dim, self.rank())?, keepdim, false, "amin", explicit)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn argmax(&self, dim: Option<i64>, keepdim: bool, axis: Option<i64>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        self.arg_api(dim, keepdim, true)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn argmin(&self, dim: Option<i64>, keepdim: bool, axis: Option<i64>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        self.arg_api(dim, keepdim, false)
    }
}

/// The position of an f32 row's first extreme (or first NaN) on AVX-512, for rows of 64 or more:
/// the extreme by `extreme_row_f32_512`, then the first lane holding it, 16 lanes per compare. The
/// scalar scan (a compare and a branch per value) took 2% of a batch-8 decode step in the argmax
/// over 49152 logits. None where it does not apply.
fn arg_row_f32<T: 'static>(r: &[T], max: bool) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let (Some(r), true) = (super::kernels::as_f32(r), r.len() >= 64 && crate::isa::level() == crate::isa::Level::Avx512) {
        // SAFETY: the CPU runs AVX-512F (the level checked); the row holds 64 or more values.
        return Some(unsafe { first_equal_512(r, extreme_row_f32_512(r, max)) });
    }
    let _ = (r, max);
    None
}

/// The first position of `r` holding `m` (or a NaN, when `m` is NaN).
///
/// # Safety
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn first_equal_512(r: &[f32], m: f32) -> usize {
    use std::arch::x86_64::*;
    let (p, n, mm) = (r.as_ptr(), r.len(), _mm512_set1_ps(m));
    let mut i = 0;
    while i < n {
        let lanes: __mmask16 = if n - i >= 16 { 0xffff } else { (1u16 << (n - i)) - 1 };
        let v = _mm512_maskz_loadu_ps(lanes, p.add(i));
        let hit = if m.is_nan() { _mm512_mask_cmp_ps_mask::<_CMP_UNORD_Q>(lanes, v, v) } else { _mm512_mask_cmp_ps_mask::<_CMP_EQ_OQ>(lanes, v, mm) };
        if hit != 0 {
            return i + hit.trailing_zeros() as usize;
        }
        i += 16;
    }
    // Not reached: `m` is one of the row's values (or the row holds a NaN).
    n - 1
}
