//! `candle_bind.Tensor`: a Candle tensor plus its logical dtype (bool lives in a U8 tensor).
//! Methods are spread over the files of this module (pyo3 `multiple-pymethods`), one per area.

pub mod arith;
pub mod unary;
pub mod convert;
pub mod creation;
pub mod dlpack;
pub mod index;
pub mod inplace;
pub mod join;
pub mod kernels;
pub mod layout;
pub mod gemm16;
pub mod linalg;
pub mod meta;
pub mod extreme;
pub mod reduce;
pub mod scan;
pub mod scatter;
pub mod sample;
pub mod order;
pub mod select;
pub mod special;
pub mod shape;

use candle_core::{Device, Storage, Tensor, WithDType};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

use crate::dtype::{DType, Kind};
use crate::error::{runtime_err, IntoPyResult};
use kernels::View;

/// `dict`: tensors take attributes as torch's do (transformers marks loaded ones with `_is_hf_initialized`);
/// it makes each tensor GC-tracked: ~30-50 ns more per tensor created (measured on 16-element ops).
#[pyclass(name = "Tensor", module = "candle_bind", subclass, dict, weakref)]
pub struct PyTensor {
    pub t: Tensor,
    pub dtype: DType,
    /// `.shape` as last handed out (models read it constantly); valid while the dims match.
    shape_cache: std::sync::OnceLock<(Vec<usize>, Py<PyAny>)>,
    /// Recorded for torch's API (parameters report True); there is no autograd.
    pub requires_grad: std::sync::atomic::AtomicBool,
}

impl PyTensor {
    pub fn new(t: Tensor, dtype: DType) -> Self {
        PyTensor { t, dtype, shape_cache: Default::default(), requires_grad: Default::default() }
    }
    /// Wraps a Candle tensor whose dtype is its logical dtype (U8 reads as uint8).
    pub fn wrap(t: Tensor) -> PyResult<Self> {
        let dtype = DType::from_candle(t.dtype())?;
        Ok(PyTensor::new(t, dtype))
    }
    pub fn boolean(t: Tensor) -> Self {
        PyTensor::new(t, DType::Bool)
    }
    pub fn dims(&self) -> &[usize] {
        self.t.dims()
    }
    pub fn rank(&self) -> usize {
        self.t.rank()
    }
    /// The torch.Size of this tensor, built once per shape.
    pub fn size_obj(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some((dims, obj)) = self.shape_cache.get() {
            if dims == self.dims() {
                return Ok(obj.clone_ref(py));
            }
            return shape::size_object(py, self.dims());
        }
        let obj = shape::size_object(py, self.dims())?;
        let _ = self.shape_cache.set((self.dims().to_vec(), obj.clone_ref(py)));
        Ok(obj)
    }
    pub fn numel(&self) -> usize {
        self.t.elem_count()
    }
    pub fn same(&self, t: Tensor) -> Self {
        PyTensor::new(t, self.dtype)
    }
    /// Checks that an output of `dims` in this tensor's dtype and device can be allocated.
    pub fn reserve(&self, dims: &[usize]) -> PyResult<()> {
        Ok(crate::memory::ensure(dims, self.t.dtype(), self.t.device())?)
    }
}

