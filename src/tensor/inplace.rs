//! Writes into a tensor's memory: the primitive behind `x[i] = v`, `add_`, `fill_`, `+=`, ...
//!
//! Candle views (narrow, transpose, reshape of contiguous data, expand) share their storage, so a write
//! through one is seen by its base and every other view, as in torch. Results of Candle ops that
//! torch would copy are always fresh storage. Writing to a tensor where several elements share one
//! memory location (an `expand`ed one) raises torch's error instead.

use candle_core::{CpuStorage, Layout, Tensor, WithDType};
use pyo3::prelude::*;

use super::{cast, with_dtype, Operand, PyTensor, Scalar};
use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};

/// The elements of a CPU storage as a mutable slice of `T` (checked against the storage's dtype).
pub fn slice_mut<T: WithDType>(s: &mut CpuStorage) -> PyResult<&mut [T]> {
    macro_rules! arm {
        ($v:expr, $dt:ident) => {{
            if T::DTYPE != candle_core::DType::$dt {
                return Err(runtime_err(format!("storage holds {:?}, not {:?}", candle_core::DType::$dt, T::DTYPE)));
            }
            // SAFETY: the element type is the one checked just above.
            unsafe { std::slice::from_raw_parts_mut($v.as_mut_ptr() as *mut T, $v.len()) }
        }};
    }
    Ok(match s {
        CpuStorage::U8(v) => arm!(v, U8),
        CpuStorage::I32(v) => arm!(v, I32),
        CpuStorage::I64(v) => arm!(v, I64),
        CpuStorage::F16(v) => arm!(v, F16),
        CpuStorage::BF16(v) => arm!(v, BF16),
        CpuStorage::F32(v) => arm!(v, F32),
        CpuStorage::F64(v) => arm!(v, F64),
        _ => return Err(runtime_err("unsupported storage dtype")),
    })
}

/// Runs `f` on the storage behind `t` (mutably) with `t`'s layout, under Candle's write lock.
/// Callers must not hold a read guard on the same storage (it would deadlock): read what you need first.
pub fn with_storage_mut<R>(t: &Tensor, f: impl FnOnce(&mut CpuStorage, &Layout) -> PyResult<R>) -> PyResult<R> {
    struct Op<F, R> {
        f: std::cell::RefCell<Option<F>>,
        out: std::cell::RefCell<Option<PyResult<R>>>,
    }
    impl<R, F: FnOnce(&mut CpuStorage, &Layout) -> PyResult<R>> candle_core::InplaceOp1 for Op<F, R> {
        fn name(&self) -> &'static str {
            "write"
        }
        fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> candle_core::Result<()> {
            if let Some(f) = self.f.borrow_mut().take() {
                *self.out.borrow_mut() = Some(f(s, l));
            }
            Ok(())
        }
    }
    if !t.device().is_cpu() {
        return Err(runtime_err("in-place writes are implemented for CPU tensors only so far"));
    }
    let op = Op { f: std::cell::RefCell::new(Some(f)), out: std::cell::RefCell::new(None) };
    t.inplace_op1(&op).py()?;
    op.out.into_inner().unwrap_or_else(|| Err(runtime_err("in-place write did not run")))
}

/// torch's check before writing through a layout: no two elements may share a memory location.
pub fn check_writable(dims: &[usize], strides: &[usize]) -> PyResult<()> {
    if dims.iter().zip(strides).any(|(&d, &s)| d > 1 && s == 0) {
        return Err(runtime_err(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. \
             Please clone() the tensor before performing the operation.",
        ));
    }
    Ok(())
}

/// Calls `f(offset)` for every element of a strided view, in row-major order.
pub fn for_each_offset(dims: &[usize], strides: &[usize], base: usize, mut f: impl FnMut(usize)) {
    if dims.contains(&0) {
        return;
    }
    let n = dims.len();
    if n == 0 {
        return f(base);
    }
    let (inner, si) = (dims[n - 1], strides[n - 1]);
    let mut idx = vec![0usize; n];
    let mut off = base;
    loop {
        for j in 0..inner {
            f(off + j * si);
        }
        // Odometer over the outer dims.
        let mut d = n - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            off += strides[d];
            if idx[d] < dims[d] {
                break;
            }
            off -= strides[d] * dims[d];
            idx[d] = 0;
        }
    }
}

