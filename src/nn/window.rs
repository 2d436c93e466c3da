//! Sliding windows as Candle ops, for the device paths of convolution and pooling: each spatial
//! axis gathered once by an index table (output position × tap → input position), so a window of
//! any stride, dilation, padding or (adaptive) size is one `index_select` per axis on any device.

use candle_core::{DType, Device, Tensor};
use pyo3::prelude::*;

use crate::error::IntoPyResult;

/// The taps of one spatial axis: `outs` windows of `taps` input positions each, row-major
/// (`index[o * taps + k]`).
pub struct Axis {
    pub index: Vec<u32>,
    pub outs: usize,
    pub taps: usize,
}

impl Axis {
    /// Regular windows over an axis already padded: output o, tap k reads o·stride + k·dilation.
    pub fn regular(outs: usize, taps: usize, stride: usize, dilation: usize) -> Self {
        let index = (0..outs).flat_map(|o| (0..taps).map(move |k| (o * stride + k * dilation) as u32)).collect();
        Axis { index, outs, taps }
    }
}

/// x (N, C, *S) with `axes` for its trailing spatial dims → (N, C, *O, *K): every window's taps
/// gathered, tap dims last. `x` must already hold whatever padding the index tables read.
pub fn gather(x: &Tensor, axes: &[Axis]) -> PyResult<Tensor> {
    let lead = x.rank() - axes.len();
    let mut full = x.dims()[..lead].to_vec();
    full.extend(axes.iter().map(|a| a.index.len()));
    crate::memory::ensure(&full, x.dtype(), x.device())?;
    let mut y = x.clone();
    for (i, a) in axes.iter().enumerate() {
        let idx = Tensor::from_vec(a.index.clone(), a.index.len(), x.device()).py()?;
        y = y.index_select(&idx, lead + i).py()?;
    }
    // (.., O1·K1, O2·K2, ..) → (.., O1, K1, O2, K2, ..) → (.., O1, O2, .., K1, K2, ..)
    let mut dims = y.dims()[..lead].to_vec();
    for a in axes {
        dims.extend([a.outs, a.taps]);
    }
    let y = y.reshape(dims).py()?;
    let n = axes.len();
    let mut order: Vec<usize> = (0..lead).collect();
    order.extend((0..n).map(|i| lead + 2 * i));
    order.extend((0..n).map(|i| lead + 2 * i + 1));
    y.permute(order).py()
}

/// `x` with `before`/`after` elements of `value` around spatial dim `dim`.
pub fn pad_axis(x: &Tensor, dim: usize, before: usize, after: usize, value: f64) -> PyResult<Tensor> {
    if before == 0 && after == 0 {
        return Ok(x.clone());
    }
    let mut total = x.dims().to_vec();
    total[dim] = total[dim].checked_add(before).and_then(|v| v.checked_add(after)).ok_or_else(|| crate::error::runtime_err("padding too large"))?;
    crate::memory::ensure(&total, x.dtype(), x.device())?;
    let side = |n: usize| -> PyResult<Tensor> {
        let mut d = x.dims().to_vec();
        d[dim] = n;
        Tensor::full(value, d, x.device()).py()?.to_dtype(x.dtype()).py()
    };
    let mut parts = vec![];
    if before > 0 {
        parts.push(side(before)?);
    }
    parts.push(x.clone());
    if after > 0 {
        parts.push(side(after)?);
    }
    Tensor::cat(&parts, dim).py()
}

/// A tensor of u32 positions on `device` (index tables of the device paths).
pub fn positions(v: Vec<u32>, device: &Device) -> PyResult<Tensor> {
    let n = v.len();
    Tensor::from_vec(v, n, device).py()
}

/// `x` with `s - 1` zeros between neighbours along `dim` (a transposed convolution's input).
pub fn dilate(x: &Tensor, dim: usize, s: usize) -> PyResult<Tensor> {
    let l = x.dims()[dim];
    if s == 1 || l == 0 {
        return Ok(x.clone());
    }
    let y = x.unsqueeze(dim + 1).py()?;
    let y = pad_axis(&y, dim + 1, 0, s - 1, 0.0)?;
    let mut d = x.dims().to_vec();
    d[dim] = l * s;
    y.reshape(d).py()?.narrow(dim, 0, (l - 1) * s + 1).py()
}

/// `x` reversed along `dim`.
pub fn flip(x: &Tensor, dim: usize) -> PyResult<Tensor> {
    let n = x.dims()[dim] as u32;
    x.index_select(&positions((0..n).rev().collect(), x.device())?, dim).py()
}

/// Zeros of `dims` in `dtype` on `device`.
pub fn zeros(dims: &[usize], dtype: DType, device: &Device) -> PyResult<Tensor> {
    Tensor::zeros(dims, dtype, device).py()
}