/// A Python number as an operand.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn kind(self) -> Kind {
        match self {
            Scalar::Bool(_) => Kind::Bool,
            Scalar::Int(_) => Kind::Int,
            Scalar::Float(_) => Kind::Float,
        }
    }
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as i64 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    pub fn extract(ob: &Bound<'_, PyAny>) -> Option<Scalar> {
        if let Ok(b) = ob.cast::<PyBool>() {
            return Some(Scalar::Bool(b.is_true()));
        }
        if ob.is_instance_of::<PyInt>() {
            return ob.extract::<i64>().ok().map(Scalar::Int);
        }
        if let Ok(f) = ob.cast::<PyFloat>() {
            return Some(Scalar::Float(f.value()));
        }
        // numpy scalars and other numbers: ints through __index__, the rest through __float__.
        if ob.hasattr(pyo3::intern!(ob.py(), "__index__")).unwrap_or(false) {
            return ob.extract::<i64>().ok().map(Scalar::Int);
        }
        if ob.hasattr(pyo3::intern!(ob.py(), "__float__")).unwrap_or(false) {
            return ob.extract::<f64>().ok().map(Scalar::Float);
        }
        None
    }
    /// A 0-d Candle tensor holding this value in `dtype`. On a GPU the tensor is kept and handed
    /// out again for the same value: an upload per scalar operand would cost more than the op.
    #[inline]
    pub fn tensor(self, dtype: DType, device: &Device) -> PyResult<Tensor> {
        if !device.is_cpu() {
            return device_scalar(self, dtype, device);
        }
        self.host_tensor(dtype, device)
    }

    #[inline]
    fn host_tensor(self, dtype: DType, device: &Device) -> PyResult<Tensor> {
        let t = match (self, dtype) {
            (_, DType::Bool) => Tensor::new(self.truthy() as u8, device),
            (_, DType::U8) => Tensor::new(self.as_i64() as u8, device),
            (_, DType::I32) => Tensor::new(self.as_i64() as i32, device),
            (_, DType::I64) => Tensor::new(self.as_i64(), device),
            (_, DType::F16) => Tensor::new(half::f16::from_f64(self.as_f64()), device),
            (_, DType::BF16) => Tensor::new(half::bf16::from_f64(self.as_f64()), device),
            (_, DType::F32) => Tensor::new(self.as_f64() as f32, device),
            (_, DType::F64) => Tensor::new(self.as_f64(), device),
            (_, DType::I16) => Tensor::new(self.as_i64() as i16, device),
            (_, DType::I8) => Tensor::new(self.as_i64() as i8 as i16, device),
            (_, DType::F8E4M3) => Tensor::new(float8::F8E4M3::from_f64(self.as_f64()), device),
            (_, other) => return Err(other.unsupported()),
        };
        t.py()
    }
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
    pub fn truthy(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }
}

/// The 0-d device tensors of recent scalar operands, by (value bits, dtype, device): models use a
/// few constants over and over (0, 1, a scale, -inf). Bounded; cleared when full.
fn device_scalar(s: Scalar, dtype: DType, device: &Device) -> PyResult<Tensor> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Key = (u8, u64, DType, String);
    static CACHE: Mutex<Option<HashMap<Key, Tensor>>> = Mutex::new(None);
    let bits = match s {
        Scalar::Bool(b) => (0, b as u64),
        Scalar::Int(i) => (1, i as u64),
        Scalar::Float(f) => (2, f.to_bits()),
    };
    let key = (bits.0, bits.1, dtype, format!("{:?}", device.location()));
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    if let Some(t) = cache.get(&key) {
        return Ok(t.clone());
    }
    let t = s.host_tensor(dtype, &Device::Cpu)?.to_device(device).py()?;
    if cache.len() >= 512 {
        cache.clear();
    }
    cache.insert(key, t.clone());
    Ok(t)
}

/// An operand of a binary op: a tensor or a Python number.
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    T(&'a PyTensor),
    S(Scalar),
}

/// An operand as read from Python (holds the borrow of a tensor argument).
pub enum Arg<'py> {
    T(PyRef<'py, PyTensor>),
    S(Scalar),
}

impl<'py> Arg<'py> {
    pub fn extract(ob: &Bound<'py, PyAny>) -> Option<Self> {
        if let Ok(t) = ob.cast::<PyTensor>() {
            return t.try_borrow().ok().map(Arg::T);
        }
        Scalar::extract(ob).map(Arg::S)
    }
    pub fn op(&self) -> Operand<'_> {
        match self {
            Arg::T(t) => Operand::T(t),
            Arg::S(s) => Operand::S(*s),
        }
    }
}

/// A tensor-or-number argument, or torch's TypeError naming what was given.
pub fn operand_arg<'py>(ob: &Bound<'py, PyAny>, what: &str) -> PyResult<Arg<'py>> {
    Arg::extract(ob).ok_or_else(|| {
        crate::error::type_err(format!("{what}: expected a Tensor or a number, not {}", ob.get_type()))
    })
}

/// torch's type promotion over the operands of one op (dim tensors, 0-d tensors, Python numbers).
#[derive(Default)]
pub struct Promotion {
    dim: Option<DType>,
    zero: Option<DType>,
    wrapped: Option<DType>,
}

