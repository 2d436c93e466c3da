//! `torchvision::deform_conv2d` (deformable convolution v1/v2), as torchvision's CPU kernel: a
//! deformable im2col (bilinear samples at the kernel taps moved by the offsets, times the mask),
//! then one gemm per (image, weight group), then the bias.

use pyo3::prelude::*;

use super::{compute_dtype, finish, reserve, with_host, Real};
use crate::error::runtime_err;
use crate::tensor::linalg::gemm_slices;
use crate::tensor::PyTensor;

/// Geometry of one call.
#[derive(Clone, Copy)]
struct Geo {
    cin: usize,
    h: usize,
    w: usize,
    cout: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
    stride: [i64; 2],
    pad: [i64; 2],
    dil: [i64; 2],
    weight_groups: usize,
    offset_groups: usize,
}

/// `deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
/// n_weight_grps, n_offset_grps, use_mask)`; torchvision's checks, each a RuntimeError.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn vision_deform_conv2d(
    py: Python<'_>, input: &PyTensor, weight: &PyTensor, offset: &PyTensor, mask: &PyTensor, bias: &PyTensor,
    stride_h: i64, stride_w: i64, pad_h: i64, pad_w: i64, dilation_h: i64, dilation_w: i64, n_weight_grps: i64,
    n_offset_grps: i64, use_mask: bool,
) -> PyResult<PyTensor> {
    let err = |m: String| Err(runtime_err(format!("deform_conv2d: {m}")));
    if input.rank() != 4 || offset.rank() != 4 || weight.rank() != 4 || (use_mask && mask.rank() != 4) {
        return err(format!(
            "expected 4-D input, weight, offset{} (got {}-D, {}-D, {}-D{})",
            if use_mask { " and mask" } else { "" },
            input.rank(),
            weight.rank(),
            offset.rank(),
            if use_mask { format!(", {}-D", mask.rank()) } else { String::new() }
        ));
    }
    let compute = compute_dtype("deformable_im2col", input.dtype, true)?;
    for (name, t) in [("weight", weight), ("offset", offset), ("mask", mask), ("bias", bias)] {
        if t.dtype != input.dtype && (name != "mask" || use_mask) {
            return err(format!("expected {name} to have the input's dtype {:?}, got {:?}", input.dtype.title(), t.dtype.title()));
        }
    }
    let (d, wd) = (input.dims(), weight.dims());
    let (batch, cin, h, w) = (d[0], d[1], d[2], d[3]);
    let (cout, kh, kw) = (wd[0], wd[2], wd[3]);
    if kh == 0 || kw == 0 {
        return err(format!("weight_h: {kh} weight_w: {kw}"));
    }
    if stride_h <= 0 || stride_w <= 0 {
        return err(format!("stride_h: {stride_h} stride_w: {stride_w}"));
    }
    if pad_h < 0 || pad_w < 0 {
        return err(format!("pad_h: {pad_h} pad_w: {pad_w}"));
    }
    if dilation_h <= 0 || dilation_w <= 0 {
        return err(format!("dilation_h: {dilation_h} dilation_w: {dilation_w}"));
    }
    if n_weight_grps <= 0 || n_offset_grps <= 0 {
        return err(format!("groups must be positive, got n_weight_grps={n_weight_grps}, n_offset_grps={n_offset_grps}"));
    }
    let (wg, og) = (n_weight_grps as usize, n_offset_grps as usize);
    if wd[1].checked_mul(wg) != Some(cin) || cout % wg != 0 {
        return err(format!("weight {wd:?} does not fit {cin} input channels in {wg} groups"));
    }
    let kk = kh * kw;
    if offset.dims()[1] != og * 2 * kk {
        return err(format!("offset.shape[1] is not valid: got: {} expected: {}", offset.dims()[1], og * 2 * kk));
    }
    if use_mask && mask.dims()[1] != og * kk {
        return err(format!("mask.shape[1] is not valid: got: {} expected: {}", mask.dims()[1], og * kk));
    }
    if cin % og != 0 {
        return err(format!("{cin} input channels do not split into {og} offset groups"));
    }
    // `((in_h + 2 * pad_h - ker_h) / stride_h) + 1`, C's truncating division.
    let out_len = |len: usize, pad: i64, dil: i64, k: usize, stride: i64| {
        (len as i64 + 2 * pad - (dil * (k as i64 - 1) + 1)) / stride + 1
    };
    let (oh, ow) = (out_len(h, pad_h, dilation_h, kh, stride_h), out_len(w, pad_w, dilation_w, kw, stride_w));
    let od = offset.dims();
    if od[0] != batch {
        return err("invalid batch size of offset".into());
    }
    if od[2] as i64 != oh || od[3] as i64 != ow {
        return err(format!("offset output dims: ({}, {}) - computed output dims: ({oh}, {ow})", od[2], od[3]));
    }
    if mask.rank() == 0 || mask.dims()[0] != batch {
        return err("invalid batch size of mask".into());
    }
    if use_mask && (mask.dims()[2] as i64 != oh || mask.dims()[3] as i64 != ow) {
        return err(format!(
            "mask output dims: ({}, {}) - computed output dims: ({oh}, {ow})",
            mask.dims()[2],
            mask.dims()[3]
        ));
    }
    if oh <= 0 || ow <= 0 {
        return err(format!("Calculated output size too small - out_h: {oh} out_w: {ow}"));
    }
    if bias.numel() != cout {
        return err(format!("shape '[1, {cout}, 1, 1]' is invalid for input of size {}", bias.numel()));
    }
    let g = Geo {
        cin, h, w, cout, kh, kw, oh: oh as usize, ow: ow as usize,
        stride: [stride_h, stride_w], pad: [pad_h, pad_w], dil: [dilation_h, dilation_w],
        weight_groups: wg, offset_groups: og,
    };
    let dims = [batch, cout, g.oh, g.ow];
    fn run<T: Real>(py: Python<'_>, args: [&PyTensor; 5], g: Geo, batch: usize, use_mask: bool, dims: &[usize]) -> PyResult<PyTensor> {
        let [input, weight, offset, mask, bias] = args;
        reserve::<T>(dims)?;
        reserve::<T>(&[g.cin * g.kh * g.kw, g.oh * g.ow])?;
        let wv = with_host::<T, _>(&weight.t, |s| s.to_vec())?;
        let bv = with_host::<T, _>(&bias.t, |s| s.to_vec())?;
        let mv = if use_mask { Some(with_host::<T, _>(&mask.t, |s| s.to_vec())?) } else { None };
        let mut out = vec![T::from_f64(0.0); dims.iter().product()];
        with_host::<T, _>(&input.t, |x| {
            with_host::<T, _>(&offset.t, |off| {
                py.detach(|| forward(x, &wv, off, mv.as_deref(), &bv, &g, batch, &mut out))
            })
        })??;
        finish(out, dims, input, None)
    }
    let args = [input, weight, offset, mask, bias];
    if batch == 0 {
        return finish::<f32>(Vec::new(), &dims, input, None);
    }
    match compute {
        candle_core::DType::F64 => run::<f64>(py, args, g, batch, use_mask, &dims),
        _ => run::<f32>(py, args, g, batch, use_mask, &dims),
    }
}

