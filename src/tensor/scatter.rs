//! Indexed reads and writes along a dim: gather, scatter (and its add/multiply reductions), and
//! index_add/index_copy/index_fill. The CPU paths walk the index row by row, reading and writing
//! the storage in place, rows split over our pool where they cannot collide; the device paths use
//! Candle's kernels with the index's bounds checked first.

use candle_core::{Device, Tensor, WithDType};
use pyo3::prelude::*;

use super::{cast, norm_dim, with_dtype, Operand, PyTensor};
use crate::dtype::DType;
use crate::error::{index_err, runtime_err, shape_err, IntoPyResult};

/// An index tensor's values as i64 (torch takes int64 indices; int32 too where it does).
pub(super) fn index_values(index: &PyTensor, op: &str) -> PyResult<Vec<i64>> {
    match index.dtype {
        DType::I64 | DType::I32 => super::cpu_vec::<i64>(&index.t.to_dtype(candle_core::DType::I64).py()?),
        d => Err(runtime_err(format!("{op}(): Expected dtype int64 for index, got {}", d.name()))),
    }
}

pub(super) fn contiguous_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![0; dims.len()];
    let mut acc = 1;
    for i in (0..dims.len()).rev() {
        s[i] = acc;
        acc *= dims[i];
    }
    s
}

/// gather and scatter take no negative indices, and raise RuntimeError (not IndexError) as torch does.
pub(super) fn in_bounds(i: i64, n: usize, dim: usize) -> PyResult<usize> {
    if i < 0 || i >= n as i64 {
        return Err(runtime_err(format!("index {i} is out of bounds for dimension {dim} with size {n}")));
    }
    Ok(i as usize)
}

/// The smallest and largest value of an index tensor, read back from its device (two numbers, not
/// the whole index): bounds are checked before a device kernel reads through the index, since a
/// CUDA kernel reading out of bounds would poison the whole context.
pub(super) fn index_range(index: &Tensor) -> PyResult<Option<(i64, i64)>> {
    if index.elem_count() == 0 {
        return Ok(None);
    }
    let i = index.flatten_all().py()?.to_dtype(candle_core::DType::I64).py()?;
    // One read back for both.
    let both = Tensor::stack(&[i.min_keepdim(0).py()?, i.max_keepdim(0).py()?], 0).py()?;
    let v = super::host_vec::<i64>(&both)?;
    Ok(Some((v[0], v[1])))
}

/// An index tensor for a device kernel: int64, negative values counted from the end of `n`.
pub(super) fn device_index(index: &PyTensor, n: usize, negative: bool, op: &str) -> PyResult<(Tensor, Option<(i64, i64)>)> {
    if !matches!(index.dtype, DType::I64 | DType::I32) {
        return Err(runtime_err(format!("{op}(): Expected dtype int64 for index, got {}", index.dtype.name())));
    }
    let i = index.t.to_dtype(candle_core::DType::I64).py()?;
    let range = index_range(&i)?;
    if negative && range.is_some_and(|(lo, _)| lo < 0) {
        let neg = i.lt(&i.zeros_like().py()?).py()?.to_dtype(candle_core::DType::I64).py()?;
        return Ok(((&i + (neg * n as f64).py()?).py()?, range));
    }
    Ok((i, range))
}

#[derive(Clone, Copy)]
pub(super) enum IndexMode {
    Add(f64),
    Copy,
    /// index_fill: a copy of one value, where negative indices count from the end.
    Fill,
}

/// Runs `f` over an index's values as i64, read in place when it is a contiguous int64 CPU tensor.
fn with_index<R>(index: &PyTensor, op: &str, f: impl FnOnce(&[i64]) -> PyResult<R>) -> PyResult<R> {
    if index.dtype == DType::I64 && super::is_cpu(&index.t) && index.t.is_contiguous() {
        let (storage, layout) = index.t.storage_and_layout();
        if let candle_core::Storage::Cpu(cpu) = &*storage {
            let o = layout.start_offset();
            return f(&cpu.as_slice::<i64>().py()?[o..o + index.t.elem_count()]);
        }
    }
    f(&index_values(index, op)?)
}

/// The rows (last dim) of an index, and where each starts in a tensor walked with `strides` (the
/// indexed dim's stride set to 0): a 0-d index is one row of one.
struct Rows {
    outer_dims: Vec<usize>,
    outer_st: Vec<usize>,
    start: usize,
    inner: usize,
    step: usize,
    count: usize,
}

impl Rows {
    fn new(dims: &[usize], strides: &[usize], start: usize) -> Self {
        let dims = if dims.is_empty() { vec![1] } else { dims.to_vec() };
        let k = dims.len() - 1;
        let inner = dims[k];
        let count = if inner == 0 { 0 } else { dims.iter().product::<usize>() / inner };
        Rows { outer_dims: dims[..k].to_vec(), outer_st: strides[..k].to_vec(), start, inner, step: strides.get(k).copied().unwrap_or(0), count }
    }