/// The values of `src` broadcast to `dims` and cast to `dtype`, as a contiguous CPU tensor.
pub fn values_for(src: Operand<'_>, dims: &[usize], dtype: DType) -> PyResult<Tensor> {
    let t = match src {
        Operand::S(s) => s.tensor(dtype, &candle_core::Device::Cpu)?,
        Operand::T(t) => {
            super::broadcast_dims(dims, t.dims()).and_then(|b| {
                if b.as_slice() == dims {
                    Ok(())
                } else {
                    Err(crate::error::shape_err(format!(
                        "shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}",
                        t.dims(),
                        dims
                    )))
                }
            })?;
            cast(&t.t, t.dtype, dtype)?.to_device(&candle_core::Device::Cpu).py()?
        }
    };
    t.broadcast_as(dims).py()?.contiguous().py()
}

/// Writes `values` (contiguous, `T`) to the storage offsets `offsets` of `dst`.
pub fn write_at(dst: &Tensor, offsets: &[usize], values: &Tensor) -> PyResult<()> {
    let values = values.contiguous().py()?;
    let v = values.flatten_all().py()?;
    with_dtype!(dst.dtype(), T => {
        let vals: Vec<T> = v.to_vec1::<T>().py()?;
        with_storage_mut(dst, |s, _| {
            let data = slice_mut::<T>(s)?;
            if vals.len() == 1 {
                offsets.iter().for_each(|&o| data[o] = vals[0]);
            } else {
                offsets.iter().zip(&vals).for_each(|(&o, &x)| data[o] = x);
            }
            Ok(())
        })
    })
}

impl PyTensor {
    /// The storage offsets of every element of this tensor, in row-major order (checked writable).
    pub fn offsets(&self) -> PyResult<Vec<usize>> {
        let l = self.t.layout();
        check_writable(l.dims(), l.stride())?;
        let mut out = Vec::with_capacity(self.numel());
        for_each_offset(l.dims(), l.stride(), l.start_offset(), |o| out.push(o));
        Ok(out)
    }

    /// `self[...] = src` over the whole tensor: broadcast, cast to our dtype, written in place.
    pub fn assign(&self, src: Operand<'_>) -> PyResult<()> {
        let offsets = self.offsets()?;
        let values = match src {
            Operand::S(s) => s.tensor(self.dtype, &candle_core::Device::Cpu)?,
            _ => values_for(src, self.dims(), self.dtype)?,
        };
        write_at(&self.t, &offsets, &values)
    }

    /// Writes an op's result into `self`, with torch's rule that the result type must cast to ours.
    pub fn assign_result(&self, result: &PyTensor, op: &str) -> PyResult<()> {
        if !can_cast(result.dtype, self.dtype) {
            return Err(runtime_err(format!(
                "result type {} can't be cast to the desired output type {}",
                result.dtype.title(),
                self.dtype.title()
            )));
        }
        if result.dims() != self.dims() {
            return Err(crate::error::shape_err(format!(
                "output with shape {:?} doesn't match the broadcast shape {:?} in {op}",
                self.dims(),
                result.dims()
            )));
        }
        self.assign(Operand::T(result))
    }
}

/// torch.can_cast: no float → int, no int → bool (same-kind casting).
pub fn can_cast(from: DType, to: DType) -> bool {
    !(from.is_float() && !to.is_float() || from != DType::Bool && to == DType::Bool)
}

fn scalar_or_tensor<'py>(ob: &Bound<'py, PyAny>, what: &str) -> PyResult<super::Arg<'py>> {
    super::Arg::extract(ob).ok_or_else(|| {
        crate::error::type_err(format!("{what}(): argument must be a Tensor or a number, not {}", ob.get_type()))
    })
}

