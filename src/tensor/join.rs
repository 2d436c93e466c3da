//! Joining tensors: `cat` and `stack`.

use candle_core::Tensor;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::{cast, norm_dim, PyTensor};
use crate::dtype::DType;
use crate::error::{runtime_err, shape_err, type_err, IntoPyResult};

/// Borrowed tensors of a sequence argument, promoted to one dtype.
fn promoted(seq: &Bound<'_, PyAny>, op: &str) -> PyResult<(Vec<Tensor>, DType)> {
    let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = seq.cast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = seq.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        return Err(type_err(format!(
            "{op}(): argument 'tensors' must be tuple of Tensors, not {}",
            seq.get_type().name()?
        )));
    };
    if items.is_empty() {
        return Err(runtime_err(format!("{op}(): expected a non-empty list of Tensors")));
    }
    let mut ts = Vec::with_capacity(items.len());
    let mut dt: Option<DType> = None;
    for it in &items {
        let t = it.cast::<PyTensor>().map_err(|_| {
            type_err(format!("expected Tensor as element in argument 0, but got {}", it.get_type().name().map(|n| n.to_string()).unwrap_or_default()))
        })?;
        let t = t.borrow();
        dt = Some(dt.map_or(t.dtype, |d| DType::promote(d, t.dtype)));
        ts.push((t.t.clone(), t.dtype));
    }
    let dt = dt.unwrap_or(crate::dtype::default_float());
    let ts = ts.into_iter().map(|(t, d)| cast(&t, d, dt)).collect::<PyResult<_>>()?;
    Ok((ts, dt))
}

/// torch.cat: legacy 1-D empty tensors are skipped; other shapes must match except at `dim`.
#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, out=None))]
pub fn cat(tensors: &Bound<'_, PyAny>, dim: i64, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Py<PyAny>> {
    super::inplace::into_out(tensors.py(), cat_impl(tensors, dim)?, out)
}

