//! Activations as single fused passes (one read, one write), vectorised through the elementwise engine.

use pyo3::prelude::*;

use crate::tensor::arith::float_unary;
use crate::tensor::kernels::{erf_f32, exp_f32, tanh_f32};
use crate::tensor::PyTensor;

fn unsupported(_: &candle_core::Tensor) -> candle_core::Result<candle_core::Tensor> {
    candle_core::bail!("this activation runs on CPU tensors only so far")
}

/// softplus with torch's linear region above `threshold` (in units of beta·x).
#[inline(always)]
fn softplus32(x: f32, beta: f32, threshold: f32) -> f32 {
    let bx = beta * x;
    if bx > threshold { x } else { (1.0 + exp_f32(bx)).ln() / beta }
}

#[pyfunction]
#[pyo3(signature = (input, approximate="none"))]
pub fn gelu(input: &PyTensor, approximate: &str) -> PyResult<PyTensor> {
    const S2: f64 = std::f64::consts::FRAC_1_SQRT_2;
    const K: f64 = 0.797_884_560_802_865_4; // sqrt(2/pi)
    match approximate {
        "none" => float_unary(
            input,
            |x: f32| 0.5 * x * (1.0 + erf_f32(x * S2 as f32)),
            |x: f64| 0.5 * x * (1.0 + candle_core::cpu::erf::erf_f64(x * S2)),
            unsupported,
        ),
        "tanh" => float_unary(
            input,
            |x: f32| 0.5 * x * (1.0 + tanh_f32(K as f32 * (x + 0.044715 * x * x * x))),
            |x: f64| 0.5 * x * (1.0 + (K * (x + 0.044715 * x * x * x)).tanh()),
            unsupported,
        ),
        other => Err(crate::error::runtime_err(format!("approximate argument must be either none or tanh, got {other}"))),
    }
}

#[pyfunction]
pub fn silu(input: &PyTensor) -> PyResult<PyTensor> {
    float_unary(input, |x: f32| x / (1.0 + exp_f32(-x)), |x: f64| x / (1.0 + (-x).exp()), unsupported)
}

#[pyfunction]
pub fn mish(input: &PyTensor) -> PyResult<PyTensor> {
    float_unary(
        input,
        |x: f32| x * tanh_f32(softplus32(x, 1.0, 20.0)),
        |x: f64| x * (if x > 20.0 { x } else { x.exp().ln_1p() }).tanh(),
        unsupported,
    )
}

#[pyfunction]
#[pyo3(signature = (input, beta=1.0, threshold=20.0))]
pub fn softplus(input: &PyTensor, beta: f64, threshold: f64) -> PyResult<PyTensor> {
    let (b32, t32) = (beta as f32, threshold as f32);
    float_unary(
        input,
        move |x: f32| softplus32(x, b32, t32),
        move |x: f64| if beta * x > threshold { x } else { (beta * x).exp().ln_1p() / beta },
        unsupported,
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
        unsupported,
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
        unsupported,
    )
}

#[pyfunction]
pub fn hardsigmoid(input: &PyTensor) -> PyResult<PyTensor> {
    float_unary(input, |x: f32| (x / 6.0 + 0.5).clamp(0.0, 1.0), |x: f64| (x / 6.0 + 0.5).clamp(0.0, 1.0), unsupported)
}

#[pyfunction]
pub fn hardswish(input: &PyTensor) -> PyResult<PyTensor> {
    float_unary(
        input,
        |x: f32| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        |x: f64| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        unsupported,
    )
}

#[pyfunction]
pub fn logsigmoid(input: &PyTensor) -> PyResult<PyTensor> {
    // log σ(x) = min(x, 0) − log1p(exp(−|x|)), stable for both signs.
    float_unary(
        input,
        |x: f32| x.min(0.0) - (1.0 + exp_f32(-x.abs())).ln(),
        |x: f64| x.min(0.0) - (-x.abs()).exp().ln_1p(),
        unsupported,
    )
}

#[pyfunction]
pub fn softsign(input: &PyTensor) -> PyResult<PyTensor> {
    float_unary(input, |x: f32| x / (1.0 + x.abs()), |x: f64| x / (1.0 + x.abs()), unsupported)
}

#[pyfunction]
pub fn tanhshrink(input: &PyTensor) -> PyResult<PyTensor> {
    float_unary(input, |x: f32| x - tanh_f32(x), |x: f64| x - x.tanh(), unsupported)
}

#[pyfunction]
#[pyo3(signature = (input, lambd=0.5))]
pub fn softshrink(input: &PyTensor, lambd: f64) -> PyResult<PyTensor> {
    let l = lambd as f32;
    float_unary(
        input,
        move |x: f32| if x > l { x - l } else if x < -l { x + l } else { 0.0 },
        move |x: f64| if x > lambd { x - lambd } else if x < -lambd { x + lambd } else { 0.0 },
        unsupported,
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
        unsupported,
    )
}

#[pyfunction]
pub fn threshold(input: &PyTensor, threshold: f64, value: f64) -> PyResult<PyTensor> {
    let (t, v) = (threshold as f32, value as f32);
    float_unary(
        input,
        move |x: f32| if x > t { x } else { v },
        move |x: f64| if x > threshold { x } else { value },
        unsupported,
    )
}

/// Snake (audio codecs): x + sin²(αx)/(α + 1e-9), with α broadcast over the channel dim 1.
#[pyfunction]
pub fn snake(input: &PyTensor, alpha: &PyTensor) -> PyResult<PyTensor> {
    let ax = crate::tensor::arith::binary(input, crate::tensor::Operand::T(alpha), crate::tensor::arith::BinOp::Mul, false)?;
    let s = float_unary(&ax, |x: f32| x.sin() * x.sin(), |x: f64| x.sin() * x.sin(), unsupported)?;
    let inv = float_unary(alpha, |a: f32| 1.0 / (a + 1e-9), |a: f64| 1.0 / (a + 1e-9), unsupported)?;
    let t = crate::tensor::arith::binary(&s, crate::tensor::Operand::T(&inv), crate::tensor::arith::BinOp::Mul, false)?;
    crate::tensor::arith::binary(input, crate::tensor::Operand::T(&t), crate::tensor::arith::BinOp::Add, false)
}
