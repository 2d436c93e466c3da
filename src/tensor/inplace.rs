//! Writes into a tensor's memory: the primitive behind `x[i] = v`, `add_`, `fill_`, `+=`, ...
//!
//! Candle views (narrow, transpose, reshape of contiguous data, expand) share their storage, so a write
//! through one is seen by its base and every other view, as in torch. Results of Candle ops that
//! torch would copy are always fresh storage. Writing to a tensor where several elements share one
//! memory location (an `expand`ed one) raises torch's error instead.

use candle_core::{CpuStorage, Layout, Tensor, WithDType};
use pyo3::prelude::*;

use super::{cast, with_dtype, Operand, PyTensor, Scalar};
use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};

/// The elements of a CPU storage as a mutable slice of `T` (checked against the storage's dtype).
pub fn slice_mut<T: WithDType>(s: &mut CpuStorage) -> PyResult<&mut [T]> {
    macro_rules! arm {
        ($v:expr, $dt:ident) => {{
            if T::DTYPE != candle_core::DType::$dt {
                return Err(runtime_err(format!("storage holds {:?}, not {:?}", candle_core::DType::$dt, T::DTYPE)));
            }
            // SAFETY: the element type is the one checked just above.
            unsafe { std::slice::from_raw_parts_mut($v.as_mut_ptr() as *mut T, $v.len()) }
        }};
    }
    Ok(match s {
        CpuStorage::U8(v) => arm!(v, U8),
        CpuStorage::I16(v) => arm!(v, I16),
        CpuStorage::I32(v) => arm!(v, I32),
        CpuStorage::I64(v) => arm!(v, I64),
        CpuStorage::F16(v) => arm!(v, F16),
        CpuStorage::BF16(v) => arm!(v, BF16),
        CpuStorage::F32(v) => arm!(v, F32),
        CpuStorage::F64(v) => arm!(v, F64),
        _ => return Err(runtime_err("unsupported storage dtype")),
    })
}

/// Runs `f` on the storage behind `t` (mutably) with `t`'s layout, under Candle's write lock.
/// Writes into a meta tensor are dropped, as torch drops them (there is no data).
///
/// A write never waits in the lock's queue: while another thread holds the storage (a kernel
/// reading it with the GIL released), it retries with the GIL released (`retrying`). Callers that
/// read another storage while they write go through `retrying` themselves, dropping that read
/// guard between tries, so two writers reading each other's storage cannot hold each other off.
pub fn with_storage_mut<R: Default>(t: &Tensor, f: impl FnOnce(&mut CpuStorage, &Layout) -> PyResult<R>) -> PyResult<R> {
    let mut f = Some(f);
    retrying(|| match f.take() {
        Some(g) => try_with_storage_mut(t, g).map(|r| r.map_err(|g| f = Some(g)).ok()),
        None => Err(runtime_err("in-place write did not run")),
    })
}

/// One try of `with_storage_mut`: `Ok(Err(f))`, handing `f` back unrun, while the storage is locked.
pub fn try_with_storage_mut<R: Default, F: FnOnce(&mut CpuStorage, &Layout) -> PyResult<R>>(t: &Tensor, f: F) -> PyResult<Result<R, F>> {
    struct Op<F, R> {
        f: std::cell::RefCell<Option<F>>,
        out: std::cell::RefCell<Option<PyResult<R>>>,
    }
    impl<R, F: FnOnce(&mut CpuStorage, &Layout) -> PyResult<R>> candle_core::InplaceOp1 for Op<F, R> {
        fn name(&self) -> &'static str {
            "write"
        }
        fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> candle_core::Result<()> {
            if let Some(f) = self.f.borrow_mut().take() {
                *self.out.borrow_mut() = Some(f(s, l));
            }
            Ok(())
        }
    }
    if !t.device().is_cpu() {
        return Err(runtime_err("in-place writes are implemented for CPU tensors only so far"));
    }
    if super::meta::is_meta(t) {
        return Ok(Ok(R::default()));
    }
    let op = Op { f: std::cell::RefCell::new(Some(f)), out: std::cell::RefCell::new(None) };
    if !t.try_inplace_op1(&op).py()? {
        return op.f.into_inner().map(Err).ok_or_else(|| runtime_err("in-place write did not run"));
    }
    op.out.into_inner().unwrap_or_else(|| Err(runtime_err("in-place write did not run"))).map(Ok)
}

