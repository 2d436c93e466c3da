//! Activations as single fused passes (one read, one write), vectorised through the elementwise engine.

use pyo3::prelude::*;

use crate::tensor::unary::float_unary;
use crate::tensor::kernels::{erf_rational_f32, exp_f32, ln_pos_f32, tanh_f32};
use crate::tensor::PyTensor;

use candle_core::Tensor;
use crate::error::IntoPyResult;

/// Device formulas of the activations (Candle ops on a float tensor, its own dtype).
mod dev {
    use super::*;
    /// `a` where x > t, else `b` (t a number).
    pub fn above(x: &Tensor, t: f64, a: &Tensor, b: &Tensor) -> PyResult<Tensor> {
        x.gt(&x.ones_like().py()?.affine(t, 0.0).py()?).py()?.where_cond(a, b).py()
    }
    /// A constant like x.
    pub fn c(x: &Tensor, v: f64) -> PyResult<Tensor> {
        x.ones_like().py()?.affine(v, 0.0).py()
    }
    /// log(1 + e^(βx))/β, and x where βx > threshold, as torch's softplus.
    pub fn softplus(x: &Tensor, beta: f64, threshold: f64) -> PyResult<Tensor> {
        let bx = x.affine(beta, 0.0).py()?;
        let sp = (bx.exp().py()? + 1.0).py()?.log().py()?.affine(1.0 / beta, 0.0).py()?;
        above(&bx, threshold, x, &sp)
    }
}

/// softplus with torch's linear region above `threshold` (in units of beta·x).
#[inline(always)]
fn softplus32(x: f32, beta: f32, threshold: f32) -> f32 {
    let bx = beta * x;
    if bx > threshold { x } else { ln_pos_f32(1.0 + exp_f32(bx)) / beta }
}

// The f32 kernels of the heavier activations are `#[inline(always)]` fns, not closures: LLVM then
// always inlines them into the vectorised (AVX2/AVX-512) loop instead of calling them per element.
const S2: f32 = std::f32::consts::FRAC_1_SQRT_2;
const K: f32 = 0.797_884_6; // sqrt(2/pi)

#[inline(always)]
fn gelu_erf32(x: f32) -> f32 {
    0.5 * x * (1.0 + erf_rational_f32(x * S2))
}
#[inline(always)]
pub(crate) fn gelu_tanh32(x: f32) -> f32 {
    0.5 * x * (1.0 + tanh_f32(K * (x + 0.044715 * x * x * x)))
}
#[inline(always)]
pub(crate) fn silu32(x: f32) -> f32 {
    x / (1.0 + crate::tensor::kernels::exp_beside_one(-x))
}
#[inline(always)]
fn mish32(x: f32) -> f32 {
    x * tanh_f32(softplus32(x, 1.0, 20.0))
}

/// A slice loop compiled per instruction set with `f` inlined into it (a generic closure passed
/// down the elementwise engine is not always inlined once it holds erf or exp).
/// `$inplace`: the same loop over one slice, written where it is read (the `inplace=True` forms).
macro_rules! slice_map {
    ($name:ident, $inplace:ident, $f:path) => {
        crate::tensor::kernels::multiversion! {
            fn $name<>(s: &[f32], d: &mut [f32]) where [] {
                for (o, &x) in d.iter_mut().zip(s) {
                    *o = $f(x);
                }
            }
        }
        crate::tensor::kernels::multiversion! {
            fn $inplace<>(d: &mut [f32]) where [] {
                for o in d.iter_mut() {
                    *o = $f(*o);
                }
            }
        }
    };
}
slice_map!(gelu_erf_slice, gelu_erf_inplace, gelu_erf32);
slice_map!(gelu_tanh_slice, gelu_tanh_inplace, gelu_tanh32);
slice_map!(silu_slice, silu_inplace, silu32);
slice_map!(mish_slice, mish_inplace, mish32);
#[inline(always)]
fn softplus_default32(x: f32) -> f32 {
    softplus32(x, 1.0, 20.0)
}
slice_map!(softplus_slice, softplus_inplace, softplus_default32);
#[inline(always)]
fn hardsigmoid32(x: f32) -> f32 {
    (x / 6.0 + 0.5).clamp(0.0, 1.0)
}
slice_map!(hardsigmoid_slice, hardsigmoid_inplace, hardsigmoid32);
#[inline(always)]
fn hardswish32(x: f32) -> f32 {
    x * (x + 3.0).clamp(0.0, 6.0) / 6.0
}
slice_map!(hardswish_slice, hardswish_inplace, hardswish32);

