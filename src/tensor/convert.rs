//! Conversions: numpy in and out (zero-copy export), Python scalars and lists, dtype/device moves.

use candle_core::{Storage, Tensor};
use numpy::npyffi::{self, npy_intp, NPY_TYPES, PY_ARRAY_API};
use numpy::{PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};

use super::{cast, PyTensor, Scalar};
use crate::device::{extract_device, Kind as DevKind, PyDevice};
use crate::dtype::{extract_dtype, DType};
use crate::error::{runtime_err, type_err, IntoPyResult};

/// Keeps a tensor's storage alive for as long as a numpy array views it.
#[pyclass(module = "candle_bind._C", frozen)]
struct StorageOwner {
    _t: Tensor,
}

pub fn is_ndarray(ob: &Bound<'_, PyAny>) -> bool {
    ob.cast::<PyUntypedArray>().is_ok()
}

fn npy_type(d: DType) -> PyResult<NPY_TYPES> {
    Ok(match d {
        DType::Bool => NPY_TYPES::NPY_BOOL,
        DType::U8 => NPY_TYPES::NPY_UBYTE,
        DType::I32 => NPY_TYPES::NPY_INT,
        DType::I64 => NPY_TYPES::NPY_LONGLONG,
        DType::F16 => NPY_TYPES::NPY_HALF,
        DType::F32 => NPY_TYPES::NPY_FLOAT,
        DType::F64 => NPY_TYPES::NPY_DOUBLE,
        DType::I16 => NPY_TYPES::NPY_SHORT,
        other => return Err(type_err(format!("Got unsupported ScalarType {}", other.title()))),
    })
}

/// A numpy array that shares the tensor's memory (any strides), as torch's `.numpy()`.
pub fn to_numpy<'py>(py: Python<'py>, x: &PyTensor) -> PyResult<Bound<'py, PyAny>> {
    x.check_data("numpy()")?;
    if !x.t.device().is_cpu() {
        return Err(type_err(
            "can't convert cuda device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
        ));
    }
    if x.dtype == DType::I8 {
        // int16 storage underneath: numpy gets an int8 copy (torch's shares memory).
        let wide = PyTensor::new(x.t.clone(), DType::I16);
        return to_numpy(py, &wide)?.call_method1("astype", ("int8",));
    }
    let typenum = npy_type(x.dtype)?;
    let item = x.dtype.itemsize();
    let (storage, layout) = x.t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
    let base: *const u8 = crate::with_dtype!(x.t.dtype(), T => cpu.as_slice::<T>().py().map(|s| s.as_ptr() as *const u8))?;
    // SAFETY: start_offset is within the storage (Candle's layout invariant).
    let data = unsafe { base.add(layout.start_offset() * item) } as *mut std::ffi::c_void;
    let mut dims: Vec<npy_intp> = layout.dims().iter().map(|&d| d as npy_intp).collect();
    let mut strides: Vec<npy_intp> = layout.stride().iter().map(|&s| (s * item) as npy_intp).collect();
    drop(storage);
    let owner = Py::new(py, StorageOwner { _t: x.t.clone() })?;
    // SAFETY: numpy's C API with a descr it owns, dims/strides that outlive the call, and a data
    // pointer kept valid by `owner` (set as the array's base, which takes our reference).
    unsafe {
        let descr = PY_ARRAY_API.PyArray_DescrFromType(py, typenum as i32);
        let subtype = npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type);
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            subtype,
            descr,
            dims.len() as i32,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data,
            npyffi::NPY_ARRAY_WRITEABLE,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(PyErr::fetch(py));
        }
        let arr = Bound::from_owned_ptr(py, arr);
        if PY_ARRAY_API.PyArray_SetBaseObject(py, arr.as_ptr() as *mut npyffi::PyArrayObject, owner.into_ptr()) < 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(arr)
    }
}

fn from_typed<T: numpy::Element + candle_core::WithDType>(ob: &Bound<'_, PyAny>, dtype: DType) -> PyResult<PyTensor> {
    let arr = ob.cast::<PyArrayDyn<T>>()?;
    let ro = arr.try_readonly()?;
    let shape: Vec<usize> = ro.shape().to_vec();
    // One memcpy for C-contiguous input; numpy makes the copy for any other layout.
    let v: Vec<T> = match ro.as_slice() {
        Ok(s) if ro.is_c_contiguous() => copy_slice(s),
        _ => ro.as_array().iter().copied().collect(),
    };
    Ok(PyTensor::new(Tensor::from_vec(v, shape, &candle_core::Device::Cpu).py()?, dtype))
}

