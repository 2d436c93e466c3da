//! Arithmetic: operators with torch's type promotion and broadcasting, elementwise math, matmul.
#![allow(unused_comparisons)]

use candle_core::{Device, Tensor};
use pyo3::prelude::*;

use super::unary::{dev, float_unary, map_f32_slices};
use super::{
    broadcast_dims, cast, is_cpu, map_cpu, with_dtype, zip_cpu, Arg, Operand, Promotion, PyTensor, Scalar,
};
use crate::dtype::DType;
use crate::error::{dtype_err, runtime_err, shape_err, type_err, IntoPyResult};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Rem,
    Pow,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Xor,
}

impl BinOp {
    fn is_cmp(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }
    fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::FloorDiv => "floor_divide",
            BinOp::Rem => "remainder",
            BinOp::Pow => "pow",
            BinOp::Maximum => "maximum",
            BinOp::Minimum => "minimum",
            BinOp::Eq => "eq",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            BinOp::Ge => "ge",
            BinOp::And => "bitwise_and",
            BinOp::Or => "bitwise_or",
            BinOp::Xor => "bitwise_xor",
        }
    }
}

/// Python-style floor division and remainder for floats, as torch computes them.
#[inline(always)]
fn floordiv_f<T: num_like::F>(a: T, b: T) -> T {
    if b == T::ZERO {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != T::ZERO && ((b < T::ZERO) != (m < T::ZERO)) {
        div = div - T::ONE;
    }
    if div != T::ZERO {
        let f = div.floor();
        if div - f > T::HALF {
            f + T::ONE
        } else {
            f
        }
    } else {
        T::ZERO.copysign(a / b)
    }
}

#[inline(always)]
fn rem_f<T: num_like::F>(a: T, b: T) -> T {
    let m = a % b;
    if m != T::ZERO && ((b < T::ZERO) != (m < T::ZERO)) {
        m + b
    } else {
        m
    }
}

mod num_like {
    pub trait F:
        Copy
        + PartialOrd
        + std::ops::Add<Output = Self>
        + std::ops::Sub<Output = Self>
        + std::ops::Div<Output = Self>
        + std::ops::Rem<Output = Self>
    {
        const ZERO: Self;
        const ONE: Self;
        const HALF: Self;
        fn floor(self) -> Self;
        fn copysign(self, s: Self) -> Self;
    }
    macro_rules! imp {
        ($t:ty) => {
            impl F for $t {
                const ZERO: Self = 0.0;
                const ONE: Self = 1.0;
                const HALF: Self = 0.5;
                fn floor(self) -> Self {
                    <$t>::floor(self)
                }
                fn copysign(self, s: Self) -> Self {
                    <$t>::copysign(self, s)
                }
            }
        };
    }
    imp!(f32);
    imp!(f64);
}

macro_rules! float_binop {
    ($T:ty, $op:expr, $a:expr, $b:expr, $dims:expr) => {
        match $op {
            BinOp::Add => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x + y),
            BinOp::Sub => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x - y),
            BinOp::Mul => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x * y),
            BinOp::Div => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x / y),
            BinOp::FloorDiv => zip_cpu::<$T, $T, _>($a, $b, $dims, floordiv_f::<$T>),
            BinOp::Rem => zip_cpu::<$T, $T, _>($a, $b, $dims, rem_f::<$T>),
            BinOp::Pow => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x.powf(y)),
            BinOp::Maximum => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| if x > y || x.is_nan() { x } else { y }),
            BinOp::Minimum => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| if x < y || x.is_nan() { x } else { y }),
            BinOp::Eq => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x == y) as u8),
            BinOp::Ne => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x != y) as u8),
            BinOp::Lt => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x < y) as u8),
            BinOp::Le => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x <= y) as u8),
            BinOp::Gt => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x > y) as u8),
            BinOp::Ge => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x >= y) as u8),
            BinOp::And | BinOp::Or | BinOp::Xor => Err(dtype_err(format!(
                "\"{}_cpu\" not implemented for 'Float'",
                $op.name()
            ))),
        }
    };
}

/// `float_binop!`'s arithmetic for a 16-bit float type: each result computed in f32, rounded once.
macro_rules! half_binop {
    ($H:ty, $op:expr, $a:expr, $b:expr, $dims:expr) => {{
        use super::kernels::Half;
        match $op {
            BinOp::Add => zip_cpu::<$H, $H, _>($a, $b, $dims, |x, y| <$H>::narrow(x.widen() + y.widen())),
            BinOp::Sub => zip_cpu::<$H, $H, _>($a, $b, $dims, |x, y| <$H>::narrow(x.widen() - y.widen())),
            BinOp::Mul => zip_cpu::<$H, $H, _>($a, $b, $dims, |x, y| <$H>::narrow(x.widen() * y.widen())),
            _ => zip_cpu::<$H, $H, _>($a, $b, $dims, |x, y| <$H>::narrow(x.widen() / y.widen())),
        }
    }};
}

macro_rules! int_binop {
    ($T:ty, $op:expr, $a:expr, $b:expr, $dims:expr) => {
        match $op {
            BinOp::Add => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x.wrapping_add(y)),
            BinOp::Sub => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x.wrapping_sub(y)),
            BinOp::Mul => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x.wrapping_mul(y)),
            BinOp::FloorDiv => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| {
                let (q, r) = (x.wrapping_div(y), x.wrapping_rem(y));
                if r != 0 && ((r < 0) != (y < 0)) { q.wrapping_sub(1) } else { q }
            }),
            BinOp::Rem => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| {
                let r = x.wrapping_rem(y);
                if r != 0 && ((r < 0) != (y < 0)) { r.wrapping_add(y) } else { r }
            }),
            BinOp::Pow => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| {
                #[allow(unused_comparisons)]
                if y < 0 {
                    #[allow(unused_comparisons)]
                    match x { 1 => 1, _ if x == (0 as $T).wrapping_sub(1) => if y % 2 == 0 { 1 } else { x }, _ => 0 }
                } else {
                    x.wrapping_pow((y as i64).min(u32::MAX as i64) as u32)
                }
            }),
            BinOp::Maximum => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x.max(y)),
            BinOp::Minimum => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x.min(y)),
            BinOp::Eq => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x == y) as u8),
            BinOp::Ne => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x != y) as u8),
            BinOp::Lt => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x < y) as u8),
            BinOp::Le => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x <= y) as u8),
            BinOp::Gt => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x > y) as u8),
            BinOp::Ge => zip_cpu::<$T, u8, _>($a, $b, $dims, |x, y| (x >= y) as u8),
            BinOp::And => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x & y),
            BinOp::Or => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x | y),
            BinOp::Xor => zip_cpu::<$T, $T, _>($a, $b, $dims, |x, y| x ^ y),
            BinOp::Div => unreachable_div(),
        }
    };
}

fn unreachable_div() -> PyResult<Tensor> {
    Err(runtime_err("integer true division is computed in floating point"))
}