/// `F.<name>(x, inplace=True)` on a contiguous f32 CPU tensor: one pass over its memory in parallel
/// chunks (computing a result and copying it back cost two passes and a fresh allocation's page
/// faults: EfficientNet's SiLU(inplace=True) over (8,96,112,112) took 23.9 ms, torch 4.7). False
/// where it does not apply (the caller then computes and copies).
#[pyfunction]
pub fn activation_(input: &PyTensor, name: &str) -> PyResult<bool> {
    let map: fn(&mut [f32]) = match name {
        "silu" => silu_inplace,
        "gelu" => gelu_erf_inplace,
        "gelu_tanh" => gelu_tanh_inplace,
        "mish" => mish_inplace,
        "softplus" => softplus_inplace,
        "hardsigmoid" => hardsigmoid_inplace,
        "hardswish" => hardswish_inplace,
        _ => return Ok(false),
    };
    if input.dtype != crate::dtype::DType::F32 || !crate::device::cpu_kernels(&input.t) || !input.t.is_contiguous() {
        return Ok(false);
    }
    let n = input.numel();
    let work = || {
        crate::tensor::inplace::with_storage_mut(&input.t, |s, l| {
            let x = &mut crate::tensor::inplace::slice_mut::<f32>(s)?[l.start_offset()..l.start_offset() + n];
            const CHUNK: usize = 16 * 1024;
            crate::pool::chunks_mut(x, CHUNK, |_, c| map(c));
            Ok(())
        })
    };
    if n >= crate::tensor::kernels::PAR_THRESHOLD { Python::attach(|py| py.detach(work))? } else { work()? };
    Ok(true)
}

/// Contiguous f32 CPU input: `map` over the storage in parallel chunks. Else the general path.
/// Either way in the input's memory order (the result keeps its strides, as torch's).
fn fused(input: &PyTensor, map: fn(&[f32], &mut [f32]), general: impl FnOnce(&PyTensor) -> PyResult<PyTensor>) -> PyResult<PyTensor> {
    crate::tensor::layout::unary_in_order(input, |input| fused_rows(input, map, general))
}

fn fused_rows(input: &PyTensor, map: fn(&[f32], &mut [f32]), general: impl FnOnce(&PyTensor) -> PyResult<PyTensor>) -> PyResult<PyTensor> {
    use candle_core::{Device, Storage};
    if input.dtype != crate::dtype::DType::F32 || !crate::device::cpu_kernels(&input.t) || !input.t.is_contiguous() {
        return general(input);
    }
    let n = input.numel();
    let (storage, layout) = input.t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else { return general(input) };
    let src = &cpu.as_slice::<f32>().py()?[layout.start_offset()..layout.start_offset() + n];
    let mut out = crate::tensor::kernels::uninit_vec::<f32>(n);
    const CHUNK: usize = 16 * 1024;
    if n >= crate::tensor::kernels::PAR_THRESHOLD {
        let work = || crate::pool::chunks_mut(&mut out, CHUNK, |i, c| map(&src[i * CHUNK..i * CHUNK + c.len()], c));
        Python::attach(|py| py.detach(work));
    } else {
        map(src, &mut out);
    }
    drop(storage);
    Ok(PyTensor::new(Tensor::from_vec(out, input.dims(), &Device::Cpu).py()?, crate::dtype::DType::F32))
}

#[pyfunction]
#[pyo3(signature = (input, approximate="none"))]
pub fn gelu(input: &PyTensor, approximate: &str) -> PyResult<PyTensor> {
    const K64: f64 = 0.797_884_560_802_865_4;
    match approximate {
        "none" => fused(input, gelu_erf_slice, |input| {
            float_unary(
                input,
                gelu_erf32,
                |x: f64| 0.5 * x * (1.0 + candle_core::cpu::erf::erf_f64(x * std::f64::consts::FRAC_1_SQRT_2)),
                |t: &Tensor| t.gelu_erf().py(),
            )
        }),
        "tanh" => fused(input, gelu_tanh_slice, |input| {
            float_unary(input, gelu_tanh32, |x: f64| 0.5 * x * (1.0 + (K64 * (x + 0.044715 * x * x * x)).tanh()), |t: &Tensor| t.gelu().py())
        }),
        other => Err(crate::error::runtime_err(format!("approximate argument must be either none or tanh, got {other}"))),
    }
}

