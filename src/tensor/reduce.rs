//! Reductions over any set of dims (moved last, then reduced row by row in parallel), softmax and
//! log_softmax (scans: `scan.rs`; max, min and their arg forms: `extreme.rs`).

use candle_core::{Device, Storage, Tensor, WithDType};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use rayon::prelude::*;

use super::{cast, norm_dim, PyTensor};
use crate::dtype::{opt_dtype, DType};
use crate::error::{dtype_err, runtime_err, IntoPyResult};

/// Which dims a `dim=` argument names (None: all), normalised and de-duplicated.
pub(super) fn reduce_dims(dim: Option<&Bound<'_, PyAny>>, rank: usize) -> PyResult<Vec<usize>> {
    let raw: Vec<i64> = match dim.filter(|d| !d.is_none()) {
        None => return Ok((0..rank).collect()),
        Some(d) => match d.extract::<i64>() {
            Ok(i) => vec![i],
            Err(_) => d.extract()?,
        },
    };
    if raw.is_empty() {
        return Ok((0..rank).collect());
    }
    let mut out: Vec<usize> = Vec::new();
    for r in raw {
        let d = norm_dim(r, rank)?;
        if out.contains(&d) {
            return Err(runtime_err(format!("dim {d} appears multiple times in the list of dims")));
        }
        out.push(d);
    }
    if rank == 0 {
        // A 0-d tensor's dim 0 (or -1) is implicit, of size 1: there is nothing to reduce over.
        out.clear();
    }
    Ok(out)
}

/// Moves `dims` last, makes the tensor contiguous and applies `f` to every row of reduced elements.
/// Returns the kept-dims result (shape with or without the reduced dims as 1s).
pub(super) fn rows<T: WithDType, U: WithDType, F>(t: &Tensor, dims: &[usize], keepdim: bool, f: F) -> PyResult<Tensor>
where
    F: Fn(&[T]) -> U + Sync + Send,
{
    rows_batched(t, dims, keepdim, |data: &[T], row: usize, out: &mut [U]| {
        if row == 0 {
            out.iter_mut().for_each(|o| *o = f(&[]));
        } else {
            out.iter_mut().zip(data.chunks(row)).for_each(|(o, r)| *o = f(r));
        }
    })
}

/// `t` with `dims` moved last and made contiguous, the length of a reduced row, and the result's dims
/// (with or without the reduced dims as 1s).
fn reduced_last(t: &Tensor, dims: &[usize], keepdim: bool) -> PyResult<(Tensor, usize, Vec<usize>)> {
    super::meta::check_readable(t)?;
    let rank = t.rank();
    let orig = t.dims().to_vec();
    let kept: Vec<usize> = (0..rank).filter(|d| !dims.contains(d)).collect();
    let order: Vec<usize> = kept.iter().chain(dims.iter()).copied().collect();
    let t = if rank > 0 { t.permute(order).py()?.contiguous().py()? } else { t.contiguous().py()? };
    // A 0-d tensor reduces over its one implicit dim of size 1 (torch takes dim 0 or -1 there).
    let row: usize = dims.iter().map(|&d| orig.get(d).copied().unwrap_or(1)).product();
    let out_dims: Vec<usize> = if keepdim {
        (0..rank).map(|d| if dims.contains(&d) { 1 } else { orig[d] }).collect()
    } else {
        kept.iter().map(|&d| orig[d]).collect()
    };
    Ok((t, row, out_dims))
}

/// `rows` with `batch(rows' data, row length, their outputs)` called on runs of whole rows, for
/// kernels that are faster over many short rows in one (vectorised) call.
pub(super) fn rows_batched<T: WithDType, U: WithDType, B>(t: &Tensor, dims: &[usize], keepdim: bool, batch: B) -> PyResult<Tensor>
where
    B: Fn(&[T], usize, &mut [U]) + Sync + Send,
{
    super::layout::reduce_in_order(t, dims, keepdim, |t, dims, keepdim| rows_batched_rows(t, dims, keepdim, batch))
}

fn rows_batched_rows<T: WithDType, U: WithDType, B>(t: &Tensor, dims: &[usize], keepdim: bool, batch: B) -> PyResult<Tensor>
where
    B: Fn(&[T], usize, &mut [U]) + Sync + Send,
{
    let (t, row, out_dims) = reduced_last(t, dims, keepdim)?;
    let n_out: usize = out_dims.iter().product();
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return Err(runtime_err("reductions are not supported on this device yet"));
    };
    let data = cpu.as_slice::<T>().py()?;
    let data = &data[layout.start_offset()..layout.start_offset() + t.elem_count()];
    let mut out = vec![U::from_f64(0.0); n_out];
    let work = |out: &mut [U]| {
        if row > 0 && n_out * row >= super::kernels::PAR_THRESHOLD && n_out > 1 {
            let per = n_out.div_ceil(4 * crate::pool::threads()).max(1);
            crate::pool::chunks_mut(out, per, |i, o| batch(&data[i * per * row..(i * per + o.len()) * row], row, o));
        } else {
            batch(data, row, out);
        }
    };
    if n_out * row >= super::kernels::PAR_THRESHOLD {
        Python::attach(|py| py.detach(|| work(&mut out)));
    } else {
        work(&mut out);
    }
    drop(storage);
    Tensor::from_vec(out, out_dims, &Device::Cpu).py()
}