/// Any integer zero in `t` (for torch's ZeroDivisionError on integer division).
fn has_zero(t: &Tensor) -> PyResult<bool> {
    if t.elem_count() == 0 {
        return Ok(false);
    }
    let z = cast(t, DType::I64, DType::Bool)?; // != 0 per element (dtype here only decides the path)
    let all = z.to_dtype(candle_core::DType::F32).py()?.min_all().py()?.to_scalar::<f32>().py()?;
    Ok(all == 0.0 && t.elem_count() > 0)
}

/// `a <op> b` on tensors that already share a compute dtype; bool results come back as U8.
fn compute(op: BinOp, a: &Tensor, b: &Tensor, ct: DType) -> PyResult<Tensor> {
    let dims = broadcast_dims(a.dims(), b.dims())?;
    crate::memory::ensure(&dims, if op.is_cmp() { candle_core::DType::U8 } else { ct.candle() }, a.device())?;
    if !a.device().same_device(b.device()) {
        return Err(crate::device::mismatch(a.device(), b.device()));
    }
    // An empty result computes nothing, so nothing divides by zero (torch returns it).
    let empty = dims.iter().product::<usize>() == 0;
    if !ct.is_float() && !empty && matches!(op, BinOp::FloorDiv | BinOp::Rem) && has_zero(b)? {
        return Err(crate::error::CandleError::new_err("ZeroDivisionError"));
    }
    if matches!(ct, DType::I8 | DType::I16 | DType::F8E4M3) && a.device().is_cpu() && !is_cpu(a) {
        // Storage-only dtypes never leave the CPU (device::check_dtype): their CPU kernels run in
        // the generic test mode too.
        return crate::device::on_host(|| compute(op, a, b, ct));
    }
    if !is_cpu(a) || !is_cpu(b) {
        let r = compute_candle(op, a, b, ct, &dims)?;
        // int8 lives in int16 storage: results wrap into its range as torch's int8 arithmetic does.
        return if ct == DType::I8 && !op.is_cmp() { super::wrap_i8(&r) } else { Ok(r) };
    }
    match ct {
        // The arithmetic models repeat (residual adds, gating, rotary): widened in registers and
        // rounded once, in one pass.
        DType::BF16 if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) => half_binop!(half::bf16, op, a, b, &dims),
        DType::F16 if matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) => half_binop!(half::f16, op, a, b, &dims),
        DType::F16 | DType::BF16 => {
            let (a32, b32) = (super::convert(a, candle_core::DType::F32)?, super::convert(b, candle_core::DType::F32)?);
            let r = float_binop!(f32, op, &a32, &b32, &dims)?;
            if op.is_cmp() { Ok(r) } else { super::convert(&r, ct.candle()) }
        }
        DType::F32 => float_binop!(f32, op, a, b, &dims),
        DType::F64 => float_binop!(f64, op, a, b, &dims),
        DType::I64 => int_binop!(i64, op, a, b, &dims),
        DType::I32 => int_binop!(i32, op, a, b, &dims),
        DType::U8 => int_binop!(u8, op, a, b, &dims),
        // Storage-only dtypes compute in a wider one and round back (torch computes int16 in int16:
        // the same results unless a value overflows).
        // int8 (over int16 storage) wraps its results into int8's range, as torch's int8 arithmetic does.
        DType::I8 | DType::I16 | DType::F8E4M3 => {
            let wide = if ct == DType::F8E4M3 { DType::F32 } else { DType::I32 };
            if a.dtype() != ct.candle() || b.dtype() != ct.candle() {
                return Err(runtime_err("operands must share the computation dtype"));
            }
            let (aw, bw) = (super::convert(a, wide.candle())?, super::convert(b, wide.candle())?);
            let r = compute(op, &aw, &bw, wide)?;
            match () {
                _ if op.is_cmp() => Ok(r),
                _ if ct == DType::I8 => super::wrap_i8(&r),
                _ => r.to_dtype(ct.candle()).py(),
            }
        }
        DType::U16 | DType::U32 | DType::U64 | DType::F8E5M2 | DType::C64 | DType::C128 => Err(ct.unsupported()),
        DType::QInt8 | DType::QUInt8 | DType::QInt32 => Err(ct.unsupported()),
        DType::Bool => match op {
            BinOp::Add | BinOp::Maximum | BinOp::Or => int_binop!(u8, BinOp::Or, a, b, &dims),
            BinOp::Mul | BinOp::Minimum | BinOp::And => int_binop!(u8, BinOp::And, a, b, &dims),
            BinOp::Sub => Err(runtime_err(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
            )),
            _ => int_binop!(u8, op, a, b, &dims),
        },
    }
}

/// Other devices (and the generic test mode): Candle's broadcasting ops, arranged to give torch's
/// results where Candle's differ (NaN in maximum/minimum, floor division and remainder, bool rules).
fn compute_candle(op: BinOp, a: &Tensor, b: &Tensor, ct: DType, dims: &[usize]) -> PyResult<Tensor> {
    let (a, b) = (a.broadcast_as(dims).py()?, b.broadcast_as(dims).py()?);
    let float = ct.is_float();
    let r = match op {
        BinOp::Add if ct == DType::Bool => a.maximum(&b),
        BinOp::Mul if ct == DType::Bool => a.minimum(&b),
        BinOp::Add => &a + &b,
        BinOp::Sub => &a - &b,
        BinOp::Mul => &a * &b,
        BinOp::Div => &a / &b,
        BinOp::FloorDiv if float => return floor_div_float(&a, &b),
        BinOp::FloorDiv => return floor_div_int(&a, &b),
        BinOp::Rem => {
            // torch: a - floor_divide(a, b) * b (for floats computed from the rounded quotient).
            let q = if float { floor_div_float(&a, &b)? } else { floor_div_int(&a, &b)? };
            return (&a - (&q * &b).py()?).py();
        }
        // C's pow: our CUDA kernel on the GPU; the CPU kernel in the generic test mode.
        #[cfg(feature = "cuda")]
        BinOp::Pow if a.device().is_cuda() => {
            if float {
                return crate::cuda::pow(&a, &b);
            }
            let f64_ = candle_core::DType::F64;
            let f = crate::cuda::pow(&a.to_dtype(f64_).py()?, &b.to_dtype(f64_).py()?)?;
            return f.round().py()?.to_dtype(a.dtype()).py();
        }
        BinOp::Pow => return crate::device::via_host(&[&a, &b], |h| compute(op, &h[0], &h[1], ct)),
        BinOp::Maximum | BinOp::Minimum => {
            let r = if op == BinOp::Maximum { a.maximum(&b) } else { a.minimum(&b) }.py()?;
            return if float { propagate_nan(r, &a, &b) } else { Ok(r) };
        }
        BinOp::Eq => a.eq(&b),
        BinOp::Ne => a.ne(&b),
        BinOp::Lt => a.lt(&b),
        BinOp::Le => a.le(&b),
        BinOp::Gt => a.gt(&b),
        BinOp::Ge => a.ge(&b),
        BinOp::And if ct == DType::Bool => a.minimum(&b),
        BinOp::Or if ct == DType::Bool => a.maximum(&b),
        BinOp::Xor if ct == DType::Bool => a.ne(&b),
        // Integer bitwise ops: rare in inference, computed on the host.
        BinOp::And | BinOp::Or | BinOp::Xor => {
            return crate::device::via_host(&[&a, &b], |h| compute(op, &h[0], &h[1], ct));
        }
    };
    r.py()
}

