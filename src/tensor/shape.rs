//! Shape surface and shape ops: views where Candle has them (reshape, permute, narrow, expand).

use candle_core::Tensor;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PySequence, PyTuple};

use super::{norm_dim, PyTensor};
use crate::dtype::PyDType;
use crate::error::{runtime_err, shape_err, type_err, IntoPyResult};

static SIZE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `candle_bind.Size` (a tuple subclass defined in Python) holding `dims`.
pub fn size_object(py: Python<'_>, dims: &[usize]) -> PyResult<Py<PyAny>> {
    let cls = SIZE.get_or_try_init(py, || -> PyResult<_> {
        Ok(py.import("candle_bind._size")?.getattr("Size")?.unbind())
    })?;
    let tup = PyTuple::new(py, dims)?;
    Ok(cls.bind(py).call1((tup,))?.unbind())
}

/// torch's computeStride test: can `new` be a view of a tensor with these sizes and strides?
fn view_possible(old: &[usize], stride: &[usize], new: &[usize]) -> bool {
    if old.iter().product::<usize>() == 0 || old.is_empty() {
        return true;
    }
    let mut view_d = new.len() as isize - 1;
    let mut chunk = *stride.last().unwrap_or(&1);
    let (mut tensor_numel, mut view_numel) = (1usize, 1usize);
    for d in (0..old.len()).rev() {
        tensor_numel *= old[d];
        if d == 0 || (old[d - 1] != 1 && stride[d - 1] != tensor_numel * chunk) {
            while view_d >= 0 && (view_numel < tensor_numel || new[view_d as usize] == 1) {
                view_numel *= new[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return false;
            }
            if d > 0 {
                chunk = stride[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    view_d == -1
}

/// Reads a shape given as varargs (`view(2, 3)`) or one sequence (`view((2, 3))`); -1 allowed.
pub fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if !a.is_instance_of::<pyo3::types::PyInt>() {
            if let Ok(seq) = a.cast::<PySequence>() {
                return seq.try_iter()?.map(|x| int_arg(&x?)).collect();
            }
        }
    }
    args.iter().map(|x| int_arg(&x)).collect()
}

/// An int argument: Python ints, numpy ints and one-element integer tensors.
pub fn int_arg(ob: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(t) = ob.cast::<PyTensor>() {
        let t = t.borrow();
        if t.numel() == 1 && !t.dtype.is_float() {
            return t.t.flatten_all().py()?.to_dtype(candle_core::DType::I64).py()?.get(0).py()?.to_scalar::<i64>().py();
        }
    }
    ob.extract::<i64>().map_err(|_| {
        type_err(format!(
            "expected an int, got {}",
            ob.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

/// Resolves a view shape with one optional -1, with torch's error text.
pub fn infer_shape(shape: &[i64], numel: usize) -> PyResult<Vec<usize>> {
    let bad = || shape_err(format!("shape '{:?}' is invalid for input of size {numel}", shape));
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                return Err(runtime_err("only one dimension can be inferred"));
            }
            infer = Some(i);
        } else if d < 0 {
            return Err(runtime_err(format!("invalid shape dimension {d}")));
        } else {
            known *= d as usize;
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    match infer {
        Some(i) => {
            if known == 0 || numel % known != 0 {
                return Err(bad());
            }
            out[i] = numel / known;
        }
        None if known != numel => return Err(bad()),
        None => {}
    }
    Ok(out)
}

fn dims_arg(ob: &Bound<'_, PyAny>, rank: usize) -> PyResult<Vec<usize>> {
    let raw: Vec<i64> = if let Ok(i) = ob.extract::<i64>() { vec![i] } else { ob.extract()? };
    raw.into_iter().map(|d| norm_dim(d, rank)).collect()
}

/// The shape given positionally or by torch's keyword (`x.reshape(shape=...)`, `x.view(size=...)`).
fn shape_keyword<'py>(shape: &Bound<'py, PyTuple>, kwargs: Option<&Bound<'py, PyDict>>, name: &str, keyword: &str) -> PyResult<Bound<'py, PyTuple>> {
    let Some(kw) = kwargs.filter(|k| !k.is_empty()) else { return Ok(shape.clone()) };
    for key in kw.keys() {
        let key: String = key.extract()?;
        if key != keyword {
            return Err(type_err(format!("{name}() got an unexpected keyword argument '{key}'")));
        }
    }
    if !shape.is_empty() {
        return Err(type_err(format!("{name}() got multiple values for argument '{keyword}'")));
    }
    match kw.get_item(keyword)? {
        Some(v) => PyTuple::new(shape.py(), [v]),
        None => Ok(shape.clone()),
    }
}

/// Splits sizes for `split`: an int chunk size or a list of sizes.
fn split_sizes(split: &Bound<'_, PyAny>, len: usize) -> PyResult<Vec<usize>> {
    if let Ok(n) = split.extract::<i64>() {
        if n <= 0 && len > 0 {
            return Err(runtime_err(format!("split_size can only be 0 if dimension size is 0, but got dimension size of {len}")));
        }
        let n = n.max(1) as usize;
        let mut v = vec![n; len / n];
        if len % n != 0 || len == 0 {
            v.push(len % n);
        }
        return Ok(v);
    }
    let v: Vec<usize> = split.extract()?;
    if v.iter().sum::<usize>() != len {
        return Err(runtime_err(format!(
            "split_with_sizes expects split_sizes to sum exactly to {len} (input tensor's size at dimension), but got split_sizes={v:?}"
        )));
    }
    Ok(v)
}

impl PyTensor {
    pub fn view_shape(&self, shape: &[i64]) -> PyResult<PyTensor> {
        let dims = infer_shape(shape, self.numel())?;
        // Candle's reshape copies non-contiguous input, as torch's reshape does.
        self.reshaped(dims)
    }

    /// Candle's reshape, except that a meta tensor stays meta (reshaping its broadcast would copy).
    pub fn reshaped<S: candle_core::shape::ShapeWithOneHole>(&self, dims: S) -> PyResult<PyTensor> {
        if self.is_meta() {
            let shape = dims.into_shape(self.numel()).py()?;
            return self.meta_like(shape.dims());
        }
        Ok(self.same(self.t.reshape(dims).py()?))
    }

    pub fn pieces(&self, sizes: &[usize], dim: usize) -> PyResult<Vec<PyTensor>> {
        let mut start = 0;
        sizes
            .iter()
            .map(|&n| {
                let p = self.same(self.t.narrow(dim, start, n).py()?);
                start += n;
                Ok(p)
            })
            .collect()
    }
}

#[pymethods]
impl PyTensor {
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.size_obj(py)
    }
    #[pyo3(signature = (dim=None))]
    fn size(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        match dim {
            None => self.size_obj(py),
            Some(d) => Ok(self.dims()[norm_dim(d, self.rank())?].into_pyobject(py)?.into_any().unbind()),
        }
    }
    fn dim(&self) -> usize {
        self.rank()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.rank()
    }
    fn ndimension(&self) -> usize {
        self.rank()
    }
    #[pyo3(name = "numel")]
    fn py_numel(&self) -> usize {
        self.t.elem_count()
    }
    fn nelement(&self) -> usize {
        self.t.elem_count()
    }
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyDType>> {
        PyDType::object(py, self.dtype)
    }
    #[pyo3(signature = (dim=None))]
    fn stride(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        let st = self.t.stride();
        match dim {
            None => Ok(PyTuple::new(py, st)?.into_any().unbind()),
            Some(d) => Ok(st[norm_dim(d, self.rank())?].into_pyobject(py)?.into_any().unbind()),
        }
    }
    fn storage_offset(&self) -> usize {
        self.t.layout().start_offset()
    }
    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }
    fn is_floating_point(&self) -> bool {
        self.dtype.is_float()
    }
    fn is_complex(&self) -> bool {
        false
    }
    fn element_size(&self) -> usize {
        self.dtype.itemsize()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.itemsize()
    }
    #[getter]
    fn nbytes(&self) -> usize {
        self.dtype.itemsize() * self.numel()
    }
    #[getter]
    fn requires_grad(&self) -> bool {
        self.requires_grad.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[setter]
    fn set_requires_grad(&self, value: bool) -> PyResult<()> {
        if value && !self.dtype.is_float() {
            return Err(runtime_err("only Tensors of floating point dtype can require gradients"));
        }
        self.requires_grad.store(value, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    /// The tensor's data as a tensor sharing its memory; assigning rebinds this tensor to new data
    /// (what `Module.to()` and `param.data = ...` do).
    #[getter]
    fn data(&self) -> PyTensor {
        self.same(self.t.clone())
    }
    #[setter]
    fn set_data(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = value.cast::<PyTensor>().map_err(|_| crate::error::type_err("data must be a Tensor"))?;
        // Borrowing fails only when value is this very tensor (mutably borrowed here): a no-op.
        let Ok(v) = v.try_borrow() else { return Ok(()) };
        self.t = v.t.clone();
        self.dtype = v.dtype;
        Ok(())
    }
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: PyRef<'_, Self>, requires_grad: bool) -> PyResult<PyRef<'_, Self>> {
        slf.set_requires_grad(requires_grad)?;
        Ok(slf)
    }
    #[getter]
    fn grad(&self) -> Option<PyTensor> {
        None
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        true
    }
    #[getter]
    fn grad_fn(&self) -> Option<PyTensor> {
        None
    }
    fn detach(&self) -> PyTensor {
        self.same(self.t.clone())
    }
    fn detach_(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    /// A deep copy (torch's clone never shares storage). As torch's preserve_format: a permuted dense
    /// tensor keeps its strides; anything else (broadcast, sliced with gaps) comes back contiguous, and
    /// only the elements the tensor shows are copied.
    #[pyo3(signature = (*, memory_format=None))]
    fn clone(&self, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let _ = memory_format;
        if self.is_meta() {
            return self.meta_like(self.dims());
        }
        self.reserve(self.dims())?;
        let l = self.t.layout();
        let t = if !l.is_contiguous() && dense_permutation(l.dims(), l.stride()) {
            self.t.copy().py()?
        } else {
            super::copy_contiguous(&self.t)?
        };
        Ok(self.same(t))
    }
    #[pyo3(signature = (memory_format=None))]
    fn contiguous(&self, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let _ = memory_format;
        if self.is_meta() || self.t.is_contiguous() {
            return Ok(self.same(self.t.clone()));
        }
        self.reserve(self.dims())?;
        Ok(self.same(super::copy_contiguous(&self.t)?))
    }

    #[pyo3(signature = (*shape, **kwargs))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<PyTensor> {
        let shape = shape_keyword(shape, kwargs, "reshape", "shape")?;
        self.view_shape(&shape_args(&shape)?)
    }
    /// view: like reshape, but refuses what torch cannot express as a view.
    #[pyo3(signature = (*shape, **kwargs))]
    fn view(&self, shape: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<PyTensor> {
        let shape = &shape_keyword(shape, kwargs, "view", "size")?;
        if shape.len() == 1 {
            if let Ok(d) = crate::dtype::extract_dtype(&shape.get_item(0)?) {
                if d.itemsize() != self.dtype.itemsize() {
                    return Err(runtime_err("view(dtype) with a different element size is not supported"));
                }
                return Err(runtime_err("view(dtype) is not supported yet; use .to(dtype)"));
            }
        }
        let dims = infer_shape(&shape_args(shape)?, self.numel())?;
        if !self.t.is_contiguous() && !view_possible(self.dims(), self.t.stride(), &dims) {
            return Err(runtime_err(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
            ));
        }
        // Where torch makes a strided view that Candle cannot express (a view of a narrowed
        // tensor, say), the result is a copy with the same values.
        Ok(self.reshaped(dims)?)
    }
    fn view_as(&self, other: &PyTensor) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.dims().iter().map(|&d| d as i64).collect();
        self.view_shape(&s)
    }
    fn reshape_as(&self, other: &PyTensor) -> PyResult<PyTensor> {
        self.view_as(other)
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let raw = shape_args(dims)?;
        let r = self.rank();
        if raw.len() != r {
            return Err(runtime_err(format!(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {r} is not equal to len(dims) = {}",
                raw.len()
            )));
        }
        let d: Vec<usize> = raw.iter().map(|&x| norm_dim(x, r)).collect::<PyResult<_>>()?;
        let mut seen = vec![false; r];
        for &x in &d {
            if std::mem::replace(&mut seen[x], true) {
                return Err(runtime_err("permute(): duplicate dims are not allowed."));
            }
        }
        Ok(self.same(self.t.permute(d).py()?))
    }
    fn transpose(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        if self.rank() == 0 {
            return Ok(self.same(self.t.clone()));
        }
        let (a, b) = (norm_dim(dim0, self.rank())?, norm_dim(dim1, self.rank())?);
        Ok(self.same(self.t.transpose(a, b).py()?))
    }
    fn swapaxes(&self, axis0: i64, axis1: i64) -> PyResult<PyTensor> {
        self.transpose(axis0, axis1)
    }
    fn swapdims(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        self.transpose(dim0, dim1)
    }
    fn t(&self) -> PyResult<PyTensor> {
        match self.rank() {
            0 | 1 => Ok(self.same(self.t.clone())),
            2 => self.transpose(0, 1),
            r => Err(runtime_err(format!("t() expects a tensor with <= 2 dimensions, but self is {r}D"))),
        }
    }
    #[getter(T)]
    fn big_t(&self) -> PyResult<PyTensor> {
        let r = self.rank();
        Ok(self.same(self.t.permute((0..r).rev().collect::<Vec<_>>()).py()?))
    }
    #[getter(mT)]
    fn m_t(&self) -> PyResult<PyTensor> {
        if self.rank() < 2 {
            return Err(runtime_err("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."));
        }
        self.transpose(-2, -1)
    }
    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
        if self.rank() == 0 {
            return Ok(self.reshaped(1)?);
        }
        let (s, e) = (norm_dim(start_dim, self.rank())?, norm_dim(end_dim, self.rank())?);
        if s > e {
            return Err(runtime_err("flatten() has invalid args: start_dim cannot come after end_dim"));
        }
        let d = self.dims();
        let mut out: Vec<usize> = d[..s].to_vec();
        out.push(d[s..=e].iter().product());
        out.extend_from_slice(&d[e + 1..]);
        Ok(self.reshaped(out)?)
    }
    fn unflatten(&self, dim: i64, sizes: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let d = norm_dim(dim, self.rank())?;
        let sizes: Vec<i64> = sizes.extract()?;
        let inner = infer_shape(&sizes, self.dims()[d]).map_err(|_| {
            runtime_err(format!(
                "unflatten: Provided sizes {sizes:?} don't multiply up to the size of dim {dim} ({}) in the input tensor",
                self.dims()[d]
            ))
        })?;
        let mut out: Vec<usize> = self.dims()[..d].to_vec();
        out.extend(inner);
        out.extend_from_slice(&self.dims()[d + 1..]);
        Ok(self.reshaped(out)?)
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let r = self.rank();
        let drop: Vec<usize> = match dim {
            None => (0..r).filter(|&i| self.dims()[i] == 1).collect(),
            Some(d) => dims_arg(d, r)?.into_iter().filter(|&i| r > 0 && self.dims()[i] == 1).collect(),
        };
        let out: Vec<usize> = (0..r).filter(|i| !drop.contains(i)).map(|i| self.dims()[i]).collect();
        Ok(self.reshaped(out)?)
    }
    fn unsqueeze(&self, dim: i64) -> PyResult<PyTensor> {
        let d = norm_dim(dim, self.rank() + 1)?;
        Ok(self.same(self.t.unsqueeze(d).py()?))
    }
    /// expand(*sizes): -1 keeps a dim; new leading dims allowed; a view with stride 0.
    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let s = shape_args(sizes)?;
        let r = self.rank();
        if s.len() < r {
            return Err(runtime_err(format!(
                "expand(torch.FloatTensor{{{:?}}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({r})",
                self.dims(), s.len(), s.len(), 
            )));
        }
        let pad = s.len() - r;
        let mut target = Vec::with_capacity(s.len());
        for (i, &d) in s.iter().enumerate() {
            let cur = if i >= pad { Some(self.dims()[i - pad]) } else { None };
            let v = match (d, cur) {
                (-1, Some(c)) => c,
                (-1, None) => return Err(runtime_err("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0")),
                (d, Some(c)) if c != 1 && d as usize != c => {
                    return Err(shape_err(format!(
                        "The expanded size of the tensor ({d}) must match the existing size ({c}) at non-singleton dimension {i}.  Target sizes: {s:?}.  Tensor sizes: {:?}",
                        self.dims()
                    )))
                }
                (d, _) if d < 0 => return Err(runtime_err(format!("invalid expand size {d}"))),
                (d, _) => d as usize,
            };
            target.push(v);
        }
        Ok(self.same(self.t.broadcast_as(target).py()?))
    }
    fn expand_as(&self, other: &PyTensor) -> PyResult<PyTensor> {
        Python::attach(|py| self.expand(&PyTuple::new(py, other.dims())?))
    }
    fn broadcast_to(&self, size: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Python::attach(|py| self.expand(&PyTuple::new(py, [size])?))
    }
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let s = shape_args(sizes)?;
        if s.len() < self.rank() {
            return Err(runtime_err(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
            ));
        }
        if let Some(&bad) = s.iter().find(|&&x| x < 0) {
            return Err(runtime_err(format!("Trying to create tensor with negative dimension {bad}: {s:?}")));
        }
        let mut t = self.t.clone();
        for _ in self.rank()..s.len() {
            t = t.unsqueeze(0).py()?;
        }
        let reps: Vec<usize> = s.iter().map(|&x| x as usize).collect();
        let dims = t.dims().iter().zip(&reps).map(|(a, b)| a.checked_mul(*b)).collect::<Option<Vec<usize>>>();
        let dims = dims.ok_or_else(|| runtime_err(format!("Storage size calculation overflowed with sizes={s:?}")))?;
        self.reserve(&dims)?;
        if reps.contains(&0) {
            return Ok(self.same(Tensor::zeros(dims, self.dtype.candle(), t.device()).py()?));
        }
        // Candle returns the input itself for all-ones repeats; torch's repeat always copies.
        let r = t.repeat(reps.as_slice()).py()?;
        Ok(self.same(if reps.iter().all(|&x| x == 1) { r.copy().py()? } else { r }))
    }
    /// repeat_interleave(repeats, dim=None): an int or a 1-D tensor of counts.
    #[pyo3(signature = (repeats, dim=None, *, output_size=None))]
    fn repeat_interleave(&self, repeats: &Bound<'_, PyAny>, dim: Option<i64>, output_size: Option<usize>) -> PyResult<PyTensor> {
        let _ = output_size;
        let (src, d) = match dim {
            None => (self.t.flatten_all().py()?, 0),
            Some(d) => (self.t.clone(), norm_dim(d, self.rank())?),
        };
        let n = src.dims().get(d).copied().unwrap_or(1);
        let counts: Vec<usize> = if let Ok(r) = repeats.extract::<i64>() {
            if r < 0 {
                return Err(runtime_err("repeats can not be negative"));
            }
            vec![r as usize; n]
        } else {
            let rt = repeats.cast::<PyTensor>()?.borrow();
            let c: Vec<i64> = rt.t.flatten_all().py()?.to_dtype(candle_core::DType::I64).py()?.to_vec1().py()?;
            let c = if c.len() == 1 { vec![c[0]; n] } else { c };
            if c.len() != n {
                return Err(runtime_err("repeats must have the same size as input along dim"));
            }
            if c.iter().any(|&x| x < 0) {
                return Err(runtime_err("repeats can not be negative"));
            }
            c.into_iter().map(|x| x as usize).collect()
        };
        let total = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c));
        let total = total.ok_or_else(|| runtime_err("repeat_interleave: the output size overflows"))?;
        crate::memory::ensure(&[total], candle_core::DType::I64, &candle_core::Device::Cpu)?;
        let row: usize = src.dims().iter().enumerate().filter(|&(i, _)| i != d).map(|(_, &x)| x).product();
        self.reserve(&[total, row])?;
        let idx: Vec<i64> = counts.iter().enumerate().flat_map(|(i, &c)| std::iter::repeat_n(i as i64, c)).collect();
        let len = idx.len();
        let idx = Tensor::from_vec(idx, len, src.device()).py()?;
        Ok(self.same(src.contiguous().py()?.index_select(&idx, d).py()?))
    }
    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(&self, chunks: usize, dim: i64) -> PyResult<Vec<PyTensor>> {
        if chunks == 0 {
            return Err(runtime_err("chunk expects `chunks` to be greater than 0, got: 0"));
        }
        if self.rank() == 0 {
            return Err(runtime_err("chunk expects at least a 1-dimensional tensor"));
        }
        let d = norm_dim(dim, self.rank())?;
        let len = self.dims()[d];
        let size = len.div_ceil(chunks).max(1);
        let mut sizes = vec![size; len / size];
        if len % size != 0 {
            sizes.push(len % size);
        }
        self.pieces(&sizes, d)
    }
    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn split(&self, split_size_or_sections: &Bound<'_, PyAny>, dim: i64) -> PyResult<Vec<PyTensor>> {
        if self.rank() == 0 {
            return Err(runtime_err("split expects at least a 1-dimensional tensor"));
        }
        let d = norm_dim(dim, self.rank())?;
        let sizes = split_sizes(split_size_or_sections, self.dims()[d])?;
        self.pieces(&sizes, d)
    }
    #[pyo3(signature = (dim=0))]
    fn unbind(&self, dim: i64) -> PyResult<Vec<PyTensor>> {
        if self.rank() == 0 {
            return Err(crate::error::index_err("Dimension specified as 0 but tensor has no dimensions"));
        }
        let d = norm_dim(dim, self.rank())?;
        (0..self.dims()[d]).map(|i| Ok(self.same(self.t.narrow(d, i, 1).py()?.squeeze(d).py()?))).collect()
    }
    fn narrow(&self, dim: i64, start: i64, length: usize) -> PyResult<PyTensor> {
        if self.rank() == 0 {
            return Err(runtime_err("narrow() cannot be applied to a 0-dim tensor."));
        }
        let d = norm_dim(dim, self.rank())?;
        let n = self.dims()[d] as i64;
        let s = if start < 0 { start + n } else { start };
        if s < 0 || s as usize + length > n as usize {
            return Err(crate::error::index_err(format!(
                "start ({start}) + length ({length}) exceeds dimension size ({n})."
            )));
        }
        Ok(self.same(self.t.narrow(d, s as usize, length).py()?))
    }
    #[pyo3(signature = (*dims))]
    fn flip(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let d: Vec<usize> = shape_args(dims)?.into_iter().map(|x| norm_dim(x, self.rank())).collect::<PyResult<_>>()?;
        if self.is_meta() {
            return self.meta_like(self.dims());
        }
        Ok(self.same(self.t.flip(&d).py()?))
    }
    fn fliplr(&self) -> PyResult<PyTensor> {
        if self.rank() < 2 {
            return Err(runtime_err("Input must be >= 2-d."));
        }
        if self.is_meta() {
            return self.meta_like(self.dims());
        }
        Ok(self.same(self.t.flip(&[1]).py()?))
    }
    fn flipud(&self) -> PyResult<PyTensor> {
        if self.rank() < 1 {
            return Err(runtime_err("Input must be >= 1-d."));
        }
        if self.is_meta() {
            return self.meta_like(self.dims());
        }
        Ok(self.same(self.t.flip(&[0]).py()?))
    }
    /// roll(shifts, dims=None): without dims the flattened tensor rolls and keeps its shape.
    #[pyo3(signature = (shifts, dims=None))]
    fn roll(&self, shifts: &Bound<'_, PyAny>, dims: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let shifts: Vec<i64> = if let Ok(s) = shifts.extract::<i64>() { vec![s] } else { shifts.extract()? };
        match dims.filter(|d| !d.is_none()) {
            None => {
                if shifts.len() != 1 {
                    return Err(runtime_err("shifts and dimensions must align"));
                }
                let flat = self.t.flatten_all().py()?;
                let n = flat.elem_count();
                if n == 0 {
                    return Ok(self.same(self.t.clone()));
                }
                let r = flat.roll(shifts[0].rem_euclid(n as i64) as i32, 0).py()?;
                Ok(self.same(r.reshape(self.dims()).py()?))
            }
            Some(d) => {
                let ds = dims_arg(d, self.rank())?;
                if ds.len() != shifts.len() {
                    return Err(runtime_err(format!(
                        "shifts and dimensions must align. shifts: {}, dims:{}",
                        shifts.len(),
                        ds.len()
                    )));
                }
                if self.rank() == 0 {
                    return Err(crate::error::index_err("Dimension specified as 0 but tensor has no dimensions"));
                }
                let mut t = self.t.clone();
                for (&d, &s) in ds.iter().zip(&shifts) {
                    let n = t.dims()[d] as i64;
                    if n > 0 {
                        t = t.roll(s.rem_euclid(n) as i32, d).py()?;
                    }
                }
                Ok(self.same(t))
            }
        }
    }
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, diagonal: i64) -> PyResult<PyTensor> {
        tri(self, diagonal, true)
    }
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, diagonal: i64) -> PyResult<PyTensor> {
        tri(self, diagonal, false)
    }
}

/// Keeps the lower (or upper) triangle of the last two dims.
fn tri(x: &PyTensor, k: i64, lower: bool) -> PyResult<PyTensor> {
    let r = x.rank();
    if r < 2 {
        return Err(runtime_err(format!("{}: input tensor must have at least 2 dimensions", if lower { "tril" } else { "triu" })));
    }
    let (n, m) = (x.dims()[r - 2], x.dims()[r - 1]);
    let mask: Vec<u8> = (0..n * m)
        .map(|i| {
            let (row, col) = ((i / m) as i64, (i % m) as i64);
            (if lower { col - row <= k } else { col - row >= k }) as u8
        })
        .collect();
    let mask = Tensor::from_vec(mask, (n, m), x.t.device()).py()?;
    let zero = Tensor::zeros((), x.dtype.candle(), x.t.device()).py()?;
    let out = mask
        .broadcast_as(x.dims())
        .py()?
        .where_cond(&x.t, &zero.broadcast_as(x.dims()).py()?)
        .py()?;
    Ok(x.same(out))
}

/// Whether strides are a permutation of a contiguous layout's (no overlap, no gaps).
fn dense_permutation(dims: &[usize], strides: &[usize]) -> bool {
    let mut pairs: Vec<(usize, usize)> =
        dims.iter().zip(strides).filter(|(d, _)| **d > 1).map(|(d, s)| (*s, *d)).collect();
    pairs.sort_unstable();
    let mut expected = 1usize;
    for (stride, size) in pairs {
        if stride != expected {
            return false;
        }
        expected = expected.saturating_mul(size);
    }
    true
}
