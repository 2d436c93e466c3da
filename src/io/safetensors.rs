//! safetensors in and out. Files are memory-mapped and validated by the `safetensors` crate (header
//! size capped, offsets contiguous and in bounds, byte lengths matching dtype × shape) before any
//! tensor is read. A tensor of a file is then mapped in place (`mapped.rs`: no copy, copy-on-write,
//! as torch's safetensors tensors); small, misaligned and int8 ones, and those of in-memory bytes,
//! are copied out of the map in parallel, each straight into its own buffer.

use std::collections::HashMap;
use std::sync::Arc;

use ::safetensors::tensor::{Dtype, Metadata, SafeTensors, TensorInfo};
use candle_core::Device;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::dtype::DType;
use crate::error::{dtype_err, value_err, IntoPyResult};
use crate::io::mapped::{copy_as, mapped_as};
use crate::tensor::{cast, PyTensor};

/// Where the bytes live: a memory-mapped file (kept open to map tensors from) or an owned buffer.
enum Bytes {
    Map(memmap2::Mmap, std::fs::File),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Map(m, _) => m,
            Bytes::Owned(v) => v,
        }
    }

    /// Drops the pages of a range that has been copied out from this process's resident set, so
    /// loading a file costs its size in RSS once (the tensors), not twice (tensors + mapped pages).
    fn release(&self, start: usize, len: usize) {
        #[cfg(unix)]
        if let Bytes::Map(m, _) = self {
            // SAFETY: the map is a read-only shared file mapping: dropped pages are read back from
            // the file on the next access, with the same contents. A failure only leaves them resident.
            let _ = unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) };
        }
    }
}

fn st_err(e: ::safetensors::SafeTensorError) -> PyErr {
    value_err(format!("invalid safetensors data: {e}"))
}

fn our_dtype(d: Dtype) -> PyResult<DType> {
    Ok(match d {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::I16 => DType::I16,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::F8_E4M3 => DType::F8E4M3,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        other => return Err(dtype_err(format!("safetensors dtype {other:?} is not supported by candle_bind"))),
    })
}

fn file_dtype(d: DType) -> PyResult<Dtype> {
    Ok(match d {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::F8E4M3 => Dtype::F8_E4M3,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        other => return Err(other.unsupported()),
    })
}

fn to_tensor(info: &TensorInfo, data: &[u8], done: &dyn Fn(usize, usize)) -> PyResult<PyTensor> {
    let dt = our_dtype(info.dtype)?;
    copy_as(&data[info.data_offsets.0..info.data_offsets.1], &info.shape, dt, done)
}

/// An opened safetensors file or buffer: validated header, lazy tensors.
#[pyclass(name = "SafeOpen", module = "candle_bind")]
pub struct PySafeOpen {
    bytes: Arc<Bytes>,
    header: usize,
    meta: Metadata,
}

impl PySafeOpen {
    fn new(bytes: Bytes) -> PyResult<Self> {
        let (n, meta) = SafeTensors::read_metadata(bytes.as_slice()).map_err(st_err)?;
        Ok(PySafeOpen { bytes: Arc::new(bytes), header: 8 + n, meta })
    }
    fn data(&self) -> &[u8] {
        &self.bytes.as_slice()[self.header..]
    }
    fn info(&self, name: &str) -> PyResult<&TensorInfo> {
        self.meta.info(name).ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(format!("File does not contain tensor {name}")))
    }
    fn load(&self, name: &str, dtype: Option<DType>, device: &Device) -> PyResult<PyTensor> {
        let info = self.info(name)?;
        let base = self.header + info.data_offsets.0;
        if let Bytes::Map(_, file) = &*self.bytes {
            let len = info.data_offsets.1 - info.data_offsets.0;
            if let Some(t) = mapped_as(file, base as u64, len, &info.shape, our_dtype(info.dtype)?)? {
                return finish(t, dtype, device);
            }
        }
        let t = to_tensor(info, self.data(), &|start, len| self.bytes.release(base + start, len))?;
        finish(t, dtype, device)
    }
}

fn finish(t: PyTensor, dtype: Option<DType>, device: &Device) -> PyResult<PyTensor> {
    let d = dtype.unwrap_or(t.dtype);
    let c = cast(&t.t, t.dtype, d)?;
    Ok(PyTensor::new(if device.is_cpu() { c } else { c.to_device(device).py()? }, d))
}

