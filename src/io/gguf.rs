//! GGUF: metadata and (quantized) tensors in, quantized matmul, GGUF out.
//!
//! The header is parsed here with every length checked against the bytes that remain (Candle's
//! reader trusts them and can be made to allocate terabytes); tensor data then becomes Candle
//! `QTensor`s through `qtensor_from_ggml`, and writing goes through Candle's `gguf_file::write`.

use std::sync::Arc;

use candle_core::quantized::{gguf_file, GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::dtype::DType;
use crate::error::{value_err, IntoPyResult};
use crate::tensor::PyTensor;

fn bad(msg: impl Into<String>) -> PyErr {
    value_err(format!("invalid GGUF file: {}", msg.into()))
}

const DTYPES: [(u32, GgmlDType, &str); 15] = [
    (0, GgmlDType::F32, "F32"),
    (1, GgmlDType::F16, "F16"),
    (2, GgmlDType::Q4_0, "Q4_0"),
    (3, GgmlDType::Q4_1, "Q4_1"),
    (6, GgmlDType::Q5_0, "Q5_0"),
    (7, GgmlDType::Q5_1, "Q5_1"),
    (8, GgmlDType::Q8_0, "Q8_0"),
    (9, GgmlDType::Q8_1, "Q8_1"),
    (10, GgmlDType::Q2K, "Q2K"),
    (11, GgmlDType::Q3K, "Q3K"),
    (12, GgmlDType::Q4K, "Q4K"),
    (13, GgmlDType::Q5K, "Q5K"),
    (14, GgmlDType::Q6K, "Q6K"),
    (15, GgmlDType::Q8K, "Q8K"),
    (30, GgmlDType::BF16, "BF16"),
];

fn dtype_name(d: GgmlDType) -> &'static str {
    DTYPES.iter().find(|x| x.1 == d).map_or("?", |x| x.2)
}

fn dtype_by_name(name: &str) -> PyResult<GgmlDType> {
    DTYPES
        .iter()
        .find(|x| x.2.eq_ignore_ascii_case(name))
        .map(|x| x.1)
        .ok_or_else(|| value_err(format!("unknown GGML dtype {name:?}; one of F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 Q2K Q3K Q4K Q5K Q6K Q8K")))
}

/// A bounds-checked little-endian reader over the file bytes.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> PyResult<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| bad("unexpected end of file"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> PyResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| bad("short read"))?))
    }
    fn u64(&mut self) -> PyResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| bad("short read"))?))
    }
    /// A count of items each at least `min_size` bytes: never more than the bytes left allow.
    fn count(&mut self, v1: bool, min_size: usize) -> PyResult<usize> {
        let n = if v1 { self.u32()? as u64 } else { self.u64()? };
        let left = (self.b.len() - self.pos) as u64;
        if n.saturating_mul(min_size.max(1) as u64) > left {
            return Err(bad(format!("a count of {n} does not fit in the {left} bytes left")));
        }
        Ok(n as usize)
    }
    fn string(&mut self, v1: bool) -> PyResult<String> {
        let n = self.count(v1, 1)?;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
}

/// A metadata value as a Python object.
fn value(py: Python<'_>, r: &mut Reader<'_>, t: u32, v1: bool, depth: usize) -> PyResult<Py<PyAny>> {
    macro_rules! num {
        ($ty:ty, $n:expr) => {{
            let v = <$ty>::from_le_bytes(r.take($n)?.try_into().map_err(|_| bad("short read"))?);
            v.into_pyobject(py)?.into_any().unbind()
        }};
    }
    Ok(match t {
        0 => num!(u8, 1),
        1 => num!(i8, 1),
        2 => num!(u16, 2),
        3 => num!(i16, 2),
        4 => num!(u32, 4),
        5 => num!(i32, 4),
        6 => num!(f32, 4),
        7 => pyo3::types::PyBool::new(py, r.take(1)?[0] != 0).to_owned().into_any().unbind(),
        8 => r.string(v1)?.into_pyobject(py)?.into_any().unbind(),
        9 => {
            if depth > 8 {
                return Err(bad("arrays nested too deeply"));
            }
            let it = r.u32()?;
            let n = r.count(v1, 1)?;
            let items = (0..n).map(|_| value(py, r, it, v1, depth + 1)).collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        10 => num!(u64, 8),
        11 => num!(i64, 8),
        12 => num!(f64, 8),
        other => return Err(bad(format!("unknown metadata value type {other}"))),
    })
}

/// A quantized (or plain f32/f16) GGUF tensor: `shape`, `ggml_dtype`, `dequantize()`.
#[pyclass(name = "QTensor", module = "candle_bind")]
pub struct PyQTensor {
    pub q: Arc<QTensor>,
}

#[pymethods]
impl PyQTensor {
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::tensor::shape::size_object(py, self.q.shape().dims())
    }
    #[getter]
    fn ggml_dtype(&self) -> &'static str {
        dtype_name(self.q.dtype())
    }
    /// Storage size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.q.storage_size_in_bytes()
    }
    fn dequantize(&self) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.q.dequantize(&Device::Cpu).py()?, DType::F32))
    }
    fn __repr__(&self) -> String {
        format!("QTensor(shape={:?}, ggml_dtype={})", self.q.shape().dims(), dtype_name(self.q.dtype()))
    }
}