/// x where neither input is NaN, else NaN (torch's maximum/minimum/clamp propagate NaN; Candle's
/// do not).
fn propagate_nan(r: Tensor, a: &Tensor, b: &Tensor) -> PyResult<Tensor> {
    let nan = a.ne(a).py()?.maximum(&b.ne(b).py()?).py()?;
    nan.where_cond(&(a + b).py()?, &r).py()
}

/// torch's floor division of floats: floor(a / b), and a / b itself where b is 0 (±inf or NaN).
fn floor_div_float(a: &Tensor, b: &Tensor) -> PyResult<Tensor> {
    let q = (a / b).py()?;
    let zero = b.zeros_like().py()?;
    b.eq(&zero).py()?.where_cond(&q, &q.floor().py()?).py()
}

/// Floor division of integers (b has no zeros): the truncated quotient, one less where the
/// remainder is nonzero and of the other sign than b.
fn floor_div_int(a: &Tensor, b: &Tensor) -> PyResult<Tensor> {
    let (af, bf) = (a.to_dtype(candle_core::DType::F64).py()?, b.to_dtype(candle_core::DType::F64).py()?);
    if a.dtype() == candle_core::DType::U8 {
        return (af / bf).py()?.floor().py()?.to_dtype(a.dtype()).py();
    }
    // Exact for |values| < 2^53; beyond that through the integer quotient fixed up below.
    let q = (&af / &bf).py()?.trunc_().py()?.to_dtype(a.dtype()).py()?;
    let r = (a - (&q * b).py()?).py()?;
    let zero = r.zeros_like().py()?;
    let fix = r.ne(&zero).py()?.minimum(&r.lt(&zero).py()?.ne(&b.lt(&zero.broadcast_as(b.dims()).py()?).py()?).py()?).py()?;
    (q - fix.to_dtype(a.dtype()).py()?).py()
}

pub(crate) trait Trunc {
    fn trunc_(&self) -> candle_core::Result<Tensor>;
}
impl Trunc for Tensor {
    /// Rounds toward zero: floor for positive values, ceil for negative ones.
    fn trunc_(&self) -> candle_core::Result<Tensor> {
        let zero = self.zeros_like()?;
        self.ge(&zero)?.where_cond(&self.floor()?, &self.ceil()?)
    }
}


/// The dtype an op computes in, from the promoted dtype of its operands.
fn compute_dtype(op: BinOp, promoted: DType) -> PyResult<DType> {
    Ok(match op {
        BinOp::Div if !promoted.is_float() => DType::F32,
        BinOp::And | BinOp::Or | BinOp::Xor if promoted.is_float() => {
            return Err(type_err(format!("\"{}_cpu\" not implemented for 'Float'", op.name())))
        }
        _ => promoted,
    })
}

/// `a <op> b` (or `b <op> a` when `reflected`), torch's promotion and broadcasting.
pub fn binary(a: &PyTensor, b: Operand<'_>, op: BinOp, reflected: bool) -> PyResult<PyTensor> {
    if let Operand::T(t) = b {
        if let Some((pa, pb, perm)) = in_memory_order(a, t, reflected)? {
            return super::layout::restore(binary_rows(&pa, Operand::T(&pb), op, reflected)?, &perm);
        }
    } else if let Some(perm) = in_memory_order_scalar(a)? {
        return super::layout::restore(binary_rows(&a.same(a.t.permute(perm.clone()).py()?), b, op, reflected)?, &perm);
    }
    binary_rows(a, b, op, reflected)
}

/// Two CPU operands broadcast to their result's dims and permuted into its memory order (torch's:
/// the left operand's strides decide first), when that is not row-major: then the result computes
/// along memory and keeps the strides torch gives it.
fn in_memory_order(a: &PyTensor, b: &PyTensor, reflected: bool) -> PyResult<Option<(PyTensor, PyTensor, Vec<usize>)>> {
    if (a.t.is_contiguous() && b.t.is_contiguous()) || a.is_meta() || b.is_meta() || !is_cpu(&a.t) || !is_cpu(&b.t) {
        return Ok(None);
    }
    let dims = broadcast_dims(a.dims(), b.dims())?;
    let (sa, sb) = (super::layout::broadcast_strides(&a.t, &dims), super::layout::broadcast_strides(&b.t, &dims));
    let order = if reflected { [&sb[..], &sa[..]] } else { [&sa[..], &sb[..]] };
    let Some(perm) = super::layout::memory_order(&dims, &order) else { return Ok(None) };
    let put = |t: &PyTensor| -> PyResult<PyTensor> {
        let v = if t.dims() == dims.as_slice() { t.t.clone() } else { t.t.broadcast_as(dims.as_slice()).py()? };
        Ok(t.same(v.permute(perm.clone()).py()?))
    };
    Ok(Some((put(a)?, put(b)?, perm)))
}

/// `in_memory_order` of a tensor and a number.
fn in_memory_order_scalar(a: &PyTensor) -> PyResult<Option<Vec<usize>>> {
    if a.t.is_contiguous() || a.is_meta() || !is_cpu(&a.t) {
        return Ok(None);
    }
    Ok(super::layout::memory_order(a.dims(), &[&super::layout::broadcast_strides(&a.t, a.dims())]))
}

