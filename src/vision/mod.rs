//! torchvision's compiled operators (`torch.ops.torchvision.*`): nms, roi_align, roi_pool,
//! ps_roi_align, ps_roi_pool, deform_conv2d, with the arithmetic of torchvision's CPU kernels
//! (same operation order, same casts), so results match it bit for bit or to float rounding.
//! `python/candle_bind/_vision_ops.py` registers them when torchvision loads its extension.
//!
//! They compute on the host in f32 or f64 (float16 through f32, rounded back); tensors on another
//! device are read back and the result is returned there. User data never indexes unchecked: batch
//! indices of rois are validated, and every read is bounds-checked by construction.

pub mod deform;
pub mod nms;
pub mod roi;

use candle_core::{Device, Tensor, WithDType};
use pyo3::prelude::*;

use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};
use crate::tensor::linalg::Elem;
use crate::tensor::PyTensor;

/// The float types the kernels are written for.
pub(crate) trait Real: WithDType + Elem {
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round(self) -> Self;
    fn is_nan(self) -> bool;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            /// C's `round`: halves away from zero.
            #[inline(always)]
            fn round(self) -> Self {
                <$t>::round(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
real!(f32);
real!(f64);

/// C's `(int)v` for the kernels' float → int casts: truncation (saturating here where C's is undefined).
#[inline(always)]
pub(crate) fn trunc<T: Real>(v: T) -> i64 {
    v.to_f64() as i64
}

/// `std::max(a, b)` as C++ defines it (`a < b ? b : a`): NaN arguments pick the same side.
#[inline(always)]
pub(crate) fn cmax<T: PartialOrd>(a: T, b: T) -> T {
    if a < b { b } else { a }
}

/// `std::min(a, b)`: `b < a ? b : a`.
#[inline(always)]
pub(crate) fn cmin<T: PartialOrd>(a: T, b: T) -> T {
    if b < a { b } else { a }
}

/// The dtype a kernel computes `dt` in: f32 or f64 (float16 through f32 where torchvision takes
/// half); anything else is torch's dispatch error.
pub(crate) fn compute_dtype(kernel: &str, dt: DType, half: bool) -> PyResult<candle_core::DType> {
    match dt {
        DType::F32 => Ok(candle_core::DType::F32),
        DType::F64 => Ok(candle_core::DType::F64),
        DType::F16 if half => Ok(candle_core::DType::F32),
        _ => Err(runtime_err(format!("\"{kernel}\" not implemented for '{}'", dt.title()))),
    }
}

/// `t`'s elements as `T`, row-major: read in place when `t` is a contiguous CPU tensor of that type,
/// else copied to the host (any layout, dtype or device).
pub(crate) fn with_host<T: WithDType, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> PyResult<R> {
    if crate::device::cpu_kernels(t) {
        crate::tensor::with_slice(t, f)
    } else {
        Ok(f(&crate::tensor::host_vec::<T>(t)?))
    }
}

/// Checks that a `dims` output of `T` can be allocated (torch's error instead of an abort).
pub(crate) fn reserve<T: WithDType>(dims: &[usize]) -> PyResult<()> {
    Ok(crate::memory::ensure(dims, T::DTYPE, &Device::Cpu)?)
}

/// A kernel's host result as a tensor of `like`'s dtype (`dtype`, when given) on `like`'s device.
pub(crate) fn finish<T: WithDType>(out: Vec<T>, dims: &[usize], like: &PyTensor, dtype: Option<DType>) -> PyResult<PyTensor> {
    let dtype = dtype.unwrap_or(like.dtype);
    let t = Tensor::from_vec(out, dims, &Device::Cpu).py()?;
    let t = crate::tensor::convert(&t, dtype.candle())?;
    Ok(PyTensor::new(t.to_device(like.t.device()).py()?, dtype))
}

/// A non-negative output size from an int argument, or torch's error for a negative one.
pub(crate) fn size(v: i64, dims: &[i64]) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| runtime_err(format!("Trying to create tensor with negative dimension {v}: {dims:?}")))
}

/// Runs `f` without the GIL when the work is large enough to be worth the switch.
pub(crate) fn maybe_detach<R: Send>(py: Python<'_>, work: usize, f: impl FnOnce() -> R + Send) -> R {
    if work >= crate::tensor::kernels::PAR_THRESHOLD { py.detach(f) } else { f() }
}