/// Reads a GGUF file: (metadata dict, tensors dict name → QTensor).
/// A tensor's place in the file, checked against the file's size.
pub struct TensorSpan {
    pub name: String,
    pub dims: Vec<usize>,
    pub dtype: GgmlDType,
    pub start: usize,
    pub end: usize,
}

/// Parses and checks a whole GGUF header: metadata as a Python dict, and every tensor's bytes lying
/// inside the file as whole blocks. After this, Candle's own reader can be given the same bytes.
pub fn parse<'py>(py: Python<'py>, map: &[u8]) -> PyResult<(Bound<'py, PyDict>, Vec<TensorSpan>)> {
    let mut r = Reader { b: map, pos: 0 };
    if r.take(4).map_err(|_| bad("too short"))? != b"GGUF" {
        return Err(bad("wrong magic (expected GGUF)"));
    }
    let version = r.u32()?;
    if !(1..=3).contains(&version) {
        return Err(bad(format!("unsupported version {version}")));
    }
    let v1 = version == 1;
    let n_tensors = r.count(v1, 16)?;
    let n_kv = r.count(v1, 12)?;
    let meta = PyDict::new(py);
    let mut alignment = 32u64;
    for _ in 0..n_kv {
        let key = r.string(v1)?;
        let t = r.u32()?;
        let v = value(py, &mut r, t, v1, 0)?;
        if key == "general.alignment" {
            alignment = v.extract::<u64>(py).unwrap_or(32).max(1);
        }
        meta.set_item(key, v)?;
    }
    let mut infos = Vec::with_capacity(n_tensors);
    for _ in 0..n_tensors {
        let name = r.string(v1)?;
        let nd = r.u32()? as usize;
        if nd > 8 {
            return Err(bad(format!("tensor {name} has {nd} dims")));
        }
        let mut dims = (0..nd).map(|_| if v1 { r.u32().map(|x| x as u64) } else { r.u64() }).collect::<PyResult<Vec<u64>>>()?;
        dims.reverse(); // GGUF lists the innermost dim first
        let t = r.u32()?;
        let dt = DTYPES.iter().find(|x| x.0 == t).map(|x| x.1).ok_or_else(|| bad(format!("tensor {name}: unknown ggml type {t}")))?;
        let off = r.u64()?;
        infos.push((name, dims, dt, off));
    }
    let data_start = (r.pos as u64).div_ceil(alignment) * alignment;
    let mut spans = Vec::with_capacity(infos.len());
    for (name, dims, dt, off) in infos {
        let elems = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(|| bad(format!("tensor {name}: size overflows")))?;
        let bs = dt.block_size() as u64;
        if elems % bs != 0 {
            return Err(bad(format!("tensor {name}: {elems} elements is not a whole number of {}-element blocks", bs)));
        }
        let size = elems / bs * dt.type_size() as u64;
        let start = data_start.checked_add(off).ok_or_else(|| bad("offset overflows"))?;
        let end = start.checked_add(size).filter(|&e| e <= map.len() as u64).ok_or_else(|| {
            bad(format!("tensor {name}: data [{start}, {}) lies past the end of the {}-byte file", start.saturating_add(size), map.len()))
        })?;
        let dims = dims.iter().map(|&d| d as usize).collect();
        spans.push(TensorSpan { name, dims, dtype: dt, start: start as usize, end: end as usize });
    }
    Ok((meta, spans))
}