fn binary_rows(a: &PyTensor, b: Operand<'_>, op: BinOp, reflected: bool) -> PyResult<PyTensor> {
    let b_bool = match b {
        Operand::T(t) => t.dtype == DType::Bool,
        Operand::S(s) => matches!(s, Scalar::Bool(_)),
    };
    if op == BinOp::Sub && (a.dtype == DType::Bool || b_bool) {
        return Err(runtime_err(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    let ct = compute_dtype(op, Promotion::default().tensor(a).operand(&b).result())?;
    if let (BinOp::Pow, Operand::S(Scalar::Int(e)), false, false) = (op, b, reflected, ct.is_float()) {
        if e < 0 {
            return Err(runtime_err("Integers to negative integer powers are not allowed."));
        }
    }
    let out_dtype = if op.is_cmp() { DType::Bool } else { ct };
    match b {
        Operand::T(t) if a.is_meta() || t.is_meta() => {
            return super::meta::meta_tensor(&broadcast_dims(a.dims(), t.dims())?, out_dtype)
        }
        Operand::S(_) if a.is_meta() => return super::meta::meta_tensor(a.dims(), out_dtype),
        _ => {}
    }
    let ta = cast(&a.t, a.dtype, ct)?;
    if let (BinOp::Pow, Operand::S(e), false) = (op, b, reflected) {
        if let Some(out) = pow_scalar(&ta, ct, e.as_f64())? {
            return Ok(PyTensor::new(out, ct));
        }
        if ct.is_float() && !is_cpu(&ta) {
            // torch's special exponents as products and roots, C's pow for the rest.
            let x = &ta;
            let out = match e.as_f64() {
                1.0 => x.copy(),
                2.0 => x.sqr(),
                3.0 => x.sqr().and_then(|s| s * x),
                4.0 => x.sqr().and_then(|s| s.sqr()),
                0.5 => x.sqrt(),
                -0.5 => x.sqrt().and_then(|s| s.recip()),
                -1.0 => x.recip(),
                -2.0 => x.sqr().and_then(|s| s.recip()),
                v => x.powf(v),
            };
            return Ok(PyTensor::new(out.py()?, ct));
        }
    }
    let tb = match b {
        Operand::T(t) => cast(&t.t, t.dtype, ct)?,
        Operand::S(s) => s.tensor(ct, a.t.device())?,
    };
    let ta = super::scalar_to(ta, tb.device())?;
    let tb = super::scalar_to(tb, ta.device())?;
    let (l, r) = if reflected { (tb, ta) } else { (ta, tb) };
    let numel = l.elem_count().max(r.elem_count());
    let out = if numel >= super::kernels::PAR_THRESHOLD {
        Python::attach(|py| py.detach(|| compute(op, &l, &r, ct)))
    } else {
        compute(op, &l, &r, ct)
    }?;
    Ok(if op.is_cmp() { PyTensor::boolean(out) } else { PyTensor::new(out, ct) })
}

/// `x ** e` for the exponents models use, as products and roots instead of `powf` (which is ~50x
/// slower: GPT-2's GELU computes `pow(x, 3.0)` every layer); these are the forms torch uses too.
/// None: no fast path (other exponents, dtypes or devices).
fn pow_scalar(x: &Tensor, ct: DType, e: f64) -> PyResult<Option<Tensor>> {
    // One closure per exponent, so each loop is inlined and vectorised (a fn pointer is not).
    macro_rules! fast {
        ($T:ty) => {{
            Ok(Some(match e {
                1.0 => map_cpu::<$T, $T, _>(x, |v| v)?,
                2.0 => map_cpu::<$T, $T, _>(x, |v| v * v)?,
                3.0 => map_cpu::<$T, $T, _>(x, |v| v * v * v)?,
                4.0 => map_cpu::<$T, $T, _>(x, |v| { let s = v * v; s * s })?,
                0.5 => map_cpu::<$T, $T, _>(x, |v| v.sqrt())?,
                -0.5 => map_cpu::<$T, $T, _>(x, |v| 1.0 / v.sqrt())?,
                -1.0 => map_cpu::<$T, $T, _>(x, |v| 1.0 / v)?,
                -2.0 => map_cpu::<$T, $T, _>(x, |v| 1.0 / (v * v))?,
                _ => return Ok(None),
            }))
        }};
    }
    if !is_cpu(x) {
        return Ok(None);
    }
    match ct {
        DType::F32 => fast!(f32),
        DType::F64 => fast!(f64),
        _ => Ok(None),
    }
}

pub(crate) fn operand<'py>(ob: &Bound<'py, PyAny>, op: &str) -> PyResult<Arg<'py>> {
    Arg::extract(ob).ok_or_else(|| {
        type_err(format!(
            "{op}(): argument 'other' must be Tensor or Number, not {}",
            ob.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

#[pymethods]
impl PyTensor {
    fn __add__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Add, false))
    }
    fn __radd__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Add, true))
    }
    fn __sub__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Sub, false))
    }
    fn __rsub__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Sub, true))
    }
    fn __mul__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Mul, false))
    }
    fn __rmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Mul, true))
    }
    fn __truediv__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Div, false))
    }
    fn __rtruediv__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Div, true))
    }
    fn __floordiv__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::FloorDiv, false))
    }
    fn __rfloordiv__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::FloorDiv, true))
    }
    fn __mod__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Rem, false))
    }
    fn __rmod__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Rem, true))
    }
    fn __pow__(&self, other: &Bound<'_, PyAny>, _modulo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| pow_op(self, o, false))
    }
    fn __rpow__(&self, other: &Bound<'_, PyAny>, _modulo: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| pow_op(self, o, true))
    }
    fn __and__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::And, false))
    }
    fn __rand__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::And, true))
    }
    fn __or__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Or, false))
    }
    fn __ror__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Or, true))
    }
    fn __xor__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Xor, false))
    }
    fn __rxor__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Xor, true))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Eq, false))
    }
    fn __ne__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Ne, false))
    }
    fn __lt__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Lt, false))
    }
    fn __le__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Le, false))
    }
    fn __gt__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Gt, false))
    }
    fn __ge__(&self, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        dunder(self, other, |o| binary(self, o, BinOp::Ge, false))
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    fn __matmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<Option<PyTensor>> {
        match other.cast::<PyTensor>() {
            Ok(o) => matmul(self, &o.borrow()).map(Some),
            Err(_) => Ok(None),
        }
    }
    fn __rmatmul__(&self, other: &Bound<'_, PyAny>) -> PyResult<Option<PyTensor>> {
        match other.cast::<PyTensor>() {
            Ok(o) => matmul(&o.borrow(), self).map(Some),
            Err(_) => Ok(None),
        }
    }
    fn __pos__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __abs__(&self) -> PyResult<PyTensor> {
        self.abs()
    }
    // Named arithmetic, also reachable as candle_bind.<name>(input, other).
    #[pyo3(signature = (other, *, alpha=None))]
    fn add(&self, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        add_sub(self, other, alpha, BinOp::Add)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn sub(&self, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        add_sub(self, other, alpha, BinOp::Sub)
    }
    #[pyo3(signature = (other, *, alpha=None))]
    fn subtract(&self, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        add_sub(self, other, alpha, BinOp::Sub)
    }
    fn mul(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "mul")?.op(), BinOp::Mul, false)
    }
    fn multiply(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.mul(other)
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    pub(crate) fn div(&self, other: &Bound<'_, PyAny>, rounding_mode: Option<&str>) -> PyResult<PyTensor> {
        let o = operand(other, "div")?;
        let o = o.op();
        match rounding_mode {
            None => binary(self, o, BinOp::Div, false),
            Some("floor") => binary(self, o, BinOp::FloorDiv, false),
            Some("trunc") => {
                let ct = Promotion::default().tensor(self).operand(&o).result();
                if ct == DType::Bool {
                    return Err(crate::error::not_implemented_err("\"div_trunc_cpu\" not implemented for 'Bool'"));
                }
                if !ct.is_float() {
                    // Integers stay exact (a float quotient rounds past 2^24) and a zero divisor raises:
                    // the floor quotient, one up where it is inexact and negative (the floor remainder,
                    // which takes the divisor's sign, then differs in sign from the dividend).
                    let q = binary(self, o, BinOp::FloorDiv, false)?;
                    let r = binary(self, o, BinOp::Rem, false)?;
                    let zero = || Operand::S(Scalar::Int(0));
                    let inexact = binary(&r, zero(), BinOp::Ne, false)?;
                    let negative = binary(self, zero(), BinOp::Lt, false)?;
                    let flip = binary(&negative, Operand::T(&binary(&r, zero(), BinOp::Lt, false)?), BinOp::Xor, false)?;
                    let up = binary(&inexact, Operand::T(&flip), BinOp::And, false)?;
                    let t = binary(&q, Operand::T(&up), BinOp::Add, false)?;
                    return Ok(PyTensor::new(cast(&t.t, t.dtype, ct)?, ct));
                }
                let q = binary(self, o, BinOp::Div, false)?;
                let t = q.trunc()?;
                Ok(PyTensor::new(cast(&t.t, t.dtype, ct)?, ct))
            }
            Some(m) => Err(crate::error::value_err(format!(
                "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
            ))),
        }
    }
    #[pyo3(signature = (other, *, rounding_mode=None))]
    fn divide(&self, other: &Bound<'_, PyAny>, rounding_mode: Option<&str>) -> PyResult<PyTensor> {
        self.div(other, rounding_mode)
    }
    fn true_divide(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.div(other, None)
    }
    fn floor_divide(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "floor_divide")?.op(), BinOp::FloorDiv, false)
    }
    fn remainder(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "remainder")?.op(), BinOp::Rem, false)
    }
    fn pow(&self, exponent: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        pow_op(self, operand(exponent, "pow")?.op(), false)
    }
    fn maximum(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, tensor_operand(other, "maximum")?.op(), BinOp::Maximum, false)
    }
    fn minimum(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, tensor_operand(other, "minimum")?.op(), BinOp::Minimum, false)
    }
    fn eq(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "eq")?.op(), BinOp::Eq, false)
    }
    fn ne(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "ne")?.op(), BinOp::Ne, false)
    }
    fn lt(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "lt")?.op(), BinOp::Lt, false)
    }
    fn le(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "le")?.op(), BinOp::Le, false)
    }
    fn gt(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "gt")?.op(), BinOp::Gt, false)
    }
    fn ge(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "ge")?.op(), BinOp::Ge, false)
    }
    fn bitwise_and(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "bitwise_and")?.op(), BinOp::And, false)
    }
    fn bitwise_or(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "bitwise_or")?.op(), BinOp::Or, false)
    }
    fn bitwise_xor(&self, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(self, operand(other, "bitwise_xor")?.op(), BinOp::Xor, false)
    }
    fn logical_not(&self) -> PyResult<PyTensor> {
        let b = cast(&self.t, self.dtype, DType::Bool)?;
        Ok(PyTensor::boolean(dev::not(&b)?))
    }
    fn logical_and(&self, other: &PyTensor) -> PyResult<PyTensor> {
        logical(self, other, BinOp::And)
    }
    fn logical_or(&self, other: &PyTensor) -> PyResult<PyTensor> {
        logical(self, other, BinOp::Or)
    }
    fn logical_xor(&self, other: &PyTensor) -> PyResult<PyTensor> {
        logical(self, other, BinOp::Xor)
    }


    /// clamp(min=None, max=None): scalars or tensors; NaN in the input stays NaN.
    #[pyo3(signature = (min=None, max=None))]
    pub(crate) fn clamp(&self, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let min = min.filter(|m| !m.is_none());
        let max = max.filter(|m| !m.is_none());
        if min.is_none() && max.is_none() {
            return Err(runtime_err("torch.clamp: At least one of 'min' or 'max' must not be None"));
        }
        if !self.t.is_contiguous() && min.into_iter().chain(max).all(|b| !b.is_instance_of::<PyTensor>()) {
            // Number bounds: in the input's memory order (the result keeps its strides, as torch's).
            if let Some(perm) = super::layout::memory_order(self.dims(), &[&super::layout::broadcast_strides(&self.t, self.dims())]) {
                if is_cpu(&self.t) && !self.is_meta() {
                    let x = self.same(self.t.permute(perm.clone()).py()?);
                    return super::layout::restore(x.clamp(min, max)?, &perm);
                }
            }
        }
        if let Some((l, h)) = number_bounds(self, min, max) {
            // Contiguous float32 and number bounds: one pass (the general path made two, with a
            // fresh output each).
            let out = map_f32_slices(&self.t, |src, dst| super::kernels::clamp_slice(src, dst, l, h))?;
            return Ok(PyTensor::new(out, DType::F32));
        }
        // An integer tensor's integer bounds saturate to its range; a min above it or a max below it
        // raises (torch).
        let (min, max) = (int_bound(self.dtype, min, true)?, int_bound(self.dtype, max, false)?);
        let (min, max) = (min.as_ref(), max.as_ref());
        let lo = min.map(|m| operand(m, "clamp")).transpose()?;
        let hi = max.map(|m| operand(m, "clamp")).transpose()?;
        let mut prom = Promotion::default().tensor(self);
        for o in lo.iter().chain(hi.iter()) {
            prom = prom.operand(&o.op());
        }
        let ct = prom.result();
        // A number bound must fit a 16/32-bit float result (torch raises, it does not saturate).
        if ct.is_float() && ct != DType::F64 {
            for b in min.iter().chain(max.iter()) {
                if !b.is_instance_of::<PyTensor>() {
                    if let Some(v) = super::Scalar::extract(b) {
                        super::inplace::check_fits(v, ct)?;
                    }
                }
            }
        }
        let mut out = self.same(cast(&self.t, self.dtype, ct)?);
        out.dtype = ct;
        if let Some(lo) = &lo {
            out = clamp_side(&out, lo.op(), BinOp::Maximum)?;
        }
        if let Some(hi) = &hi {
            out = clamp_side(&out, hi.op(), BinOp::Minimum)?;
        }
        Ok(out)
    }
    #[pyo3(signature = (min=None, max=None))]
    fn clip(&self, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        self.clamp(min, max)
    }
    fn clamp_min(&self, min: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.clamp(Some(min), None)
    }
    fn clamp_max(&self, max: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.clamp(None, Some(max))
    }

    /// `x.where(condition, y)`: x where condition holds, else y.
    fn r#where(&self, condition: &PyTensor, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        where_(condition, Operand::T(self), operand(other, "where")?.op())
    }

    /// lerp(end, weight): start + weight·(end − start), computed as torch does for accuracy.
    fn lerp(&self, end: &PyTensor, weight: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        if !self.dtype.is_float() || self.dtype != end.dtype {
            return Err(dtype_err(format!(
                "expected dtype {} for `end` but got dtype {}",
                self.dtype.name(),
                end.dtype.name()
            )));
        }
        let w = operand(weight, "lerp")?;
        let ct = self.dtype;
        let dev = self.t.device();
        let wt = match w.op() {
            Operand::T(t) => cast(&t.t, t.dtype, ct)?,
            Operand::S(s) => s.tensor(ct, dev)?,
        };
        let dims = broadcast_dims(&broadcast_dims(self.dims(), end.dims())?, wt.dims())?;
        let (s, e, w) = (
            self.t.broadcast_as(dims.as_slice()).py()?,
            end.t.broadcast_as(dims.as_slice()).py()?,
            wt.broadcast_as(dims.as_slice()).py()?,
        );
        let diff = (&e - &s).py()?;
        let lo = (&s + (&w * &diff).py()?).py()?;
        let hi = (&e - (&diff * (1.0 - &w).py()?).py()?).py()?;
        let half = Scalar::Float(0.5).tensor(ct, dev)?.broadcast_as(dims.as_slice()).py()?;
        let mask = w.lt(&half).py()?;
        Ok(self.same(mask.where_cond(&lo, &hi).py()?))
    }

    #[pyo3(signature = (nan=0.0, posinf=None, neginf=None))]
    fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> PyResult<PyTensor> {
        let (fmax, fmin) = match self.dtype {
            DType::F16 => (65504.0, -65504.0),
            DType::BF16 => (3.3895313892515355e38, -3.3895313892515355e38),
            DType::F32 => (f32::MAX as f64, f32::MIN as f64),
            DType::F64 => (f64::MAX, f64::MIN),
            _ => return Ok(self.same(self.t.copy().py()?)),
        };
        let (p, n) = (posinf.unwrap_or(fmax), neginf.unwrap_or(fmin));
        if !is_cpu(&self.t) {
            let t = &self.t;
            let c = |v: f64| -> PyResult<Tensor> { t.ones_like().py()?.affine(v, 0.0).py() };
            let inf = c(f64::INFINITY)?;
            let r = t.eq(&inf).py()?.where_cond(&c(p)?, t).py()?;
            let r = t.eq(&inf.neg().py()?).py()?.where_cond(&c(n)?, &r).py()?;
            return Ok(self.same(t.ne(t).py()?.where_cond(&c(nan)?, &r).py()?));
        }
        let f = move |v: f64| if v.is_nan() { nan } else if v == f64::INFINITY { p } else if v == f64::NEG_INFINITY { n } else { v };
        let out = match self.dtype {
            DType::F64 => map_cpu::<f64, f64, _>(&self.t, f)?,
            _ => map_cpu::<f32, f32, _>(&super::convert(&self.t, candle_core::DType::F32)?, move |v| f(v as f64) as f32)?
                .to_dtype(self.dtype.candle())
                .py()?,
        };
        Ok(self.same(out))
    }

    #[pyo3(signature = (other, *, out=None))]
    fn matmul(&self, py: Python<'_>, other: &PyTensor, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Py<PyAny>> {
        super::inplace::into_out(py, matmul(self, other)?, out)
    }
    #[pyo3(signature = (mat2, *, out=None))]
    fn mm(&self, py: Python<'_>, mat2: &PyTensor, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Py<PyAny>> {
        if self.rank() != 2 || mat2.rank() != 2 {
            return Err(runtime_err(format!(
                "mm: expected 2-D tensors, got {}-D and {}-D",
                self.rank(),
                mat2.rank()
            )));
        }
        super::inplace::into_out(py, matmul(self, mat2)?, out)
    }
    #[pyo3(signature = (mat2, *, out=None))]
    fn bmm(&self, py: Python<'_>, mat2: &PyTensor, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Py<PyAny>> {
        if self.rank() != 3 || mat2.rank() != 3 {
            return Err(runtime_err("batch1 and batch2 must be 3D tensors"));
        }
        if self.dims()[0] != mat2.dims()[0] {
            return Err(shape_err(format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                self.dims()[0],
                self.dims()[2],
                mat2.dims()[0],
                mat2.dims()[1]
            )));
        }
        super::inplace::into_out(py, matmul(self, mat2)?, out)
    }
    #[pyo3(signature = (vec, *, out=None))]
    fn mv(&self, py: Python<'_>, vec: &PyTensor, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Py<PyAny>> {
        if self.rank() != 2 || vec.rank() != 1 {
            return Err(runtime_err("vector + matrix @ vector expected, got 2-D and 1-D"));
        }
        super::inplace::into_out(py, matmul(self, vec)?, out)
    }
    fn dot(&self, other: &PyTensor) -> PyResult<PyTensor> {
        if self.rank() != 1 || other.rank() != 1 {
            return Err(runtime_err(format!(
                "1D tensors expected, but got {}D and {}D tensors",
                self.rank(),
                other.rank()
            )));
        }
        matmul(self, other)
    }
    fn outer(&self, vec2: &PyTensor) -> PyResult<PyTensor> {
        let a = self.same(self.t.unsqueeze(1).py()?);
        let b = vec2.same(vec2.t.unsqueeze(0).py()?);
        binary(&a, Operand::T(&b), BinOp::Mul, false)
    }
}