/// A reduction over a run of dims that are not last, `(A, R, B)` with B > 1, read in place from a
/// contiguous tensor: torch's "outer" reduction (a batch sum, mean pooling over tokens). Moving the dims
/// last would cost a transposing copy of the whole input (17x torch's time for `sum(0)`); here every
/// output column folds its R values at unit stride instead, in blocks of columns split over the pool.
pub(super) struct Outer<'a, T> {
    data: &'a [T],
    a: usize,
    pub(super) r: usize,
    b: usize,
    out_dims: Vec<usize>,
}

/// Columns per task of an outer reduction (one block of accumulators stays in L1).
const OUTER_COLS: usize = 512;

/// `Some` when `dims` are one run of consecutive dims before the last and `t` is contiguous.
pub(super) fn outer_view<'a, T: WithDType>(t: &Tensor, cpu: &'a candle_core::CpuStorage, dims: &[usize], keepdim: bool) -> PyResult<Option<Outer<'a, T>>> {
    let rank = t.rank();
    let (Some(&d0), Some(&d1)) = (dims.iter().min(), dims.iter().max()) else { return Ok(None) };
    if d1 + 1 >= rank || d1 - d0 + 1 != dims.len() || !t.layout().is_contiguous() {
        return Ok(None);
    }
    let dd = t.dims();
    let (a, r, b) = (dd[..d0].iter().product::<usize>(), dd[d0..=d1].iter().product::<usize>(), dd[d1 + 1..].iter().product::<usize>());
    if r == 0 || b <= 1 {
        return Ok(None);
    }
    let o = t.layout().start_offset();
    let data = &cpu.as_slice::<T>().py()?[o..o + t.elem_count()];
    let out_dims = (0..rank).filter_map(|d| if !dims.contains(&d) { Some(dd[d]) } else if keepdim { Some(1) } else { None }).collect();
    Ok(Some(Outer { data, a, r, b, out_dims }))
}

impl<T: WithDType> Outer<'_, T> {
    /// Runs `fold(column block of R rows (stride b), out block)` for every block, over the pool.
    pub(super) fn run<U: WithDType>(&self, fold: impl Fn(&[T], usize, &mut [U]) + Sync) -> PyResult<Tensor> {
        let (a, r, b) = (self.a, self.r, self.b);
        let mut out = super::kernels::uninit_vec::<U>(a * b);
        let blocks = b.div_ceil(OUTER_COLS);
        let op = crate::pool::SendPtr(out.as_mut_ptr());
        let task = |i: usize| {
            let (ai, bi) = (i / blocks, i % blocks);
            let (c0, c1) = (bi * OUTER_COLS, ((bi + 1) * OUTER_COLS).min(b));
            // SAFETY: each task writes its own columns c0..c1 of row ai.
            let o = unsafe { std::slice::from_raw_parts_mut(op.get().add(ai * b + c0), c1 - c0) };
            fold(&self.data[ai * r * b + c0..], b, o);
        };
        if a * r * b >= super::kernels::PAR_THRESHOLD {
            // Runs of blocks per task: a block of a short reduction is a microsecond of work.
            Python::attach(|py| py.detach(|| crate::pool::for_each_run(a * blocks, &|run| run.for_each(task))));
        } else {
            (0..a * blocks).for_each(task);
        }
        Tensor::from_vec(out, self.out_dims.clone(), &Device::Cpu).py()
    }
}

super::kernels::multiversion! {
    /// Column sums over `rows` rows `stride` apart (f64 accumulators), divided by `div`.
    fn sum_cols_f32<>(x: &[f32], stride: usize, rows: usize, out: &mut [f32], div: f64) where []
    {
        let n = out.len();
        if rows <= 8 {
            // A few rows: their f32 sum loses under an ulp or two, straight into the output.
            out.copy_from_slice(&x[..n]);
            for k in 1..rows {
                out.iter_mut().zip(&x[k * stride..k * stride + n]).for_each(|(s, &v)| *s += v);
            }
            if div != 1.0 {
                let d = div as f32;
                out.iter_mut().for_each(|s| *s /= d);
            }
            return;
        }
        let mut acc = [0f64; OUTER_COLS];
        let acc = &mut acc[..n];
        // Runs of up to 8 rows add in f32 (twice the lanes of f64, and 8 terms lose under an ulp or
        // two), each run's sum then folded into the f64 accumulators. A run adds 32 columns at a
        // time in registers: through a buffer in memory, each row cost a load and a store of it
        // beside the row's own load (1.5x torch's time for an NHWC sum(-1) on AVX2).
        const W: usize = 32;
        let nw = n / W * W;
        for k0 in (0..rows).step_by(8) {
            let k1 = (k0 + 8).min(rows);
            for c in (0..nw).step_by(W) {
                let mut part: [f32; W] = x[k0 * stride + c..][..W].try_into().unwrap_or([0.0; W]);
                for k in k0 + 1..k1 {
                    part.iter_mut().zip(&x[k * stride + c..][..W]).for_each(|(s, &v)| *s += v);
                }
                acc[c..c + W].iter_mut().zip(part).for_each(|(s, v)| *s += v as f64);
            }
            for c in nw..n {
                acc[c] += (k0..k1).map(|k| x[k * stride + c]).sum::<f32>() as f64;
            }
        }
        out.iter_mut().zip(acc.iter()).for_each(|(o, &s)| *o = (s / div) as f32);
    }
}