/// A GGUF file's metadata alone (the header is checked whole, tensor data is not read).
#[pyfunction]
pub fn gguf_metadata<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let f = std::fs::File::open(&path)?;
    // SAFETY: read-only map; the file must not be truncated while we read it.
    let map = unsafe { memmap2::Mmap::map(&f)? };
    Ok(parse(py, &map)?.0)
}

#[pyfunction]
pub fn gguf_read<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let f = std::fs::File::open(&path)?;
    // SAFETY: read-only map; the file must not be truncated while we read it.
    let map = unsafe { memmap2::Mmap::map(&f)? };
    let (meta, spans) = parse(py, &map)?;
    let tensors = PyDict::new(py);
    for t in spans {
        let q = gguf_qtensor(t.dtype, &map[t.start..t.end], t.dims)?;
        tensors.set_item(t.name, Py::new(py, PyQTensor { q: Arc::new(q) })?)?;
    }
    Ok((meta, tensors))
}

fn gguf_qtensor(dt: GgmlDType, raw: &[u8], dims: Vec<usize>) -> PyResult<QTensor> {
    qtensor_from_bytes(dt, raw, dims).py()
}

/// A CPU QTensor of GGML blocks `raw` (whole blocks for `dims`, checked by Candle).
pub fn qtensor_from_bytes(dt: GgmlDType, raw: &[u8], dims: Vec<usize>) -> candle_core::Result<QTensor> {
    qtensor_from_bytes_on(dt, raw, dims, &Device::Cpu)
}

/// `qtensor_from_bytes` with the blocks placed on `device`.
pub fn qtensor_from_bytes_on(dt: GgmlDType, raw: &[u8], dims: Vec<usize>, device: &Device) -> candle_core::Result<QTensor> {
    // Candle reads the blocks with aligned loads: copy into an 8-byte aligned buffer first.
    let mut buf = vec![0u64; raw.len().div_ceil(8)];
    // SAFETY: buf has at least raw.len() bytes.
    unsafe { std::ptr::copy_nonoverlapping(raw.as_ptr(), buf.as_mut_ptr() as *mut u8, raw.len()) };
    // SAFETY: viewing the u64 buffer's first raw.len() bytes as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, raw.len()) };
    candle_core::quantized::ggml_file::qtensor_from_ggml(dt, bytes, dims, device)
}

/// Quantizes a float tensor to a GGML dtype (rows must be whole blocks along the last dim).
#[pyfunction]
pub fn quantize(tensor: &PyTensor, ggml_dtype: &str) -> PyResult<PyQTensor> {
    let dt = dtype_by_name(ggml_dtype)?;
    let last = tensor.dims().last().copied().unwrap_or(1);
    if last % dt.block_size() != 0 {
        return Err(value_err(format!(
            "quantize: the last dim ({last}) must be a multiple of the {ggml_dtype} block size {}",
            dt.block_size()
        )));
    }
    let t = tensor.t.to_dtype(candle_core::DType::F32).py()?.contiguous().py()?;
    Ok(PyQTensor { q: Arc::new(QTensor::quantize(&t, dt).py()?) })
}

/// `x @ Wᵀ` with W quantized (Candle's quantized matmul kernels): the forward of a quantized Linear.
#[pyfunction]
pub fn qmatmul(x: &PyTensor, weight: &PyQTensor) -> PyResult<PyTensor> {
    let w = weight.q.shape().dims();
    if w.len() != 2 || x.dims().last() != Some(&w[1]) {
        return Err(crate::error::shape_err(format!(
            "qmatmul: input {:?} and quantized weight {:?} (out_features, in_features) do not fit",
            x.dims(),
            w
        )));
    }
    let mm = QMatMul::from_arc(weight.q.clone()).py()?;
    let mut xs = x.t.to_dtype(candle_core::DType::F32).py()?.contiguous().py()?;
    // A vector is one row (torch's linear on 1-D input), and a product with no rows is empty:
    // the quantized kernels take neither.
    let vector = xs.rank() == 1;
    if vector {
        xs = xs.unsqueeze(0).py()?;
    }
    let y = if xs.elem_count() == 0 {
        let mut dims = xs.dims().to_vec();
        if let Some(d) = dims.last_mut() {
            *d = w[0];
        }
        candle_core::Tensor::zeros(dims, candle_core::DType::F32, xs.device()).py()?
    } else {
        Python::attach(|py| py.detach(|| mm.forward(&xs))).py()?
    };
    let y = if vector { y.squeeze(0).py()? } else { y };
    Ok(PyTensor::new(y.to_dtype(x.dtype.candle()).py()?, x.dtype))
}