/// A binary dunder: NotImplemented for operands that are neither tensors nor numbers.
fn dunder(x: &PyTensor, other: &Bound<'_, PyAny>, f: impl FnOnce(Operand<'_>) -> PyResult<PyTensor>) -> PyResult<Py<PyAny>> {
    let py = other.py();
    let _ = x;
    match Arg::extract(other) {
        Some(o) => Ok(Py::new(py, f(o.op())?)?.into_any()),
        None => Ok(py.NotImplemented()),
    }
}

fn tensor_operand<'py>(ob: &Bound<'py, PyAny>, op: &str) -> PyResult<Arg<'py>> {
    match ob.cast::<PyTensor>() {
        Ok(t) => Ok(Arg::T(t.try_borrow()?)),
        Err(_) => Err(type_err(format!(
            "{op}(): argument 'other' must be Tensor, not {}",
            ob.get_type().name()?
        ))),
    }
}

pub(crate) fn add_sub(x: &PyTensor, other: &Bound<'_, PyAny>, alpha: Option<&Bound<'_, PyAny>>, op: BinOp) -> PyResult<PyTensor> {
    let o = operand(other, op.name())?;
    match alpha.filter(|a| !a.is_none()) {
        None => binary(x, o.op(), op, false),
        Some(a) => {
            let a = Scalar::extract(a).ok_or_else(|| type_err("alpha must be a number"))?;
            match o.op() {
                Operand::T(t) => binary(x, Operand::T(&binary(t, Operand::S(a), BinOp::Mul, false)?), op, false),
                Operand::S(s) => binary(x, Operand::S(Scalar::Float(s.as_f64() * a.as_f64())), op, false),
            }
        }
    }
}