#[pyfunction]
pub fn silu(input: &PyTensor) -> PyResult<PyTensor> {
    fused(input, silu_slice, |input| float_unary(input, silu32, |x: f64| x / (1.0 + (-x).exp()), |t: &Tensor| t.silu().py()))
}

#[pyfunction]
pub fn mish(input: &PyTensor) -> PyResult<PyTensor> {
    fused(input, mish_slice, |input| {
        float_unary(input, mish32, |x: f64| x * (if x > 20.0 { x } else { x.exp().ln_1p() }).tanh(), |t: &Tensor| {
            (t * dev::softplus(t, 1.0, 20.0)?.tanh().py()?).py()
        })
    })
}

#[pyfunction]
#[pyo3(signature = (input, beta=1.0, threshold=20.0))]
pub fn softplus(input: &PyTensor, beta: f64, threshold: f64) -> PyResult<PyTensor> {
    let (b32, t32) = (beta as f32, threshold as f32);
    if beta == 1.0 && threshold == 20.0 {
        return fused(input, softplus_slice, |input| {
            float_unary(input, softplus_default32, |x: f64| if x > 20.0 { x } else { x.exp().ln_1p() }, |t: &Tensor| dev::softplus(t, 1.0, 20.0))
        });
    }
    float_unary(
        input,
        move |x: f32| softplus32(x, b32, t32),
        move |x: f64| if beta * x > threshold { x } else { (beta * x).exp().ln_1p() / beta },
        move |t: &Tensor| dev::softplus(t, beta, threshold),
    )
}

/// elu family: scale·(x if x > 0 else alpha·(exp(x·input_scale) − 1)); selu and celu are instances.
#[pyfunction]
#[pyo3(signature = (input, alpha=1.0, scale=1.0, input_scale=1.0))]
pub fn elu(input: &PyTensor, alpha: f64, scale: f64, input_scale: f64) -> PyResult<PyTensor> {
    let (a, s, i) = (alpha as f32, scale as f32, input_scale as f32);
    float_unary(
        input,
        move |x: f32| s * if x > 0.0 { x } else { a * (exp_f32(x * i) - 1.0) },
        move |x: f64| scale * if x > 0.0 { x } else { alpha * ((x * input_scale).exp_m1()) },
        move |t: &Tensor| {
            let neg = (t.affine(input_scale, 0.0).py()?.exp().py()? - 1.0).py()?.affine(alpha, 0.0).py()?;
            dev::above(t, 0.0, t, &neg)?.affine(scale, 0.0).py()
        },
    )
}

#[pyfunction]
#[pyo3(signature = (input, negative_slope=0.01))]
pub fn leaky_relu(input: &PyTensor, negative_slope: f64) -> PyResult<PyTensor> {
    let s = negative_slope as f32;
    float_unary(
        input,
        move |x: f32| if x > 0.0 { x } else { x * s },
        move |x: f64| if x > 0.0 { x } else { x * negative_slope },
        move |t: &Tensor| dev::above(t, 0.0, t, &t.affine(negative_slope, 0.0).py()?),
    )
}

#[pyfunction]
pub fn hardsigmoid(input: &PyTensor) -> PyResult<PyTensor> {
    fused(input, hardsigmoid_slice, |input| {
        float_unary(input, hardsigmoid32, |x: f64| (x / 6.0 + 0.5).clamp(0.0, 1.0), |t: &Tensor| {
            t.affine(1.0 / 6.0, 0.5).py()?.clamp(0.0, 1.0).py()
        })
    })
}

#[pyfunction]
pub fn hardswish(input: &PyTensor) -> PyResult<PyTensor> {
    fused(input, hardswish_slice, |input| {
        float_unary(
            input,
            hardswish32,
            |x: f64| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            |t: &Tensor| (t * (t + 3.0).py()?.clamp(0.0, 6.0).py()?).py()?.affine(1.0 / 6.0, 0.0).py(),
        )
    })
}