    /// Where row `r` starts.
    fn base(&self, mut r: usize) -> usize {
        let mut off = self.start;
        for (d, s) in self.outer_dims.iter().zip(&self.outer_st).rev() {
            off += (r % d) * s;
            r /= d;
        }
        off
    }

    /// `fill(first row, its outputs)` over runs of whole rows of `out` (row-major over the index),
    /// split over the pool when large.
    fn split<T: Send>(&self, out: &mut [T], fill: impl Fn(usize, &mut [T]) + Sync) {
        if self.inner == 0 || out.is_empty() {
            return;
        }
        let threads = crate::pool::threads();
        if out.len() >= super::kernels::PAR_THRESHOLD && threads > 1 {
            let per = self.count.div_ceil(4 * threads).max(1);
            crate::pool::chunks_mut(out, per * self.inner, |c, o| fill(c * per, o));
        } else {
            fill(0, out);
        }
    }
}

super::kernels::multiversion! {
    /// out[j] = row[idx[j]], false when an index falls outside the row (those outputs are left
    /// holding row[last]); branch-free, so it vectorizes into gathers.
    fn gather_row<T>(row: &[T], idx: &[i64], out: &mut [T]) -> bool where [T: Copy]
    {
        let Some(last) = row.len().checked_sub(1) else { return idx.is_empty() };
        let mut ok = true;
        for (o, &i) in out.iter_mut().zip(idx) {
            let i = i as u64;
            ok &= i <= last as u64;
            *o = row[(i as usize).min(last)];
        }
        ok
    }
}

/// `all_below` over the pool when the index is large (it is read from memory, a pass of its own).
fn indices_below(idx: &[i64], n: u64) -> bool {
    let threads = crate::pool::threads();
    if idx.len() < super::kernels::PAR_THRESHOLD || threads == 1 {
        return all_below(idx, n);
    }
    let ok = std::sync::atomic::AtomicBool::new(true);
    let per = idx.len().div_ceil(threads);
    crate::pool::for_each(threads, &|t| {
        let part = &idx[(t * per).min(idx.len())..((t + 1) * per).min(idx.len())];
        if !all_below(part, n) {
            ok.store(false, std::sync::atomic::Ordering::Relaxed);
        }
    });
    ok.into_inner()
}

super::kernels::multiversion! {
    /// Whether every index lies in 0..n (a negative one reads as a huge u64): one branch-free pass.
    fn all_below<>(idx: &[i64], n: u64) -> bool where []
    {
        idx.iter().fold(0u64, |m, &i| m.max(i as u64)) < n
    }
}

super::kernels::multiversion! {
    /// row[idx[j]] = f(row[idx[j]], src[j]); false when an index falls outside the row (the
    /// result is then thrown away, so where those values went does not matter).
    fn scatter_row<T, F>(row: &mut [T], idx: &[i64], src: &[T], f: &F) -> bool where [T: Copy, F: Fn(T, T) -> T]
    {
        let Some(last) = row.len().checked_sub(1) else { return idx.is_empty() };
        let mut ok = true;
        for (&i, &v) in idx.iter().zip(src) {
            let i = i as u64;
            ok &= i <= last as u64;
            let o = (i as usize).min(last);
            row[o] = f(row[o], v);
        }
        ok
    }
}

/// One scatter: index rows walked over `dst` (self's copy) and `srows` (src), index values
/// multiplied by `dd` (self's stride along dim).
struct Scatter<'a, T> {
    idx: &'a [i64],
    sv: &'a [T],
    dst: &'a Rows,
    srows: &'a Rows,
    dd: usize,
    n: usize,
    along_last: bool,
}

