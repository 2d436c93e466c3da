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
    /// torch's other device types (mps, xpu, ...): they construct, compare and print as torch's, so
    /// code that asks `device == torch.device("mps")` runs; placing data there raises.
    Other(&'static str),
}

/// torch's device types besides cpu, cuda and meta, in the order of its error message.
const OTHER_TYPES: [&str; 17] = ["ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
    "lazy", "vulkan", "mps", "hpu", "mtia", "privateuseone"];

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
            _ => match OTHER_TYPES.iter().find(|&&t| t == name) {
                Some(&t) => Ok(PyDevice { kind: Kind::Other(t), index: idx }),
                None => Err(DeviceError::new_err(format!(
                    "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, \
                     vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: {s}"
                ))),
            },
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
            Kind::Cuda => cuda_device(self.index.unwrap_or(0)),
            Kind::Other(t) => Err(DeviceError::new_err(format!(
                "{t} device is not supported by candle_bind (cpu, cuda or meta)"
            ))),
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
            Kind::Other(t) => t,
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

// ---- CUDA ----

/// The CUDA device of `ordinal`, made once per process. Candle gives each `Device::new_cuda` its own
/// identity (tensors made through two of them count as different devices); torch has one device per
/// GPU. It runs on one stream of its own, as torch's default stream: every op is ordered after the
/// ones before it, so Candle's per-buffer event tracking is switched off (it costs every launch).
#[cfg(feature = "cuda")]
pub fn cuda_device(ordinal: usize) -> PyResult<Device> {
    static DEVICES: std::sync::Mutex<Vec<Option<Device>>> = std::sync::Mutex::new(Vec::new());
    let count = cuda_device_count();
    if count == 0 {
        return Err(DeviceError::new_err(
            "CUDA is not available: no CUDA driver or device was found (torch.cuda.is_available() is False)",
        ));
    }
    if ordinal >= count {
        return Err(DeviceError::new_err(format!(
            "CUDA error: invalid device ordinal {ordinal} (this machine has {count} CUDA device{})",
            if count == 1 { "" } else { "s" }
        )));
    }
    let mut devices = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
    if devices.len() <= ordinal {
        devices.resize(ordinal + 1, None);
    }
    if let Some(d) = &devices[ordinal] {
        return Ok(d.clone());
    }
    candle_core::cuda_backend::register_extra_kernels(crate::cuda::INT_PTX);
    let dev = quietly(|| Device::new_cuda_with_stream(ordinal))
        .ok_or_else(|| DeviceError::new_err("CUDA driver libraries could not be loaded"))?
        .map_err(to_pyerr)?;
    if let Device::Cuda(c) = &dev {
        // SAFETY: one stream serves every tensor of this device (see above), before any exists.
        unsafe { c.disable_event_tracking() };
    }
    devices[ordinal] = Some(dev.clone());
    Ok(dev)
}

#[cfg(not(feature = "cuda"))]
pub fn cuda_device(_ordinal: usize) -> PyResult<Device> {
    Err(DeviceError::new_err(
        "Torch not compiled with CUDA enabled: this build of candle_bind has no `cuda` feature \
         (build it with scripts/build_cuda.sh)",
    ))
}

/// Runs `f`, turning a panic into None without printing it: cudarc panics when it cannot load the
/// driver library (no GPU machine), which for us only means "no CUDA".
#[cfg(feature = "cuda")]
fn quietly<R>(f: impl FnOnce() -> R) -> Option<R> {
    static HOOK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    std::panic::set_hook(prev);
    r
}

/// Number of CUDA devices the driver reports (0 without the `cuda` feature, a driver or a GPU).
#[pyfunction]
pub fn cuda_device_count() -> usize {
    #[cfg(feature = "cuda")]
    {
        static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *COUNT.get_or_init(|| {
            use candle_core::cuda::cudarc::driver::CudaContext;
            quietly(CudaContext::device_count).and_then(|r| r.ok()).unwrap_or(0).max(0) as usize
        })
    }
    #[cfg(not(feature = "cuda"))]
    0
}

#[pyfunction]
pub fn cuda_is_available() -> bool {
    cuda_device_count() > 0
}

/// Waits for the device's queued work (torch.cuda.synchronize).
#[pyfunction]
#[pyo3(signature = (ordinal=None))]
pub fn cuda_synchronize(py: Python<'_>, ordinal: Option<usize>) -> PyResult<()> {
    if !cuda_is_available() {
        return Ok(());
    }
    let dev = cuda_device(ordinal.unwrap_or(0))?;
    py.detach(|| dev.synchronize()).map_err(to_pyerr)
}

/// Facts about a CUDA device for torch.cuda.get_device_name/capability/properties and mem_get_info:
/// name, (major, minor), multiprocessors, total and free memory in bytes.
#[pyfunction]
pub fn cuda_device_info(py: Python<'_>, ordinal: usize) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    #[cfg(feature = "cuda")]
    {
        use candle_core::cuda::cudarc::driver::sys::CUdevice_attribute as A;
        let Device::Cuda(c) = cuda_device(ordinal)? else { return Err(DeviceError::new_err("not a CUDA device")) };
        let stream = c.cuda_stream();
        let ctx = stream.context();
        let e = |e: candle_core::cuda::cudarc::driver::DriverError| crate::error::runtime_err(format!("CUDA error: {e}"));
        let attr = |a| ctx.attribute(a).map_err(e);
        let (free, total) = ctx.mem_get_info().map_err(e)?;
        d.set_item("name", ctx.name().map_err(e)?)?;
        d.set_item("major", attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?)?;
        d.set_item("minor", attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?)?;
        d.set_item("multi_processor_count", attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?)?;
        d.set_item("total_memory", total)?;
        d.set_item("free_memory", free)?;
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        cuda_device(0)?;
    }
    Ok(d)
}