/// A copy of `s`, split over the pool when large (one core's memcpy does not saturate the memory).
fn copy_slice<T: Copy + Send + Sync>(s: &[T]) -> Vec<T> {
    if s.len() < super::kernels::PAR_THRESHOLD || crate::pool::threads() < 2 {
        return s.to_vec();
    }
    let mut v = super::kernels::uninit_vec::<T>(s.len());
    let chunk = s.len().div_ceil(4 * crate::pool::threads()).next_multiple_of(1024);
    crate::pool::chunks_mut(&mut v, chunk, |i, c| c.copy_from_slice(&s[i * chunk..i * chunk + c.len()]));
    v
}

/// numpy array → tensor (one copy). Unsupported numpy dtypes raise TypeError as torch.
pub fn from_numpy_any(ob: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let arr = ob.cast::<PyUntypedArray>()?;
    let dt = arr.dtype();
    let py = ob.py();
    if dt.is_equiv_to(&numpy::dtype::<f32>(py)) {
        from_typed::<f32>(ob, DType::F32)
    } else if dt.is_equiv_to(&numpy::dtype::<f64>(py)) {
        from_typed::<f64>(ob, DType::F64)
    } else if dt.is_equiv_to(&numpy::dtype::<i64>(py)) {
        from_typed::<i64>(ob, DType::I64)
    } else if dt.is_equiv_to(&numpy::dtype::<i32>(py)) {
        from_typed::<i32>(ob, DType::I32)
    } else if dt.is_equiv_to(&numpy::dtype::<u8>(py)) {
        from_typed::<u8>(ob, DType::U8)
    } else if dt.is_equiv_to(&numpy::dtype::<i16>(py)) {
        from_typed::<i16>(ob, DType::I16)
    } else if dt.is_equiv_to(&numpy::dtype::<i8>(py)) {
        let a = ob.call_method1("astype", ("int16",))?;
        Ok(PyTensor::new(from_typed::<i16>(&a, DType::I16)?.t, DType::I8))
    } else if dt.is_equiv_to(&numpy::dtype::<half::f16>(py)) {
        from_typed::<half::f16>(ob, DType::F16)
    } else if dt.is_equiv_to(&numpy::dtype::<bool>(py)) {
        let a = ob.call_method1("view", ("uint8",))?;
        let t = from_typed::<u8>(&a, DType::U8)?;
        Ok(PyTensor::boolean(t.t))
    } else {
        Err(type_err(format!(
            "can't convert np.ndarray of type {}. The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.",
            dt.str()?
        )))
    }
}

#[pyfunction]
pub fn from_numpy(ndarray: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    if !is_ndarray(ndarray) {
        return Err(type_err(format!("expected np.ndarray (got {})", ndarray.get_type().name()?)));
    }
    from_numpy_any(ndarray)
}

/// The single value of a one-element tensor.
pub fn scalar_of(x: &PyTensor) -> PyResult<Scalar> {
    x.check_data("Tensor.item()")?;
    if x.numel() != 1 {
        return Err(runtime_err(format!("a Tensor with {} elements cannot be converted to Scalar", x.numel())));
    }
    let flat = x.t.flatten_all().py()?.get(0).py()?;
    Ok(match x.dtype {
        DType::Bool => Scalar::Bool(flat.to_scalar::<u8>().py()? != 0),
        DType::U8 => Scalar::Int(flat.to_scalar::<u8>().py()? as i64),
        DType::I8 | DType::I16 => Scalar::Int(flat.to_scalar::<i16>().py()? as i64),
        DType::I32 => Scalar::Int(flat.to_scalar::<i32>().py()? as i64),
        DType::I64 => Scalar::Int(flat.to_scalar::<i64>().py()?),
        DType::F64 => Scalar::Float(flat.to_scalar::<f64>().py()?),
        _ => Scalar::Float(flat.to_dtype(candle_core::DType::F64).py()?.to_scalar::<f64>().py()?),
    })
}