impl<T: Copy + Send + Sync> Scatter<'_, T> {
    /// Writes every index row into `data`; false when an index is out of bounds (nothing is
    /// promised about `data` then).
    fn run(&self, data: &mut [T], f: impl Fn(T, T) -> T + Sync) -> bool {
        let (dst, srows, idx, n) = (self.dst, self.srows, self.idx, self.n);
        if self.along_last && srows.step == 1 {
            // Along the last dim, index row r writes only row r of self: one bounds-checked pass per
            // row, rows split over the pool in runs when large (no two runs touch the same element).
            let row = |data: &mut [T], r: usize| {
                let (sb, irow) = (srows.base(r), &idx[r * dst.inner..(r + 1) * dst.inner]);
                let src = self.sv.get(sb..sb + irow.len()).unwrap_or_default();
                src.len() == irow.len() && scatter_row(data, irow, src, &f)
            };
            if idx.len() >= super::kernels::PAR_THRESHOLD && crate::pool::threads() > 1 {
                let ok = std::sync::atomic::AtomicBool::new(true);
                let dp = crate::pool::SendPtr(data.as_mut_ptr());
                let len = data.len();
                crate::pool::for_each_run(dst.count, &|run| {
                    for r in run {
                        let base = dst.base(r);
                        if base + n > len {
                            ok.store(false, std::sync::atomic::Ordering::Relaxed);
                            continue;
                        }
                        // SAFETY: row r of self (base..base + n, inside data) belongs to this task alone.
                        let slice = unsafe { std::slice::from_raw_parts_mut(dp.get().add(base), n) };
                        if !row(slice, r) {
                            ok.store(false, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
                return ok.into_inner();
            }
            let mut ok = true;
            for r in 0..dst.count {
                let base = dst.base(r);
                ok &= data.get_mut(base..base + n).is_some_and(|s| row(s, r));
            }
            return ok;
        }
        // Anywhere else: bounds first, then a plain walk.
        if idx.iter().any(|&i| i < 0 || i >= n as i64) {
            return false;
        }
        for r in 0..dst.count {
            let (base, sb, irow) = (dst.base(r), srows.base(r), &idx[r * dst.inner..(r + 1) * dst.inner]);
            for (j, &i) in irow.iter().enumerate() {
                let (o, v) = (base + j * dst.step + i as usize * self.dd, self.sv[sb + j * srows.step]);
                data[o] = f(data[o], v);
            }
        }
        true
    }
}

#[derive(Clone, Copy)]
enum Combine {
    Set,
    Add,
    Mul,
}

impl<T: Copy + Send + Sync + std::ops::Add<Output = T> + std::ops::Mul<Output = T>> Scatter<'_, T> {
    /// `run` with the combine rule of `how` (false: an index out of bounds).
    fn apply(&self, data: &mut [T], how: Combine) -> bool {
        match how {
            Combine::Set => self.run(data, |_, v| v),
            Combine::Add => self.run(data, |a, v| a + v),
            Combine::Mul => self.run(data, |a, v| a * v),
        }
    }
}

impl PyTensor {
    /// gather along `dim`: out[i][j][k] = self[index[i][j][k]][j][k] (for dim 0), out shaped like index.
    /// `negative`: whether indices may count from the end (searchsorted's sorter; not torch.gather).
    pub fn gather_impl(&self, dim: i64, index: &PyTensor, negative: bool) -> PyResult<PyTensor> {
        let d = norm_dim(dim, self.rank())?;
        // An empty index gathers nothing: torch returns its shape without checking its dtype or rank.
        if index.t.elem_count() == 0 {
            return Ok(self.same(Tensor::zeros(index.dims(), self.t.dtype(), self.t.device()).py()?));
        }
        if !matches!(index.dtype, DType::I64 | DType::I32) {
            return Err(runtime_err(format!("gather(): Expected dtype int64 for index, got {}", index.dtype.name())));
        }
        if index.rank() != self.rank().max(1) && !(index.rank() <= 1 && self.rank() <= 1) {
            return Err(runtime_err("Index tensor must have the same number of dimensions as input tensor"));
        }
        for (i, (&a, &b)) in index.dims().iter().zip(self.dims()).enumerate() {
            if i != d && a > b {
                return Err(runtime_err(format!(
                    "Size does not match at dimension {i} expected index {:?} to be no larger than self {:?} apart from dimension {d}",
                    index.dims(),
                    self.dims()
                )));
            }
        }
        if !super::is_cpu(&self.t) || !super::is_cpu(&index.t) {
            return self.gather_dev(d, index, negative);
        }
        let n = self.dims().get(d).copied().unwrap_or(1);
        let lo = if negative { -(n as i64) } else { 0 };
        let src = self.t.clone();
        let (storage, layout) = src.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
        // self read in place through its layout; index rows walked with self's strides.
        let mut st: Vec<usize> = layout.stride().to_vec();
        st.resize(index.rank().max(1), 0);
        let sd = std::mem::replace(&mut st[d.min(index.rank().max(1) - 1)], 0);
        let sd = if self.rank() == 0 { 0 } else { sd };
        let rows = Rows::new(index.dims(), &st, layout.start_offset());
        let out = with_index(index, "gather", |idx| {
            let bad = || match idx.iter().find(|&&i| i < lo || i >= n as i64) {
                Some(&i) => in_bounds(i, n, d).map(|_| ()),
                None => Ok(()),
            };
            with_dtype!(src.dtype(), T => {
                let data = cpu.as_slice::<T>().py()?;
                let mut out = super::kernels::uninit_vec::<T>(idx.len());
                if rows.step == 0 && sd == 1 && !negative && n > 0 {
                    // Along a contiguous last dim: each output row reads one row of self, the
                    // bounds checked in the same pass (a gather instruction where the CPU has one).
                    let ok = std::sync::atomic::AtomicBool::new(true);
                    let fill = |r0: usize, o: &mut [T]| {
                        for (k, orow) in o.chunks_mut(rows.inner).enumerate() {
                            let (base, irow) = (rows.base(r0 + k), &idx[(r0 + k) * rows.inner..]);
                            let srow = data.get(base..base + n).unwrap_or_default();
                            if !gather_row(srow, &irow[..orow.len()], orow) {
                                ok.store(false, std::sync::atomic::Ordering::Relaxed);
                            }
                        }
                    };
                    rows.split(&mut out, fill);
                    if !ok.into_inner() {
                        bad()?;
                    }
                } else {
                    // Bounds first, in one pass, so the loop below carries no error path.
                    bad()?;
                    let fill = |r0: usize, o: &mut [T]| {
                        for (k, orow) in o.chunks_mut(rows.inner).enumerate() {
                            let (base, irow) = (rows.base(r0 + k), &idx[(r0 + k) * rows.inner..]);
                            for (j, (v, &i)) in orow.iter_mut().zip(irow).enumerate() {
                                let i = if i < 0 { i + n as i64 } else { i } as usize;
                                *v = data[base + j * rows.step + i * sd];
                            }
                        }
                    };
                    rows.split(&mut out, fill);
                }
                Tensor::from_vec(out, index.dims(), &Device::Cpu).py()
            })
        })?;
        drop(storage);
        Ok(self.same(out))
    }

    /// index_select on the CPU: output rows (outer, len(index), inner) copied from self's rows in
    /// runs of whole rows over the pool (Candle's copies one row at a time on one thread).
    pub(super) fn index_select_cpu(&self, d: usize, index: &PyTensor) -> PyResult<PyTensor> {
        /// Rows ahead of the copy whose lines are prefetched.
        const AHEAD: usize = 4;
        let n = self.dims().get(d).copied().unwrap_or(1);
        let me = if self.rank() == 0 { self.t.reshape(1).py()? } else { self.t.clone() };
        let me = if me.is_contiguous() { me } else { super::copy_contiguous(&me)? };
        let dims = me.dims().to_vec();
        let (outer, inner) = (dims[..d].iter().product::<usize>(), dims[d + 1..].iter().product::<usize>());
        let (storage, layout) = me.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
        let out = with_index(index, "index_select", |idx| {
            if idx.iter().any(|&i| i < 0 || i >= n as i64) {
                return Err(index_err("index out of range in self"));
            }
            with_dtype!(me.dtype(), T => {
                let o = layout.start_offset();
                let data = &cpu.as_slice::<T>().py()?[o..o + me.elem_count()];
                let k = idx.len();
                let mut out = super::kernels::uninit_vec::<T>(outer * k * inner);
                // Output row r = (outer a, entry j) is self's row (a, idx[j]).
                let rows = outer * k;
                let src_of = |r: usize| (r / k.max(1) * n + idx[r % k.max(1)] as usize) * inner;
                let fill = |r0: usize, dst: &mut [T]| {
                    for (q, row) in dst.chunks_mut(inner.max(1)).enumerate() {
                        // Rows come from anywhere in the table: fetch a few rows ahead, a line
                        // at a time, so the copies do not wait on memory one row after another.
                        #[cfg(target_arch = "x86_64")]
                        if r0 + q + AHEAD < rows {
                            let ahead = data[src_of(r0 + q + AHEAD)..].as_ptr() as *const i8;
                            let bytes = inner * std::mem::size_of::<T>();
                            for off in (0..bytes).step_by(64) {
                                // SAFETY: a prefetch never faults; the address is inside that row.
                                unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ahead.wrapping_add(off)) };
                            }
                        }
                        let src = src_of(r0 + q);
                        row.copy_from_slice(&data[src..src + inner]);
                    }
                };
                if out.len() >= super::kernels::PAR_THRESHOLD && crate::pool::threads() > 1 && inner > 0 {
                    let per = rows.div_ceil(4 * crate::pool::threads()).max(1);
                    crate::pool::chunks_mut(&mut out, per * inner, |c, dst| fill(c * per, dst));
                } else if inner > 0 {
                    fill(0, &mut out);
                }
                let mut od = dims.clone();
                od[d] = k;
                if self.rank() == 0 {
                    od = vec![]; // a scalar's one value (its index has one entry: checked by the caller)
                }
                Tensor::from_vec(out, od, &Device::Cpu).py()
            })
        })?;
        drop(storage);
        Ok(self.same(out))
    }

    /// scatter family: a copy of self with src's values written (or combined) at index along dim.
    pub fn scatter_impl(&self, dim: i64, index: &PyTensor, src: Operand<'_>, reduce: Option<&str>) -> PyResult<PyTensor> {
        Ok(self.scatter_run(dim, index, src, reduce, false)?.0)
    }

    /// `scatter_`/`scatter_add_`: into self's own memory when it is a contiguous CPU tensor that
    /// shares no storage with src or the index (no copy of self in and of the result out: a third
    /// of `zeros_like(x).scatter_add_(-1, i, x)`), else the result written back.
    pub fn scatter_into(&self, dim: i64, index: &PyTensor, src: Operand<'_>, reduce: Option<&str>) -> PyResult<()> {
        let (r, done) = self.scatter_run(dim, index, src, reduce, true)?;
        if !done {
            self.assign(Operand::T(&r))?;
        }
        Ok(())
    }

    /// The scatter, and whether it was written into self (`into`, where it can be).
    fn scatter_run(&self, dim: i64, index: &PyTensor, src: Operand<'_>, reduce: Option<&str>, into: bool) -> PyResult<(PyTensor, bool)> {
        let d = norm_dim(dim, self.rank())?;
        if matches!(reduce, Some("add" | "sum" | "multiply" | "prod")) {
            if let Some(r) = self.widened(src, |me, src| me.scatter_impl(dim, index, src, reduce))? {
                return Ok((r, false));
            }
        }
        if !super::is_cpu(&self.t) || !super::is_cpu(&index.t) {
            return Ok((self.scatter_dev(d, index, src, reduce)?, false));
        }
        if !matches!(index.dtype, DType::I64 | DType::I32) {
            return Err(runtime_err(format!("scatter(): Expected dtype int64 for index, got {}", index.dtype.name())));
        }
        if index.rank() != self.rank().max(1) && !(index.rank() <= 1 && self.rank() <= 1) {
            return Err(runtime_err("Index tensor must have the same number of dimensions as self tensor"));
        }
        let src_t: Tensor = match src {
            Operand::T(s) => {
                if s.rank() != index.rank() {
                    return Err(runtime_err("Index tensor must have the same number of dimensions as src tensor"));
                }
                if index.dims().iter().zip(s.dims()).any(|(a, b)| a > b) {
                    return Err(runtime_err(format!(
                        "Expected index {:?} to be no larger than src {:?}",
                        index.dims(),
                        s.dims()
                    )));
                }
                cast(&s.t, s.dtype, self.dtype)?.contiguous().py()?
            }
            Operand::S(s) => s.tensor(self.dtype, &Device::Cpu)?.reshape(1).py()?,
        };
        let me = &self.t; // cpu_vec below reads any layout in one pass: no contiguous copy first
        let n = self.dims().get(d).copied().unwrap_or(1);
        for (i, (&a, &b)) in index.dims().iter().zip(self.dims()).enumerate() {
            if i != d && a > b {
                return Err(runtime_err(format!(
                    "Expected index {:?} to be no larger than self {:?} apart from dimension {d}",
                    index.dims(),
                    self.dims()
                )));
            }
        }
        let how = match reduce {
            None => Combine::Set,
            Some("add") | Some("sum") => Combine::Add,
            Some("multiply") | Some("prod") => Combine::Mul,
            Some(r) => return Err(crate::error::value_err(format!("reduce argument must be either add or multiply, got {r}"))),
        };
        let rank = index.rank().max(1);
        let mut dst_st = contiguous_strides(me.dims());
        dst_st.resize(rank, 0);
        let dd = if self.rank() == 0 { 0 } else { std::mem::replace(&mut dst_st[d], 0) };
        let dst = Rows::new(index.dims(), &dst_st, 0);
        let mut src_st = if matches!(src, Operand::S(_)) { vec![0; rank] } else { contiguous_strides(src_t.dims()) };
        src_st.resize(rank, 0);
        let srows = Rows::new(index.dims(), &src_st, src_t.layout().start_offset());
        let along_last = d + 1 == rank && self.rank() > 0;
        let addr = super::inplace::storage_addr;
        if into && !self.is_meta() && me.is_contiguous() && crate::device::cpu_kernels(me) && addr(me) != addr(&src_t) && addr(me) != addr(&index.t) {
            let (o, len) = (me.layout().start_offset(), me.elem_count());
            // Read guards are taken again on every try, so a writer of src or the index that waits
            // on self meanwhile is never held off.
            super::inplace::retrying(|| {
                with_index(index, "scatter", |idx| {
                    // Bounds first (a branch-free pass that vectorizes): a failed scatter leaves
                    // self as it was.
                    if !indices_below(idx, n as u64) {
                        if let Some(&i) = idx.iter().find(|&&i| i < 0 || i >= n as i64) {
                            in_bounds(i, n, d)?;
                        }
                    }
                    with_dtype!(me.dtype(), T => {
                        let (sg, _) = src_t.storage_and_layout();
                        let candle_core::Storage::Cpu(scpu) = &*sg else { return Err(runtime_err("expected a CPU tensor")) };
                        let sv = scpu.as_slice::<T>().py()?;
                        let plan = Scatter { idx, sv, dst: &dst, srows: &srows, dd, n, along_last };
                        let ran = super::inplace::try_with_storage_mut(me, |s, _| {
                            let data = super::inplace::slice_mut::<T>(s)?.get_mut(o..o + len).ok_or_else(|| runtime_err("scatter: storage too short"))?;
                            Ok(plan.apply(data, how))
                        })?;
                        Ok(ran.ok().map(|_| ()))
                    })
                })
            })?;
            return Ok((self.same(me.clone()), true));
        }
        let out = with_index(index, "scatter", |idx| {
            with_dtype!(me.dtype(), T => {
                let mut data = super::cpu_vec::<T>(&me)?;
                let (sg, _) = src_t.storage_and_layout();
                let candle_core::Storage::Cpu(scpu) = &*sg else { return Err(runtime_err("expected a CPU tensor")) };
                let sv = scpu.as_slice::<T>().py()?;
                let plan = Scatter { idx, sv, dst: &dst, srows: &srows, dd, n, along_last };
                if !plan.apply(&mut data, how) {
                    if let Some(&i) = idx.iter().find(|&&i| i < 0 || i >= n as i64) {
                        in_bounds(i, n, d)?;
                    }
                }
                drop(sg);
                Tensor::from_vec(data, me.dims(), &Device::Cpu).py()
            })
        })?;
        Ok((self.same(out), false))
    }

    /// For float16/bfloat16 self: `f` run on float32 copies of self and the source, the result
    /// rounded once, as torch accumulates sums and products (its opmath); None for other dtypes.
    fn widened(&self, src: Operand<'_>, f: impl FnOnce(&PyTensor, Operand<'_>) -> PyResult<PyTensor>) -> PyResult<Option<PyTensor>> {
        if !matches!(self.dtype, DType::F16 | DType::BF16) {
            return Ok(None);
        }
        let me = PyTensor::new(cast(&self.t, self.dtype, DType::F32)?, DType::F32);
        let wide;
        let src = match src {
            Operand::T(s) => {
                wide = PyTensor::new(cast(&s.t, s.dtype, DType::F32)?, DType::F32);
                Operand::T(&wide)
            }
            other => other,
        };
        let r = f(&me, src)?;
        Ok(Some(self.same(cast(&r.t, DType::F32, self.dtype)?)))
    }

    /// index_add / index_copy / index_fill along `dim` with a 1-D index: a fresh result.
    pub(super) fn index_update(&self, dim: i64, index: &PyTensor, source: Operand<'_>, mode: IndexMode, op: &str) -> PyResult<PyTensor> {
        let d = norm_dim(dim, self.rank())?;
        if index.rank() > 1 {
            return Err(index_err(format!("{op}(): Index is supposed to be a vector")));
        }
        // torch's index_add rounds once along the first or last dim of a 2-D+ tensor (it runs as a
        // scatter_add there) and after every add elsewhere (one add_ per index entry).
        if matches!(mode, IndexMode::Add(_)) && self.rank() > 1 && (d == 0 || d + 1 == self.rank()) {
            if let Some(r) = self.widened(source, |me, src| me.index_update(dim, index, src, mode, op))? {
                return Ok(r);
            }
        }
        if !super::is_cpu(&self.t) || !super::is_cpu(&index.t) {
            return self.index_update_dev(d, index, source, mode, op);
        }
        let idx = index_values(index, op)?;
        let n = self.dims().get(d).copied().unwrap_or(1);
        let me = &self.t;
        let dims = me.dims().to_vec();
        // The source's shape: self's with dim d of size len(index) (a scalar fills).
        let mut sdims = dims.clone();
        if !sdims.is_empty() {
            sdims[d] = idx.len();
        }
        let src = match source {
            Operand::T(s) => {
                let ok = s.dims() == sdims.as_slice() || (s.rank() == 0 && sdims.iter().product::<usize>() == 1);
                if !ok {
                    return Err(shape_err(format!(
                        "{op}(): source tensor shape {:?} must match self tensor shape {:?} apart from dimension {d} \
                         (index has {} entries)",
                        s.dims(),
                        dims,
                        idx.len()
                    )));
                }
                cast(&s.t, s.dtype, self.dtype)?.broadcast_as(sdims.as_slice()).py()?.contiguous().py()?
            }
            Operand::S(s) => s.tensor(self.dtype, &Device::Cpu)?.broadcast_as(sdims.as_slice()).py()?.contiguous().py()?,
        };
        let (outer, inner) = (dims[..d.min(dims.len())].iter().product::<usize>(), dims.get(d + 1..).map_or(1, |r| r.iter().product()));
        // Only index_fill takes negative indices in torch, and each op words its error differently.
        let lo = if matches!(mode, IndexMode::Fill) { -(n as i64) } else { 0 };
        if let Some(&i) = idx.iter().find(|&&i| i < lo || i >= n as i64) {
            return Err(match mode {
                IndexMode::Add(_) => index_err("index out of range in self"),
                IndexMode::Copy => index_err(format!("index_copy_(): index {i} is out of bounds for dimension {d} with size {n}")),
                IndexMode::Fill => index_err(format!("index {i} is out of bounds for dimension {d} with size {n}")),
            });
        }
        let pos: Vec<usize> = idx.iter().map(|&i| (if i < 0 { i + n as i64 } else { i }) as usize).collect();
        let out = with_dtype!(me.dtype(), T => {
            let mut data = super::cpu_vec::<T>(&me)?;
            let sv = super::cpu_vec::<T>(&src)?;
            let alpha = match mode { IndexMode::Add(a) => T::from_f64(a), _ => T::from_f64(1.0) };
            for o in 0..outer {
                for (j, &p) in pos.iter().enumerate() {
                    let (dst, s) = ((o * n + p) * inner, (o * pos.len() + j) * inner);
                    for q in 0..inner {
                        data[dst + q] = match mode {
                            IndexMode::Add(a) if a == 1.0 => data[dst + q] + sv[s + q],
                            IndexMode::Add(_) => data[dst + q] + alpha * sv[s + q],
                            IndexMode::Copy | IndexMode::Fill => sv[s + q],
                        };
                    }
                }
            }
            Tensor::from_vec(data, dims.as_slice(), &Device::Cpu).py()
        })?;
        Ok(self.same(out))
    }
}