fn to_value(ob: &Bound<'_, PyAny>) -> PyResult<gguf_file::Value> {
    use gguf_file::Value as V;
    if let Ok(b) = ob.cast::<pyo3::types::PyBool>() {
        return Ok(V::Bool(b.is_true()));
    }
    // numpy arrays and scalars keep their type (llama.cpp reads token_type as int32, scores as f32).
    if let Ok(dt) = ob.getattr("dtype").and_then(|d| d.getattr("name")).and_then(|n| n.extract::<String>()) {
        if ob.hasattr("ndim")? && ob.getattr("ndim")?.extract::<usize>()? > 0 {
            let items = ob.call_method0("tolist")?;
            let l = items.cast::<PyList>()?;
            return Ok(V::Array(l.iter().map(|x| typed(&dt, &x)).collect::<PyResult<_>>()?));
        }
        return typed(&dt, &ob.call_method0("item")?);
    }
    if let Ok(i) = ob.extract::<i64>() {
        return Ok(if i >= 0 && i <= u32::MAX as i64 { V::U32(i as u32) } else { V::I64(i) });
    }
    if let Ok(f) = ob.extract::<f64>() {
        return Ok(V::F32(f as f32));
    }
    if let Ok(s) = ob.extract::<String>() {
        return Ok(V::String(s));
    }
    if let Ok(l) = ob.cast::<PyList>() {
        return Ok(V::Array(l.iter().map(|x| to_value(&x)).collect::<PyResult<_>>()?));
    }
    Err(crate::error::type_err(format!("GGUF metadata values are bool, int, float, str or list, not {}", ob.get_type())))
}

/// A Python number as the GGUF value of numpy dtype `dt`.
fn typed(dt: &str, x: &Bound<'_, PyAny>) -> PyResult<gguf_file::Value> {
    use gguf_file::Value as V;
    Ok(match dt {
        "bool" => V::Bool(x.extract()?),
        "int8" => V::I8(x.extract()?),
        "uint8" => V::U8(x.extract()?),
        "int16" => V::I16(x.extract()?),
        "uint16" => V::U16(x.extract()?),
        "int32" => V::I32(x.extract()?),
        "uint32" => V::U32(x.extract()?),
        "int64" => V::I64(x.extract()?),
        "uint64" => V::U64(x.extract()?),
        "float32" => V::F32(x.extract()?),
        "float64" => V::F64(x.extract()?),
        s if s.starts_with("str") => V::String(x.extract()?),
        other => return Err(crate::error::type_err(format!("GGUF metadata: numpy dtype {other} has no GGUF type"))),
    })
}

/// Writes a GGUF file from metadata and tensors (QTensors as they are; Tensors as F32).
#[pyfunction]
pub fn gguf_write(path: std::path::PathBuf, metadata: &Bound<'_, PyDict>, tensors: &Bound<'_, PyDict>) -> PyResult<()> {
    let meta: Vec<(String, gguf_file::Value)> = metadata.iter().map(|(k, v)| Ok((k.extract::<String>()?, to_value(&v)?))).collect::<PyResult<_>>()?;
    let mut qs: Vec<(String, Arc<QTensor>)> = Vec::new();
    for (k, v) in tensors.iter() {
        let name: String = k.extract()?;
        if let Ok(q) = v.cast::<PyQTensor>() {
            qs.push((name, q.borrow().q.clone()));
        } else if let Ok(t) = v.cast::<PyTensor>() {
            let t = t.borrow().t.to_dtype(candle_core::DType::F32).py()?.contiguous().py()?;
            qs.push((name, Arc::new(QTensor::quantize(&t, GgmlDType::F32).py()?)));
        } else {
            return Err(crate::error::type_err(format!("gguf tensor {name} must be a Tensor or QTensor")));
        }
    }
    let meta_refs: Vec<(&str, &gguf_file::Value)> = meta.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let q_refs: Vec<(&str, &QTensor)> = qs.iter().map(|(k, q)| (k.as_str(), q.as_ref())).collect();
    let mut f = std::fs::File::create(&path)?;
    gguf_file::write(&mut f, &meta_refs, &q_refs).py()?;
    Ok(())
}