/// The device form of `rows`: `dims` moved last and flattened into one row per output, `f` reducing
/// a (outputs, row) tensor to (outputs, 1) with Candle ops; the result shaped as `rows` shapes it.
pub(super) fn rows_dev(t: &Tensor, dims: &[usize], keepdim: bool, f: impl FnOnce(&Tensor, usize) -> PyResult<Tensor>) -> PyResult<Tensor> {
    let (t, row, out_dims) = reduced_last(t, dims, keepdim)?;
    let n_out: usize = out_dims.iter().product();
    if n_out == 0 {
        return Tensor::zeros(out_dims, t.dtype(), t.device()).py(); // nothing to reduce into
    }
    let r = f(&t.reshape((n_out, row)).py()?, row)?;
    r.reshape(out_dims).py()
}

/// NaN where a row (of a (outputs, row) tensor) holds one, else `r` (outputs, 1): torch's max, min
/// and their kin propagate NaN; Candle's skip it.
pub(super) fn nan_rows(x: &Tensor, r: Tensor) -> PyResult<Tensor> {
    if !x.dtype().is_float() {
        return Ok(r);
    }
    let has = x.ne(x).py()?.max_keepdim(1).py()?;
    let nan = (r.zeros_like().py()? / r.zeros_like().py()?).py()?;
    has.where_cond(&nan, &r).py()
}

/// A constant (outputs, 1) tensor: reductions over empty rows, which Candle's kernels do not define.
fn filled(x: &Tensor, v: f64, dt: candle_core::DType) -> PyResult<Tensor> {
    Tensor::ones((x.dims()[0], 1), dt, x.device()).py()?.affine(v, 0.0).py()
}

/// Sum of an f32 row in blocks of f32 lanes (vectorised) folded into f64, for accuracy and speed.
/// Short rows (pooling heads, small dims) take 8 lanes and no 1024-element blocks around them.
#[inline(always)]
fn sum_f32(r: &[f32]) -> f64 {
    if r.len() < 64 {
        return lane_sum::<8>(r);
    }
    // A plain loop: through `map(..).sum()` the lane loop lands in a non-inlined `fold` compiled
    // without the caller's AVX2 (measured 1.7x slower).
    let mut total = 0f64;
    for block in r.chunks(1024) {
        // 64 lanes: 8 independent AVX2 accumulators, enough to hide the add latency.
        total += lane_sum::<64>(block);
    }
    total
}

/// Σ r in L f32 lanes plus the tail, folded into f64.
#[inline(always)]
fn lane_sum<const L: usize>(r: &[f32]) -> f64 {
    let mut acc = [0f32; L];
    let mut it = r.chunks_exact(L);
    for c in &mut it {
        for i in 0..L {
            acc[i] += c[i];
        }
    }
    // Lanes folded to 8 in f32 vector adds, then those 8 in f64.
    let mut eight = [0f32; 8];
    for c in acc.chunks_exact(8) {
        for i in 0..8 {
            eight[i] += c[i];
        }
    }
    // The remainder in 8 lanes too: summed one by one, up to 63 elements of a short row (a row of
    // 100 took 2.6x torch's time) were a chain of dependent scalar adds.
    let mut rest = it.remainder().chunks_exact(8);
    for c in &mut rest {
        for i in 0..8 {
            eight[i] += c[i];
        }
    }
    let tail: f32 = rest.remainder().iter().sum();
    // Pairwise in f64: three dependent adds instead of eight (short rows are mostly this fold).
    let e = eight.map(|x| x as f64);
    ((e[0] + e[4]) + (e[2] + e[6])) + ((e[1] + e[5]) + (e[3] + e[7])) + tail as f64
}

super::kernels::multiversion! {
    /// Row sums (divided by `div`: 1 for sum, the count for mean) of a run of rows, in one call
    /// per run so that short rows do not cost a call each.
    fn sum_rows_f32<>(data: &[f32], row: usize, out: &mut [f32], div: f64) where []
    {
        if row == 0 {
            out.iter_mut().for_each(|o| *o = (0.0 / div) as f32);
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if row < 64 && data.len() >= out.len() * row && crate::isa::level() == crate::isa::Level::Avx512 {
            // SAFETY: the CPU runs AVX-512F (the level checked); 0 < row < 64, and data holds a
            // whole row for every output.
            unsafe { short_rows_512(data, row, out, div) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if data.len() >= out.len() * row && crate::isa::level() == crate::isa::Level::Avx512 {
            for (o, r) in out.iter_mut().zip(data.chunks_exact(row)) {
                // SAFETY: the CPU runs AVX-512F (the level checked).
                *o = (r.chunks(1024).map(|b| unsafe { block_sum_512(b) }).sum::<f64>() / div) as f32;
            }
            return;
        }
        for (o, r) in out.iter_mut().zip(data.chunks(row)) {
            *o = (sum_f32(r) / div) as f32;
        }
    }
}

/// Σ b (at most 1024 values) on AVX-512: four 16-lane f32 accumulators over runs of 64, then
/// 16-lane steps and a masked tail, folded to 8 lanes and summed in f64 (as `lane_sum`: each lane
/// adds at most 16 terms in f32). `lane_sum::<64>` took a row of 64-128 values at 2x torch's time
/// (its 64-lane fold and f64 steps were the row's cost).
///
/// # Safety
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn block_sum_512(b: &[f32]) -> f64 {
    use std::arch::x86_64::*;
    let (p, n) = (b.as_ptr(), b.len());
    let mut a = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY: every load below reads b[i..i + 16] with i + 16 ≤ n, or the masked lanes below n.
    unsafe {
        while i + 64 <= n {
            for (j, acc) in a.iter_mut().enumerate() {
                *acc = _mm512_add_ps(*acc, _mm512_loadu_ps(p.add(i + 16 * j)));
            }
            i += 64;
        }
        let mut acc = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
        while i + 16 <= n {
            acc = _mm512_add_ps(acc, _mm512_loadu_ps(p.add(i)));
            i += 16;
        }
        acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(super::kernels::lanes16(n - i), p.add(i)));
        let eight = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(acc))));
        _mm512_reduce_add_pd(_mm512_cvtps_pd(eight))
    }
}