/// The device paths: Candle's gather/scatter/index_add kernels, indices bounds-checked first (their
/// range read back from the device).
impl PyTensor {
    pub(super) fn gather_dev(&self, d: usize, index: &PyTensor, negative: bool) -> PyResult<PyTensor> {
        crate::device::common(&[&self.t, &index.t])?;
        let n = self.dims().get(d).copied().unwrap_or(1);
        let (i, range) = device_index(index, n, negative, "gather")?;
        if let Some((lo, hi)) = range {
            let min = if negative { -(n as i64) } else { 0 };
            if lo < min {
                in_bounds(lo, n, d)?;
            }
            if hi >= n as i64 {
                in_bounds(hi, n, d)?;
            }
        }
        let mut src = if self.rank() == 0 { self.t.reshape(1).py()? } else { self.t.clone() };
        let i = if index.rank() == 0 { i.reshape(1).py()? } else { i };
        if i.elem_count() == 0 {
            return Ok(self.same(Tensor::zeros(index.dims(), self.t.dtype(), self.t.device()).py()?));
        }
        // Candle's kernel takes the index's extent in the other dims as the input's.
        for (k, &len) in i.dims().iter().enumerate() {
            if k != d && len < src.dims()[k] {
                src = src.narrow(k, 0, len).py()?;
            }
        }
        let out = src.contiguous().py()?.gather(&i.contiguous().py()?, d).py()?;
        Ok(self.same(out.reshape(index.dims()).py()?))
    }