/// All images: im2col of each (input channels in parallel), then the per-group gemms and the bias.
#[allow(clippy::too_many_arguments)]
fn forward<T: Real>(x: &[T], weight: &[T], offset: &[T], mask: Option<&[T]>, bias: &[T], g: &Geo, batch: usize, out: &mut [T]) {
    let (kk, ohw, plane) = (g.kh * g.kw, g.oh * g.ow, g.h * g.w);
    let mut cols = vec![T::from_f64(0.0); g.cin * kk * ohw];
    let (cin_g, cout_g) = (g.cin / g.weight_groups, g.cout / g.weight_groups);
    let kdim = cin_g * kk;
    let c_per_og = g.cin / g.offset_groups;
    for b in 0..batch {
        let img = &x[b * g.cin * plane..(b + 1) * g.cin * plane];
        let off = &offset[b * g.offset_groups * 2 * kk * ohw..(b + 1) * g.offset_groups * 2 * kk * ohw];
        let msk = mask.map(|m| &m[b * g.offset_groups * kk * ohw..(b + 1) * g.offset_groups * kk * ohw]);
        crate::pool::chunks_mut(&mut cols, kk * ohw, |c, dst| {
            let grp = c / c_per_og;
            im2col_channel(&img[c * plane..(c + 1) * plane], &off[grp * 2 * kk * ohw..(grp + 1) * 2 * kk * ohw],
                msk.map(|m| &m[grp * kk * ohw..(grp + 1) * kk * ohw]), g, dst)
        });
        let ob = &mut out[b * g.cout * ohw..(b + 1) * g.cout * ohw];
        for gi in 0..g.weight_groups {
            let wg = &weight[gi * cout_g * kdim..(gi + 1) * cout_g * kdim];
            let cg = &cols[gi * kdim * ohw..(gi + 1) * kdim * ohw];
            gemm_slices(cout_g, kdim, ohw, wg, kdim, 1, cg, &mut ob[gi * cout_g * ohw..(gi + 1) * cout_g * ohw], false);
        }
        for (row, &bv) in ob.chunks_exact_mut(ohw).zip(bias) {
            row.iter_mut().for_each(|v| *v += bv);
        }
    }
}