/// `sum_rows_f32` for rows shorter than 64 on AVX-512: a row is at most four 16-lane loads (the
/// last masked), added in f32, folded to 8 lanes and summed in f64. `lane_sum` took a row of 49 (a
/// 7x7 pooling head) in 8-lane steps and a scalar tail, about 30 cycles a row.
///
/// # Safety
/// AVX-512F; `0 < row < 64`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn short_rows_512(data: &[f32], row: usize, out: &mut [f32], div: f64) {
    use std::arch::x86_64::*;
    let (full, rest) = (row / 16, row % 16);
    let tail = super::kernels::lanes16(rest);
    for (o, r) in out.iter_mut().zip(data.chunks_exact(row)) {
        let p = r.as_ptr();
        let mut acc = _mm512_maskz_loadu_ps(tail, p.add(full * 16));
        for v in 0..full {
            acc = _mm512_add_ps(acc, _mm512_loadu_ps(p.add(16 * v)));
        }
        let eight = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(acc))));
        *o = (_mm512_reduce_add_pd(_mm512_cvtps_pd(eight)) / div) as f32;
    }
}

/// Sums (divided by `div`) of a contiguous-or-not f32 CPU tensor over `dims`: in place down the
/// columns when the dims are not last, else row by row.
fn sum_f32_over(src: &Tensor, dims: &[usize], keepdim: bool, div: f64) -> PyResult<Tensor> {
    super::layout::reduce_in_order(src, dims, keepdim, |src, dims, keepdim| sum_f32_rows(src, dims, keepdim, div))
}

fn sum_f32_rows(src: &Tensor, dims: &[usize], keepdim: bool, div: f64) -> PyResult<Tensor> {
    {
        let (storage, _) = src.storage_and_layout();
        if let Storage::Cpu(cpu) = &*storage {
            if let Some(v) = outer_view::<f32>(src, cpu, dims, keepdim)? {
                return v.run::<f32>(|x, stride, o| sum_cols_f32(x, stride, v.r, o, div));
            }
        }
    }
    rows_batched::<f32, f32, _>(src, dims, keepdim, |d, row, o| sum_rows_f32(d, row, o, div))
}

static RETURN_TYPES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A torch.return_types-style named tuple `(values, indices)`.
pub(crate) fn values_indices(py: Python<'_>, name: &str, values: PyTensor, indices: PyTensor) -> PyResult<Py<PyAny>> {
    let m = RETURN_TYPES.get_or_try_init(py, || -> PyResult<_> { Ok(py.import("candle_bind.return_types")?.into_any().unbind()) })?;
    Ok(m.bind(py).getattr(name)?.call1((Py::new(py, values)?, Py::new(py, indices)?))?.unbind())
}

impl PyTensor {
    fn float_input(&self, op: &str) -> PyResult<()> {
        if !self.dtype.is_float() {
            return Err(dtype_err(format!(
                "{op}(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                self.dtype.name()
            )));
        }
        Ok(())
    }

    fn sum_impl(&self, dims: &[usize], keepdim: bool, dtype: Option<DType>) -> PyResult<PyTensor> {
        let out_dt = dtype.unwrap_or(if self.dtype.is_float() { self.dtype } else { DType::I64 });
        if self.is_meta() {
            return self.meta_reduced(dims, keepdim, out_dt);
        }
        if !super::is_cpu(&self.t) {
            let work = if out_dt.is_float() { if out_dt == DType::F64 { DType::F64 } else { DType::F32 } } else { DType::I64 };
            let src = cast(&self.t, self.dtype, work)?;
            let r = rows_dev(&src, dims, keepdim, |x, row| if row == 0 { filled(x, 0.0, x.dtype()) } else { x.sum_keepdim(1).py() })?;
            return Ok(PyTensor::new(cast(&r, work, out_dt)?, out_dt));
        }
        if out_dt.is_float() {
            let src = cast(&self.t, self.dtype, if out_dt == DType::F64 { DType::F64 } else { DType::F32 })?;
            let r = if src.dtype() == candle_core::DType::F64 {
                rows::<f64, f64, _>(&src, dims, keepdim, |r| r.iter().sum())?
            } else {
                sum_f32_over(&src, dims, keepdim, 1.0)?
            };
            Ok(PyTensor::new(r.to_dtype(out_dt.candle()).py()?, out_dt))
        } else {
            let src = cast(&self.t, self.dtype, DType::I64)?;
            let r = rows::<i64, i64, _>(&src, dims, keepdim, |r| r.iter().fold(0i64, |a, &b| a.wrapping_add(b)))?;
            Ok(PyTensor::new(cast(&r, DType::I64, out_dt)?, out_dt))
        }
    }

