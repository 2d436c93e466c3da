//! torch's meta device: tensors with a shape and a dtype but no data, for building a model before
//! its weights are loaded (Hugging Face `from_pretrained` builds every model this way).
//!
//! A meta tensor is a broadcast (all strides 0) of one shared zero per storage dtype, so it costs
//! no memory whatever its shape, and a tensor is meta exactly when it views that shared storage:
//! views of meta tensors (narrow, expand, transpose, indexing) stay meta without further work.
//! Ops without a meta rule raise when their kernel reads the values (`check_readable`); writes
//! into meta tensors are dropped (torch: no-ops), and reading values out raises.

use std::sync::OnceLock;

use candle_core::{DType as CDType, Device, Storage, Tensor};
use pyo3::prelude::*;

use super::PyTensor;
use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};

const STORAGE_DTYPES: [CDType; 9] = [
    CDType::U8,
    CDType::I16,
    CDType::I32,
    CDType::I64,
    CDType::F8E4M3,
    CDType::F16,
    CDType::BF16,
    CDType::F32,
    CDType::F64,
];

/// The shared zero of each storage dtype, with the address of its storage (what identifies meta).
static ZEROS: OnceLock<Vec<(Tensor, usize)>> = OnceLock::new();

fn zero_of(d: CDType) -> Option<&'static (Tensor, usize)> {
    let zeros = ZEROS.get_or_init(|| {
        STORAGE_DTYPES
            .iter()
            .filter_map(|d| Tensor::zeros((), *d, &Device::Cpu).ok())
            .map(|t| {
                let addr = storage_addr(&t.storage_and_layout().0);
                (t, addr)
            })
            .collect()
    });
    zeros.iter().find(|(t, _)| t.dtype() == d)
}

fn storage_addr(s: &Storage) -> usize {
    s as *const Storage as usize
}

/// Whether `t` is a meta tensor (it views the shared meta storage of its dtype).
pub fn is_meta(t: &Tensor) -> bool {
    // Data-holding tensors of more than one element have a nonzero stride: no lock needed for them.
    if t.elem_count() > 1 && t.layout().stride().iter().zip(t.dims()).any(|(s, d)| *s != 0 && *d > 1) {
        return false;
    }
    is_meta_storage(&t.storage_and_layout().0, t.dtype())
}

/// Whether `s` (a storage of dtype `d` whose read guard the caller already holds) is meta's.
pub fn is_meta_storage(s: &Storage, d: CDType) -> bool {
    zero_of(d).is_some_and(|(_, addr)| storage_addr(s) == *addr)
}

/// A meta tensor of `dims` and `dtype`.
pub fn meta_tensor(dims: &[usize], dtype: DType) -> PyResult<PyTensor> {
    crate::memory::bytes_of(dims, dtype.candle().size_in_bytes())?;
    let (z, _) = zero_of(dtype.candle()).ok_or_else(|| dtype.unsupported())?;
    Ok(PyTensor::new(z.broadcast_as(dims).py()?, dtype))
}

/// Kernels that read values call this first: an op without a meta rule raises instead of computing
/// on the placeholder zeros.
pub fn check_readable(t: &Tensor) -> PyResult<()> {
    if is_meta(t) {
        return Err(unreadable());
    }
    Ok(())
}

/// `check_readable` on a storage whose read guard the caller holds (no second lock).
pub fn check_storage_readable(s: &Storage, d: CDType) -> PyResult<()> {
    if is_meta_storage(s, d) {
        return Err(unreadable());
    }
    Ok(())
}

fn unreadable() -> PyErr {
    runtime_err(
            "this operation reads tensor values, which meta tensors do not have (only factories, views, casts \
             and elementwise ops run on the meta device here)",
    )
}

/// The error for reading a meta tensor's values.
pub fn no_data(what: &str) -> PyErr {
    runtime_err(format!("{what} cannot be called on meta tensors: they have no data"))
}

impl PyTensor {
    pub fn is_meta(&self) -> bool {
        is_meta(&self.t)
    }
    /// The meta result of reducing `dims` (kept as 1s with keepdim), of dtype `dtype`.
    pub fn meta_reduced(&self, dims: &[usize], keepdim: bool, dtype: DType) -> PyResult<PyTensor> {
        let out: Vec<usize> = self
            .dims()
            .iter()
            .enumerate()
            .filter_map(|(i, &n)| if dims.contains(&i) { keepdim.then_some(1) } else { Some(n) })
            .collect();
        meta_tensor(&out, dtype)
    }
    /// A meta tensor like this one with other dims (shape ops on meta tensors).
    pub fn meta_like(&self, dims: &[usize]) -> PyResult<PyTensor> {
        meta_tensor(dims, self.dtype)
    }
    /// Errors if this tensor is meta (before reading its values out).
    pub fn check_data(&self, what: &str) -> PyResult<()> {
        if self.is_meta() {
            return Err(no_data(what));
        }
        Ok(())
    }
}

#[pymethods]
impl PyTensor {
    #[getter(is_meta)]
    fn py_is_meta(&self) -> bool {
        self.is_meta()
    }
}
