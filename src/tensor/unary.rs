//! Elementwise math of one tensor: the float functions (exp, trigonometry, erf, sigmoid, ...) with
//! their vectorised kernels, the ops that keep integer dtypes (abs, sign, rounding), NaN/inf tests.
#![allow(unused_comparisons)]

use candle_core::Tensor;
use pyo3::prelude::*;

use super::arith::{binary, BinOp, Trunc};
use super::kernels::{erf_f32, exp_f32, sigmoid_f32, tanh_f32, Half};
use super::layout::unary_in_order;
use super::{cast, is_cpu, map_cpu, Operand, PyTensor, Scalar};
use crate::dtype::DType;
use crate::error::{runtime_err, type_err, IntoPyResult};

/// A float op: ints and bools compute in float32; half types compute in float32 and round back.
/// Computed in the input's memory order (the result keeps its strides, as torch's).
pub(crate) fn float_unary<F32, F64, C>(x: &PyTensor, f32f: F32, f64f: F64, on_device: C) -> PyResult<PyTensor>
where
    F32: Fn(f32) -> f32 + Sync + Send,
    F64: Fn(f64) -> f64 + Sync + Send,
    C: Fn(&Tensor) -> PyResult<Tensor>,
{
    unary_in_order(x, |x| float_unary_rows(x, f32f, f64f, on_device))
}

fn float_unary_rows<F32, F64, C>(x: &PyTensor, f32f: F32, f64f: F64, on_device: C) -> PyResult<PyTensor>
where
    F32: Fn(f32) -> f32 + Sync + Send,
    F64: Fn(f64) -> f64 + Sync + Send,
    C: Fn(&Tensor) -> PyResult<Tensor>,
{
    let out_dtype = if x.dtype.is_float() { x.dtype } else { DType::F32 };
    if x.is_meta() {
        return super::meta::meta_tensor(x.dims(), out_dtype);
    }
    if !is_cpu(&x.t) {
        // half precision computes in f32 and rounds once, as the CPU path and torch do
        let work = if matches!(out_dtype, DType::F16 | DType::BF16) { DType::F32 } else { out_dtype };
        let t = cast(&x.t, x.dtype, work)?;
        return Ok(PyTensor::new(cast(&on_device(&t)?, work, out_dtype)?, out_dtype));
    }
    let work = |t: &Tensor| -> PyResult<Tensor> {
        match out_dtype {
            DType::F64 => map_cpu::<f64, f64, _>(&cast(t, x.dtype, DType::F64)?, &f64f),
            DType::F32 => {
                let t32 = if x.dtype == DType::F32 { t.clone() } else { cast(t, x.dtype, DType::F32)? };
                map_cpu::<f32, f32, _>(&t32, &f32f)
            }
            DType::BF16 => map_cpu::<half::bf16, half::bf16, _>(t, |v| Half::narrow(f32f(v.widen()))),
            DType::F16 => map_cpu::<half::f16, half::f16, _>(t, |v| Half::narrow(f32f(v.widen()))),
            other => Err(runtime_err(format!("unsupported dtype {}", other.name()))),
        }
    };
    let out = if x.numel() >= super::kernels::PAR_THRESHOLD {
        Python::attach(|py| py.detach(|| work(&x.t)))?
    } else {
        work(&x.t)?
    };
    Ok(PyTensor::new(out, out_dtype))
}

/// An op that keeps integer dtypes (abs, neg, sign, rounding): `fi` on ints, `ff` on floats.
impl PyTensor {
    /// torch's rounding kernels have no bool form.
    fn no_bool(&self, op: &str) -> PyResult<()> {
        if self.dtype == DType::Bool {
            return Err(crate::error::not_implemented_err(format!("\"{op}_vml_cpu\" not implemented for 'Bool'")));
        }
        Ok(())
    }
}