fn scalar_py(py: Python<'_>, s: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}

/// Nested Python lists of the tensor's values (Python bools, ints or floats).
pub fn to_list(py: Python<'_>, x: &PyTensor) -> PyResult<Py<PyAny>> {
    x.check_data("tolist()")?;
    fn build<T: Copy>(py: Python<'_>, v: &[T], dims: &[usize], f: &dyn Fn(Python<'_>, T) -> PyResult<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        match dims {
            [] => f(py, v[0]),
            [n, rest @ ..] => {
                let step: usize = rest.iter().product();
                let items = (0..*n).map(|i| build(py, &v[i * step..(i + 1) * step], rest, f)).collect::<PyResult<Vec<_>>>()?;
                Ok(PyList::new(py, items)?.into_any().unbind())
            }
        }
    }
    let flat = x.t.flatten_all().py()?;
    let dims = x.dims();
    match x.dtype {
        DType::Bool => build(py, &flat.to_vec1::<u8>().py()?, dims, &|py, v| scalar_py(py, Scalar::Bool(v != 0))),
        DType::U8 => build(py, &flat.to_vec1::<u8>().py()?, dims, &|py, v| scalar_py(py, Scalar::Int(v as i64))),
        DType::I32 => build(py, &flat.to_vec1::<i32>().py()?, dims, &|py, v| scalar_py(py, Scalar::Int(v as i64))),
        DType::I64 => build(py, &flat.to_vec1::<i64>().py()?, dims, &|py, v| scalar_py(py, Scalar::Int(v))),
        DType::I8 | DType::I16 => build(py, &flat.to_dtype(candle_core::DType::I64).py()?.to_vec1::<i64>().py()?, dims, &|py, v| scalar_py(py, Scalar::Int(v))),
        _ => build(py, &flat.to_dtype(candle_core::DType::F64).py()?.to_vec1::<f64>().py()?, dims, &|py, v| scalar_py(py, Scalar::Float(v))),
    }
}

