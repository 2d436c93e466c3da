//! Selection by index: the gather/scatter/index_* methods (their kernels in scatter.rs),
//! index_select, masked_*, nonzero and bincount (sort/topk/unique/searchsorted are in order.rs, the
//! samplers in sample.rs). Results are fresh tensors (in-place forms write them back).

use candle_core::{Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::scatter::{device_index, IndexMode};
use super::{cast, norm_dim, operand_arg, with_dtype, Arg, Operand, PyTensor, Scalar};
use crate::dtype::DType;
use crate::error::{index_err, runtime_err, type_err, IntoPyResult};


/// An int64 tensor of host values on `device` (results computed on the host: nonzero, unique, ...).
pub(super) fn i64_tensor(v: Vec<i64>, dims: &[usize], device: &Device) -> PyResult<PyTensor> {
    Ok(PyTensor::new(Tensor::from_vec(v, dims, device).py()?, DType::I64))
}


impl PyTensor {

    fn masked_fill_impl(&self, mask: &PyTensor, value: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        if mask.dtype != DType::Bool {
            return Err(runtime_err(format!(
                "masked_fill_ only supports boolean masks, but got mask with dtype {}",
                mask.dtype.name()
            )));
        }
        let v = match Arg::extract(value) {
            Some(Arg::T(t)) if t.rank() != 0 => {
                return Err(runtime_err(format!(
                    "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                    t.rank()
                )))
            }
            Some(Arg::T(t)) => super::convert::scalar_of(&t)?,
            Some(Arg::S(s)) => s,
            None => return Err(type_err("masked_fill(): argument 'value' must be Number or Tensor")),
        };
        let fill = PyTensor::new(v.tensor(self.dtype, self.t.device())?, self.dtype);
        let r = super::arith::where_(mask, Operand::T(&fill), Operand::T(self))?;
        Ok(PyTensor::new(cast(&r.t, r.dtype, self.dtype)?, self.dtype))
    }

    fn nonzero_rows(&self) -> PyResult<(Vec<i64>, usize)> {
        let flags = super::host_vec::<u8>(&cast(&self.t, self.dtype, DType::Bool)?)?;
        let dims = self.dims();
        let mut out = Vec::new();
        let mut n = 0;
        for (i, &f) in flags.iter().enumerate() {
            if f != 0 {
                let mut rem = i;
                let start = out.len();
                for &dd in dims.iter().rev() {
                    out.push((rem % dd) as i64);
                    rem /= dd;
                }
                out[start..].reverse();
                n += 1;
            }
        }
        Ok((out, n))
    }
}


/// scatter's `src` (a tensor) or `value` (a number), whichever was given.
fn scatter_source<'py>(src: Option<&Bound<'py, PyAny>>, value: Option<&Bound<'py, PyAny>>) -> PyResult<super::Arg<'py>> {
    let s = src.or(value).ok_or_else(|| type_err("scatter() missing argument 'src' or 'value'"))?;
    operand_arg(s, "scatter(): src")
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (dim, index, *, sparse_grad=false))]
    fn gather(&self, dim: i64, index: &PyTensor, sparse_grad: bool) -> PyResult<PyTensor> {
        let _ = sparse_grad;
        self.gather_impl(dim, index, false)
    }

    #[pyo3(signature = (dim, index, src=None, value=None, *, reduce=None))]
    fn scatter(&self, dim: i64, index: &PyTensor, src: Option<&Bound<'_, PyAny>>, value: Option<&Bound<'_, PyAny>>, reduce: Option<&str>) -> PyResult<PyTensor> {
        self.scatter_impl(dim, index, scatter_source(src, value)?.op(), reduce)
    }
    #[pyo3(signature = (dim, index, src=None, value=None, *, reduce=None))]
    fn scatter_<'py>(slf: PyRef<'py, Self>, dim: i64, index: &PyTensor, src: Option<&Bound<'_, PyAny>>, value: Option<&Bound<'_, PyAny>>, reduce: Option<&str>) -> PyResult<PyRef<'py, Self>> {
        slf.scatter_into(dim, index, scatter_source(src, value)?.op(), reduce)?;
        Ok(slf)
    }
    fn scatter_add(&self, dim: i64, index: &PyTensor, src: &PyTensor) -> PyResult<PyTensor> {
        self.scatter_impl(dim, index, Operand::T(src), Some("add"))
    }
    fn scatter_add_<'py>(slf: PyRef<'py, Self>, dim: i64, index: &PyTensor, src: &PyTensor) -> PyResult<PyRef<'py, Self>> {
        slf.scatter_into(dim, index, Operand::T(src), Some("add"))?;
        Ok(slf)
    }

    fn index_select(&self, dim: i64, index: &PyTensor) -> PyResult<PyTensor> {
        let d = norm_dim(dim, self.rank())?;
        if index.rank() > 1 {
            return Err(index_err("index_select(): Index is supposed to be a vector"));
        }
        let n = self.dims().get(d).copied().unwrap_or(1);
        if self.rank() == 0 && index.numel() != 1 {
            return Err(runtime_err(format!("index_select(): Index to scalar can have only 1 value, got {} value(s)", index.numel())));
        }
        if !super::is_cpu(&self.t) || !super::is_cpu(&index.t) {
            crate::device::common(&[&self.t, &index.t])?;
            let (i, range) = device_index(index, n, false, "index_select")?;
            if range.is_some_and(|(lo, hi)| lo < 0 || hi >= n as i64) {
                return Err(index_err("index out of range in self"));
            }
            let row: usize = self.dims().iter().enumerate().filter(|&(i, _)| i != d).map(|(_, &x)| x).product();
            self.reserve(&[index.numel(), row])?;
            let i = i.flatten_all().py()?;
            let src = if self.rank() == 0 { self.t.reshape(1).py()? } else { self.t.clone() };
            let out = src.contiguous().py()?.index_select(&i, d).py()?;
            let out = if self.rank() == 0 { out.reshape(()).py()? } else { out };
            return Ok(self.same(out));
        }
        let row: usize = self.dims().iter().enumerate().filter(|&(i, _)| i != d).map(|(_, &x)| x).product();
        self.reserve(&[index.numel(), row])?;
        self.index_select_cpu(d, index)
    }

    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add(&self, dim: i64, index: &PyTensor, source: &PyTensor, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let a = match alpha {
            Some(a) => Scalar::extract(a).ok_or_else(|| type_err("index_add(): alpha must be a number"))?.as_f64(),
            None => 1.0,
        };
        self.index_update(dim, index, Operand::T(source), IndexMode::Add(a), "index_add")
    }
    #[pyo3(signature = (dim, index, source, *, alpha=None))]
    fn index_add_<'py>(slf: PyRef<'py, Self>, dim: i64, index: &PyTensor, source: &PyTensor, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        let r = slf.index_add(dim, index, source, alpha)?;
        slf.assign(Operand::T(&r))?;
        Ok(slf)
    }
    fn index_copy(&self, dim: i64, index: &PyTensor, source: &PyTensor) -> PyResult<PyTensor> {
        self.index_update(dim, index, Operand::T(source), IndexMode::Copy, "index_copy")
    }
    fn index_copy_<'py>(slf: PyRef<'py, Self>, dim: i64, index: &PyTensor, source: &PyTensor) -> PyResult<PyRef<'py, Self>> {
        let r = slf.index_copy(dim, index, source)?;
        slf.assign(Operand::T(&r))?;
        Ok(slf)
    }
    fn index_fill(&self, dim: i64, index: &PyTensor, value: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let v = match operand_arg(value, "index_fill(): value")? {
            Arg::T(t) if t.rank() != 0 => {
                return Err(index_err(format!(
                    "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                    t.rank()
                )))
            }
            Arg::T(t) => super::convert::scalar_of(&t)?,
            Arg::S(s) => s,
        };
        self.index_update(dim, index, Operand::S(v), IndexMode::Fill, "index_fill")
    }
    fn index_fill_<'py>(slf: PyRef<'py, Self>, dim: i64, index: &PyTensor, value: &Bound<'_, PyAny>) -> PyResult<PyRef<'py, Self>> {
        let r = slf.index_fill(dim, index, value)?;
        slf.assign(Operand::T(&r))?;
        Ok(slf)
    }

    fn masked_fill(&self, mask: &PyTensor, value: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.masked_fill_impl(mask, value)
    }
    fn masked_fill_<'py>(slf: PyRef<'py, Self>, mask: &PyTensor, value: &Bound<'_, PyAny>) -> PyResult<PyRef<'py, Self>> {
        let b = super::broadcast_dims(slf.dims(), mask.dims())?;
        if b.as_slice() != slf.dims() {
            return Err(runtime_err(format!(
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                slf.dims(),
                b
            )));
        }
        let r = slf.masked_fill_impl(mask, value)?;
        slf.assign(Operand::T(&r))?;
        Ok(slf)
    }
    fn masked_select(&self, mask: &PyTensor) -> PyResult<PyTensor> {
        if mask.dtype != DType::Bool {
            return Err(runtime_err(format!("masked_select: expected BoolTensor for mask, got {}", mask.dtype.name())));
        }
        let dims = super::broadcast_dims(self.dims(), mask.dims())?;
        crate::device::common(&[&self.t, &mask.t])?;
        let m = super::host_vec::<u8>(&mask.t.broadcast_as(dims.as_slice()).py()?)?;
        let x = self.t.broadcast_as(dims.as_slice()).py()?;
        if !super::is_cpu(&x) {
            // The positions are the host's (they decide the shape); the values stay on the device.
            let pos: Vec<u32> = m.iter().enumerate().filter(|(_, &k)| k != 0).map(|(i, _)| i as u32).collect();
            let n = pos.len();
            let pos = Tensor::from_vec(pos, n, x.device()).py()?;
            return Ok(self.same(x.flatten_all().py()?.index_select(&pos, 0).py()?));
        }
        let out = with_dtype!(x.dtype(), T => {
            let v = super::cpu_vec::<T>(&x)?;
            let sel: Vec<T> = v.iter().zip(&m).filter(|(_, &k)| k != 0).map(|(&a, _)| a).collect();
            let n = sel.len();
            Tensor::from_vec(sel, n, &Device::Cpu).py()
        })?;
        Ok(self.same(out))
    }

    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        let (v, n) = self.nonzero_rows()?;
        let r = self.rank();
        if as_tuple {
            let cols: Vec<Py<PyTensor>> = (0..r.max(1))
                .map(|j| {
                    let c: Vec<i64> = if r == 0 { vec![0; n] } else { (0..n).map(|i| v[i * r + j]).collect() };
                    Py::new(py, i64_tensor(c, &[n], self.t.device())?)
                })
                .collect::<PyResult<_>>()?;
            return Ok(PyTuple::new(py, cols)?.into_any().unbind());
        }
        Ok(Py::new(py, i64_tensor(v, &[n, r], self.t.device())?)?.into_any())
    }
    fn argwhere(&self) -> PyResult<PyTensor> {
        let (v, n) = self.nonzero_rows()?;
        i64_tensor(v, &[n, self.rank()], self.t.device())
    }

    #[pyo3(signature = (weights=None, minlength=0))]
    fn bincount(&self, weights: Option<&PyTensor>, minlength: usize) -> PyResult<PyTensor> {
        if self.rank() != 1 || !matches!(self.dtype, DType::U8 | DType::I16 | DType::I32 | DType::I64) {
            return Err(runtime_err("bincount only supports 1-d non-negative integral inputs."));
        }
        let v = super::host_vec::<i64>(&self.t)?;
        if v.iter().any(|&x| x < 0) {
            return Err(runtime_err("bincount only supports 1-d non-negative integral inputs."));
        }
        let len = v.iter().max().map_or(0, |&m| m as usize + 1).max(minlength);
        crate::memory::ensure(&[len], candle_core::DType::F64, &Device::Cpu)?;
        match weights {
            None => {
                let mut c = vec![0i64; len];
                v.iter().for_each(|&x| c[x as usize] += 1);
                i64_tensor(c, &[len], self.t.device())
            }
            Some(w) => {
                if w.dims() != self.dims() {
                    return Err(runtime_err("weights should be 1-d and have the same length as input"));
                }
                let wv = super::host_vec::<f64>(&w.t)?;
                let mut c = vec![0f64; len];
                v.iter().zip(&wv).for_each(|(&x, &y)| c[x as usize] += y);
                let out_dt = if w.dtype == DType::F32 || w.dtype == DType::F16 || w.dtype == DType::BF16 { w.dtype } else { DType::F64 };
                let t = Tensor::from_vec(c, len, self.t.device()).py()?;
                Ok(PyTensor::new(cast(&t, DType::F64, out_dt)?, out_dt))
            }
        }
    }
}