pub(crate) fn pow_op(x: &PyTensor, e: Operand<'_>, reflected: bool) -> PyResult<PyTensor> {
    // Fast, exact paths for the common float exponents.
    if let (false, true, Operand::S(s)) = (reflected, x.dtype.is_float(), e) {
        let v = s.as_f64();
        if v == 2.0 {
            return float_unary(x, |a: f32| a * a, |a: f64| a * a, |t: &Tensor| t.sqr().py());
        }
        if v == 0.5 {
            return x.sqrt();
        }
        if v == 1.0 {
            return Ok(x.same(x.t.copy().py()?));
        }
    }
    binary(x, e, BinOp::Pow, reflected)
}


/// The bounds of a clamp of a contiguous float32 CPU tensor by Python numbers (not NaN, not bool)
/// as f32, a missing one infinite; None where the one-pass kernels do not apply.
pub(crate) fn number_bounds(x: &PyTensor, min: Option<&Bound<'_, PyAny>>, max: Option<&Bound<'_, PyAny>>) -> Option<(f32, f32)> {
    use pyo3::types::{PyBool, PyFloat, PyInt};
    if x.dtype != DType::F32 || x.is_meta() || !is_cpu(&x.t) || !x.t.is_contiguous() || (min.is_none() && max.is_none()) {
        return None;
    }
    let number = |b: Option<&Bound<'_, PyAny>>, none: f32| -> Option<f32> {
        match b {
            None => Some(none),
            Some(v) if v.is_instance_of::<PyBool>() => None,
            Some(v) if v.is_instance_of::<PyFloat>() || v.is_instance_of::<PyInt>() => {
                // NaN and bounds past float32's range take the general path (torch: NaN results;
                // "value cannot be converted to type float without overflow").
                v.extract::<f64>().ok().filter(|f| !f.is_nan() && (f.is_infinite() || f.abs() <= f32::MAX as f64)).map(|f| f as f32)
            }
            Some(_) => None,
        }
    };
    Some((number(min, f32::NEG_INFINITY)?, number(max, f32::INFINITY)?))
}

