//! Buffers whose size a user chooses. Rust aborts the process when an allocation fails, so every op
//! whose output size comes from its arguments checks the request first and raises torch's
//! `RuntimeError` ("DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes") instead.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt;

use candle_core::{DType, Device};
use pyo3::PyErr;

use crate::error::OutOfMemoryError;

/// Below this a failed allocation is not a realistic outcome, and the probe's two syscalls would cost
/// more than they protect; above it they are noise next to writing the buffer.
const PROBE_FROM: usize = 64 << 20;

/// Why a buffer cannot be had.
#[derive(Debug)]
pub enum AllocError {
    /// The system refused `bytes`.
    OutOfMemory { bytes: u128 },
    /// The element count or byte size of `dims` does not fit in a machine word.
    Overflow { dims: Vec<usize> },
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OutOfMemory { bytes } => {
                write!(f, "DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes.")
            }
            Self::Overflow { dims } => write!(f, "Storage size calculation overflowed with sizes={dims:?}"),
        }
    }
}

impl std::error::Error for AllocError {}

impl From<AllocError> for PyErr {
    fn from(e: AllocError) -> PyErr {
        match e {
            AllocError::OutOfMemory { .. } => OutOfMemoryError::new_err(e.to_string()),
            AllocError::Overflow { .. } => crate::error::runtime_err(e.to_string()),
        }
    }
}

/// Inside Candle ops (custom ops return Candle's `Result`): the same message, as a Candle error.
impl From<AllocError> for candle_core::Error {
    fn from(e: AllocError) -> candle_core::Error {
        candle_core::Error::Msg(e.to_string())
    }
}

/// Bytes of a `dims` buffer of `elem`-byte elements, overflow-checked.
pub fn bytes_of(dims: &[usize], elem: usize) -> Result<usize, AllocError> {
    dims.iter()
        .try_fold(elem, |acc, &d| acc.checked_mul(d))
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| AllocError::Overflow { dims: dims.to_vec() })
}

/// Checks that the system can give `bytes` now, by taking and returning them. Large blocks are fresh
/// mappings that are never touched here, so the probe costs two syscalls, not a pass over memory.
/// A racing allocation elsewhere can still take the memory in between; that is an out-of-memory
/// condition of the whole process, as it is for torch.
pub fn ensure_bytes(bytes: usize) -> Result<(), AllocError> {
    if bytes < PROBE_FROM {
        return Ok(());
    }
    let too_big = || AllocError::OutOfMemory { bytes: bytes as u128 };
    let layout = Layout::from_size_align(bytes, 64).map_err(|_| too_big())?;
    // SAFETY: a non-zero layout; the block is freed at once with the same layout and never read.
    unsafe {
        let p = System.alloc(layout);
        if p.is_null() {
            return Err(too_big());
        }
        System.dealloc(p, layout);
    }
    Ok(())
}

/// `ensure_bytes` for a `dims` tensor of `dtype` in host memory (a GPU allocator reports its own
/// failures as errors; there only the size arithmetic is checked).
pub fn ensure(dims: &[usize], dtype: DType, device: &Device) -> Result<(), AllocError> {
    let bytes = bytes_of(dims, dtype.size_in_bytes())?;
    if device.is_cpu() { ensure_bytes(bytes) } else { Ok(()) }
}

/// `_C.reserve(shape, dtype)`: the same check for a buffer the Python layer is about to build.
#[pyo3::pyfunction]
pub fn reserve(shape: Vec<i64>, dtype: &pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<()> {
    if let Some(&bad) = shape.iter().find(|&&d| d < 0) {
        return Err(crate::error::runtime_err(format!("Trying to create tensor with negative dimension {bad}: {shape:?}")));
    }
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let dt = crate::dtype::extract_any_dtype(dtype)?.candle();
    Ok(ensure(&dims, dt, &Device::Cpu)?)
}

/// Hands the heap's free pages back to the system. Loading a model frees each weight's file blocks
/// once its tiles are made, and those holes between tiles would otherwise stay resident (about 30 MB
/// of a 0.5B Q4_K file's 350).
pub fn release_free_pages() {
    crate::io::mapped::drop_kept();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns whole free pages of the allocator's own heaps.
    unsafe {
        libc::malloc_trim(0);
    }
}