/// The kh·kw column rows of one input channel: `mask * bilinear(input, y, x)` at every output
/// position, y = (oy·stride - pad) + i·dilation + offset_h (the integer part first, as in C).
fn im2col_channel<T: Real>(plane: &[T], off: &[T], mask: Option<&[T]>, g: &Geo, dst: &mut [T]) {
    let ohw = g.oh * g.ow;
    for i in 0..g.kh {
        for j in 0..g.kw {
            let tap = i * g.kw + j;
            let (oy_, ox_) = (&off[2 * tap * ohw..(2 * tap + 1) * ohw], &off[(2 * tap + 1) * ohw..(2 * tap + 2) * ohw]);
            let row = &mut dst[tap * ohw..(tap + 1) * ohw];
            for oy in 0..g.oh {
                let base_y = oy as i64 * g.stride[0] - g.pad[0] + i as i64 * g.dil[0];
                for ox in 0..g.ow {
                    let p = oy * g.ow + ox;
                    let base_x = ox as i64 * g.stride[1] - g.pad[1] + j as i64 * g.dil[1];
                    let y = T::from_f64(base_y as f64) + oy_[p];
                    let x = T::from_f64(base_x as f64) + ox_[p];
                    let v = bilinear(plane, g.h, g.w, y, x);
                    row[p] = match mask {
                        Some(m) => m[tap * ohw + p] * v,
                        None => v,
                    };
                }
            }
        }
    }
}

/// deform_conv2d's bilinear sample: zero outside (-1, h)×(-1, w), missing corners read as zero.
#[inline]
fn bilinear<T: Real>(plane: &[T], height: usize, width: usize, y: T, x: T) -> T {
    let zero = T::from_f64(0.0);
    let (hf, wf, m1) = (T::from_f64(height as f64), T::from_f64(width as f64), T::from_f64(-1.0));
    if y <= m1 || hf <= y || x <= m1 || wf <= x {
        return zero;
    }
    let (h_low, w_low) = (super::trunc(y.floor()), super::trunc(x.floor()));
    let (h_high, w_high) = (h_low + 1, w_low + 1);
    let one = T::from_f64(1.0);
    let lh = y - T::from_f64(h_low as f64);
    let lw = x - T::from_f64(w_low as f64);
    let (hh, hw) = (one - lh, one - lw);
    let (hi, wi) = (height as i64, width as i64);
    let at = |r: i64, c: i64| if (0..hi).contains(&r) && (0..wi).contains(&c) { plane[(r * wi + c) as usize] } else { zero };
    let (v1, v2, v3, v4) = (at(h_low, w_low), at(h_low, w_high), at(h_high, w_low), at(h_high, w_high));
    hh * hw * v1 + hh * lw * v2 + lh * hw * v3 + lh * lw * v4
}