    fn var_impl(&self, dim: Option<&Bound<'_, PyAny>>, correction: f64, keepdim: bool) -> PyResult<PyTensor> {
        self.float_input("var")?;
        let dims = reduce_dims(dim, self.rank())?;
        if !super::is_cpu(&self.t) {
            let work = if self.dtype == DType::F64 { DType::F64 } else { DType::F32 };
            let src = cast(&self.t, self.dtype, work)?;
            let r = rows_dev(&src, &dims, keepdim, |x, row| {
                let mean = (x.sum_keepdim(1).py()? / row as f64).py()?;
                let d = x.broadcast_sub(&mean).py()?;
                let ss = d.sqr().py()?.sum_keepdim(1).py()?;
                (ss / (row as f64 - correction).max(0.0)).py()
            })?;
            return Ok(self.same(cast(&r, work, self.dtype)?));
        }
        let src = cast(&self.t, self.dtype, DType::F64)?;
        let r = rows::<f64, f64, _>(&src, &dims, keepdim, |r| {
            let n = r.len() as f64;
            let mean = r.iter().sum::<f64>() / n;
            let ss: f64 = r.iter().map(|x| (x - mean) * (x - mean)).sum();
            ss / (n - correction).max(0.0)
        })?;
        Ok(self.same(r.to_dtype(self.dtype.candle()).py()?))
    }

    pub fn softmax_impl(&self, dim: i64, dtype: Option<DType>, log: bool) -> PyResult<PyTensor> {
        let dt = dtype.unwrap_or(self.dtype);
        if !dt.is_float() {
            return Err(dtype_err(format!("\"softmax_lastdim_kernel_impl\" not implemented for '{}'", dt.name())));
        }
        if self.rank() == 0 {
            let v = if log { 0.0 } else { 1.0 };
            return Ok(PyTensor::new(Tensor::full(v, (), self.t.device()).py()?.to_dtype(dt.candle()).py()?, dt));
        }
        let d = norm_dim(dim, self.rank())?;
        let last = self.rank() - 1;
        let src = cast(&self.t, self.dtype, dt)?;
        let moved = if d == last { src } else { src.transpose(d, last).py()? };
        let out = if !super::is_cpu(&moved) {
            let m = moved.contiguous().py()?;
            if m.elem_count() == 0 {
                return Ok(PyTensor::new(src_empty(&m, d, last)?, dt));
            }
            if log { candle_nn::ops::log_softmax(&m, last).py()? } else { candle_nn::ops::softmax_last_dim(&m).py()? }
        } else {
            let w = if dt == DType::F64 { moved } else { super::convert(&moved, candle_core::DType::F32)? };
            let w = w.contiguous().py()?;
            let numel = w.elem_count();
            let r = if numel >= super::kernels::PAR_THRESHOLD {
                Python::attach(|py| py.detach(|| softmax_rows(&w, log)))?
            } else {
                softmax_rows(&w, log)?
            };
            r.to_dtype(dt.candle()).py()?
        };
        let out = if d == last { out } else { out.transpose(d, last).py()?.contiguous().py()? };
        Ok(PyTensor::new(out, dt))
    }
}

/// An empty result of softmax: the empty input moved back from its transposition.
fn src_empty(m: &Tensor, d: usize, last: usize) -> PyResult<Tensor> {
    if d == last { Ok(m.clone()) } else { m.transpose(d, last).py()?.contiguous().py() }
}

/// Softmax (or log-softmax) of every last-dim row of a contiguous f32/f64 CPU tensor.
fn softmax_rows(t: &Tensor, log: bool) -> PyResult<Tensor> {
    let n = t.dims()[t.rank() - 1];
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
    let o = layout.start_offset();
    let out = match t.dtype() {
        candle_core::DType::F32 => {
            let src = &cpu.as_slice::<f32>().py()?[o..o + t.elem_count()];
            let mut dst = super::kernels::uninit_vec::<f32>(src.len());
            if n > 0 {
                let per = (src.len() / n).div_ceil(4 * crate::pool::threads()).max(1);
                crate::pool::chunks_mut(&mut dst, per * n, |i, d| {
                    let s = &src[i * per * n..];
                    softmax_rows_f32(&s[..d.len()], d, n, log)
                });
            }
            Tensor::from_vec(dst, t.dims(), &Device::Cpu)
        }
        _ => {
            let src = &cpu.as_slice::<f64>().py()?[o..o + t.elem_count()];
            let mut dst = super::kernels::uninit_vec::<f64>(src.len());
            if n > 0 {
                src.par_chunks(n).zip(dst.par_chunks_mut(n)).for_each(|(s, d)| {
                    let m = s.iter().fold(f64::NEG_INFINITY, |a, &b| if b > a || b.is_nan() { b } else { a });
                    let m = if m.is_infinite() { 0.0 } else { m };
                    let mut sum = 0.0;
                    for (x, y) in s.iter().zip(d.iter_mut()) {
                        *y = (x - m).exp();
                        sum += *y;
                    }
                    if log {
                        let ls = sum.ln();
                        s.iter().zip(d.iter_mut()).for_each(|(x, y)| *y = x - m - ls);
                    } else {
                        d.iter_mut().for_each(|y| *y /= sum);
                    }
                });
            }
            Tensor::from_vec(dst, t.dims(), &Device::Cpu)
        }
    };
    drop(storage);
    out.py()
}

