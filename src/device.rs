//! `candle_bind.device`: torch's device object over Candle's `Device`.

use std::cell::RefCell;

use candle_core::{Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::error::{to_pyerr, DeviceError};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Kind {
    Cpu,
    Cuda,
    /// torch's meta device: tensors with a shape and a dtype and no data (see `tensor::meta`).
    Meta,
}

/// Where a factory puts its result: a Candle device, or the meta device.
pub enum Place {
    Real(Device),
    Meta,
}

thread_local! {
    /// `set_default_device` (as torch, per thread; None: the CPU).
    static GLOBAL: RefCell<Option<PyDevice>> = const { RefCell::new(None) };
    /// The devices of the `with torch.device(...)` blocks this thread is in, innermost last.
    static ENTERED: RefCell<Vec<PyDevice>> = const { RefCell::new(Vec::new()) };
}

/// The device factories use when given none: the innermost `with torch.device(...)` block, else
/// `set_default_device`'s (None: the CPU).
pub fn default_device() -> Option<PyDevice> {
    ENTERED.with(|s| s.borrow().last().copied()).or_else(|| GLOBAL.with(|d| *d.borrow()))
}

#[pyclass(name = "device", module = "candle_bind", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PyDevice {
    pub kind: Kind,
    pub index: Option<usize>,
}

impl PyDevice {
    pub const CPU: PyDevice = PyDevice { kind: Kind::Cpu, index: None };

    /// Parses "cpu", "cuda", "cuda:1" with torch's error for anything else.
    pub fn parse(s: &str, index: Option<i64>) -> PyResult<Self> {
        let (name, idx) = match s.split_once(':') {
            Some((n, i)) => {
                let i: usize = i
                    .parse()
                    .map_err(|_| DeviceError::new_err(format!("Invalid device string: '{s}'")))?;
                (n, Some(i))
            }
            None => (s, None),
        };
        if idx.is_some() && index.is_some() {
            return Err(DeviceError::new_err(format!(
                "type (string) must not include an index because index was passed explicitly: {s}"
            )));
        }
        if let Some(i) = index {
            if i < 0 {
                return Err(DeviceError::new_err(format!("Device index must not be negative, got {i}")));
            }
        }
        let idx = idx.or(index.map(|i| i as usize));
        match name {
            "cpu" => Ok(PyDevice { kind: Kind::Cpu, index: idx }),
            "cuda" => Ok(PyDevice { kind: Kind::Cuda, index: idx }),
            "meta" => Ok(PyDevice { kind: Kind::Meta, index: idx }),
            _ => Err(DeviceError::new_err(format!(
                "Expected one of cpu, cuda, meta device type at start of device string: {s}"
            ))),
        }
    }

    pub const META: PyDevice = PyDevice { kind: Kind::Meta, index: None };

    pub fn of(d: &Device) -> Self {
        match d {
            Device::Cuda(c) => PyDevice { kind: Kind::Cuda, index: Some(cuda_ordinal(c)) },
            _ => Self::CPU,
        }
    }

    /// The device a tensor reports: meta for meta tensors, else its Candle device's.
    pub fn of_tensor(t: &Tensor) -> Self {
        if crate::tensor::meta::is_meta(t) {
            return Self::META;
        }
        Self::of(t.device())
    }

    pub fn place(&self) -> PyResult<Place> {
        match self.kind {
            Kind::Meta => Ok(Place::Meta),
            _ => Ok(Place::Real(self.candle()?)),
        }
    }

    /// The Candle device; CUDA in a CPU-only build raises a clear error, and so does meta (it holds
    /// no data, so an op that needs real memory cannot run there).
    pub fn candle(&self) -> PyResult<Device> {
        match self.kind {
            Kind::Meta => Err(DeviceError::new_err(
                "this operation needs data, which meta tensors do not have (materialize with to_empty())",
            )),
            Kind::Cpu => Ok(Device::Cpu),
            Kind::Cuda => {
                if !candle_core::utils::cuda_is_available() {
                    return Err(DeviceError::new_err(
                        "CUDA is not available: this build of candle_bind was compiled without the `cuda` \
                         feature or no CUDA device is present",
                    ));
                }
                Device::new_cuda(self.index.unwrap_or(0)).map_err(to_pyerr)
            }
        }
    }