// ---- where kernels run ----

/// `CANDLE_BIND_GENERIC=1` sends CPU tensors down the device-generic paths (Candle ops, the code CUDA
/// tensors take), and makes our CPU-only kernels refuse to run outside an explicit host read: the test
/// suite rerun this way checks every CUDA path's logic against torch on a machine without a GPU.
#[inline]
pub fn generic() -> bool {
    GENERIC.load(std::sync::atomic::Ordering::Relaxed)
}

static GENERIC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Reads CANDLE_BIND_GENERIC once, at import (before any op runs).
pub fn init_generic() {
    GENERIC.store(std::env::var("CANDLE_BIND_GENERIC").is_ok_and(|v| v == "1"), std::sync::atomic::Ordering::Relaxed);
}

thread_local! {
    static HOST: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether our own CPU kernels may compute on `t`: a CPU tensor (in the generic test mode only inside
/// `on_host`).
#[inline]
pub fn cpu_kernels(t: &Tensor) -> bool {
    t.device().is_cpu() && (!generic() || HOST.with(|h| h.get() > 0))
}

/// Runs `f`, in which CPU kernels may run on CPU tensors in the generic test mode too: the ops that
/// compute on the host on purpose (data-dependent shapes, host reads) copy their inputs there first.
pub fn on_host<R>(f: impl FnOnce() -> R) -> R {
    struct Exit;
    impl Drop for Exit {
        fn drop(&mut self) {
            HOST.with(|h| h.set(h.get() - 1));
        }
    }
    HOST.with(|h| h.set(h.get() + 1));
    let _exit = Exit;
    f()
}

/// The error a CPU-only kernel gives when it is reached with a tensor it cannot read (a CUDA tensor,
/// or a CPU tensor on the generic path): a missing device path, never user error.
#[inline]
pub fn host_only(t: &Tensor, what: &str) -> PyResult<()> {
    if cpu_kernels(t) {
        return Ok(());
    }
    Err(not_host(t, what))
}

#[cold]
fn not_host(t: &Tensor, what: &str) -> PyErr {
    crate::error::runtime_err(format!(
        "internal error: {what} is a CPU kernel and was given a tensor on {} (please report this)",
        PyDevice::of(t.device()).__str__()
    ))
}

/// torch's error for an op whose tensors live on different devices.
pub fn mismatch(a: &Device, b: &Device) -> PyErr {
    DeviceError::new_err(format!(
        "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
        PyDevice::of(a).__str__(),
        PyDevice::of(b).__str__()
    ))
}

/// Checks that every tensor is on one device; returns it.
pub fn common<'a>(ts: &[&'a Tensor]) -> PyResult<&'a Device> {
    let first = ts.first().map(|t| t.device()).ok_or_else(|| crate::error::runtime_err("no tensors"))?;
    for t in &ts[1..] {
        if !t.device().same_device(first) {
            return Err(mismatch(first, t.device()));
        }
    }
    Ok(first)
}

/// Computes on the host for an op without a device kernel: `inputs` copied to the CPU, `f` run there
/// with our CPU kernels, its result copied back to the inputs' device. Only for rare ops (the README
/// lists them); on the CPU it is just `f`.
pub fn via_host(inputs: &[&Tensor], f: impl FnOnce(&[Tensor]) -> PyResult<Tensor>) -> PyResult<Tensor> {
    use crate::error::IntoPyResult;
    let dev = common(inputs)?.clone();
    let host: Vec<Tensor> = inputs.iter().map(|t| t.to_device(&Device::Cpu)).collect::<candle_core::Result<_>>().py()?;
    let out = on_host(|| f(&host))?;
    out.to_device(&dev).py()
}

/// The dtypes a CUDA tensor can hold: all but float8 (Candle's float8 kernels need compute
/// capability 8.9 and candle_bind has no float8 ops). int32 and int16 (so int8) run on kernels
/// generated from Candle's for those storages (`src/cuda/int_kernels.cu`).
pub fn check_dtype(device: &Device, dtype: crate::dtype::DType) -> PyResult<()> {
    use crate::dtype::DType as D;
    if device.is_cpu() || dtype != D::F8E4M3 {
        return Ok(());
    }
    Err(crate::error::DTypeError::new_err(format!(
        "{} tensors are not supported on CUDA by candle_bind yet: use a 16-bit float dtype on the GPU",
        dtype.name()
    )))
}

/// `f` over `ts` in f32 when they are 16-bit floats on the CPU: Candle's CPU matmul (the generic test
/// mode's stand-in for cuBLAS) accumulates bf16/f16 products in 16 bits, where cuBLAS and torch
/// accumulate in f32. On other devices (and for other dtypes) just `f`.
pub fn matmul_precision(ts: &[&Tensor], f: impl FnOnce(&[Tensor]) -> candle_core::Result<Tensor>) -> PyResult<Tensor> {
    use crate::error::IntoPyResult;
    use candle_core::DType as D;
    let dt = ts.first().map(|t| t.dtype()).unwrap_or(D::F32);
    let host_half = ts.first().is_some_and(|t| t.device().is_cpu()) && matches!(dt, D::F16 | D::BF16);
    if !host_half {
        return f(&ts.iter().map(|t| (*t).clone()).collect::<Vec<_>>()).py();
    }
    let wide: Vec<Tensor> = ts.iter().map(|t| t.to_dtype(D::F32)).collect::<candle_core::Result<_>>().py()?;
    f(&wide).py()?.to_dtype(dt).py()
}
