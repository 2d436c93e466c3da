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
    I8,
    I16,
    I32,
    I64,
    U16,
    U32,
    U64,
    F8E4M3,
    F8E5M2,
    F16,
    BF16,
    F32,
    F64,
    C64,
    C128,
    // Quantized dtypes (torch.ao.quantization): dtype objects only; their tensors are
    // candle_bind._qtensor.QuantizedTensor (an integer tensor plus scale and zero point).
    QInt8,
    QUInt8,
    QInt32,
}

/// Every dtype, in declaration order (`PyDType::object` indexes this by discriminant).
pub const ALL: [DType; 20] = [
    DType::Bool,
    DType::U8,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U16,
    DType::U32,
    DType::U64,
    DType::F8E4M3,
    DType::F8E5M2,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
    DType::C64,
    DType::C128,
    DType::QInt8,
    DType::QUInt8,
    DType::QInt32,
];

/// Kinds ordered as torch orders them for promotion with Python scalars.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Kind {
    Bool,
    Int,
    Float,
    Complex,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F8E4M3 => "float8_e4m3fn",
            DType::F8E5M2 => "float8_e5m2",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
            DType::QInt8 => "qint8",
            DType::QUInt8 => "quint8",
            DType::QInt32 => "qint32",
        }
    }

    /// torch's ScalarType name, used in its error messages ("Float", "Long", ...).
    pub fn title(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::U16 => "UInt16",
            DType::U32 => "UInt32",
            DType::U64 => "UInt64",
            DType::F8E4M3 => "Float8_e4m3fn",
            DType::F8E5M2 => "Float8_e5m2",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::C64 => "ComplexFloat",
            DType::C128 => "ComplexDouble",
            DType::QInt8 => "QInt8",
            DType::QUInt8 => "QUInt8",
            DType::QInt32 => "QInt32",
        }
    }

    /// Whether tensors of this dtype can exist: Candle has a storage type for it (int8 is logical,
    /// over int16 storage, as bool is over uint8). The others are dtype objects only (names,
    /// finfo/iinfo, promotion); creating such a tensor raises.
    pub fn has_storage(self) -> bool {
        !matches!(
            self,
            DType::U16 | DType::U32 | DType::U64 | DType::F8E5M2 | DType::C64 | DType::C128 | DType::QInt8 | DType::QUInt8 | DType::QInt32
        )
    }

    /// The error for a dtype without storage.
    pub fn unsupported(self) -> PyErr {
        crate::error::dtype_err(format!("torch.{} tensors are not supported by candle_bind yet", self.name()))
    }

    /// The Candle storage dtype (dtypes without storage never reach a tensor: `extract_dtype` refuses
    /// them, so their arm here is never used for data).
    pub fn candle(self) -> CDType {
        match self {
            DType::Bool | DType::U8 => CDType::U8,
            DType::I8 | DType::I16 => CDType::I16,
            DType::I32 => CDType::I32,
            DType::I64 => CDType::I64,
            DType::F8E4M3 => CDType::F8E4M3,
            DType::F16 => CDType::F16,
            DType::BF16 => CDType::BF16,
            DType::F32 => CDType::F32,
            DType::F64 => CDType::F64,
            DType::U16 | DType::U32 | DType::U64 | DType::F8E5M2 | DType::C64 | DType::C128 => CDType::U8,
            DType::QInt8 | DType::QUInt8 | DType::QInt32 => CDType::U8,
        }
    }

    /// The logical dtype of a Candle dtype (U8 reads as uint8; callers that know better say bool).
    pub fn from_candle(d: CDType) -> PyResult<Self> {
        Ok(match d {
            CDType::U8 => DType::U8,
            CDType::I16 => DType::I16,
            CDType::I32 => DType::I32,
            CDType::I64 => DType::I64,
            CDType::F8E4M3 => DType::F8E4M3,
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
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::U16 | DType::U32 | DType::U64 => {
                Kind::Int
            }
            DType::QInt8 | DType::QUInt8 | DType::QInt32 => Kind::Int,
            DType::C64 | DType::C128 => Kind::Complex,
            _ => Kind::Float,
        }
    }

    pub fn is_float(self) -> bool {
        self.kind() == Kind::Float
    }

    pub fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::QUInt8)
    }

    pub fn itemsize(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 | DType::F8E4M3 | DType::F8E5M2 | DType::QInt8 | DType::QUInt8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 | DType::QInt32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
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
            (C128, _) | (_, C128) | (C64, F64) | (F64, C64) => C128,
            (C64, _) | (_, C64) => C64,
            (F16, BF16) | (BF16, F16) => F32,
            (x, y) if x.is_float() && y.is_float() => x.max(y).max(F16),
            (x, y) if x.is_float() && !y.is_float() => x,
            (x, y) if y.is_float() && !x.is_float() => y,
            // Integers: the wider of two of the same signedness; mixed, a signed type wider than the unsigned one.
            (x, y) if x.is_signed() == y.is_signed() => x.max(y),
            (x, y) => {
                let (s, u) = if x.is_signed() { (x, y) } else { (y, x) };
                let need = match u {
                    U8 => I16,
                    U16 => I32,
                    _ => I64,
                };
                s.max(need)
            }
        }
    }

    /// The default dtype for a kind (what a Python scalar of that kind becomes).
    pub fn default_for(kind: Kind) -> DType {
        match kind {
            Kind::Bool => DType::Bool,
            Kind::Int => DType::I64,
            Kind::Float => default_float(),
            Kind::Complex => if default_float() == DType::F64 { DType::C128 } else { DType::C64 },
        }
    }
}

/// torch.set_default_dtype's dtype: what float factories and Python floats give (float32 unless set).
static DEFAULT_FLOAT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(DType::F32 as u8);

pub fn default_float() -> DType {
    ALL[DEFAULT_FLOAT.load(std::sync::atomic::Ordering::Relaxed) as usize]
}

/// torch.set_default_dtype: float16, bfloat16, float32 or float64.
#[pyfunction]
pub fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    let d = extract_dtype(d)?;
    if !matches!(d, DType::F16 | DType::BF16 | DType::F32 | DType::F64) {
        return Err(type_err(format!("only floating-point types are supported as the default type, got {}", d.name())));
    }
    DEFAULT_FLOAT.store(d as u8, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// torch.get_default_dtype.
#[pyfunction]
pub fn get_default_dtype(py: Python<'_>) -> PyResult<Py<PyDType>> {
    PyDType::object(py, default_float())
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
        self.0.kind() == Kind::Complex
    }
    #[getter]
    fn is_signed(&self) -> PyResult<bool> {
        if matches!(self.0, DType::QInt8 | DType::QUInt8 | DType::QInt32) {
            return Err(crate::error::runtime_err("isSignedType not supported for quantized types"));
        }
        Ok(self.0.is_signed())
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
    /// Pickled (and deep-copied) as the module global of that name: the same singleton comes back.
    fn __reduce__(&self) -> &'static str {
        self.0.name()
    }
}

/// Reads a `dtype=` argument: our dtype objects, or Python's `bool`, `int`, `float` as torch does.
/// Dtypes that have no storage here are refused with an error naming them.
pub fn extract_dtype(ob: &Bound<'_, PyAny>) -> PyResult<DType> {
    let d = extract_any_dtype(ob)?;
    if !d.has_storage() {
        return Err(d.unsupported());
    }
    Ok(d)
}

/// Reads a dtype argument, storage or not (for promotion and dtype queries).
pub fn extract_any_dtype(ob: &Bound<'_, PyAny>) -> PyResult<DType> {
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