impl Promotion {
    pub fn tensor(mut self, t: &PyTensor) -> Self {
        let slot = if t.rank() == 0 { &mut self.zero } else { &mut self.dim };
        *slot = Some(slot.map_or(t.dtype, |d| DType::promote(d, t.dtype)));
        self
    }
    pub fn scalar(mut self, s: Scalar) -> Self {
        let d = DType::default_for(s.kind());
        self.wrapped = Some(self.wrapped.map_or(d, |w| DType::promote(w, d)));
        self
    }
    pub fn operand(self, o: &Operand<'_>) -> Self {
        match o {
            Operand::T(t) => self.tensor(t),
            Operand::S(s) => self.scalar(*s),
        }
    }
    pub fn result(&self) -> DType {
        fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
            match (higher, lower) {
                (Some(h), _) if h.is_float() => Some(h),
                (Some(h), Some(l)) if h == DType::Bool || l.is_float() => Some(DType::promote(h, l)),
                (Some(h), _) => Some(h),
                (None, l) => l,
            }
        }
        combine(self.dim, combine(self.zero, self.wrapped)).unwrap_or(crate::dtype::default_float())
    }
}

/// Converts to a logical dtype; to bool means `!= 0` (NaN is true), as torch.
pub fn cast(t: &Tensor, from: DType, to: DType) -> PyResult<Tensor> {
    if from == to || (from.candle() == to.candle() && !matches!(to, DType::Bool | DType::I8)) {
        return Ok(t.clone());
    }
    if !t.is_contiguous() && crate::device::cpu_kernels(t) {
        // In memory order: a permuted tensor's cast keeps its strides, as torch's does.
        if let Some(perm) = layout::memory_order(t.dims(), &[&layout::broadcast_strides(t, t.dims())]) {
            return layout::unpermute(&cast(&t.permute(perm.clone()).py()?, from, to)?, &perm);
        }
    }
    if to == DType::I8 {
        // int8 lives in int16 storage: values wrap into its range as a C cast to int8_t does.
        return wrap_i8(&convert(t, candle_core::DType::I16)?);
    }
    if to == DType::Bool {
        if crate::device::cpu_kernels(t) {
            return with_dtype!(t.dtype(), T => map_cpu::<T, u8, _>(t, |x| (x != T::from_f64(0.0)) as u8));
        }
        let zero = t.zeros_like().py()?;
        return t.ne(&zero).py();
    }
    convert(t, to.candle())
}

/// int16 (or int32) values wrapped into int8's range, in int16 storage: the data of an int8 tensor.
pub fn wrap_i8(t: &Tensor) -> PyResult<Tensor> {
    if !t.device().is_cpu() {
        // int8 arithmetic on the GPU (rare in models: masks are bool, ids int64): wrapped on the host.
        return crate::device::via_host(&[t], |h| wrap_i8(&h[0]));
    }
    if !crate::device::cpu_kernels(t) {
        // The generic test mode: the CPU kernel below is how int8 is computed anywhere.
        return crate::device::on_host(|| wrap_i8(t));
    }
    match t.dtype() {
        candle_core::DType::I32 => map_cpu::<i32, i16, _>(t, |v| v as i8 as i16),
        candle_core::DType::I16 => map_cpu::<i16, i16, _>(t, |v| v as i8 as i16),
        _ => wrap_i8(&convert(t, candle_core::DType::I16)?),
    }
}

/// `t.to_dtype(to)`, with the 16-bit float ↔ f32 conversions on the CPU done by our vectorised
/// kernels (`kernels::Half`).
pub fn convert(t: &Tensor, to: candle_core::DType) -> PyResult<Tensor> {
    use candle_core::DType as C;
    use kernels::Half;
    if crate::device::cpu_kernels(t) {
        match (t.dtype(), to) {
            (C::BF16, C::F32) => return map_cpu::<half::bf16, f32, _>(t, Half::widen),
            (C::F16, C::F32) => return map_cpu::<half::f16, f32, _>(t, Half::widen),
            (C::F32, C::BF16) => return map_cpu::<f32, half::bf16, _>(t, half::bf16::narrow),
            (C::F32, C::F16) if t.is_contiguous() => {
                return with_slice::<f32, _>(t, |src| {
                    let mut out = kernels::uninit_vec::<half::f16>(src.len());
                    let chunk = 16 * 1024;
                    if src.len() >= kernels::PAR_THRESHOLD {
                        crate::pool::chunks_mut(&mut out, chunk, |i, d| kernels::narrow_f16_slice(&src[i * chunk..i * chunk + d.len()], d));
                    } else {
                        kernels::narrow_f16_slice(src, &mut out);
                    }
                    Tensor::from_vec(out, t.dims(), &Device::Cpu).py()
                })?;
            }
            (C::F32, C::F16) => return map_cpu::<f32, half::f16, _>(t, half::f16::narrow),
            _ => {}
        }
    }
    if !t.device().is_cpu() {
        let dt = DType::from_candle(to)?;
        crate::device::check_dtype(t.device(), dt)?;
        // Candle's CUDA casts between 16-bit floats and integers are missing: through f32.
        let half = |d: candle_core::DType| matches!(d, candle_core::DType::F16 | candle_core::DType::BF16);
        let int = |d: candle_core::DType| matches!(d, candle_core::DType::I64 | candle_core::DType::U8 | candle_core::DType::U32);
        if (half(t.dtype()) && int(to)) || (int(t.dtype()) && half(to)) {
            return t.to_dtype(candle_core::DType::F32).py()?.to_dtype(to).py();
        }
    }
    t.to_dtype(to).py()
}

