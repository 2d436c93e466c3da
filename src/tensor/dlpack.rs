//! DLPack interop: `Tensor.__dlpack__` / `__dlpack_device__` export CPU tensors without a copy (the
//! capsule keeps the storage alive); `from_dlpack` reads any producer's CPU tensor (strided, with a
//! byte offset, bfloat16 included) into a new tensor.

use std::ffi::{c_void, CStr};

use candle_core::{Storage, Tensor};
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

use super::PyTensor;
use crate::dtype::DType;
use crate::error::{type_err, IntoPyResult};

const CPU: i32 = 1;
const CUDA: i32 = 2;
const CUDA_HOST: i32 = 3;
const NAME: &CStr = c"dltensor";
const USED: &CStr = c"used_dltensor";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// What an exported capsule owns: the tensor (its storage) and the shape/stride arrays it points to.
struct Export {
    _t: Tensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

fn dl_dtype(d: DType) -> PyResult<DLDataType> {
    let (code, bits) = match d {
        DType::Bool => (6, 8),
        DType::U8 => (1, 8),
        DType::I16 => (0, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::F16 => (2, 16),
        DType::BF16 => (4, 16),
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
        other => return Err(crate::error::type_err(format!("DLPack export of {} tensors is not supported", other.title()))),
    };
    Ok(DLDataType { code, bits, lanes: 1 })
}

fn our_dtype(d: DLDataType) -> Option<DType> {
    Some(match (d.code, d.bits, d.lanes) {
        (6, 8, 1) => DType::Bool,
        (1, 8, 1) => DType::U8,
        (0, 16, 1) => DType::I16,
        (0, 32, 1) => DType::I32,
        (0, 64, 1) => DType::I64,
        (2, 16, 1) => DType::F16,
        (4, 16, 1) => DType::BF16,
        (2, 32, 1) => DType::F32,
        (2, 64, 1) => DType::F64,
        _ => return None,
    })
}

unsafe extern "C" fn delete_export(m: *mut DLManagedTensor) {
    // SAFETY: `m` and its context were boxed by `__dlpack__`; DLPack calls the deleter once.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx as *mut Export));
    }
}

/// Frees an export nobody consumed (a consumer renames the capsule and owns it from then on).
unsafe extern "C" fn drop_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with our capsule; the name check tells whether it was consumed.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()) as *mut DLManagedTensor;
            if let Some(del) = (*m).deleter {
                del(m);
            }
        } else {
            ffi::PyErr_Clear();
        }
    }
}

#[pymethods]
impl PyTensor {
    /// A DLPack capsule viewing this tensor's memory (CPU tensors; no copy).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let _ = (stream, max_version);
        if !self.t.device().is_cpu() {
            return Err(PyBufferError::new_err("DLPack export of CUDA tensors is not supported yet: call .cpu() first"));
        }
        if dl_device.is_some_and(|(kind, _)| kind != CPU) {
            return Err(PyBufferError::new_err("candle_bind exports DLPack tensors on the CPU only"));
        }
        let t = if copy == Some(true) { self.t.copy().py()? } else { self.t.clone() };
        let (storage, layout) = t.storage_and_layout();
        let Storage::Cpu(cpu) = &*storage else { return Err(type_err("expected a CPU tensor")) };
        let base: *const u8 = crate::with_dtype!(t.dtype(), T => cpu.as_slice::<T>().py().map(|s| s.as_ptr() as *const u8))?;
        let byte_offset = (layout.start_offset() * self.dtype.itemsize()) as u64;
        let shape: Vec<i64> = layout.dims().iter().map(|&d| d as i64).collect();
        let strides: Vec<i64> = layout.stride().iter().map(|&s| s as i64).collect();
        drop(storage);
        let mut ctx = Box::new(Export { _t: t, shape, strides });
        let managed = Box::new(DLManagedTensor {
            dl_tensor: DLTensor {
                data: base as *mut c_void,
                device: DLDevice { device_type: CPU, device_id: 0 },
                ndim: ctx.shape.len() as i32,
                dtype: dl_dtype(self.dtype)?,
                shape: ctx.shape.as_mut_ptr(),
                strides: ctx.strides.as_mut_ptr(),
                byte_offset,
            },
            manager_ctx: Box::into_raw(ctx) as *mut c_void,
            deleter: Some(delete_export),
        });
        let raw = Box::into_raw(managed);
        // SAFETY: a capsule over our heap object; `drop_capsule` frees it unless a consumer took it.
        unsafe {
            let cap = ffi::PyCapsule_New(raw as *mut c_void, NAME.as_ptr(), Some(drop_capsule));
            if cap.is_null() {
                delete_export(raw);
                return Err(PyErr::fetch(py));
            }
            Ok(Bound::from_owned_ptr(py, cap).unbind())
        }
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        match self.t.device() {
            candle_core::Device::Cpu => (CPU, 0),
            d => (CUDA, crate::device::PyDevice::of(d).index.unwrap_or(0) as i32),
        }
    }
}

