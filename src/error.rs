//! Candle errors → Python exceptions. Shape errors name both shapes; messages follow torch's.

use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::{create_exception, PyErr, PyResult};

create_exception!(candle_bind, CandleError, PyRuntimeError, "An error raised by the Candle core.");
create_exception!(candle_bind, ShapeError, CandleError, "Incompatible or invalid tensor shapes.");
create_exception!(candle_bind, DTypeError, CandleError, "A dtype an operation does not take.");
create_exception!(candle_bind, DeviceError, CandleError, "An unknown, unavailable or mismatched device.");
create_exception!(candle_bind, OutOfMemoryError, CandleError, "A buffer larger than the system can give.");

/// Turns a Candle error into the Python exception a torch user would expect.
pub fn to_pyerr(err: candle_core::Error) -> PyErr {
    use candle_core::Error as E;
    match err {
        E::WithBacktrace { inner, .. } => to_pyerr(*inner),
        E::ShapeMismatchBinaryOp { lhs, rhs, op } => ShapeError::new_err(format!(
            "shapes {:?} and {:?} are not compatible for {op}",
            lhs.dims(),
            rhs.dims()
        )),
        E::BroadcastIncompatibleShapes { src_shape, dst_shape } => ShapeError::new_err(format!(
            "cannot broadcast shape {:?} to {:?}",
            src_shape.dims(),
            dst_shape.dims()
        )),
        e @ (E::UnexpectedNumberOfDims { .. }
        | E::UnexpectedShape { .. }
        | E::ShapeMismatch { .. }
        | E::ShapeMismatchCat { .. }
        | E::ShapeMismatchSplit { .. }
        | E::OnlySingleDimension { .. }
        | E::EmptyTensor { .. }
        | E::NarrowInvalidArgs { .. }
        | E::MatMulUnexpectedStriding(_)) => ShapeError::new_err(e.to_string()),
        e @ (E::DimOutOfRange { .. } | E::InvalidIndex { .. }) => PyIndexError::new_err(e.to_string()),
        e @ (E::UnexpectedDType { .. } | E::DTypeMismatchBinaryOp { .. } | E::UnsupportedDTypeForOp(..)) => {
            DTypeError::new_err(e.to_string())
        }
        E::DeviceMismatchBinaryOp { lhs, rhs, .. } => {
            let name = |d: &candle_core::DeviceLocation| match d {
                candle_core::DeviceLocation::Cuda { gpu_id } => format!("cuda:{gpu_id}"),
                _ => "cpu".to_string(),
            };
            DeviceError::new_err(format!(
                "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                name(&lhs),
                name(&rhs)
            ))
        }
        e @ (E::NotCompiledWithCudaSupport | E::NotCompiledWithMetalSupport) => DeviceError::new_err(e.to_string()),
        // cudarc's allocation failure: torch's CUDA out-of-memory error, a RuntimeError.
        e @ E::Cuda(_) if e.to_string().contains("OUT_OF_MEMORY") => {
            OutOfMemoryError::new_err(format!("CUDA out of memory. {e}"))
        }
        E::Io(e) => PyErr::from(e),
        e => CandleError::new_err(e.to_string()),
    }
}

/// `.py()?` turns a Candle `Result` into a `PyResult`.
pub trait IntoPyResult<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for candle_core::Result<T> {
    #[inline]
    fn py(self) -> PyResult<T> {
        self.map_err(to_pyerr)
    }
}

pub fn shape_err(msg: impl Into<String>) -> PyErr {
    ShapeError::new_err(msg.into())
}
pub fn index_err(msg: impl Into<String>) -> PyErr {
    PyIndexError::new_err(msg.into())
}
pub fn type_err(msg: impl Into<String>) -> PyErr {
    PyTypeError::new_err(msg.into())
}
pub fn value_err(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}
pub fn runtime_err(msg: impl Into<String>) -> PyErr {
    CandleError::new_err(msg.into())
}
/// torch's NotImplementedError (a kernel with no form for a dtype).
pub fn not_implemented_err(msg: impl Into<String>) -> PyErr {
    pyo3::exceptions::PyNotImplementedError::new_err(msg.into())
}
pub fn dtype_err(msg: impl Into<String>) -> PyErr {
    DTypeError::new_err(msg.into())
}

/// torch's message for a dim outside `[-rank, rank-1]`.
pub fn dim_err(dim: i64, rank: usize) -> PyErr {
    let r = rank.max(1) as i64;
    index_err(format!(
        "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
        -r,
        r - 1
    ))
}