/// A Python-int bound of an integer tensor's clamp, saturated to the dtype's range.
fn int_bound<'py>(dtype: DType, bound: Option<&Bound<'py, PyAny>>, is_min: bool) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(b) = bound else { return Ok(None) };
    let range = match dtype {
        DType::U8 => Some((0i128, u8::MAX as i128)),
        DType::I8 => Some((i8::MIN as i128, i8::MAX as i128)),
        DType::I16 => Some((i16::MIN as i128, i16::MAX as i128)),
        DType::I32 => Some((i32::MIN as i128, i32::MAX as i128)),
        DType::I64 => Some((i64::MIN as i128, i64::MAX as i128)),
        _ => None,
    };
    let value = if b.is_instance_of::<pyo3::types::PyBool>() || !b.is_instance_of::<pyo3::types::PyInt>() { None } else { b.extract::<i128>().ok() };
    let (Some((lo, hi)), Some(v)) = (range, value) else { return Ok(Some(b.clone())) };
    if (is_min && v > hi) || (!is_min && v < lo) {
        let side = if is_min { "min" } else { "max" };
        return Err(runtime_err(format!("Clamp {side} value {} is outside the representable range of {}", format_g(v as f64), dtype.title())));
    }
    let v = v.clamp(lo, hi) as i64;
    Ok(Some(pyo3::IntoPyObject::into_pyobject(v, b.py())?.into_any()))
}

/// C++ stream formatting of a double (6 significant digits, %g), as in torch's messages.
fn format_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor() as i32;
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if (-5..6).contains(&exp) {
        trim(format!("{:.*}", (5 - exp).max(0) as usize, v))
    } else {
        let m = format!("{:.5e}", v);
        let (mant, e) = m.split_once('e').unwrap_or((&m, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        format!("{}e{}{:02}", trim(mant.to_string()), if e < 0 { '-' } else { '+' }, e.abs())
    }
}

fn clamp_side(x: &PyTensor, bound: Operand<'_>, op: BinOp) -> PyResult<PyTensor> {
    let r = binary(x, bound, op, false)?;
    Ok(PyTensor::new(cast(&r.t, r.dtype, x.dtype)?, x.dtype))
}

fn logical(a: &PyTensor, b: &PyTensor, op: BinOp) -> PyResult<PyTensor> {
    let ta = cast(&a.t, a.dtype, DType::Bool)?;
    let tb = cast(&b.t, b.dtype, DType::Bool)?;
    Ok(PyTensor::boolean(compute(op, &ta, &tb, DType::Bool)?))
}


/// where(condition, x, y) with broadcasting over all three and promotion of x and y.
pub fn where_(cond: &PyTensor, x: Operand<'_>, y: Operand<'_>) -> PyResult<PyTensor> {
    let ct = Promotion::default().operand(&x).operand(&y).result();
    let dev = cond.t.device();
    let to_t = |o: Operand<'_>| -> PyResult<Tensor> {
        match o {
            Operand::T(t) => cast(&t.t, t.dtype, ct),
            Operand::S(s) => s.tensor(ct, dev),
        }
    };
    let (tx, ty) = (super::scalar_to(to_t(x)?, dev)?, super::scalar_to(to_t(y)?, dev)?);
    let c = cast(&cond.t, cond.dtype, DType::Bool)?;
    crate::device::common(&[&c, &tx, &ty])?;
    let dims = broadcast_dims(&broadcast_dims(c.dims(), tx.dims())?, ty.dims())?;
    if [&c, &tx, &ty].into_iter().any(super::meta::is_meta) {
        return super::meta::meta_tensor(&dims, ct);
    }
    crate::memory::ensure(&dims, tx.dtype(), tx.device())?;
    let out = if is_cpu(&c) {
        where_in_order(&c, &tx, &ty, &dims)?
    } else {
        let d = dims.as_slice();
        c.broadcast_as(d).py()?.where_cond(&tx.broadcast_as(d).py()?, &ty.broadcast_as(d).py()?).py()?
    };
    Ok(PyTensor::new(out, ct))
}

/// `where_cpu` in the operands' memory order (the condition's strides decide first, as torch's).
fn where_in_order(c: &Tensor, a: &Tensor, b: &Tensor, dims: &[usize]) -> PyResult<Tensor> {
    use super::layout::{broadcast_strides, memory_order, unpermute};
    if c.is_contiguous() && a.is_contiguous() && b.is_contiguous() {
        return where_cpu(c, a, b, dims);
    }
    let st = [broadcast_strides(c, dims), broadcast_strides(a, dims), broadcast_strides(b, dims)];
    let Some(perm) = memory_order(dims, &[&st[0], &st[1], &st[2]]) else { return where_cpu(c, a, b, dims) };
    let put = |t: &Tensor| -> PyResult<Tensor> { t.broadcast_as(dims).py()?.permute(perm.clone()).py() };
    let pd: Vec<usize> = perm.iter().map(|&d| dims[d]).collect();
    unpermute(&where_cpu(&put(c)?, &put(a)?, &put(b)?, &pd)?, &perm)
}

