//! torch-shaped dtypes over Candle's. `bool` is stored as Candle `U8` with its own logical dtype.

use candle_core::DType as CDType;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::error::type_err;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

pub const ALL: [DType; 8] = [
    DType::Bool,
    DType::U8,
    DType::I32,
    DType::I64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
];

/// Kinds ordered as torch orders them for promotion with Python scalars.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Kind {
    Bool,
    Int,
    Float,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// torch's ScalarType name, used in its error messages ("Float", "Long", ...).
    pub fn title(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }

    pub fn candle(self) -> CDType {
        match self {
            DType::Bool | DType::U8 => CDType::U8,
            DType::I32 => CDType::I32,
            DType::I64 => CDType::I64,
            DType::F16 => CDType::F16,
            DType::BF16 => CDType::BF16,
            DType::F32 => CDType::F32,
            DType::F64 => CDType::F64,
        }
    }

    /// The logical dtype of a Candle dtype (U8 reads as uint8; callers that know better say bool).
    pub fn from_candle(d: CDType) -> PyResult<Self> {
        Ok(match d {
            CDType::U8 => DType::U8,
            CDType::I32 => DType::I32,
            CDType::I64 => DType::I64,
            CDType::F16 => DType::F16,
            CDType::BF16 => DType::BF16,
            CDType::F32 => DType::F32,
            CDType::F64 => DType::F64,
            other => return Err(type_err(format!("Candle dtype {other:?} has no torch equivalent"))),
        })
    }

    pub fn kind(self) -> Kind {
        match self {
            DType::Bool => Kind::Bool,
            DType::U8 | DType::I32 | DType::I64 => Kind::Int,
            _ => Kind::Float,
        }
    }

    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    pub fn itemsize(self) -> usize {
        match self {
            DType::Bool | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// torch.promote_types.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        match (a, b) {
            (Bool, x) | (x, Bool) => x,
            (F16, BF16) | (BF16, F16) => F32,
            (x, y) if x.is_float() && !y.is_float() => x,
            (x, y) if y.is_float() && !x.is_float() => y,
            // Same kind: the wider one (U8 < I32 < I64, F16/BF16 < F32 < F64).
            (x, y) => x.max(y),
        }
    }

    /// The default dtype for a kind (what a Python scalar of that kind becomes).
    pub fn default_for(kind: Kind) -> DType {
        match kind {
            Kind::Bool => DType::Bool,
            Kind::Int => DType::I64,
            Kind::Float => DType::F32,
        }
    }
}

/// `candle_bind.dtype`: one canonical object per dtype, so `x.dtype is candle_bind.float32` holds.
#[pyclass(name = "dtype", module = "candle_bind", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType(pub DType);

static SINGLETONS: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();

impl PyDType {
    pub fn object(py: Python<'_>, d: DType) -> PyResult<Py<PyDType>> {
        let all = SINGLETONS.get_or_try_init(py, || ALL.iter().map(|d| Py::new(py, PyDType(*d))).collect::<PyResult<Vec<_>>>())?;
        Ok(all[d as usize].clone_ref(py))
    }
}

#[pymethods]
impl PyDType {
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.0.is_float()
    }
    #[getter]
    fn is_complex(&self) -> bool {
        false
    }
    #[getter]
    fn is_signed(&self) -> bool {
        !matches!(self.0, DType::Bool | DType::U8)
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.0.itemsize()
    }
    fn to_real(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __repr__(&self) -> String {
        format!("torch.{}", self.0.name())
    }
    fn __reduce__(&self) -> (String,) {
        (self.0.name().to_string(),)
    }
}

/// Reads a `dtype=` argument: our dtype objects, or Python's `bool`, `int`, `float` as torch does.
pub fn extract_dtype(ob: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = ob.cast::<PyDType>() {
        return Ok(d.get().0);
    }
    if let Ok(t) = ob.cast::<PyType>() {
        let py = ob.py();
        if t.is(py.get_type::<pyo3::types::PyBool>()) {
            return Ok(DType::Bool);
        }
        if t.is(py.get_type::<pyo3::types::PyInt>()) {
            return Ok(DType::I64);
        }
        if t.is(py.get_type::<pyo3::types::PyFloat>()) {
            return Ok(DType::F64);
        }
    }
    Err(type_err(format!(
        "dtype must be a candle_bind.dtype, not {}",
        ob.get_type().name()?
    )))
}

pub fn opt_dtype(ob: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match ob {
        Some(o) if !o.is_none() => Ok(Some(extract_dtype(o)?)),
        _ => Ok(None),
    }
}