    /// Device identity as torch compares it: same type and same resolved index.
    pub fn same(&self, t: &Tensor) -> bool {
        let o = Self::of_tensor(t);
        o.kind == self.kind && (self.kind != Kind::Cuda || o.index == Some(self.index.unwrap_or(0)))
    }
}

#[cfg(feature = "cuda")]
fn cuda_ordinal(c: &candle_core::CudaDevice) -> usize {
    use candle_core::backend::BackendDevice;
    match c.location() {
        candle_core::DeviceLocation::Cuda { gpu_id } => gpu_id,
        _ => 0,
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_ordinal(_c: &candle_core::CudaDevice) -> usize {
    0
}

#[pymethods]
impl PyDevice {
    #[new]
    #[pyo3(signature = (r#type, index=None))]
    fn py_new(r#type: &Bound<'_, PyAny>, index: Option<i64>) -> PyResult<Self> {
        if let Ok(d) = r#type.cast::<PyDevice>() {
            return Ok(*d.get());
        }
        let s: String = r#type.extract()?;
        Self::parse(&s, index)
    }
    #[getter]
    fn r#type(&self) -> &'static str {
        match self.kind {
            Kind::Cpu => "cpu",
            Kind::Cuda => "cuda",
            Kind::Meta => "meta",
        }
    }
    #[getter]
    fn index(&self) -> Option<usize> {
        self.index
    }
    fn __repr__(&self) -> String {
        match self.index {
            Some(i) => format!("device(type='{}', index={i})", self.r#type()),
            None => format!("device(type='{}')", self.r#type()),
        }
    }
    fn __str__(&self) -> String {
        match self.index {
            Some(i) => format!("{}:{i}", self.r#type()),
            None => self.r#type().to_string(),
        }
    }
    fn __reduce__(slf: &Bound<'_, Self>) -> (Py<pyo3::types::PyType>, (String,)) {
        (slf.get_type().unbind(), (slf.get().__str__(),))
    }
    /// `with torch.device("meta"):` makes factories without a `device=` build on this device.
    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        ENTERED.with(|s| s.borrow_mut().push(*slf));
        slf
    }
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        ENTERED.with(|s| s.borrow_mut().pop());
        false
    }
}

/// torch.set_default_device: the device factories use when given none (None: the CPU).
#[pyfunction]
#[pyo3(signature = (device))]
pub fn set_default_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let d = match device {
        Some(o) if !o.is_none() => Some(extract_device(o)?),
        _ => None,
    };
    GLOBAL.with(|cell| *cell.borrow_mut() = d.filter(|d| d.kind != Kind::Cpu));
    Ok(())
}

/// torch.get_default_device: what `set_default_device` set (not the `with torch.device` blocks).
#[pyfunction]
pub fn get_default_device() -> PyDevice {
    GLOBAL.with(|d| *d.borrow()).unwrap_or(PyDevice::CPU)
}

/// Reads a `device=` argument: a device object, a string, or an int (a CUDA ordinal, as torch).
pub fn extract_device(ob: &Bound<'_, PyAny>) -> PyResult<PyDevice> {
    if let Ok(d) = ob.cast::<PyDevice>() {
        return Ok(*d.get());
    }
    if let Ok(s) = ob.cast::<PyString>() {
        return PyDevice::parse(&s.to_cow()?, None);
    }
    if let Ok(i) = ob.extract::<i64>() {
        return PyDevice::parse("cuda", Some(i));
    }
    Err(DeviceError::new_err(format!(
        "device must be a candle_bind.device, a string or an int, not {}",
        ob.get_type().name()?
    )))
}

/// A factory's `device=` argument, the default device when it is None.
pub fn opt_place(ob: Option<&Bound<'_, PyAny>>) -> PyResult<Place> {
    match ob {
        Some(o) if !o.is_none() => extract_device(o)?.place(),
        _ => match default_device() {
            None => Ok(Place::Real(Device::Cpu)),
            Some(d) => d.place(),
        },
    }
}

/// A `device=` argument that must hold data (the default device when it is None).
pub fn opt_device(ob: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    match opt_place(ob)? {
        Place::Real(d) => Ok(d),
        Place::Meta => PyDevice::META.candle(),
    }
}

#[pyfunction]
pub fn cuda_is_available() -> bool {
    candle_core::utils::cuda_is_available()
}

#[pyfunction]
pub fn cuda_device_count() -> usize {
    if !candle_core::utils::cuda_is_available() {
        return 0;
    }
    (0..64).take_while(|i| Device::new_cuda(*i).is_ok()).count()
}