/// exp of a score minus the row maximum, 0 below e^-87 (the smallest normal f32): masked (-inf)
/// and far-off scores would otherwise make subnormal products, which x86 cores run ~100x slower
/// (a padded attention mask made SDPA 1.6x torch's time). NaN stays NaN.
#[inline(always)]
fn exp_below_max(v: f32) -> f32 {
    // v ≤ 0 and results under e^-87 are flushed to 0: the one-step exp covers the rest.
    let e = super::kernels::exp_beside_one(v);
    if v < -87.0 { 0.0 } else { e }
}

super::kernels::multiversion! {
    /// One softmax row (attention's), compiled per instruction set.
    pub(crate) fn softmax_row_f32<>(s: &[f32], d: &mut [f32], log: bool) where []
    {
        softmax_row(s, d, log)
    }
}

super::kernels::multiversion! {
    /// Softmax of every row of length n in a run of rows: one call per run, not one per row.
    fn softmax_rows_f32<>(s: &[f32], d: &mut [f32], n: usize, log: bool) where []
    {
        for (d, s) in d.chunks_mut(n).zip(s.chunks(n)) {
            softmax_row(s, d, log);
        }
    }
}

/// The 16 lanes folded in halves (8, 4, 2, 1): four vector steps where a fold lane by lane is a
/// chain of 16 dependent ones (a quarter of a 128-wide attention row's time).
#[inline(always)]
fn halves(v: [f32; 16], f: impl Fn(f32, f32) -> f32) -> f32 {
    let v: [f32; 8] = std::array::from_fn(|l| f(v[l], v[l + 8]));
    let v: [f32; 4] = std::array::from_fn(|l| f(v[l], v[l + 4]));
    f(f(v[0], v[2]), f(v[1], v[3]))
}