/// Runs `attempt` until it gives `Some`; between tries the GIL is released (the holder of the
/// storage may need it to finish), first with a yield, then with sleeps growing to 1 ms.
pub fn retrying<R>(mut attempt: impl FnMut() -> PyResult<Option<R>>) -> PyResult<R> {
    for tries in 0u32.. {
        if let Some(r) = attempt()? {
            return Ok(r);
        }
        Python::attach(|py| {
            py.detach(|| match tries {
                0..16 => std::thread::yield_now(),
                _ => std::thread::sleep(std::time::Duration::from_micros(64 << (tries - 16).min(4))),
            })
        });
    }
    Err(runtime_err("in-place write did not run"))
}

/// torch's check before writing through a layout: no two elements may share a memory location.
pub fn check_writable(dims: &[usize], strides: &[usize]) -> PyResult<()> {
    // An empty tensor has no elements to share (its contiguous strides can be 0).
    if !dims.contains(&0) && dims.iter().zip(strides).any(|(&d, &s)| d > 1 && s == 0) {
        return Err(runtime_err(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. \
             Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

/// Calls `f(offset)` for every element of a strided view, in row-major order. Dims without a stride
/// (an index of rank 1 over a 0-d tensor) step by 0.
pub fn for_each_offset(dims: &[usize], strides: &[usize], base: usize, mut f: impl FnMut(usize)) {
    if dims.contains(&0) {
        return;
    }
    let n = dims.len();
    if strides.len() < n {
        let mut padded = strides.to_vec();
        padded.resize(n, 0);
        return for_each_offset(dims, &padded, base, f);
    }
    if n == 0 {
        return f(base);
    }
    let (inner, si) = (dims[n - 1], strides[n - 1]);
    let mut idx = vec![0usize; n];
    let mut off = base;
    loop {
        for j in 0..inner {
            f(off + j * si);
        }
        // Odometer over the outer dims.
        let mut d = n - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            off += strides[d];
            if idx[d] < dims[d] {
                break;
            }
            off -= strides[d] * dims[d];
            idx[d] = 0;
        }
    }
}

/// The values of `src` broadcast to `dims` and cast to `dtype`, as a contiguous CPU tensor.
pub fn values_for(src: Operand<'_>, dims: &[usize], dtype: DType) -> PyResult<Tensor> {
    let t = match src {
        Operand::S(s) => s.tensor(dtype, &candle_core::Device::Cpu)?,
        Operand::T(t) => {
            super::broadcast_dims(dims, t.dims()).and_then(|b| {
                if b.as_slice() == dims {
                    Ok(())
                } else {
                    Err(crate::error::shape_err(format!(
                        "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}",
                        t.dims(),
                        dims
                    )))
                }
            })?;
            cast(&t.t, t.dtype, dtype)?
        }
    };
    t.broadcast_as(dims).py()?.contiguous().py()
}

/// Where a write goes in a tensor's storage.
pub enum Dest<'a> {
    /// A strided view: dims, strides, storage offset of its first element.
    Strided(&'a [usize], &'a [usize], usize),
    /// Explicit storage offsets, one per value, row-major.
    At(&'a [usize]),
    /// The elements of a contiguous run starting at the offset where the mask is set (one value).
    Masked(usize, &'a [u8]),
}

/// Writes `values` (row-major, `dst`'s dtype; one value broadcasts) to `dest` inside `dst`'s storage.
pub fn write(dst: &Tensor, dest: Dest<'_>, values: &Tensor) -> PyResult<()> {
    if !dst.device().is_cpu() {
        return write_device(dst, dest, values);
    }
    let values = &values.to_device(dst.device()).py()?;
    let v = values.flatten_all().py()?.contiguous().py()?;
    with_dtype!(dst.dtype(), T => {
        if v.device().is_cpu() && storage_addr(&v) != storage_addr(dst) {
            // Distinct storages: read the values in place while the destination is locked for writing.
            return retrying(|| {
                let (sv, lv) = v.storage_and_layout();
                let candle_core::Storage::Cpu(cv) = &*sv else { return Err(runtime_err("expected a CPU tensor")) };
                let vals = &cv.as_slice::<T>().py()?[lv.start_offset()..lv.start_offset() + v.elem_count()];
                Ok(try_with_storage_mut(dst, |s, _| Ok(put(slice_mut::<T>(s)?, vals, &dest)))?.ok())
            });
        }
        // The values live in the storage we are about to lock for writing: copy them out first.
        let vals: Vec<T> = v.to_vec1::<T>().py()?;
        with_storage_mut(dst, |s, _| Ok(put(slice_mut::<T>(s)?, &vals, &dest)))
    })
}

/// `write` into a tensor on another device: candle_bind's CUDA write kernels.
#[cfg(feature = "cuda")]
fn write_device(dst: &Tensor, dest: Dest<'_>, values: &Tensor) -> PyResult<()> {
    use crate::cuda::Target;
    let values = values.to_device(dst.device()).py()?.to_dtype(dst.dtype()).py()?;
    // The values are read before the write begins: a copy when they share dst's storage.
    let values = if values.same_storage(dst) { values.copy().py()? } else { values };
    match dest {
        Dest::At(offsets) => crate::cuda::write(dst, Target::At(offsets), &values),
        Dest::Strided(dims, strides, base) => crate::cuda::write(dst, Target::Strided { dims, strides, base }, &values),
        Dest::Masked(base, mask) => {
            let offsets: Vec<usize> = mask.iter().enumerate().filter(|(_, &m)| m != 0).map(|(i, _)| base + i).collect();
            crate::cuda::write(dst, Target::At(&offsets), &values)
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn write_device(_dst: &Tensor, _dest: Dest<'_>, _values: &Tensor) -> PyResult<()> {
    Err(runtime_err("in-place writes need the tensor's device kernels (a CUDA build)"))
}

fn put<T: Copy + Send + Sync>(data: &mut [T], vals: &[T], dest: &Dest<'_>) {
    match *dest {
        Dest::At(offsets) if vals.len() == 1 => offsets.iter().for_each(|&o| data[o] = vals[0]),
        Dest::At(offsets) => offsets.iter().zip(vals).for_each(|(&o, &x)| data[o] = x),
        Dest::Strided(dims, strides, base) => write_strided(data, dims, strides, base, vals),
        Dest::Masked(base, mask) => {
            // A select rather than a branch: the loop vectorises whatever the mask looks like.
            let v = vals[0];
            for (d, &m) in data[base..base + mask.len()].iter_mut().zip(mask) {
                *d = if m != 0 { v } else { *d };
            }
        }
    }
}

/// The address of a CPU tensor's storage buffer (tells whether two tensors share memory).
pub(super) fn storage_addr(t: &Tensor) -> usize {
    let (s, _) = t.storage_and_layout();
    match &*s {
        candle_core::Storage::Cpu(c) => with_dtype!(t.dtype(), T => Ok::<usize, PyErr>(c.as_slice::<T>().map_or(0, |x| x.as_ptr() as usize))).unwrap_or(0),
        _ => 0,
    }
}

/// Copies row-major `vals` (or broadcasts a single value) into a strided view of `data`.
/// `write_strided` over the pool: one contiguous run split in chunks, or the view's rows in runs.
/// The caller checked that every offset is inside `data` and that no stride is 0 (no two elements
/// share memory, so tasks never write the same place).
fn write_strided_par<T: Copy + Send + Sync>(data: &mut [T], outer: &[usize], os: &[usize], (base, inner, si): (usize, usize, usize), vals: &[T], threads: usize) {
    let value = |k: usize| if vals.len() == 1 { vals[0] } else { vals[k] };
    let rows: usize = outer.iter().product();
    if rows == 1 && si == 1 {
        let chunk = inner.div_ceil(4 * threads).max(4096);
        return crate::pool::chunks_mut(&mut data[base..base + inner], chunk, |c, d| match vals.len() {
            1 => super::kernels::fill_chunk(d, vals[0]),
            _ => d.copy_from_slice(&vals[c * chunk..c * chunk + d.len()]),
        });
    }
    let ptr = crate::pool::SendPtr(data.as_mut_ptr());
    crate::pool::for_each_run(rows, &|run| {
        for r in run {
            let (mut rem, mut o) = (r, base);
            for (&d, &s) in outer.iter().zip(os).rev() {
                o += (rem % d) * s;
                rem /= d;
            }
            if si == 1 {
                // SAFETY: o..o + inner ends at most at the view's extent, inside data (checked by
                // the caller), and no other row reaches it.
                let row = unsafe { std::slice::from_raw_parts_mut(ptr.get().add(o), inner) };
                match vals.len() {
                    1 => super::kernels::fill_chunk(row, vals[0]),
                    _ => row.copy_from_slice(&vals[r * inner..(r + 1) * inner]),
                }
                continue;
            }
            for j in 0..inner {
                // SAFETY: as above, for o + j·si.
                unsafe { *ptr.get().add(o + j * si) = value(r * inner + j) };
            }
        }
    });
}

fn write_strided<T: Copy + Send + Sync>(data: &mut [T], dims: &[usize], strides: &[usize], base: usize, vals: &[T]) {
    let n: usize = dims.iter().product();
    if n == 0 {
        return;
    }
    // Merge dims the view walks contiguously, so most writes become slice copies.
    let (mut cd, mut cs): (Vec<usize>, Vec<usize>) = (vec![], vec![]);
    for (&d, &s) in dims.iter().zip(strides) {
        if d == 1 {
            continue;
        }
        match (cd.last_mut(), cs.last_mut()) {
            (Some(ld), Some(ls)) if *ls == s * d => {
                *ld *= d;
                *ls = s;
            }
            _ => {
                cd.push(d);
                cs.push(s);
            }
        }
    }
    if cd.is_empty() {
        cd.push(1);
        cs.push(1);
    }
    let (inner, si) = (cd[cd.len() - 1], cs[cs.len() - 1]);
    let outer = &cd[..cd.len() - 1];
    let threads = crate::pool::threads();
    // The last element the view reaches, to check once that every write below lands in `data`.
    let extent = base + cd.iter().zip(&cs).map(|(&d, &s)| (d - 1) * s).sum::<usize>();
    if n >= super::kernels::PAR_THRESHOLD && threads > 1 && extent < data.len() && !cs.contains(&0) {
        return write_strided_par(data, outer, &cs[..cs.len() - 1], (base, inner, si), vals, threads);
    }
    let mut k = 0;
    for_each_offset(outer, &cs[..cs.len() - 1], base, |o| {
        let row = if vals.len() == 1 { None } else { Some(&vals[k..k + inner]) };
        match (row, si) {
            (Some(r), 1) => data[o..o + inner].copy_from_slice(r),
            (Some(r), _) => r.iter().enumerate().for_each(|(j, &x)| data[o + j * si] = x),
            (None, 1) => super::kernels::fill_chunk(&mut data[o..o + inner], vals[0]),
            (None, _) => (0..inner).for_each(|j| data[o + j * si] = vals[0]),
        }
        k += inner;
    });
}

impl PyTensor {
    /// `self[...] = src` over the whole tensor: broadcast, cast to our dtype, written in place.
    pub fn assign(&self, src: Operand<'_>) -> PyResult<()> {
        if self.is_meta() {
            return Ok(());
        }
        let l = self.t.layout();
        check_writable(l.dims(), l.stride())?;
        let values = match src {
            Operand::S(s) => s.tensor(self.dtype, &candle_core::Device::Cpu)?,
            _ => values_for(src, self.dims(), self.dtype)?,
        };
        write(&self.t, Dest::Strided(l.dims(), l.stride(), l.start_offset()), &values)
    }

    /// Writes an op's result into `self`, with torch's rule that the result type must cast to ours.
    pub fn assign_result(&self, result: &PyTensor, op: &str) -> PyResult<()> {
        if !can_cast(result.dtype, self.dtype) {
            return Err(runtime_err(format!(
                "result type {} can't be cast to the desired output type {}",
                result.dtype.title(),
                self.dtype.title()
            )));
        }
        if result.dims() != self.dims() {
            return Err(crate::error::shape_err(format!(
                "output with shape {:?} doesn't match the broadcast shape {:?} in {op}",
                self.dims(),
                result.dims()
            )));
        }
        self.assign(Operand::T(result))
    }
}

/// torch's `out=`: `result` written into `out` (same shape and dtype; not resized), which is what
/// the call returns; without `out`, the result itself.
pub fn into_out(py: Python<'_>, result: PyTensor, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Py<PyAny>> {
    let Some(out) = out else { return Ok(Py::new(py, result)?.into_any()) };
    {
        let o = out.borrow();
        if o.dims() != result.dims() {
            return Err(runtime_err(format!(
                "out= tensor has shape {:?}, but the result has shape {:?} (candle_bind does not resize out= tensors)",
                o.dims(),
                result.dims()
            )));
        }
        if o.dtype != result.dtype {
            return Err(runtime_err(format!(
                "Expected out tensor to have dtype {}, but got {} instead",
                result.dtype.name(),
                o.dtype.name()
            )));
        }
        o.assign(Operand::T(&result))?;
    }
    Ok(out.clone().into_any().unbind())
}

/// torch.can_cast: no float → int, no int → bool (same-kind casting).
pub fn can_cast(from: DType, to: DType) -> bool {
    !(from.is_float() && !to.is_float() || from != DType::Bool && to == DType::Bool)
}

#[pymethods]
impl PyTensor {
    fn fill_(slf: PyRef<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let v = super::operand_arg(value, "fill_")?;
        if let super::Arg::S(s) = &v {
            check_fits(*s, slf.dtype)?;
        }
        if let super::Arg::T(t) = &v {
            if t.rank() != 0 {
                return Err(runtime_err(format!(
                    "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
                    t.rank()
                )));
            }
        }
        slf.assign(v.op())?;
        Ok(slf.into())
    }
    fn zero_(slf: PyRef<'_, Self>) -> PyResult<Py<Self>> {
        slf.assign(Operand::S(Scalar::Int(0)))?;
        Ok(slf.into())
    }
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_(slf: PyRef<'_, Self>, src: &Bound<'_, PyAny>, non_blocking: bool) -> PyResult<Py<Self>> {
        let _ = non_blocking;
        let src = src.cast::<PyTensor>().map_err(|_| crate::error::type_err("copy_(): argument 'src' must be Tensor"))?;
        let src = src.borrow();
        super::broadcast_dims(slf.dims(), src.dims())?;
        // Read the source fully before taking the write lock: it may share our storage.
        slf.assign(Operand::T(&src))?;
        Ok(slf.into())
    }
}

/// `x op= y`: the out-of-place result, checked castable to x's dtype and shape, written into x.
fn update(x: &PyTensor, other: &Bound<'_, PyAny>, op: super::arith::BinOp, name: &str) -> PyResult<()> {
    let o = super::arith::operand(other, name)?;
    if x.is_meta() {
        return Ok(());
    }
    if update_in_place(x, o.op(), op)? {
        return Ok(());
    }
    let r = super::arith::binary(x, o.op(), op, false)?;
    x.assign_result(&r, name)
}

/// The one-pass path of `x op= y` for float arithmetic on a contiguous CPU `x` whose dtype is the
/// result's: `x[i] = x[i] op y[i]` straight in x's memory. False when it does not apply.
fn update_in_place(x: &PyTensor, o: Operand<'_>, op: super::arith::BinOp) -> PyResult<bool> {
    use super::arith::BinOp::*;
    if !x.t.is_contiguous() && x.t.device().is_cpu() {
        // A dense permuted x (channels-last, transposed) is contiguous in its memory order: the
        // same pass over x and the operand permuted alike.
        let Some(perm) = super::layout::memory_order(x.dims(), &[&super::layout::broadcast_strides(&x.t, x.dims())]) else {
            return Ok(false);
        };
        let px = x.same(x.t.permute(perm.clone()).py()?);
        if !px.t.is_contiguous() {
            return Ok(false);
        }
        return match o {
            Operand::T(t) => {
                if super::broadcast_dims(x.dims(), t.dims())?.as_slice() != x.dims() {
                    return Ok(false);
                }
                let pt = t.same(t.t.broadcast_as(x.dims()).py()?.permute(perm).py()?);
                update_in_place(&px, Operand::T(&pt), op)
            }
            Operand::S(_) => update_in_place(&px, o, op),
        };
    }
    let fits = matches!(x.dtype, DType::F32 | DType::F64)
        && matches!(op, Add | Sub | Mul | Div)
        && x.t.device().is_cpu()
        && x.t.is_contiguous()
        && super::Promotion::default().tensor(x).operand(&o).result() == x.dtype;
    if !fits {
        return Ok(false);
    }
    let b = match o {
        Operand::T(t) => {
            if super::broadcast_dims(x.dims(), t.dims())?.as_slice() != x.dims() || !t.t.device().is_cpu() {
                return Ok(false);
            }
            let b = cast(&t.t, t.dtype, x.dtype)?;
            // Reading and writing the same memory (x += x) goes through a copy.
            if storage_addr(&b) == storage_addr(&x.t) { b.copy().py()? } else { b }
        }
        Operand::S(s) => s.tensor(x.dtype, &candle_core::Device::Cpu)?,
    };
    let dims = x.dims().to_vec();
    let n = x.numel();
    fn run<T: WithDType>(x: &Tensor, b: &Tensor, dims: &[usize], n: usize, op: super::arith::BinOp) -> PyResult<()> {
        retrying(|| {
            let (sb, lb) = b.storage_and_layout();
            let candle_core::Storage::Cpu(cb) = &*sb else { return Err(runtime_err("expected a CPU tensor")) };
            let view = super::kernels::View::new(cb.as_slice::<T>().py()?, lb, dims);
            let done = try_with_storage_mut(x, |s, l| {
                let out = &mut slice_mut::<T>(s)?[l.start_offset()..l.start_offset() + n];
                match op {
                    super::arith::BinOp::Add => super::kernels::update(dims, out, view, |a, b| a + b),
                    super::arith::BinOp::Sub => super::kernels::update(dims, out, view, |a, b| a - b),
                    super::arith::BinOp::Mul => super::kernels::update(dims, out, view, |a, b| a * b),
                    _ => super::kernels::update(dims, out, view, |a, b| a / b),
                }
                Ok(())
            })?;
            Ok(done.ok())
        })
    }
    match x.dtype {
        DType::F32 => run::<f32>(&x.t, &b, &dims, n, op)?,
        _ => run::<f64>(&x.t, &b, &dims, n, op)?,
    }
    Ok(true)
}

/// max(x, 0) in place; NaN stays. Any plain-Rust form of this loop (`if x < 0 { x = 0 }`) is
/// compiled for AVX2 into masked stores (`vmaskmovps`), which AMD cores run ~6x slower than the
/// whole loop should take; `maxps` with the value as second operand returns it when it is NaN.
fn relu_f32(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::isa::level() >= crate::isa::Level::Avx2 {
        // SAFETY: the CPU has AVX.
        unsafe { relu_avx(x) };
        return;
    }
    x.iter_mut().for_each(|v| *v = if *v < 0.0 { 0.0 } else { *v });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn relu_avx(x: &mut [f32]) {
    use std::arch::x86_64::{_mm256_loadu_ps, _mm256_max_ps, _mm256_setzero_ps, _mm256_storeu_ps};
    let zero = _mm256_setzero_ps();
    let mut chunks = x.chunks_exact_mut(8);
    for c in &mut chunks {
        // SAFETY: c holds 8 floats; unaligned loads and stores.
        unsafe { _mm256_storeu_ps(c.as_mut_ptr(), _mm256_max_ps(zero, _mm256_loadu_ps(c.as_ptr()))) };
    }
    chunks.into_remainder().iter_mut().for_each(|v| *v = if *v < 0.0 { 0.0 } else { *v });
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (other, *, alpha=None))]
    fn add_<'py>(slf: PyRef<'py, Self>, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        if alpha.is_none() {
            update(&slf, other, super::arith::BinOp::Add, "add_")?;
            return Ok(slf);
        }
        let r = super::arith::add_sub(&slf, other, alpha, super::arith::BinOp::Add)?;
        slf.assign_result(&r, "add_")?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub_<'py>(slf: PyRef<'py, Self>, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        if alpha.is_none() {
            update(&slf, other, super::arith::BinOp::Sub, "sub_")?;
            return Ok(slf);
        }
        let r = super::arith::add_sub(&slf, other, alpha, super::arith::BinOp::Sub)?;
        slf.assign_result(&r, "sub_")?;
        Ok(slf)
    }
    /// In one pass over the tensor's memory (ReLU(inplace=True) between convolutions).
    fn relu_<'py>(slf: PyRef<'py, Self>) -> PyResult<PyRef<'py, Self>> {
        if slf.dtype == DType::Bool {
            return Err(runtime_err("\"clamp_min_scalar_cpu\" not implemented for 'Bool'"));
        }
        if slf.dtype == DType::F32 && slf.t.device().is_cpu() && slf.t.is_contiguous() {
            let n = slf.numel();
            with_storage_mut(&slf.t, |s, l| {
                let x = &mut slice_mut::<f32>(s)?[l.start_offset()..l.start_offset() + n];
                let chunk = n.div_ceil(4 * crate::pool::threads()).max(1 << 14);
                crate::pool::chunks_mut(x, chunk, |_, c| relu_f32(c));
                Ok(())
            })?;
            return Ok(slf);
        }
        let zero = pyo3::types::PyInt::new(slf.py(), 0);
        update(&slf, zero.as_any(), super::arith::BinOp::Maximum, "relu_")?;
        Ok(slf)
    }
    /// With number bounds on contiguous float32, in one pass over the tensor's memory
    /// (ReLU6(inplace=True), hardtanh_: computing a result and copying it back took three).
    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(slf: PyRef<'py, Self>, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        let (min, max) = (min.filter(|m| !m.is_none()), max.filter(|m| !m.is_none()));
        if let Some((lo, hi)) = super::arith::number_bounds(&slf, min, max) {
            let (n, t) = (slf.numel(), slf.t.clone());
            let work = || {
                with_storage_mut(&t, |s, l| {
                    let x = &mut slice_mut::<f32>(s)?[l.start_offset()..l.start_offset() + n];
                    let chunk = n.div_ceil(4 * crate::pool::threads()).max(1 << 14);
                    crate::pool::chunks_mut(x, chunk, |_, c| super::kernels::clamp_in_place(c, lo, hi));
                    Ok(())
                })
            };
            if n >= super::kernels::PAR_THRESHOLD { slf.py().detach(work)? } else { work()? };
            return Ok(slf);
        }
        let r = slf.clamp(min, max)?;
        slf.assign_result(&r, "clamp_")?;
        Ok(slf)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip_<'py>(slf: PyRef<'py, Self>, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        Self::clamp_(slf, min, max)
    }
    fn mul_<'py>(slf: PyRef<'py, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyRef<'py, Self>> {
        update(&slf, other, super::arith::BinOp::Mul, "mul_")?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div_<'py>(slf: PyRef<'py, Self>, other: &Bound<'_, PyAny>, rounding_mode: Option<&str>) -> PyResult<PyRef<'py, Self>> {
        let r = slf.div(other, rounding_mode)?;
        slf.assign_result(&r, "div_")?;
        Ok(slf)
    }
    fn pow_<'py>(slf: PyRef<'py, Self>, exponent: &Bound<'_, PyAny>) -> PyResult<PyRef<'py, Self>> {
        let o = super::arith::operand(exponent, "pow_")?;
        let r = super::arith::pow_op(&slf, o.op(), false)?;
        slf.assign_result(&r, "pow_")?;
        Ok(slf)
    }
    fn __iadd__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Add, "add_")
    }
    fn __isub__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Sub, "sub_")
    }
    fn __imul__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Mul, "mul_")
    }
    fn __itruediv__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Div, "div_")
    }
    fn __ifloordiv__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::FloorDiv, "floor_divide_")
    }
    fn __imod__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Rem, "remainder_")
    }
    fn __iand__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::And, "bitwise_and_")
    }
    fn __ior__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Or, "bitwise_or_")
    }
    fn __ixor__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Xor, "bitwise_xor_")
    }
    /// The address of the first element (torch's `data_ptr`): equal for tensors that share memory
    /// at the same place. 0 off the CPU.
    fn data_ptr(&self) -> usize {
        let base = storage_addr(&self.t);
        if base == 0 { 0 } else { base + self.t.layout().start_offset() * self.dtype.itemsize() }
    }
    /// The address of the whole storage buffer (equal for tensors that share memory).
    fn _storage_ptr(&self) -> usize {
        storage_addr(&self.t)
    }
    /// The byte size of the whole storage buffer behind this tensor.
    fn _storage_nbytes(&self) -> usize {
        let (s, _) = self.t.storage_and_layout();
        match &*s {
            candle_core::Storage::Cpu(c) => {
                with_dtype!(self.t.dtype(), T => Ok::<usize, PyErr>(c.as_slice::<T>().map_or(0, |x| std::mem::size_of_val(x))))
                    .unwrap_or(0)
            }
            _ => self.t.elem_count() * self.dtype.itemsize(),
        }
    }
    /// Writes `result` (an op's output) into self: the primitive of the Python-level in-place ops.
    fn _assign_result(&self, result: &PyTensor, op: &str) -> PyResult<()> {
        self.assign_result(result, op)
    }
}