fn cat_impl(tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<PyTensor> {
    let (ts, dt) = promoted(tensors, "cat")?;
    let ts: Vec<Tensor> = {
        let kept: Vec<Tensor> = ts.iter().filter(|t| !(t.rank() == 1 && t.elem_count() == 0)).cloned().collect();
        if kept.is_empty() { vec![ts[0].clone()] } else { kept }
    };
    let r = ts[0].rank();
    if r == 0 {
        return Err(runtime_err("zero-dimensional tensor (at position 0) cannot be concatenated"));
    }
    let d = norm_dim(dim, r)?;
    for (i, t) in ts.iter().enumerate() {
        if t.rank() != r {
            return Err(runtime_err(format!(
                "Tensors must have same number of dimensions: got {r} and {}", t.rank()
            )));
        }
        for k in 0..r {
            if k != d && t.dims()[k] != ts[0].dims()[k] {
                return Err(shape_err(format!(
                    "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                    ts[0].dims()[k], t.dims()[k]
                )));
            }
        }
    }
    if ts.iter().any(super::meta::is_meta) {
        let mut dims = ts[0].dims().to_vec();
        dims[d] = ts.iter().map(|t| t.dims()[d]).sum();
        return super::meta::meta_tensor(&dims, dt);
    }
    if let Some(out) = cat_cpu(&ts, d)? {
        return Ok(PyTensor::new(out, dt));
    }
    // Candle hands back a lone input as is; torch's cat always returns new memory.
    let out = if ts.len() == 1 { ts[0].copy() } else { Python::attach(|py| py.detach(|| Tensor::cat(&ts, d))) }.py()?;
    Ok(PyTensor::new(out, dt))
}

/// One input of `cat_cpu` read in place: the block it gives output row o (its dims from the cat dim
/// on, contiguous in memory) starts at `base + offset(o)`.
struct Rows {
    base: usize,
    /// The outer dims (before the cat dim) with their strides, size-1 dims left out; one stride
    /// where they merge into one (a slice of the last dim, a contiguous input).
    outer: Vec<(usize, usize)>,
    merged: Option<usize>,
}

impl Rows {
    /// None where the input's block is not contiguous (it is copied first).
    fn of(t: &Tensor, d: usize) -> Option<Rows> {
        let layout = t.layout();
        let (dims, strides) = (t.dims(), layout.stride());
        let mut expect = 1;
        for k in (d..dims.len()).rev() {
            if dims[k] != 1 && strides[k] != expect {
                return None;
            }
            expect *= dims[k];
        }
        let outer: Vec<(usize, usize)> = (0..d).filter(|&k| dims[k] != 1).map(|k| (dims[k], strides[k])).collect();
        let merged = match outer.last() {
            None => Some(0),
            Some(&(_, last)) => outer.windows(2).all(|p| p[0].1 == p[1].0 * p[1].1).then_some(last),
        };
        Some(Rows { base: layout.start_offset(), outer, merged })
    }
    #[inline]
    fn offset(&self, o: usize) -> usize {
        if let Some(s) = self.merged {
            return self.base + o * s;
        }
        let (mut rest, mut at) = (o, self.base);
        for &(n, s) in self.outer.iter().rev() {
            at += rest % n * s;
            rest /= n;
        }
        at
    }
}

/// cat of CPU tensors in one pass over the output, split over the pool when large: the output is
/// `outer` rows, each the inputs' blocks side by side (Candle's cat copies block by block on one
/// thread). Inputs are read where they are when each one's block is contiguous (rotary embeddings'
/// `cat((-x2, x1), -1)` of last-dim slices); others are copied first. None where our kernels do
/// not run (other devices, the generic test mode).
fn cat_cpu(ts: &[Tensor], d: usize) -> PyResult<Option<Tensor>> {
    use candle_core::DType as C;
    let dt = ts[0].dtype();
    let ours = matches!(dt, C::U8 | C::I16 | C::I32 | C::I64 | C::F16 | C::BF16 | C::F32 | C::F64);
    if !ours || ts.iter().any(|t| t.dtype() != dt || !crate::device::cpu_kernels(t)) {
        return Ok(None);
    }
    let dims0 = ts[0].dims();
    let (outer, inner) = (dims0[..d].iter().product::<usize>(), dims0[d + 1..].iter().product::<usize>());
    let mut dims = dims0.to_vec();
    dims[d] = ts.iter().map(|t| t.dims()[d]).sum();
    let mut conts = Vec::with_capacity(ts.len());
    let mut rows = Vec::with_capacity(ts.len());
    for t in ts {
        let (t, r) = match Rows::of(t, d) {
            Some(r) => (t.clone(), r),
            None => {
                let c = super::copy_contiguous(t)?;
                let r = Rows::of(&c, d).ok_or_else(|| runtime_err("cat: a copied input is not contiguous"))?;
                (c, r)
            }
        };
        conts.push(t);
        rows.push(r);
    }
    // Each input's block width in an output row, and where it starts there.
    let widths: Vec<usize> = conts.iter().map(|t| t.dims()[d] * inner).collect();
    let starts: Vec<usize> = widths.iter().scan(0, |acc, &w| { let s = *acc; *acc += w; Some(s) }).collect();
    let row: usize = widths.iter().sum();
    let out = super::with_dtype!(dt, T => {
        let guards: Vec<_> = conts.iter().map(|t| t.storage_and_layout()).collect();
        let mut slices: Vec<&[T]> = Vec::with_capacity(conts.len());
        for (g, _) in guards.iter() {
            let candle_core::Storage::Cpu(cpu) = &**g else { return Err(runtime_err("expected a CPU tensor")) };
            slices.push(cpu.as_slice::<T>().py()?);
        }
        let mut out = super::kernels::uninit_vec::<T>(outer * row);
        // Output positions start..start + dst.len(), copied in runs from the inputs in turn.
        let fill = |start: usize, dst: &mut [T]| {
            let (mut pos, end) = (start, start + dst.len());
            let (mut o, j) = (pos / row, pos % row);
            let mut k = starts.partition_point(|&s| s <= j) - 1;
            let mut off = j - starts[k];
            while pos < end {
                let n = (widths[k] - off).min(end - pos);
                let from = rows[k].offset(o) + off;
                dst[pos - start..pos - start + n].copy_from_slice(&slices[k][from..from + n]);
                pos += n;
                off = 0;
                k += 1;
                if k == widths.len() {
                    (k, o) = (0, o + 1);
                }
            }
        };
        if out.len() >= super::kernels::PAR_THRESHOLD && crate::pool::threads() > 1 {
            let chunk = out.len().div_ceil(4 * crate::pool::threads()).clamp(4096, 1 << 16);
            Python::attach(|py| py.detach(|| crate::pool::chunks_mut(&mut out, chunk, |i, c| fill(i * chunk, c))));
        } else if !out.is_empty() {
            fill(0, &mut out);
        }
        drop(guards);
        Tensor::from_vec(out, dims.as_slice(), &candle_core::Device::Cpu).py()
    })?;
    Ok(Some(out))
}

#[pyfunction]
#[pyo3(signature = (tensors, dim=0, *, out=None))]
pub fn stack(tensors: &Bound<'_, PyAny>, dim: i64, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Py<PyAny>> {
    super::inplace::into_out(tensors.py(), stack_impl(tensors, dim)?, out)
}

fn stack_impl(tensors: &Bound<'_, PyAny>, dim: i64) -> PyResult<PyTensor> {
    let (ts, dt) = promoted(tensors, "stack")?;
    let d = norm_dim(dim, ts[0].rank() + 1)?;
    for (i, t) in ts.iter().enumerate() {
        if t.dims() != ts[0].dims() {
            return Err(shape_err(format!(
                "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
                ts[0].dims(), t.dims()
            )));
        }
    }
    let out = if ts.len() == 1 { ts[0].unsqueeze(d).and_then(|t| t.copy()) } else { Tensor::stack(&ts, d) }.py()?;
    Ok(PyTensor::new(out, dt))
}