/// Runs `f` on a tensor's elements as f32, row-major: a contiguous f32 CPU tensor is read in place
/// (under Candle's read lock: `f` must not write to the same storage); anything else is converted.
pub fn with_f32<R>(t: &Tensor, f: impl FnOnce(&[f32]) -> R) -> PyResult<R> {
    with_slice::<f32, R>(t, f)
}

/// `with_f32` for any element type `T`.
pub fn with_slice<T: WithDType, R>(t: &Tensor, f: impl FnOnce(&[T]) -> R) -> PyResult<R> {
    if t.dtype() == T::DTYPE && t.is_contiguous() && crate::device::cpu_kernels(t) {
        let (storage, layout) = t.storage_and_layout();
        meta::check_storage_readable(&storage, t.dtype())?;
        let Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
        let o = layout.start_offset();
        return Ok(f(&cpu.as_slice::<T>().py()?[o..o + t.elem_count()]));
    }
    Ok(f(&cpu_vec::<T>(t)?))
}

/// A CPU tensor's elements, row-major, converted to `T` (a copy), as input of a CPU kernel: a
/// tensor on another device (or on the generic path) is refused, since its result would land on
/// the host. Reads the host needs on purpose go through `host_vec`.
pub fn cpu_vec<T: WithDType>(t: &Tensor) -> PyResult<Vec<T>> {
    crate::device::host_only(t, "cpu_vec")?;
    host_vec(t)
}

/// A tensor's elements, row-major, converted to `T`, copied to the host from any device: for values
/// the host needs (item(), tolist(), indices that decide a shape). On CUDA it waits for the device.
pub fn host_vec<T: WithDType>(t: &Tensor) -> PyResult<Vec<T>> {
    meta::check_readable(t)?;
    if t.dtype() == T::DTYPE && crate::device::cpu_kernels(t) {
        // One pass of our elementwise engine, through any layout, split over the pool when large
        // (flatten_all then to_vec1 were two copies on one thread).
        let (storage, layout) = t.storage_and_layout();
        if let Storage::Cpu(cpu) = &*storage {
            let dims = layout.dims();
            return Ok(kernels::unary(dims, View::new(cpu.as_slice::<T>().py()?, layout, dims), T::from_f64(0.0), |x| x));
        }
    }
    let t = t.flatten_all().py()?;
    let t = match () {
        _ if t.dtype() == T::DTYPE => t,
        _ if t.device().is_cpu() => crate::device::on_host(|| convert(&t, T::DTYPE))?,
        _ => t.to_dtype(T::DTYPE).py()?,
    };
    if t.device().is_cpu() {
        return t.to_vec1::<T>().py();
    }
    // A read back from the GPU waits for its queued work: without the GIL.
    Python::attach(|py| py.detach(|| t.to_vec1::<T>())).py()
}

/// Runs `f` over a CPU tensor's elements (any layout) into a new contiguous tensor.
pub fn map_cpu<T: WithDType, U: WithDType, F: Fn(T) -> U + Sync>(t: &Tensor, f: F) -> PyResult<Tensor> {
    crate::device::host_only(t, "map_cpu")?;
    let (storage, layout) = t.storage_and_layout();
    meta::check_storage_readable(&storage, t.dtype())?;
    let Storage::Cpu(cpu) = &*storage else {
        return Err(runtime_err("expected a CPU tensor"));
    };
    let data = cpu.as_slice::<T>().py()?;
    let dims = layout.dims();
    let out = kernels::unary(dims, View::new(data, layout, dims), U::from_f64(0.0), f);
    drop(storage);
    Tensor::from_vec(out, dims, &Device::Cpu).py()
}