#[pymethods]
impl PyTensor {
    fn fill_(slf: PyRef<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let v = scalar_or_tensor(value, "fill_")?;
        if let super::Arg::T(t) = &v {
            if t.rank() != 0 {
                return Err(runtime_err(format!(
                    "fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.",
                    t.rank()
                )));
            }
        }
        slf.assign(v.op())?;
        Ok(slf.into())
    }
    fn zero_(slf: PyRef<'_, Self>) -> PyResult<Py<Self>> {
        slf.assign(Operand::S(Scalar::Int(0)))?;
        Ok(slf.into())
    }
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_(slf: PyRef<'_, Self>, src: &Bound<'_, PyAny>, non_blocking: bool) -> PyResult<Py<Self>> {
        let _ = non_blocking;
        let src = src.cast::<PyTensor>().map_err(|_| crate::error::type_err("copy_(): argument 'src' must be Tensor"))?;
        let src = src.borrow();
        super::broadcast_dims(slf.dims(), src.dims())?;
        // Read the source fully before taking the write lock: it may share our storage.
        let values = values_for(Operand::T(&src), slf.dims(), slf.dtype)?;
        write_at(&slf.t, &slf.offsets()?, &values)?;
        Ok(slf.into())
    }
}

/// `x op= y`: the out-of-place result, checked castable to x's dtype and shape, written into x.
fn update(x: &PyTensor, other: &Bound<'_, PyAny>, op: super::arith::BinOp, name: &str) -> PyResult<()> {
    let o = super::arith::operand(other, name)?;
    let r = super::arith::binary(x, o.op(), op, false)?;
    x.assign_result(&r, name)
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (other, *, alpha=None))]
    fn add_<'py>(slf: PyRef<'py, Self>, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        let r = super::arith::add_sub(&slf, other, alpha, super::arith::BinOp::Add)?;
        slf.assign_result(&r, "add_")?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub_<'py>(slf: PyRef<'py, Self>, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        let r = super::arith::add_sub(&slf, other, alpha, super::arith::BinOp::Sub)?;
        slf.assign_result(&r, "sub_")?;
        Ok(slf)
    }
    fn mul_<'py>(slf: PyRef<'py, Self>, other: &Bound<'_, PyAny>) -> PyResult<PyRef<'py, Self>> {
        update(&slf, other, super::arith::BinOp::Mul, "mul_")?;
        Ok(slf)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn div_<'py>(slf: PyRef<'py, Self>, other: &Bound<'_, PyAny>, rounding_mode: Option<&str>) -> PyResult<PyRef<'py, Self>> {
        let r = slf.div(other, rounding_mode)?;
        slf.assign_result(&r, "div_")?;
        Ok(slf)
    }
    fn pow_<'py>(slf: PyRef<'py, Self>, exponent: &Bound<'_, PyAny>) -> PyResult<PyRef<'py, Self>> {
        let o = super::arith::operand(exponent, "pow_")?;
        let r = super::arith::pow_op(&slf, o.op(), false)?;
        slf.assign_result(&r, "pow_")?;
        Ok(slf)
    }
    fn __iadd__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Add, "add_")
    }
    fn __isub__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Sub, "sub_")
    }
    fn __imul__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Mul, "mul_")
    }
    fn __itruediv__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Div, "div_")
    }
    fn __ifloordiv__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::FloorDiv, "floor_divide_")
    }
    fn __imod__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Rem, "remainder_")
    }
    fn __iand__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::And, "bitwise_and_")
    }
    fn __ior__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Or, "bitwise_or_")
    }
    fn __ixor__(&self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        update(self, other, super::arith::BinOp::Xor, "bitwise_xor_")
    }
    /// Writes `result` (an op's output) into self: the primitive of the Python-level in-place ops.
    fn _assign_result(&self, result: &PyTensor, op: &str) -> PyResult<()> {
        self.assign_result(result, op)
    }
}