/// One softmax row: max, exp and sum in 16 independent lanes so LLVM vectorises all three.
#[inline(always)]
fn softmax_row(s: &[f32], d: &mut [f32], log: bool) {
    const L: usize = 16;
    let (cs, rest) = (s.chunks_exact(L), s.len() / L * L);
    let mut lanes = [f32::NEG_INFINITY; L];
    for c in cs {
        for l in 0..L {
            lanes[l] = if c[l] > lanes[l] { c[l] } else { lanes[l] };
        }
    }
    // NaNs are skipped here and reach every output through the sum, as in torch.
    let m = s[rest..].iter().fold(halves(lanes, |a, b| if b > a { b } else { a }), |a, &b| if b > a { b } else { a });
    // A row of -inf stays NaN as in torch; an all -inf max must not turn finite rows into NaN.
    let m = if m == f32::NEG_INFINITY { 0.0 } else { m };
    let mut acc = [0f32; L];
    for (c, o) in s.chunks_exact(L).zip(d.chunks_exact_mut(L)) {
        for l in 0..L {
            let e = exp_below_max(c[l] - m);
            o[l] = e;
            acc[l] += e;
        }
    }
    let mut sum = 0f32;
    for (x, o) in s[rest..].iter().zip(d[rest..].iter_mut()) {
        *o = exp_below_max(x - m);
        sum += *o;
    }
    let sum = sum + halves(acc, |a, b| a + b);
    if log {
        let shift = m + sum.ln();
        s.iter().zip(d.iter_mut()).for_each(|(x, y)| *y = x - shift);
    } else {
        let inv = 1.0 / sum;
        d.iter_mut().for_each(|y| *y *= inv);
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None, keepdims=None))]
    fn sum(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let dims = reduce_dims(dim, self.rank())?;
        self.sum_impl(&dims, keepdim, opt_dtype(dtype)?)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None, keepdims=None))]
    fn nansum(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let x = if self.dtype.is_float() { self.nan_to_num_zero()? } else { self.same(self.t.clone()) };
        x.sum(dim, keepdim, dtype, None, None)
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None, keepdims=None))]
    fn mean(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let dt = opt_dtype(dtype)?.unwrap_or(self.dtype);
        if !dt.is_float() {
            return Err(crate::error::not_implemented_err(format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                self.dtype.title()
            )));
        }
        let dims = reduce_dims(dim, self.rank())?;
        if self.is_meta() {
            return self.meta_reduced(&dims, keepdim, dt);
        }
        let n: usize = dims.iter().map(|&d| self.dims()[d]).product();
        let src = cast(&self.t, self.dtype, if dt == DType::F64 { DType::F64 } else { DType::F32 })?;
        if !super::is_cpu(&src) {
            let r = rows_dev(&src, &dims, keepdim, |x, row| {
                if row == 0 { filled(x, f64::NAN, x.dtype()) } else { (x.sum_keepdim(1).py()? / row as f64).py() }
            })?;
            return Ok(PyTensor::new(cast(&r, DType::from_candle(src.dtype())?, dt)?, dt));
        }
        let r = if src.dtype() == candle_core::DType::F64 {
            rows::<f64, f64, _>(&src, &dims, keepdim, move |r| r.iter().sum::<f64>() / n as f64)?
        } else {
            sum_f32_over(&src, &dims, keepdim, n as f64)?
        };
        Ok(PyTensor::new(r.to_dtype(dt.candle()).py()?, dt))
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, dtype=None, axis=None, keepdims=None))]
    fn prod(&self, dim: Option<i64>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>, axis: Option<i64>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let out_dt = opt_dtype(dtype)?.unwrap_or(if self.dtype.is_float() { self.dtype } else { DType::I64 });
        let dims = match dim { None => (0..self.rank()).collect(), Some(d) => vec![norm_dim(d, self.rank())?] };
        if !super::is_cpu(&self.t) {
            // No product reduction among Candle's kernels: computed on the host.
            let r = crate::device::via_host(&[&self.t], |h| {
                let x = self.same(h[0].clone());
                Ok(x.prod(dim, keepdim, None, None, None)?.t)
            })?;
            let from = if self.dtype.is_float() { self.dtype } else { DType::I64 };
            return Ok(PyTensor::new(cast(&r, from, out_dt)?, out_dt));
        }
        let r = if out_dt.is_float() {
            let src = cast(&self.t, self.dtype, DType::F64)?;
            rows::<f64, f64, _>(&src, &dims, keepdim, |r| r.iter().product())?
        } else {
            let src = cast(&self.t, self.dtype, DType::I64)?;
            rows::<i64, i64, _>(&src, &dims, keepdim, |r| r.iter().fold(1i64, |a, &b| a.wrapping_mul(b)))?
        };
        let from = if out_dt.is_float() { DType::F64 } else { DType::I64 };
        Ok(PyTensor::new(cast(&r, from, out_dt)?, out_dt))
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None, axis=None, keepdims=None))]
    fn var(&self, dim: Option<&Bound<'_, PyAny>>, unbiased: Option<bool>, keepdim: bool, correction: Option<f64>, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let (dim, unbiased) = bool_as_unbiased(dim, unbiased);
        self.var_impl(dim.as_ref(), correction.unwrap_or(if unbiased.unwrap_or(true) { 1.0 } else { 0.0 }), keepdim)
    }
    #[pyo3(signature = (dim=None, unbiased=None, keepdim=false, *, correction=None, axis=None, keepdims=None))]
    fn std(&self, dim: Option<&Bound<'_, PyAny>>, unbiased: Option<bool>, keepdim: bool, correction: Option<f64>, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let v = self.var(dim, unbiased, keepdim, correction, None, None)?;
        v.sqrt()
    }
    /// norm(p=2, dim=None, keepdim=False): p-norms incl. inf, -inf, 0 and 'fro'.
    #[pyo3(signature = (p=None, dim=None, keepdim=false, dtype=None))]
    fn norm(&self, p: Option<&Bound<'_, PyAny>>, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dt = opt_dtype(dtype)?.unwrap_or(self.dtype);
        if !dt.is_float() {
            return Err(dtype_err(format!("linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}", self.dtype.title())));
        }
        let p: f64 = match p.filter(|p| !p.is_none()) {
            None => 2.0,
            Some(v) => match v.extract::<String>() {
                Ok(s) if s == "fro" => 2.0,
                Ok(s) => return Err(runtime_err(format!("norm: unsupported p '{s}'"))),
                Err(_) => v.extract::<f64>()?,
            },
        };
        let dims = reduce_dims(dim, self.rank())?;
        if !super::is_cpu(&self.t) {
            let work = if dt == DType::F64 { DType::F64 } else { DType::F32 };
            let src = cast(&self.t, self.dtype, work)?;
            let r = rows_dev(&src, &dims, keepdim, |x, row| {
                let a = x.abs().py()?;
                if row == 0 {
                    return filled(x, if p == f64::NEG_INFINITY { f64::INFINITY } else { 0.0 }, x.dtype());
                }
                let r = if p == f64::INFINITY {
                    a.max_keepdim(1).py()?
                } else if p == f64::NEG_INFINITY {
                    a.min_keepdim(1).py()?
                } else if p == 0.0 {
                    a.ne(&a.zeros_like().py()?).py()?.to_dtype(a.dtype()).py()?.sum_keepdim(1).py()?
                } else if p == 2.0 {
                    a.sqr().py()?.sum_keepdim(1).py()?.sqrt().py()?
                } else if p == 1.0 {
                    a.sum_keepdim(1).py()?
                } else {
                    a.powf(p).py()?.sum_keepdim(1).py()?.powf(1.0 / p).py()?
                };
                nan_rows(x, r)
            })?;
            return Ok(PyTensor::new(cast(&r, work, dt)?, dt));
        }
        let src = cast(&self.t, self.dtype, DType::F64)?;
        let r = rows::<f64, f64, _>(&src, &dims, keepdim, move |r| {
            if p == f64::INFINITY {
                r.iter().fold(0.0, |a: f64, b| a.max(b.abs()))
            } else if p == f64::NEG_INFINITY {
                r.iter().fold(f64::INFINITY, |a: f64, b| a.min(b.abs()))
            } else if p == 0.0 {
                r.iter().filter(|x| **x != 0.0).count() as f64
            } else if p == 2.0 {
                r.iter().map(|x| x * x).sum::<f64>().sqrt()
            } else if p == 1.0 {
                r.iter().map(|x| x.abs()).sum()
            } else {
                r.iter().map(|x| x.abs().powf(p)).sum::<f64>().powf(1.0 / p)
            }
        })?;
        Ok(PyTensor::new(r.to_dtype(dt.candle()).py()?, dt))
    }
    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(&self, dim: &Bound<'_, PyAny>, keepdim: bool) -> PyResult<PyTensor> {
        let dt = if self.dtype.is_float() { self.dtype } else { DType::F32 };
        let dims = reduce_dims(Some(dim), self.rank())?;
        if !super::is_cpu(&self.t) {
            let work = if dt == DType::F64 { DType::F64 } else { DType::F32 };
            let src = cast(&self.t, self.dtype, work)?;
            let r = rows_dev(&src, &dims, keepdim, |x, row| {
                if row == 0 {
                    return filled(x, f64::NEG_INFINITY, x.dtype());
                }
                let m = x.max_keepdim(1).py()?;
                // Rows whose max is infinite give that max (a row of -inf gives -inf, not NaN).
                let finite = (&m - &m).py()?.eq(&m.zeros_like().py()?).py()?;
                let shift = finite.where_cond(&m, &m.zeros_like().py()?).py()?;
                let lse = (x.broadcast_sub(&shift).py()?.exp().py()?.sum_keepdim(1).py()?.log().py()? + &shift).py()?;
                finite.where_cond(&lse, &m).py()
            })?;
            return Ok(PyTensor::new(cast(&r, work, dt)?, dt));
        }
        let src = cast(&self.t, self.dtype, DType::F64)?;
        let r = rows::<f64, f64, _>(&src, &dims, keepdim, |r| {
            let m = r.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            if m.is_infinite() {
                return m;
            }
            m + r.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
        })?;
        Ok(PyTensor::new(r.to_dtype(dt.candle()).py()?, dt))
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn all(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let b = cast(&self.t, self.dtype, DType::Bool)?;
        if !super::is_cpu(&b) {
            let r = rows_dev(&b, &reduce_dims(dim, self.rank())?, keepdim, |x, row| {
                if row == 0 { filled(x, 1.0, x.dtype()) } else { x.min_keepdim(1).py() }
            })?;
            return Ok(PyTensor::boolean(r));
        }
        let r = rows::<u8, u8, _>(&b, &reduce_dims(dim, self.rank())?, keepdim, |r| r.iter().all(|&x| x != 0) as u8)?;
        Ok(PyTensor::boolean(r))
    }
    #[pyo3(signature = (dim=None, keepdim=false, *, axis=None, keepdims=None))]
    fn any(&self, dim: Option<&Bound<'_, PyAny>>, keepdim: bool, axis: Option<&Bound<'_, PyAny>>, keepdims: Option<bool>) -> PyResult<PyTensor> {
        let (dim, keepdim) = (dim.or(axis), keepdim || keepdims.unwrap_or(false));
        let b = cast(&self.t, self.dtype, DType::Bool)?;
        if !super::is_cpu(&b) {
            let r = rows_dev(&b, &reduce_dims(dim, self.rank())?, keepdim, |x, row| {
                if row == 0 { filled(x, 0.0, x.dtype()) } else { x.max_keepdim(1).py() }
            })?;
            return Ok(PyTensor::boolean(r));
        }
        let r = rows::<u8, u8, _>(&b, &reduce_dims(dim, self.rank())?, keepdim, |r| r.iter().any(|&x| x != 0) as u8)?;
        Ok(PyTensor::boolean(r))
    }
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumsum(&self, dim: i64, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        self.scan(dim, opt_dtype(dtype)?, false)
    }
    #[pyo3(signature = (dim, *, dtype=None))]
    fn cumprod(&self, dim: i64, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        self.scan(dim, opt_dtype(dtype)?, true)
    }
    #[pyo3(signature = (dim, dtype=None))]
    fn softmax(&self, dim: i64, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        self.softmax_impl(dim, opt_dtype(dtype)?, false)
    }
    #[pyo3(signature = (dim, dtype=None))]
    fn log_softmax(&self, dim: i64, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        self.softmax_impl(dim, opt_dtype(dtype)?, true)
    }
    fn count_nonzero(&self) -> PyResult<PyTensor> {
        let b = cast(&self.t, self.dtype, DType::Bool)?;
        if !super::is_cpu(&b) {
            let r = b.to_dtype(candle_core::DType::I64).py()?.sum_all().py()?;
            return Ok(PyTensor::new(r, DType::I64));
        }
        let r = rows::<u8, i64, _>(&b, &(0..self.rank()).collect::<Vec<_>>(), false, |r| r.iter().filter(|&&x| x != 0).count() as i64)?;
        Ok(PyTensor::new(r, DType::I64))
    }
}

impl PyTensor {
    fn nan_to_num_zero(&self) -> PyResult<PyTensor> {
        let zero = Tensor::zeros((), self.dtype.candle(), self.t.device()).py()?.broadcast_as(self.dims()).py()?;
        let isnan = self.t.ne(&self.t).py()?;
        Ok(self.same(isnan.where_cond(&zero, &self.t).py()?))
    }

}

/// torch accepts `x.var(True)` (unbiased as the first positional argument).
fn bool_as_unbiased<'py>(dim: Option<&Bound<'py, PyAny>>, unbiased: Option<bool>) -> (Option<Bound<'py, PyAny>>, Option<bool>) {
    match dim {
        Some(d) if d.is_instance_of::<pyo3::types::PyBool>() => (None, Some(d.is_truthy().unwrap_or(true))),
        Some(d) => (Some(d.clone()), unbiased),
        None => (None, unbiased),
    }
}