static REPR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl PyTensor {
    /// This tensor in `dtype` on `device`; `None` when nothing changes (callers return self).
    fn moved(&self, dtype: Option<DType>, device: Option<PyDevice>, copy: bool) -> PyResult<Option<PyTensor>> {
        let dt = dtype.unwrap_or(self.dtype);
        let same_dev = device.is_none_or(|d| d.same(&self.t));
        if dt == self.dtype && same_dev && !copy {
            return Ok(None);
        }
        // Meta in, or meta asked for: a meta tensor (there is no data to move).
        let meta_in = self.is_meta();
        match device {
            Some(PyDevice { kind: DevKind::Meta, .. }) => return Ok(Some(super::meta::meta_tensor(self.dims(), dt)?)),
            _ if meta_in && same_dev => return Ok(Some(super::meta::meta_tensor(self.dims(), dt)?)),
            _ if meta_in => {
                return Err(crate::error::runtime_err(
                    "Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() instead of \
                     torch.nn.Module.to() when moving module from meta to a different device.",
                ))
            }
            _ => {}
        }
        crate::device::check_dtype(self.t.device(), dt)?;
        let mut t = cast(&self.t, self.dtype, dt)?;
        if !same_dev {
            if let Some(d) = device {
                let d = d.candle()?;
                crate::device::check_dtype(&d, dt)?;
                t = t.to_device(&d).py()?;
            }
        }
        if copy && dt == self.dtype && same_dev {
            t = t.copy().py()?;
        }
        Ok(Some(PyTensor::new(t, dt)))
    }

    fn as_dtype(slf: PyRef<'_, Self>, d: DType) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match slf.moved(Some(d), None, false)? {
            None => Ok(slf.into_pyobject(py)?.into_any().unbind()),
            Some(t) => Ok(Py::new(py, t)?.into_any()),
        }
    }
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (*args, dtype=None, device=None, non_blocking=false, copy=false, memory_format=None))]
    fn to(
        slf: PyRef<'_, Self>,
        args: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
        copy: bool,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = (non_blocking, memory_format);
        let mut dt = crate::dtype::opt_dtype(dtype)?;
        let mut dev = device.filter(|d| !d.is_none()).map(extract_device).transpose()?;
        for a in args.iter() {
            if let Ok(other) = a.cast::<PyTensor>() {
                let o = other.borrow();
                dt = Some(o.dtype);
                dev = Some(PyDevice::of_tensor(&o.t));
            } else if a.cast::<crate::dtype::PyDType>().is_ok() || a.is_instance_of::<pyo3::types::PyType>() {
                dt = Some(extract_dtype(&a)?);
            } else if a.is_none() {
            } else if a.is_instance_of::<pyo3::types::PyBool>() {
                // to(dtype, non_blocking, copy) positional flags: non_blocking first, then copy.
            } else {
                dev = Some(extract_device(&a)?);
            }
        }
        let py = slf.py();
        match slf.moved(dt, dev, copy)? {
            None => Ok(slf.into_pyobject(py)?.into_any().unbind()),
            Some(t) => Ok(Py::new(py, t)?.into_any()),
        }
    }
    #[getter(device)]
    fn py_device(&self) -> PyDevice {
        PyDevice::of_tensor(&self.t)
    }
    #[getter]
    fn is_cuda(&self) -> bool {
        PyDevice::of(self.t.device()).kind == DevKind::Cuda
    }
    #[getter]
    fn is_cpu(&self) -> bool {
        self.t.device().is_cpu()
    }
    #[pyo3(name = "get_device")]
    fn device_index(&self) -> i64 {
        match PyDevice::of(self.t.device()) {
            PyDevice { kind: DevKind::Cuda, index } => index.unwrap_or(0) as i64,
            _ => -1,
        }
    }
    fn cpu(slf: PyRef<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        match slf.moved(None, Some(PyDevice::CPU), false)? {
            None => Ok(slf.into_pyobject(py)?.into_any().unbind()),
            Some(t) => Ok(Py::new(py, t)?.into_any()),
        }
    }
    #[pyo3(signature = (device=None, non_blocking=false))]
    fn cuda(slf: PyRef<'_, Self>, device: Option<&Bound<'_, PyAny>>, non_blocking: bool) -> PyResult<Py<PyAny>> {
        let _ = non_blocking;
        let d = match device.filter(|d| !d.is_none()) {
            Some(d) => match d.extract::<i64>() {
                Ok(i) => PyDevice::parse("cuda", Some(i))?,
                Err(_) => extract_device(d)?,
            },
            None => PyDevice::parse("cuda", None)?,
        };
        d.candle()?;
        let py = slf.py();
        match slf.moved(None, Some(d), false)? {
            None => Ok(slf.into_pyobject(py)?.into_any().unbind()),
            Some(t) => Ok(Py::new(py, t)?.into_any()),
        }
    }
    // memory_format as torch's (values are the same whatever the layout)
    #[pyo3(signature = (*, memory_format=None))]
    fn float(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::F32)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn double(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::F64)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn half(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::F16)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn bfloat16(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::BF16)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn long(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::I64)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn int(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::I32)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn byte(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::U8)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn short(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::I16)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn char(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::I8)
    }
    #[pyo3(signature = (*, memory_format=None))]
    fn bool(slf: PyRef<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        Self::as_dtype(slf, DType::Bool)
    }
    fn type_as(slf: PyRef<'_, Self>, other: &PyTensor) -> PyResult<Py<PyAny>> {
        let d = other.dtype;
        Self::as_dtype(slf, d)
    }
    #[pyo3(signature = (*, force=false))]
    fn numpy<'py>(&self, py: Python<'py>, force: bool) -> PyResult<Bound<'py, PyAny>> {
        let _ = force;
        to_numpy(py, self)
    }
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(&self, py: Python<'py>, dtype: Option<&Bound<'py, PyAny>>, copy: Option<bool>) -> PyResult<Bound<'py, PyAny>> {
        let arr = to_numpy(py, self)?;
        match (dtype.filter(|d| !d.is_none()), copy) {
            (Some(d), _) => arr.call_method1("astype", (d,)),
            (None, Some(true)) => arr.call_method0("copy"),
            _ => Ok(arr),
        }
    }
    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_list(py, self)
    }
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        scalar_py(py, scalar_of(self)?)
    }
    fn __float__(&self) -> PyResult<f64> {
        Ok(scalar_of(self)?.as_f64())
    }
    fn __int__(&self) -> PyResult<i64> {
        Ok(scalar_of(self)?.as_i64())
    }
    fn __index__(&self) -> PyResult<i64> {
        if self.dtype.is_float() || self.numel() != 1 {
            return Err(type_err("only integer tensors of a single element can be converted to an index"));
        }
        Ok(scalar_of(self)?.as_i64())
    }
    fn __bool__(&self) -> PyResult<bool> {
        if self.numel() != 1 {
            return Err(runtime_err(format!(
                "Boolean value of Tensor with {} values is ambiguous",
                if self.numel() == 0 { "no" } else { "more than one" }
            )));
        }
        Ok(scalar_of(self)?.truthy())
    }
    fn __len__(&self) -> PyResult<usize> {
        match self.dims().first() {
            Some(&n) => Ok(n),
            None => Err(type_err("len() of a 0-d tensor")),
        }
    }
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.rank() == 0 {
            return Err(type_err("iteration over a 0-d tensor"));
        }
        let items: Vec<PyTensor> = (0..self.dims()[0])
            .map(|i| Ok(self.same(self.t.get(i).py()?)))
            .collect::<PyResult<_>>()?;
        Ok(PyList::new(py, items)?.call_method0("__iter__")?.unbind())
    }
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let f = REPR.get_or_try_init(py, || -> PyResult<_> {
            Ok(py.import("candle_bind._tensor_str")?.getattr("tensor_repr")?.unbind())
        })?;
        f.bind(py).call1((slf,))?.extract()
    }
    fn __format__(slf: &Bound<'_, Self>, spec: &str) -> PyResult<String> {
        let me = slf.borrow();
        if me.rank() == 0 && !spec.is_empty() {
            let v = me.item(slf.py())?;
            return v.bind(slf.py()).call_method1("__format__", (spec,))?.extract();
        }
        drop(me);
        Self::__repr__(slf)
    }
}