/// torch's "value cannot be converted to type X without overflow" for a number written into an integer
/// or 16/32-bit float tensor: values past the type's range, and NaN or the infinities for integers (unsigned
/// bytes take down to -255, as c10).
pub(crate) fn check_fits(v: Scalar, dtype: DType) -> PyResult<()> {
    let (name, lo, hi) = match dtype {
        DType::I64 => ("int64_t", i64::MIN as f64, i64::MAX as f64),
        DType::I32 => ("int", i32::MIN as f64, i32::MAX as f64),
        DType::I16 => ("int16_t", i16::MIN as f64, i16::MAX as f64),
        DType::I8 => ("int8_t", -128.0, 127.0),
        DType::U8 => ("uint8_t", -255.0, 255.0),
        DType::F32 => ("float", -f32::MAX as f64, f32::MAX as f64),
        DType::F16 => ("c10::Half", -65504.0, 65504.0),
        DType::BF16 => ("c10::BFloat16", -3.3895313892515355e38, 3.3895313892515355e38),
        _ => return Ok(()),
    };
    let (x, lo) = match v {
        // a float converts to uint8 only from [0, 255] (an int wraps from [-255, 255])
        Scalar::Float(f) if dtype == DType::U8 => (f, 0.0),
        Scalar::Float(f) => (f, lo),
        Scalar::Int(i) => (i as f64, lo),
        Scalar::Bool(_) => return Ok(()),
    };
    // A float tensor takes NaN and the infinities; an integer one takes neither.
    if dtype.is_float() && !x.is_finite() {
        return Ok(());
    }
    if x.is_nan() || x < lo || x > hi {
        return Err(runtime_err(format!("value cannot be converted to type {name} without overflow")));
    }
    Ok(())
}