/// A contiguous copy of `t`: large CPU tensors are copied by our elementwise engine, split over the
/// pool when there is one (Candle's strided copy runs on one thread, and is 1.7-3x slower on one
/// thread too: a transpose of (4,128,1536), a stride-2 slice); anything else by Candle.
pub fn copy_contiguous(t: &Tensor) -> PyResult<Tensor> {
    use candle_core::DType as C;
    let ours = matches!(t.dtype(), C::U8 | C::I16 | C::I32 | C::I64 | C::F16 | C::BF16 | C::F32 | C::F64);
    if ours && t.elem_count() >= kernels::PAR_THRESHOLD && crate::device::cpu_kernels(t) {
        return with_dtype!(t.dtype(), T => map_cpu::<T, T, _>(t, |x| x));
    }
    t.force_contiguous().py()
}

/// Runs `f` over two broadcastable CPU tensors of the same Candle dtype into a tensor of `out_dims`.
pub fn zip_cpu<T: WithDType, U: WithDType, F: Fn(T, T) -> U + Sync>(
    a: &Tensor,
    b: &Tensor,
    out_dims: &[usize],
    f: F,
) -> PyResult<Tensor> {
    crate::device::host_only(a, "zip_cpu")?;
    crate::device::host_only(b, "zip_cpu")?;
    let (sa, la) = a.storage_and_layout();
    let (sb, lb) = b.storage_and_layout();
    meta::check_storage_readable(&sa, a.dtype())?;
    meta::check_storage_readable(&sb, b.dtype())?;
    let (Storage::Cpu(ca), Storage::Cpu(cb)) = (&*sa, &*sb) else {
        return Err(runtime_err("expected CPU tensors"));
    };
    let (da, db) = (ca.as_slice::<T>().py()?, cb.as_slice::<T>().py()?);
    let out = kernels::binary(out_dims, View::new(da, la, out_dims), View::new(db, lb, out_dims), U::from_f64(0.0), f);
    drop((sa, sb));
    Tensor::from_vec(out, out_dims, &Device::Cpu).py()
}

/// `with_dtype!(candle_dtype, T => expr)` runs `expr` with `T` bound to the element type.
#[macro_export]
macro_rules! with_dtype {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            candle_core::DType::U8 => { type $T = u8; $body }
            candle_core::DType::I32 => { type $T = i32; $body }
            candle_core::DType::I64 => { type $T = i64; $body }
            candle_core::DType::I16 => { type $T = i16; $body }
            candle_core::DType::F8E4M3 => { type $T = float8::F8E4M3; $body }
            candle_core::DType::F16 => { type $T = half::f16; $body }
            candle_core::DType::BF16 => { type $T = half::bf16; $body }
            candle_core::DType::F32 => { type $T = f32; $body }
            candle_core::DType::F64 => { type $T = f64; $body }
            other => Err($crate::error::dtype_err(format!("unsupported dtype {other:?}"))),
        }
    };
}
pub(crate) use with_dtype;

/// torch lets a 0-d CPU tensor join an op on another device, as a Python number would: such a
/// tensor moves to `device`; anything else is returned as it is (a mismatch is the op's to report).
#[inline]
pub fn scalar_to(t: Tensor, device: &Device) -> PyResult<Tensor> {
    if !device.is_cpu() && t.rank() == 0 && t.device().is_cpu() {
        return t.to_device(device).py();
    }
    Ok(t)
}

/// Torch's broadcast of two shapes, with its error message.
pub fn broadcast_dims(a: &[usize], b: &[usize]) -> PyResult<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(crate::error::shape_err(format!(
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            )));
        };
    }
    Ok(out)
}

/// Normalises a possibly negative dim against `rank` (torch's IndexError when out of range).
pub fn norm_dim(dim: i64, rank: usize) -> PyResult<usize> {
    let r = rank.max(1) as i64;
    if dim < -r || dim >= r {
        return Err(crate::error::dim_err(dim, rank));
    }
    Ok(if dim < 0 { (dim + r) as usize } else { dim as usize })
}

/// Whether our CPU kernels take `t` (see `device::cpu_kernels`); false sends an op down its
/// device-generic path.
#[inline]
pub fn is_cpu(t: &Tensor) -> bool {
    crate::device::cpu_kernels(t)
}