    pub(super) fn scatter_dev(&self, d: usize, index: &PyTensor, src: Operand<'_>, reduce: Option<&str>) -> PyResult<PyTensor> {
        let mut ts = vec![&self.t, &index.t];
        if let Operand::T(s) = &src {
            ts.push(&s.t);
        }
        crate::device::common(&ts)?;
        let same_extent = index.rank() == self.rank() && index.dims().iter().zip(self.dims()).enumerate().all(|(k, (a, b))| k == d || a == b);
        let add = match reduce {
            None => false,
            Some("add") | Some("sum") => true,
            // No multiplying scatter among Candle's kernels, nor one for an index narrower than
            // self in the other dims: those run on the host.
            _ => return self.on_host_scatter(d, index, src, reduce),
        };
        if !same_extent || self.rank() == 0 {
            return self.on_host_scatter(d, index, src, reduce);
        }
        if let Operand::T(s) = &src {
            if s.rank() != index.rank() {
                return Err(runtime_err("Index tensor must have the same number of dimensions as src tensor"));
            }
            if index.dims().iter().zip(s.dims()).any(|(a, b)| a > b) {
                return Err(runtime_err(format!("Expected index {:?} to be no larger than src {:?}", index.dims(), s.dims())));
            }
        }
        let n = self.dims()[d];
        let (i, range) = device_index(index, n, false, "scatter")?;
        if let Some((lo, hi)) = range {
            if lo < 0 {
                in_bounds(lo, n, d)?;
            }
            if hi >= n as i64 {
                in_bounds(hi, n, d)?;
            }
        }
        if i.elem_count() == 0 {
            return Ok(self.same(self.t.copy().py()?));
        }
        let values = match src {
            Operand::T(s) => {
                let mut v = cast(&s.t, s.dtype, self.dtype)?;
                for (k, &len) in index.dims().iter().enumerate() {
                    if len < v.dims()[k] {
                        v = v.narrow(k, 0, len).py()?;
                    }
                }
                v.contiguous().py()?
            }
            Operand::S(s) => s.tensor(self.dtype, self.t.device())?.broadcast_as(index.dims()).py()?.contiguous().py()?,
        };
        let me = self.t.contiguous().py()?;
        let i = i.contiguous().py()?;
        let out = if add { me.scatter_add(&i, &values, d) } else { me.scatter(&i, &values, d) }.py()?;
        Ok(self.same(out))
    }