#[pymethods]
impl PySafeOpen {
    /// Tensor names in file order (by data offset), as safetensors lists them.
    fn keys(&self) -> Vec<String> {
        self.meta.offset_keys()
    }
    fn metadata(&self) -> Option<HashMap<String, String>> {
        self.meta.metadata().clone()
    }
    /// (dtype name, shape) of one tensor without reading it.
    fn info_of(&self, name: &str) -> PyResult<(String, Vec<usize>)> {
        let i = self.info(name)?;
        Ok((format!("{:?}", i.dtype), i.shape.clone()))
    }
    #[pyo3(signature = (name, dtype=None, device=None))]
    fn get_tensor(&self, name: &str, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dev = crate::device::opt_device(device)?;
        self.load(name, crate::dtype::opt_dtype(dtype)?, &dev)
    }
    /// Several tensors at once, copied out in parallel; a dict name → Tensor.
    #[pyo3(signature = (names=None, dtype=None, device=None))]
    fn tensors<'py>(
        &self,
        py: Python<'py>,
        names: Option<Vec<String>>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let names = names.unwrap_or_else(|| self.keys());
        let (dt, dev) = (crate::dtype::opt_dtype(dtype)?, crate::device::opt_device(device)?);
        for n in &names {
            self.info(n)?;
        }
        let slots: Vec<std::sync::Mutex<Option<PyResult<PyTensor>>>> = names.iter().map(|_| Default::default()).collect();
        py.detach(|| {
            crate::pool::for_each(names.len(), &|i| {
                let r = self.load(&names[i], dt, &dev);
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            })
        });
        let out = PyDict::new(py);
        for (n, s) in names.iter().zip(slots) {
            let t = s.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or_else(|| Err(value_err("tensor not loaded")))?;
            out.set_item(n, Py::new(py, t)?)?;
        }
        Ok(out)
    }
}

/// Opens a safetensors file (memory-mapped; FileNotFoundError when missing).
#[pyfunction]
pub fn safe_open_file(path: std::path::PathBuf) -> PyResult<PySafeOpen> {
    let f = std::fs::File::open(&path)?;
    // SAFETY: the map is read-only; like every mmap-based loader we rely on the file not being
    // truncated while it is open.
    let map = unsafe { memmap2::Mmap::map(&f)? };
    PySafeOpen::new(Bytes::Map(map, f))
}

/// Opens safetensors bytes held in memory.
#[pyfunction]
pub fn safe_open_bytes(data: &Bound<'_, PyBytes>) -> PyResult<PySafeOpen> {
    PySafeOpen::new(Bytes::Owned(data.as_bytes().to_vec()))
}

struct View {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl ::safetensors::View for View {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn tensor_bytes(t: &PyTensor) -> PyResult<Vec<u8>> {
    let c = t.t.to_device(&Device::Cpu).py()?.flatten_all().py()?;
    if t.dtype == DType::I8 {
        return Ok(c.to_vec1::<i16>().py()?.into_iter().map(|v| v as i8 as u8).collect());
    }
    crate::with_dtype!(c.dtype(), T => {
        let v: Vec<T> = c.to_vec1::<T>().py()?;
        let bytes = v.len() * std::mem::size_of::<T>();
        // SAFETY: plain numeric elements viewed as their little-endian bytes.
        Ok::<Vec<u8>, PyErr>(unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, bytes) }.to_vec())
    })
}

/// Serialises named tensors (and string metadata) to safetensors bytes.
#[pyfunction]
#[pyo3(signature = (tensors, metadata=None))]
pub fn safetensors_serialize<'py>(
    py: Python<'py>,
    tensors: Vec<(String, PyRef<'py, PyTensor>)>,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let views: Vec<(String, View)> = tensors
        .iter()
        .map(|(n, t)| Ok((n.clone(), View { dtype: file_dtype(t.dtype)?, shape: t.dims().to_vec(), data: tensor_bytes(t)? })))
        .collect::<PyResult<_>>()?;
    let bytes = ::safetensors::tensor::serialize(views, metadata).map_err(st_err)?;
    Ok(PyBytes::new(py, &bytes))
}