macro_rules! keep_dtype_unary {
    ($x:expr, |$v:ident| int: $int:expr, float: $flt:expr, device: $dev:expr) => {{
        let x: &PyTensor = $x;
        if x.is_meta() {
            return x.meta_like(x.dims());
        }
        if !is_cpu(&x.t) {
            let f: fn(&Tensor, bool) -> PyResult<Tensor> = $dev;
            return Ok(x.same(f(&x.t, x.dtype.is_float())?));
        }
        unary_in_order(x, |x| {
        let t = &x.t;
        let out = match x.dtype {
            DType::F32 => map_cpu::<f32, f32, _>(t, |$v: f32| $flt),
            DType::F64 => map_cpu::<f64, f64, _>(t, |$v: f64| $flt),
            DType::BF16 => map_cpu::<half::bf16, half::bf16, _>(t, |v| Half::narrow((|$v: f32| $flt)(v.widen()))),
            DType::F16 => map_cpu::<half::f16, half::f16, _>(t, |v| Half::narrow((|$v: f32| $flt)(v.widen()))),
            DType::I64 => map_cpu::<i64, i64, _>(t, |$v: i64| $int),
            DType::I32 => map_cpu::<i32, i32, _>(t, |$v: i32| $int),
            DType::I16 => map_cpu::<i16, i16, _>(t, |$v: i16| $int),
            DType::I8 => map_cpu::<i16, i16, _>(t, |$v: i16| ($int) as i8 as i16),
            DType::U8 | DType::Bool => map_cpu::<u8, u8, _>(t, |$v: u8| { #[allow(unused_imports)] use UnsignedOps as _; $int }),
            other => Err(crate::error::dtype_err(format!("this op is not implemented for '{}'", other.title()))),
        }?;
        Ok(x.same(out))
        })
    }};
}

/// Device formulas (Candle ops) of the elementwise ops whose Candle counterpart differs from torch.
pub(crate) mod dev {
    use crate::error::IntoPyResult;
    use candle_core::Tensor;
    use pyo3::PyResult;

    /// -t, wrapping for integers (Candle's affine casts its factor to the dtype: -1 is no u8).
    pub fn neg(t: &Tensor) -> PyResult<Tensor> {
        if t.dtype().is_float() { t.neg().py() } else { (t.zeros_like().py()? - t).py() }
    }
    /// `neg` where t < 0, else `pos`.
    pub fn select_neg(t: &Tensor, neg: &Tensor, pos: &Tensor) -> PyResult<Tensor> {
        t.lt(&t.zeros_like().py()?).py()?.where_cond(neg, pos).py()
    }
    /// max(x, 0) keeping NaN and -0.0, as torch's relu (Candle's drops NaN): one kernel of ours
    /// on CUDA, Candle ops elsewhere.
    pub fn relu(t: &Tensor) -> PyResult<Tensor> {
        #[cfg(feature = "cuda")]
        if t.device().is_cuda() {
            return crate::cuda::relu(t);
        }
        let zero = t.zeros_like().py()?;
        t.lt(&zero).py()?.where_cond(&zero, t).py()
    }
    /// 1 for positive, -1 for negative, x itself for zeros and NaN.
    pub fn sign(t: &Tensor) -> PyResult<Tensor> {
        let zero = t.zeros_like().py()?;
        let one = t.ones_like().py()?;
        let pos = t.gt(&zero).py()?.where_cond(&one, t).py()?;
        t.lt(&zero).py()?.where_cond(&neg(&one)?, &pos).py()
    }
    /// Round half to even, as torch (Candle's round goes away from zero).
    pub fn round_half_even(t: &Tensor) -> PyResult<Tensor> {
        let dt = t.dtype();
        if matches!(dt, candle_core::DType::F16 | candle_core::DType::BF16) {
            return round_half_even(&t.to_dtype(candle_core::DType::F32).py()?)?.to_dtype(dt).py();
        }
        let r = (t + 0.5).py()?.floor().py()?;
        let tie = (&r - t).py()?.eq(&t.ones_like().py()?.affine(0.5, 0.0).py()?).py()?;
        let half = (&r * 0.5).py()?;
        let odd = half.ne(&half.floor().py()?).py()?;
        let down = tie.minimum(&odd).py()?;
        let r = down.where_cond(&(&r - 1.0).py()?, &r).py()?;
        // From 2^23 (f32) or 2^52 (f64) up every value is an integer, and x + 0.5 would round.
        let big = if dt == candle_core::DType::F64 { 4503599627370496.0 } else { 8388608.0 };
        t.abs().py()?.ge(&t.ones_like().py()?.affine(big, 0.0).py()?).py()?.where_cond(t, &r).py()
    }
    /// Logical not of a bool (u8 0/1) tensor.
    pub fn not(t: &Tensor) -> PyResult<Tensor> {
        t.eq(&t.zeros_like().py()?).py()
    }
}

/// Lets the integer arms of `keep_dtype_unary!` name signed-only methods on u8.
trait UnsignedOps {
    fn wrapping_neg_(self) -> Self;
    fn signum_(self) -> Self;
    fn abs_(self) -> Self;
}
macro_rules! int_ops {
    ($($t:ty),*) => {$(
        impl UnsignedOps for $t {
            #[inline(always)] fn wrapping_neg_(self) -> Self { self.wrapping_neg() }
            #[inline(always)] fn signum_(self) -> Self { #[allow(unused_comparisons)] if self > 0 { 1 } else if self < 0 { (0 as $t).wrapping_sub(1) } else { 0 } }
            #[inline(always)] fn abs_(self) -> Self { #[allow(unused_comparisons)] if self < 0 { self.wrapping_neg() } else { self } }
        }
    )*};
}
int_ops!(u8, i16, i32, i64);

fn erf_f64(x: f64) -> f64 {
    candle_core::cpu::erf::erf_f64(x)
}

macro_rules! float_methods {
    ($($name:ident: $f32:expr, $f64:expr, $dev:tt;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                pub fn $name(&self) -> PyResult<PyTensor> {
                    float_methods!(@call self, $f32, $f64, $dev)
                }
            )*
        }
    };
    (@call $x:ident, $f32:expr, $f64:expr, host) => {
        float_unary($x, $f32, $f64, |t: &Tensor| host_unary(t, $f32, $f64))
    };
    (@call $x:ident, $f32:expr, $f64:expr, $dev:expr) => {
        float_unary($x, $f32, $f64, |t: &Tensor| ($dev)(t).py())
    };
}

/// A float op with no device formula, computed on the host (via_host): inverse trigonometric and
/// hyperbolic functions, rare in inference.
fn host_unary(t: &Tensor, f32f: impl Fn(f32) -> f32 + Sync, f64f: impl Fn(f64) -> f64 + Sync) -> PyResult<Tensor> {
    let dt = t.dtype();
    crate::device::via_host(&[t], |h| match dt {
        candle_core::DType::F64 => map_cpu::<f64, f64, _>(&h[0], &f64f),
        _ => map_cpu::<f32, f32, _>(&super::convert(&h[0], candle_core::DType::F32)?, &f32f)?.to_dtype(dt).py(),
    })
}

float_methods! {
    log1p: super::kernels::log1p_f32, f64::ln_1p, host;
    expm1: super::kernels::expm1_f32, f64::exp_m1, host;
    sqrt: f32::sqrt, f64::sqrt, (|t: &Tensor| t.sqrt());
    rsqrt: |x: f32| 1.0 / x.sqrt(), |x: f64| 1.0 / x.sqrt(), (|t: &Tensor| t.sqrt()?.recip());
    asin: super::kernels::asin_f32, f64::asin, host;
    acos: super::kernels::acos_f32, f64::acos, host;
    atan: super::kernels::atan_f32, f64::atan, host;
    sinh: super::kernels::sinh_f32, f64::sinh, host;
    cosh: super::kernels::cosh_f32, f64::cosh, host;
    tanh: tanh_f32, f64::tanh, (|t: &Tensor| t.tanh());
    sigmoid: sigmoid_f32, |x: f64| 1.0 / (1.0 + (-x).exp()), (|t: &Tensor| candle_nn::ops::sigmoid(t));
    erf: erf_f32, erf_f64, (|t: &Tensor| t.erf());
    reciprocal: |x: f32| 1.0 / x, |x: f64| 1.0 / x, (|t: &Tensor| t.recip());
    // `x < 0 ? 0 : x`: NaN and -0.0 pass through, as torch's relu (and the in-place AVX path) keep them.
    relu_float: |x: f32| if x < 0.0 { 0.0 } else { x }, |x: f64| if x < 0.0 { 0.0 } else { x }, (|t: &Tensor| dev::relu(t).map_err(|e| candle_core::Error::Msg(e.to_string())));
}

#[pymethods]
impl PyTensor {
    pub fn sin(&self) -> PyResult<PyTensor> {
        sin_quadrant(self, 0)
    }
    /// tan: the vectorised reduction by π/2 and Cephes' polynomial (libm's was 9x torch's time).
    pub fn tan(&self) -> PyResult<PyTensor> {
        unary_in_order(self, |x| {
            slice_kernel_rows(x, super::kernels::tan_slice, super::kernels::tan_any, f64::tan, |t: &Tensor| (t.sin().py()? / t.cos().py()?).py())
        })
    }
    pub fn cos(&self) -> PyResult<PyTensor> {
        sin_quadrant(self, 1)
    }
    pub fn log(&self) -> PyResult<PyTensor> {
        log_base(self, 0)
    }
    pub fn log2(&self) -> PyResult<PyTensor> {
        log_base(self, 1)
    }
    pub fn log10(&self) -> PyResult<PyTensor> {
        log_base(self, 2)
    }
    pub fn exp(&self) -> PyResult<PyTensor> {
        unary_in_order(self, |x| {
            // Contiguous f32 on an AVX-512 CPU: the slice kernel (one scaling instruction).
            let avx512 = crate::isa::level() == crate::isa::Level::Avx512;
            if avx512 && x.dtype == DType::F32 && !x.is_meta() && is_cpu(&x.t) && x.t.is_contiguous() {
                let out = map_f32_slices(&x.t, super::kernels::exp_slice)?;
                return Ok(PyTensor::new(out, DType::F32));
            }
            float_unary_rows(x, exp_f32, f64::exp, |t: &Tensor| t.exp().py())
        })
    }
}


#[pymethods]
impl PyTensor {
    fn __neg__(&self) -> PyResult<PyTensor> {
        if self.dtype == DType::Bool {
            return Err(crate::error::not_implemented_err(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
            ));
        }
        keep_dtype_unary!(self, |v| int: v.wrapping_neg_(), float: -v, device: |t, _| dev::neg(t))
    }
    fn __invert__(&self) -> PyResult<PyTensor> {
        match self.dtype {
            DType::Bool => unary_in_order(self, |x| Ok(x.same(dev::not(&x.t)?))),
            d if d.is_float() => Err(type_err("~ (bitwise_not) is only supported for integer and bool tensors")),
            _ => keep_dtype_unary!(self, |v| int: !v, float: v, device: |t, _| (dev::neg(t)? - t.ones_like().py()?).py()),
        }
    }

    pub(crate) fn abs(&self) -> PyResult<PyTensor> {
        keep_dtype_unary!(self, |v| int: v.abs_(), float: v.abs(), device: |t, float| if float { t.abs().py() } else { dev::select_neg(t, &dev::neg(t)?, t) })
    }
    fn neg(&self) -> PyResult<PyTensor> {
        self.__neg__()
    }
    fn negative(&self) -> PyResult<PyTensor> {
        self.__neg__()
    }
    fn sign(&self) -> PyResult<PyTensor> {
        keep_dtype_unary!(self, |v| int: v.signum_(), float: if v > 0.0 { 1.0 } else if v < 0.0 { -1.0 } else { v * 0.0 }, device: |t, _| dev::sign(t))
    }
    fn floor(&self) -> PyResult<PyTensor> {
        self.no_bool("floor")?;
        keep_dtype_unary!(self, |v| int: v, float: v.floor(), device: |t, float| if float { t.floor().py() } else { Ok(t.clone()) })
    }
    fn ceil(&self) -> PyResult<PyTensor> {
        self.no_bool("ceil")?;
        keep_dtype_unary!(self, |v| int: v, float: v.ceil(), device: |t, float| if float { t.ceil().py() } else { Ok(t.clone()) })
    }
    pub(crate) fn trunc(&self) -> PyResult<PyTensor> {
        self.no_bool("trunc")?;
        keep_dtype_unary!(self, |v| int: v, float: v.trunc(), device: |t, float| if float { t.trunc_().py() } else { Ok(t.clone()) })
    }
    fn fix(&self) -> PyResult<PyTensor> {
        self.trunc()
    }
    /// Round half to even, as torch; `decimals` scales by 10^decimals first.
    #[pyo3(signature = (*, decimals=0))]
    fn round(&self, decimals: i64) -> PyResult<PyTensor> {
        self.no_bool("round")?;
        if decimals == 0 {
            return keep_dtype_unary!(self, |v| int: v, float: v.round_ties_even(), device: |t, float| if float { dev::round_half_even(t) } else { Ok(t.clone()) });
        }
        if !self.dtype.is_float() {
            return keep_dtype_unary!(self, |v| int: v, float: v, device: |t, _| Ok(t.clone()));
        }
        let s = 10f64.powi(decimals as i32);
        let scaled = binary(self, Operand::S(Scalar::Float(s)), BinOp::Mul, false)?;
        let r = scaled.round(0)?;
        binary(&r, Operand::S(Scalar::Float(s)), BinOp::Div, false)
    }
    fn square(&self) -> PyResult<PyTensor> {
        binary(self, Operand::T(self), BinOp::Mul, false)
    }
    fn relu(&self) -> PyResult<PyTensor> {
        if self.dtype.is_float() {
            self.relu_float()
        } else {
            keep_dtype_unary!(self, |v| int: if v > 0 { v } else { 0 }, float: v, device: |t, _| dev::select_neg(t, &t.zeros_like().py()?, t))
        }
    }
    fn isnan(&self) -> PyResult<PyTensor> {
        float_test(self, |v: f64| v.is_nan())
    }
    fn isinf(&self) -> PyResult<PyTensor> {
        float_test(self, |v: f64| v.is_infinite())
    }
    fn isfinite(&self) -> PyResult<PyTensor> {
        float_test(self, |v: f64| v.is_finite())
    }
    fn isposinf(&self) -> PyResult<PyTensor> {
        float_test(self, |v: f64| v == f64::INFINITY)
    }
    fn isneginf(&self) -> PyResult<PyTensor> {
        float_test(self, |v: f64| v == f64::NEG_INFINITY)
    }
}

fn float_test(x: &PyTensor, f: fn(f64) -> bool) -> PyResult<PyTensor> {
    unary_in_order(x, |x| float_test_rows(x, f))
}

fn float_test_rows(x: &PyTensor, f: fn(f64) -> bool) -> PyResult<PyTensor> {
    if !is_cpu(&x.t) {
        // The same predicate on the device: from what it says of NaN, ±inf and a finite value.
        let t = &x.t;
        let (nan, pinf, ninf, fin) = (f(f64::NAN), f(f64::INFINITY), f(f64::NEG_INFINITY), f(0.0));
        if !x.dtype.is_float() {
            let c = Tensor::new(fin as u8, t.device()).py()?;
            return Ok(PyTensor::boolean(c.broadcast_as(t.dims()).py()?.contiguous().py()?));
        }
        let zero = t.zeros_like().py()?;
        let is_nan = t.ne(t).py()?;
        let finite = (t - t).py()?.eq(&zero).py()?;
        let pos = t.gt(&zero).py()?;
        let c = |v: bool| -> PyResult<Tensor> { Tensor::new(v as u8, t.device()).py()?.broadcast_as(t.dims()).py() };
        let inf = pos.where_cond(&c(pinf)?, &c(ninf)?).py()?;
        let r = finite.where_cond(&c(fin)?, &inf).py()?;
        return Ok(PyTensor::boolean(is_nan.where_cond(&c(nan)?, &r).py()?));
    }
    let out = match x.dtype {
        DType::F64 => map_cpu::<f64, u8, _>(&x.t, |v| f(v) as u8)?,
        d if d.is_float() => {
            map_cpu::<f32, u8, _>(&super::convert(&x.t, candle_core::DType::F32)?, |v| f(v as f64) as u8)?
        }
        _ => {
            let ok = f(0.0) as u8;
            map_cpu::<u8, u8, _>(&cast(&x.t, x.dtype, DType::Bool)?, move |_| ok)?
        }
    };
    Ok(PyTensor::boolean(out))
}

/// `f` over a contiguous float32 CPU tensor's storage into a new tensor, in the elementwise engine's
/// chunks (the GIL released when it is large): the one-pass paths of exp and clamp.
pub(crate) fn map_f32_slices(t: &Tensor, f: impl Fn(&[f32], &mut [f32]) + Sync) -> PyResult<Tensor> {
    let work = || -> PyResult<Tensor> {
        let (storage, layout) = t.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else {
            return Err(runtime_err("expected a CPU tensor"));
        };
        let data = &cpu.as_slice::<f32>().py()?[layout.start_offset()..][..t.elem_count()];
        let out = super::kernels::map_slice(data, 0f32, &f);
        drop(storage);
        Tensor::from_vec(out, t.dims(), &candle_core::Device::Cpu).py()
    };
    if t.elem_count() >= super::kernels::PAR_THRESHOLD { Python::attach(|py| py.detach(work)) } else { work() }
}

/// sin (quarter 0) or cos (quarter 1): float32 and 16-bit floats on the CPU by the vectorised slice
/// kernel (other layouts copied contiguous first, 16-bit values widened and the results rounded
/// once, as torch computes them), float64 and other devices as before.
fn sin_quadrant(x: &PyTensor, quarter: i32) -> PyResult<PyTensor> {
    unary_in_order(x, |x| sin_quadrant_rows(x, quarter))
}

fn sin_quadrant_rows(x: &PyTensor, quarter: i32) -> PyResult<PyTensor> {
    let f64f = if quarter == 0 { f64::sin } else { f64::cos };
    slice_kernel_rows(
        x,
        move |s, d| super::kernels::sin_quadrant_slice(s, d, quarter),
        move |v| super::kernels::sin_quadrant_any(v, quarter),
        f64f,
        move |t: &Tensor| if quarter == 0 { t.sin() } else { t.cos() }.py(),
    )
}

/// ln (base 0), log2 (1), log10 (2): float32 and 16-bit floats on the CPU by `kernels::log_slice`.
fn log_base(x: &PyTensor, base: u8) -> PyResult<PyTensor> {
    use super::kernels::{ln_f32, log10_f32, log2_f32};
    let (f32f, f64f): (fn(f32) -> f32, fn(f64) -> f64) = match base {
        0 => (ln_f32, f64::ln),
        1 => (log2_f32, f64::log2),
        _ => (log10_f32, f64::log10),
    };
    unary_in_order(x, |x| {
        slice_kernel_rows(x, move |s, d| super::kernels::log_slice(s, d, base), f32f, f64f, move |t: &Tensor| match base {
            0 => t.log().py(),
            1 => t.log().and_then(|l| l * std::f64::consts::LOG2_E).py(),
            _ => t.log().and_then(|l| l * std::f64::consts::LOG10_E).py(),
        })
    })
}

/// A float op with a slice kernel for float32 (a vectorised loop plus a libm pass for rare
/// arguments): float32 and 16-bit floats on the CPU through it (other layouts copied contiguous,
/// 16-bit values widened and rounded once, as torch computes them), the rest as `float_unary`.
fn slice_kernel_rows(
    x: &PyTensor,
    slice: impl Fn(&[f32], &mut [f32]) + Sync,
    any: impl Fn(f32) -> f32 + Sync + Send,
    f64f: impl Fn(f64) -> f64 + Sync + Send,
    on_device: impl Fn(&Tensor) -> PyResult<Tensor>,
) -> PyResult<PyTensor> {
    if matches!(x.dtype, DType::F32 | DType::F16 | DType::BF16) && !x.is_meta() && is_cpu(&x.t) {
        let t = if x.dtype == DType::F32 {
            if x.t.is_contiguous() { x.t.clone() } else { super::copy_contiguous(&x.t)? }
        } else {
            cast(&x.t, x.dtype, DType::F32)?
        };
        let out = map_f32_slices(&t, slice)?;
        let out = if x.dtype == DType::F32 { out } else { cast(&out, DType::F32, x.dtype)? };
        return Ok(PyTensor::new(out, x.dtype));
    }
    float_unary_rows(x, any, f64f, on_device)
}