#[pyfunction]
pub fn logsigmoid(input: &PyTensor) -> PyResult<PyTensor> {
    // log σ(x) = min(x, 0) − log1p(exp(−|x|)), stable for both signs.
    float_unary(
        input,
        |x: f32| x.min(0.0) - ln_pos_f32(1.0 + exp_f32(-x.abs())),
        |x: f64| x.min(0.0) - (-x.abs()).exp().ln_1p(),
        |t: &Tensor| {
            let l = (t.abs().py()?.neg().py()?.exp().py()? + 1.0).py()?.log().py()?;
            (t.minimum(&t.zeros_like().py()?).py()? - l).py()
        },
    )
}

#[pyfunction]
pub fn softsign(input: &PyTensor) -> PyResult<PyTensor> {
    float_unary(input, |x: f32| x / (1.0 + x.abs()), |x: f64| x / (1.0 + x.abs()), |t: &Tensor| (t / (t.abs().py()? + 1.0).py()?).py())
}

#[pyfunction]
pub fn tanhshrink(input: &PyTensor) -> PyResult<PyTensor> {
    float_unary(input, |x: f32| x - tanh_f32(x), |x: f64| x - x.tanh(), |t: &Tensor| (t - t.tanh().py()?).py())
}

#[pyfunction]
#[pyo3(signature = (input, lambd=0.5))]
pub fn softshrink(input: &PyTensor, lambd: f64) -> PyResult<PyTensor> {
    let l = lambd as f32;
    float_unary(
        input,
        move |x: f32| if x > l { x - l } else if x < -l { x + l } else { 0.0 },
        move |x: f64| if x > lambd { x - lambd } else if x < -lambd { x + lambd } else { 0.0 },
        move |t: &Tensor| {
            let low = t.lt(&dev::c(t, -lambd)?).py()?.where_cond(&(t + lambd).py()?, &t.zeros_like().py()?).py()?;
            dev::above(t, lambd, &(t - lambd).py()?, &low)
        },
    )
}

#[pyfunction]
#[pyo3(signature = (input, lambd=0.5))]
pub fn hardshrink(input: &PyTensor, lambd: f64) -> PyResult<PyTensor> {
    let l = lambd as f32;
    float_unary(
        input,
        move |x: f32| if x > l || x < -l { x } else { 0.0 },
        move |x: f64| if x > lambd || x < -lambd { x } else { 0.0 },
        move |t: &Tensor| {
            let low = t.lt(&dev::c(t, -lambd)?).py()?.where_cond(t, &t.zeros_like().py()?).py()?;
            dev::above(t, lambd, t, &low)
        },
    )
}

#[pyfunction]
pub fn threshold(input: &PyTensor, threshold: f64, value: f64) -> PyResult<PyTensor> {
    let (t, v) = (threshold as f32, value as f32);
    float_unary(
        input,
        move |x: f32| if x > t { x } else { v },
        move |x: f64| if x > threshold { x } else { value },
        move |t: &Tensor| dev::above(t, threshold, t, &dev::c(t, value)?),
    )
}

/// Snake (audio codecs): x + sin²(αx)/(α + 1e-9), with α broadcast over the channel dim 1.
#[pyfunction]
pub fn snake(input: &PyTensor, alpha: &PyTensor) -> PyResult<PyTensor> {
    let ax = crate::tensor::arith::binary(input, crate::tensor::Operand::T(alpha), crate::tensor::arith::BinOp::Mul, false)?;
    let s = float_unary(&ax, |x: f32| x.sin() * x.sin(), |x: f64| x.sin() * x.sin(), |t: &Tensor| t.sin().py()?.sqr().py())?;
    let inv = float_unary(alpha, |a: f32| 1.0 / (a + 1e-9), |a: f64| 1.0 / (a + 1e-9), |t: &Tensor| (t + 1e-9).py()?.recip().py())?;
    let t = crate::tensor::arith::binary(&s, crate::tensor::Operand::T(&inv), crate::tensor::arith::BinOp::Mul, false)?;
    crate::tensor::arith::binary(input, crate::tensor::Operand::T(&t), crate::tensor::arith::BinOp::Add, false)
}