/// torch.from_dlpack: a tensor from any object with `__dlpack__` (or a DLPack capsule). The data is
/// copied into candle_bind's memory (Candle cannot adopt foreign buffers), strides respected.
#[pyfunction]
pub fn from_dlpack(ext: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let capsule = if ext.hasattr("__dlpack__")? { ext.call_method0("__dlpack__")? } else { ext.clone() };
    let cap = capsule.as_ptr();
    // SAFETY: the capsule protocol: a valid "dltensor" capsule holds a DLManagedTensor that stays
    // alive until we rename the capsule and call its deleter, after copying the data out.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) != 1 {
            ffi::PyErr_Clear();
            return Err(type_err("from_dlpack expects an object with __dlpack__ or an unused DLPack capsule"));
        }
        let m = ffi::PyCapsule_GetPointer(cap, NAME.as_ptr()) as *mut DLManagedTensor;
        let out = read_dltensor(&(*m).dl_tensor);
        if ffi::PyCapsule_SetName(cap, USED.as_ptr()) == 0 {
            if let Some(del) = (*m).deleter {
                del(m);
            }
        }
        out
    }
}

/// Copies a producer's tensor into a contiguous Candle tensor.
///
/// # Safety
/// `dl` must describe valid memory, as the DLPack contract promises.
unsafe fn read_dltensor(dl: &DLTensor) -> PyResult<PyTensor> {
    if !matches!(dl.device.device_type, CPU | CUDA_HOST) {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: only CPU tensors can be imported (device type {})",
            dl.device.device_type
        )));
    }
    let dtype = our_dtype(dl.dtype).ok_or_else(|| {
        type_err(format!("from_dlpack: unsupported DLPack dtype (code {}, bits {}, lanes {})", dl.dtype.code, dl.dtype.bits, dl.dtype.lanes))
    })?;
    let ndim = dl.ndim.max(0) as usize;
    // SAFETY: the producer's shape/strides arrays have `ndim` entries (strides may be null: C order).
    let dims: Vec<usize> = if ndim == 0 { vec![] } else { unsafe { std::slice::from_raw_parts(dl.shape, ndim) }.iter().map(|&d| d.max(0) as usize).collect() };
    let mut c_order = vec![1i64; ndim];
    for i in (0..ndim.saturating_sub(1)).rev() {
        c_order[i] = c_order[i + 1] * dims[i + 1] as i64;
    }
    let strides: Vec<i64> =
        if dl.strides.is_null() || ndim == 0 { c_order.clone() } else { unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec() };
    let item = dtype.itemsize();
    let n: usize = dims.iter().product();
    let mut bytes = vec![0u8; n * item];
    // SAFETY (both copies): the producer's buffer holds every element its shape and strides address.
    let base = unsafe { (dl.data as *const u8).add(dl.byte_offset as usize) };
    let dense = dims.iter().zip(strides.iter().zip(&c_order)).all(|(&d, (s, c))| d <= 1 || s == c);
    if n > 0 && dense {
        unsafe { std::ptr::copy_nonoverlapping(base, bytes.as_mut_ptr(), n * item) };
    } else if n > 0 {
        let mut idx = vec![0usize; ndim];
        for chunk in bytes.chunks_exact_mut(item) {
            let off: i64 = idx.iter().zip(&strides).map(|(&i, &s)| i as i64 * s).sum();
            unsafe { std::ptr::copy_nonoverlapping(base.offset((off * item as i64) as isize), chunk.as_mut_ptr(), item) };
            for d in (0..ndim).rev() {
                idx[d] += 1;
                if idx[d] < dims[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
    let t = Tensor::from_raw_buffer(&bytes, dtype.candle(), &dims, &candle_core::Device::Cpu).py()?;
    Ok(PyTensor::new(t, dtype))
}