    /// scatter on host copies, the result moved back.
    pub(super) fn on_host_scatter(&self, d: usize, index: &PyTensor, src: Operand<'_>, reduce: Option<&str>) -> PyResult<PyTensor> {
        let host = |t: &PyTensor| -> PyResult<PyTensor> { Ok(t.same(t.t.to_device(&Device::Cpu).py()?)) };
        let (me, idx) = (host(self)?, host(index)?);
        let src_h = match src {
            Operand::T(s) => Some(host(s)?),
            Operand::S(_) => None,
        };
        let op = match (&src_h, src) {
            (Some(t), _) => Operand::T(t),
            (None, s) => s,
        };
        let r = crate::device::on_host(|| me.scatter_impl(d as i64, &idx, op, reduce))?;
        Ok(r.same(r.t.to_device(self.t.device()).py()?))
    }

    pub(super) fn index_update_dev(&self, d: usize, index: &PyTensor, source: Operand<'_>, mode: IndexMode, op: &str) -> PyResult<PyTensor> {
        let mut ts = vec![&self.t, &index.t];
        if let Operand::T(s) = &source {
            ts.push(&s.t);
        }
        crate::device::common(&ts)?;
        let me = if self.rank() == 0 { self.t.reshape(1).py()? } else { self.t.contiguous().py()? };
        let dims = me.dims().to_vec();
        let n = dims[d];
        let k = index.numel();
        let mut sdims = dims.clone();
        sdims[d] = k;
        let src = match source {
            Operand::T(s) => {
                let ok = s.dims() == sdims.as_slice() || (s.rank() == 0 && sdims.iter().product::<usize>() == 1) || (self.rank() == 0 && s.numel() == k);
                if !ok {
                    return Err(shape_err(format!(
                        "{op}(): source tensor shape {:?} must match self tensor shape {:?} apart from dimension {d} \
                         (index has {k} entries)",
                        s.dims(),
                        self.dims()
                    )));
                }
                cast(&s.t, s.dtype, self.dtype)?.reshape(()).or_else(|_| cast(&s.t, s.dtype, self.dtype)).and_then(|t| t.broadcast_as(sdims.as_slice()).py())?
            }
            Operand::S(s) => s.tensor(self.dtype, self.t.device())?.broadcast_as(sdims.as_slice()).py()?,
        };
        let fill = matches!(mode, IndexMode::Fill);
        let (i, range) = device_index(index, n, fill, op)?;
        if let Some((lo, hi)) = range {
            let min = if fill { -(n as i64) } else { 0 };
            let bad = if lo < min { Some(lo) } else if hi >= n as i64 { Some(hi) } else { None };
            if let Some(i) = bad {
                return Err(match mode {
                    IndexMode::Add(_) => index_err("index out of range in self"),
                    IndexMode::Copy => index_err(format!("index_copy_(): index {i} is out of bounds for dimension {d} with size {n}")),
                    IndexMode::Fill => index_err(format!("index {i} is out of bounds for dimension {d} with size {n}")),
                });
            }
        }
        if k == 0 {
            return Ok(self.same(self.t.copy().py()?));
        }
        let i = i.flatten_all().py()?;
        let src = src.contiguous().py()?;
        let out = match mode {
            IndexMode::Add(a) => {
                let src = if a == 1.0 { src } else { (src * a).py()? };
                me.index_add(&i, &src, d).py()?
            }
            IndexMode::Copy | IndexMode::Fill => {
                let mut shape = vec![1; dims.len()];
                shape[d] = k;
                let full = i.reshape(shape).py()?.broadcast_as(sdims.as_slice()).py()?.contiguous().py()?;
                me.scatter(&full, &src, d).py()?
            }
        };
        Ok(self.same(out.reshape(self.dims()).py()?))
    }
}