fn where_cpu(c: &Tensor, a: &Tensor, b: &Tensor, dims: &[usize]) -> PyResult<Tensor> {
    use super::kernels::{ternary, View};
    use candle_core::Storage;
    let (sc, lc) = c.storage_and_layout();
    let (sa, la) = a.storage_and_layout();
    let (sb, lb) = b.storage_and_layout();
    let (Storage::Cpu(cc), Storage::Cpu(ca), Storage::Cpu(cb)) = (&*sc, &*sa, &*sb) else {
        return Err(runtime_err("expected CPU tensors"));
    };
    let cd = cc.as_slice::<u8>().py()?;
    let out = with_dtype!(a.dtype(), T => {
        let (da, db) = (ca.as_slice::<T>().py()?, cb.as_slice::<T>().py()?);
        let v = ternary(dims, View::new(cd, lc, dims), View::new(da, la, dims), View::new(db, lb, dims),
                        <T as candle_core::WithDType>::from_f64(0.0), |k, x, y| if k != 0 { x } else { y });
        Tensor::from_vec(v, dims, &Device::Cpu).py()
    })?;
    Ok(out)
}

/// torch.matmul: 1-D operands are promoted and the added dims removed; batch dims broadcast.
pub fn matmul(a: &PyTensor, b: &PyTensor) -> PyResult<PyTensor> {
    crate::device::common(&[&a.t, &b.t])?;
    if a.rank() == 0 || b.rank() == 0 {
        return Err(runtime_err(format!(
            "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
            a.rank(),
            b.rank()
        )));
    }
    if a.dtype != b.dtype {
        return Err(dtype_err(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            a.dtype.name(),
            b.dtype.name()
        )));
    }
    let (ra, rb) = (a.rank(), b.rank());
    let ta = if ra == 1 { a.t.unsqueeze(0).py()? } else { a.t.clone() };
    let tb = if rb == 1 { b.t.unsqueeze(1).py()? } else { b.t.clone() };
    let (da, db) = (ta.dims(), tb.dims());
    let (k1, k2) = (da[da.len() - 1], db[db.len() - 2]);
    if k1 != k2 {
        let fmt = |d: &[usize]| d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x");
        return Err(shape_err(format!(
            "mat1 and mat2 shapes cannot be multiplied ({} and {})",
            fmt(a.dims()),
            fmt(b.dims())
        )));
    }
    // A batched left operand times one matrix (x @ W.T in every Linear): fold the batch into the
    // rows and run one big product instead of one per batch element.
    if ra >= 3 && rb == 2 && a.dtype.is_float() {
        let (m, n) = (da[da.len() - 2], db[1]);
        let lead: Vec<usize> = da[..da.len() - 2].to_vec();
        let rows: usize = lead.iter().product::<usize>() * m;
        let flat = PyTensor::new(ta.reshape((rows, k1)).py()?, a.dtype);
        let out = matmul(&flat, b)?;
        let mut dims = lead;
        dims.extend([m, n]);
        return Ok(PyTensor::new(out.t.reshape(dims).py()?, a.dtype));
    }
    let batch = broadcast_dims(&da[..da.len() - 2], &db[..db.len() - 2])?;
    // The output, and each operand as broadcast over the batch (which a strided product copies);
    // integer products run in float64.
    let wide = if a.dtype.is_float() { ta.dtype() } else { candle_core::DType::F64 };
    for (rows, cols) in [(da[da.len() - 2], db[db.len() - 1]), (da[da.len() - 2], k1), (k1, db[db.len() - 1])] {
        let dims: Vec<usize> = batch.iter().copied().chain([rows, cols]).collect();
        crate::memory::ensure(&dims, wide, ta.device())?;
    }
    let work = |ta: Tensor, tb: Tensor| -> PyResult<Tensor> {
        let float = a.dtype.is_float();
        let (ta, tb) = if float {
            (ta, tb)
        } else {
            (ta.to_dtype(candle_core::DType::F64).py()?, tb.to_dtype(candle_core::DType::F64).py()?)
        };
        let mut sa: Vec<usize> = batch.clone();
        sa.extend_from_slice(&ta.dims()[ta.rank() - 2..]);
        let mut sb: Vec<usize> = batch.clone();
        sb.extend_from_slice(&tb.dims()[tb.rank() - 2..]);
        let ta = ta.broadcast_as(sa).py()?;
        let tb = tb.broadcast_as(sb).py()?;
        if (ta.elem_count() == 0 || tb.elem_count() == 0) && !is_cpu(&ta) {
            // An empty operand: zeros (a sum over nothing) of the product's shape; cuBLAS refuses
            // zero-size leading dimensions.
            let mut od = batch.clone();
            od.extend([ta.dims()[ta.rank() - 2], tb.dims()[tb.rank() - 1]]);
            let r = Tensor::zeros(od, ta.dtype(), ta.device()).py()?;
            return if float { Ok(r) } else { r.to_dtype(a.dtype.candle()).py() };
        }
        let r = if let Some(r) = super::linalg::fast_matmul(&ta, &tb, &batch) {
            r?
        } else {
            crate::device::matmul_precision(&[&ta, &tb], |v| match v[0].matmul(&v[1]) {
                Ok(r) => Ok(r),
                Err(_) => v[0].contiguous()?.matmul(&v[1].contiguous()?),
            })?
        };
        if float { Ok(r) } else { r.to_dtype(a.dtype.candle()).py() }
    };
    let big = da.iter().product::<usize>() * db[db.len() - 1] >= 4096;
    let mut out = if big { Python::attach(|py| py.detach(|| work(ta, tb)))? } else { work(ta, tb)? };
    if rb == 1 {
        out = out.squeeze(out.rank() - 1).py()?;
    }
    if ra == 1 {
        let d = out.rank() - if rb == 1 { 1 } else { 2 };
        out = out.squeeze(d).py()?;
    }
    Ok(PyTensor::new(out, a.dtype))
}

/// Shared by `candle_bind.where` (Python layer): one-argument form lives in index ops.
#[pyfunction]
#[pyo3(name = "where")]
pub fn where_fn(condition: &PyTensor, input: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    where_(condition, operand(input, "where")?.op(), operand(other, "where")?.op())
}

#[pyfunction]
pub fn result_type(tensor: &Bound<'_, PyAny>, other: &Bound<'_, PyAny>) -> PyResult<Py<crate::dtype::PyDType>> {
    let a = operand(tensor, "result_type")?;
    let b = operand(other, "result_type")?;
    let d = Promotion::default().operand(&a.op()).operand(&b.op()).result();
    crate::dtype::PyDType::object(tensor.py(), d)
}

#[pyfunction]
pub fn promote_types(type1: &Bound<'_, PyAny>, type2: &Bound<'_, PyAny>) -> PyResult<Py<crate::dtype::PyDType>> {
    let (a, b) = (crate::dtype::extract_any_dtype(type1)?, crate::dtype::extract_any_dtype(type2)?);
    let quantized = |d: DType| matches!(d, DType::QInt8 | DType::QUInt8 | DType::QInt32);
    if a != b && (quantized(a) || quantized(b)) {
        return Err(runtime_err(format!(
            "promoteTypes with quantized numbers is not handled yet; figure out what the correct rules should be, \
             offending types: {} {}",
            a.title(),
            b.title()
        )));
    }
    crate::dtype::PyDType::object(type1.py(), DType::promote(a, b))
}

