//! RoI pooling: `roi_align`, `roi_pool`, `ps_roi_align`, `ps_roi_pool`, as torchvision's CPU
//! kernels compute them (the comments name the C++ expressions whose evaluation order is kept).
//! Rois are (K, 5): batch index, x1, y1, x2, y2. Each roi fills its own block of the output, so
//! rois run in parallel.

use candle_core::Tensor;
use pyo3::prelude::*;

use super::{cmax, cmin, compute_dtype, finish, reserve, size, trunc, with_host, Real};
use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};
use crate::pool::SendPtr;
use crate::tensor::PyTensor;

/// Sampling points one roi may precompute (weights shared by all channels); a roi with more (huge
/// boxes with an adaptive grid) computes them as it goes, in the same order.
const PRECALC_LIMIT: usize = 1 << 18;

/// Shapes of one call: input (n, c, h, w), k rois, pooled (ph, pw).
#[derive(Clone, Copy)]
struct Geo {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    k: usize,
    ph: usize,
    pw: usize,
}

/// torchvision's argument checks, in its order, up to the output's shape.
fn check(kernel: &str, input: &PyTensor, rois: &PyTensor, ph: i64, pw: i64, c_out: Option<i64>, same_type: &str) -> PyResult<(Geo, Vec<usize>)> {
    if rois.rank() != 2 || rois.dims()[1] != 5 {
        return Err(runtime_err(format!("{kernel}: rois must have shape as Tensor[K, 5], got {:?}", rois.dims())));
    }
    if input.dtype != rois.dtype {
        return Err(runtime_err(same_type.to_string()));
    }
    if input.rank() != 4 {
        return Err(runtime_err(format!("{kernel}: input must be a 4-D tensor (N, C, H, W), got {}-D", input.rank())));
    }
    let d = input.dims();
    let k = rois.dims()[0];
    let c = match c_out {
        // Position-sensitive pooling: the channels split into ph·pw bins.
        Some(_) => {
            let bins = ph.saturating_mul(pw);
            if bins <= 0 || d[1] as i64 % bins != 0 {
                return Err(runtime_err("input channels must be a multiple of pooling height * pooling width"));
            }
            d[1] as i64 / bins
        }
        None => d[1] as i64,
    };
    let want = [k as i64, c, ph, pw];
    let geo = Geo { n: d[0], c: d[1], h: d[2], w: d[3], k, ph: size(ph, &want)?, pw: size(pw, &want)? };
    Ok((geo, vec![k, c as usize, geo.ph, geo.pw]))
}

/// The rois as `T` and their batch indices, checked against the batch size.
fn read_rois<T: Real>(rois: &PyTensor, n: usize) -> PyResult<(Vec<T>, Vec<usize>)> {
    let r = with_host::<T, _>(&rois.t, |r| r.to_vec())?;
    let batch = r
        .chunks_exact(5)
        .map(|roi| {
            // `int roi_batch_ind = offset_rois[0]`: truncation.
            let b = roi[0].to_f64();
            match b.is_nan() { true => None, false => usize::try_from(b as i64).ok().filter(|&b| b < n) }
                .ok_or_else(|| runtime_err("rois batch index must be in [0, batch_size)"))
        })
        .collect::<PyResult<Vec<usize>>>()?;
    Ok((r, batch))
}

/// Runs `f(roi, out_block, idx_block)` for every roi over the pool (idx may be empty).
fn per_roi<T: Real>(k: usize, out: &mut [T], idx: &mut [i32], f: impl Fn(usize, &mut [T], &mut [i32]) + Sync) {
    let per = out.len() / k.max(1);
    let per_idx = idx.len() / k.max(1);
    let (op, ip) = (SendPtr(out.as_mut_ptr()), SendPtr(idx.as_mut_ptr()));
    crate::pool::for_each(k, &|n| {
        // SAFETY: roi n alone writes block n of each buffer; both outlive the loop.
        let (o, i) = unsafe { (op.block(n, per), ip.block(n, per_idx)) };
        f(n, o, i)
    });
}

/// One bilinear sample: four pixel positions in a plane and their weights (all zero outside).
#[derive(Clone, Copy)]
struct Sample<T> {
    pos: [usize; 4],
    w: [T; 4],
}

/// `pre_calc_for_bilinear_interpolate`'s point (y, x) of an h×w plane. Points outside [-1, h]×[-1, w]
/// (or NaN) weigh nothing; clamped positions are always inside the plane.
#[inline]
fn sample<T: Real>(h: usize, w: usize, y: T, x: T) -> Sample<T> {
    let zero = T::from_f64(0.0);
    let (hf, wf) = (T::from_f64(h as f64), T::from_f64(w as f64));
    let m1 = T::from_f64(-1.0);
    if !(y >= m1 && y <= hf && x >= m1 && x <= wf) || h == 0 || w == 0 {
        return Sample { pos: [0; 4], w: [zero; 4] };
    }
    let mut y = if y <= zero { zero } else { y };
    let mut x = if x <= zero { zero } else { x };
    let (mut y_low, mut x_low) = (trunc(y) as usize, trunc(x) as usize);
    let (y_high, x_high);
    if y_low >= h - 1 {
        y_low = h - 1;
        y_high = y_low;
        y = T::from_f64(y_low as f64);
    } else {
        y_high = y_low + 1;
    }
    if x_low >= w - 1 {
        x_low = w - 1;
        x_high = x_low;
        x = T::from_f64(x_low as f64);
    } else {
        x_high = x_low + 1;
    }
    let one = T::from_f64(1.0);
    let ly = y - T::from_f64(y_low as f64);
    let lx = x - T::from_f64(x_low as f64);
    let (hy, hx) = (one - ly, one - lx);
    Sample {
        pos: [y_low * w + x_low, y_low * w + x_high, y_high * w + x_low, y_high * w + x_high],
        w: [hy * hx, hy * lx, ly * hx, ly * lx],
    }
}

/// `w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4`, left to right.
#[inline(always)]
fn interp<T: Real>(plane: &[T], s: &Sample<T>) -> T {
    s.w[0] * plane[s.pos[0]] + s.w[1] * plane[s.pos[1]] + s.w[2] * plane[s.pos[2]] + s.w[3] * plane[s.pos[3]]
}

/// `static_cast<T>(i + .5f)`.
#[inline(always)]
fn half_step<T: Real>(i: i64) -> T {
    T::from_f64((i as f32 + 0.5) as f64)
}

/// The sampling grid of a bin: `sampling_ratio`, or `ceil(roi_size / pooled)` when it is <= 0.
#[inline]
fn grid<T: Real>(sampling: i64, roi_size: T, pooled: usize) -> i64 {
    if sampling > 0 { sampling } else { trunc((roi_size / T::from_f64(pooled as f64)).ceil()) }
}

/// An empty result (some output dim is 0) in the input's dtype, as torchvision returns it before
/// looking at the dtype.
fn zeros(dims: &[usize], like: &PyTensor, dtype: DType) -> PyResult<PyTensor> {
    Ok(PyTensor::new(Tensor::zeros(dims, dtype.candle(), like.t.device()).py()?, dtype))
}

/// `roi_align(input, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned)`: the mean of
/// bilinear samples on a grid in each bin.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn vision_roi_align(
    py: Python<'_>, input: &PyTensor, rois: &PyTensor, spatial_scale: f64, pooled_height: i64, pooled_width: i64,
    sampling_ratio: i64, aligned: bool,
) -> PyResult<PyTensor> {
    let (g, dims) = check("roi_align", input, rois, pooled_height, pooled_width, None, "input should have the same type as rois")?;
    if dims.contains(&0) {
        return zeros(&dims, input, input.dtype);
    }
    fn run<T: Real>(py: Python<'_>, input: &PyTensor, rois: &PyTensor, g: Geo, dims: &[usize], scale: f64, sampling: i64, aligned: bool) -> PyResult<PyTensor> {
        let (r, batch) = read_rois::<T>(rois, g.n)?;
        reserve::<T>(dims)?;
        let scale = T::from_f64(scale);
        for (n, roi) in r.chunks_exact(5).enumerate() {
            check_grid("roi_align", n, align_geometry(roi, &g, scale, sampling, aligned).grid, &g, true)?;
        }
        let mut out = vec![T::from_f64(0.0); dims.iter().product()];
        with_host::<T, _>(&input.t, |x| {
            let work = g.k * g.c * g.ph * g.pw * 4;
            super::maybe_detach(py, work, || {
                per_roi(g.k, &mut out, &mut [], |n, o, _| {
                    let plane = g.h * g.w;
                    let img = &x[batch[n] * g.c * plane..(batch[n] + 1) * g.c * plane];
                    roi_align_one(img, &r[n * 5..n * 5 + 5], &g, scale, sampling, aligned, o)
                })
            })
        })?;
        finish(out, dims, input, None)
    }
    match compute_dtype("roi_align_forward_kernel", input.dtype, true)? {
        candle_core::DType::F64 => run::<f64>(py, input, rois, g, &dims, spatial_scale, sampling_ratio, aligned),
        _ => run::<f32>(py, input, rois, g, &dims, spatial_scale, sampling_ratio, aligned),
    }
}

/// One roi's geometry in roi_align: start, bin size and sampling grid per axis ([h, w]).
struct Align<T> {
    start: [T; 2],
    bin: [T; 2],
    grid: [i64; 2],
}

fn align_geometry<T: Real>(roi: &[T], g: &Geo, scale: T, sampling: i64, aligned: bool) -> Align<T> {
    let one = T::from_f64(1.0);
    // Not rounded: "this implementation detail is critical".
    let offset = T::from_f64(if aligned { 0.5 } else { 0.0 });
    let start_w = roi[1] * scale - offset;
    let start_h = roi[2] * scale - offset;
    let end_w = roi[3] * scale - offset;
    let end_h = roi[4] * scale - offset;
    let (mut roi_w, mut roi_h) = (end_w - start_w, end_h - start_h);
    if !aligned {
        // Malformed rois are forced to 1x1.
        roi_w = cmax(roi_w, one);
        roi_h = cmax(roi_h, one);
    }
    Align {
        start: [start_h, start_w],
        bin: [roi_h / T::from_f64(g.ph as f64), roi_w / T::from_f64(g.pw as f64)],
        grid: [grid(sampling, roi_h, g.ph), grid(sampling, roi_w, g.pw)],
    }
}

/// A roi's sampling grid (rows, cols per bin) as torchvision can run it: its sample count per roi is a
/// C int (larger ones, from infinite or absurd boxes or sampling ratios, are refused here rather than
/// run for hours), and in roi_align (`negative_fails`) its sample table cannot have a negative size,
/// which an inverted box with aligned=True gives (unless both axes are inverted).
fn check_grid(op: &str, n: usize, [gh, gw]: [i64; 2], g: &Geo, negative_fails: bool) -> PyResult<()> {
    let total = gh as i128 * gw as i128 * (g.ph * g.pw) as i128;
    if negative_fails && total < 0 {
        return Err(runtime_err(format!(
            "{op}: roi {n} has a negative sampling grid ({gh}x{gw}): its x2 < x1 or y2 < y1 with aligned=True"
        )));
    }
    if total > i32::MAX as i128 || gh > i32::MAX as i64 || gw > i32::MAX as i64 {
        return Err(runtime_err(format!(
            "{op}: roi {n} would take {gh}x{gw} samples in each of {}x{} bins: more than torchvision's kernel can \
             index (a non-finite or huge box, or sampling_ratio)",
            g.ph, g.pw
        )));
    }
    Ok(())
}

fn roi_align_one<T: Real>(img: &[T], roi: &[T], g: &Geo, scale: T, sampling: i64, aligned: bool, out: &mut [T]) {
    let Align { start: [start_h, start_w], bin: [bin_h, bin_w], grid: [gh, gw] } = align_geometry(roi, g, scale, sampling, aligned);
    // `std::max(roi_bin_grid_h * roi_bin_grid_w, 1)`: an empty grid gives zeros.
    let count = T::from_f64(gh.saturating_mul(gw).max(1) as f64);
    let (gh, gw) = (gh.max(0) as usize, gw.max(0) as usize);
    let (gh_t, gw_t) = (T::from_f64(gh as f64), T::from_f64(gw as f64));
    let at = |p: usize, q: usize, iy: usize, ix: usize| {
        // `roi_start_h + ph * bin_size_h + static_cast<T>(iy + .5f) * bin_size_h / roi_bin_grid_h`
        let y = start_h + T::from_f64(p as f64) * bin_h + half_step::<T>(iy as i64) * bin_h / gh_t;
        let x = start_w + T::from_f64(q as f64) * bin_w + half_step::<T>(ix as i64) * bin_w / gw_t;
        sample(g.h, g.w, y, x)
    };
    let per_bin = gh.saturating_mul(gw);
    let bins = g.ph * g.pw;
    let pre: Option<Vec<Sample<T>>> = (per_bin.saturating_mul(bins) <= PRECALC_LIMIT).then(|| {
        let mut v = Vec::with_capacity(per_bin * bins);
        for p in 0..g.ph {
            for q in 0..g.pw {
                for iy in 0..gh {
                    for ix in 0..gw {
                        v.push(at(p, q, iy, ix));
                    }
                }
            }
        }
        v
    });
    let plane = g.h * g.w;
    for c in 0..g.c {
        let x = &img[c * plane..(c + 1) * plane];
        for (bin, o) in out[c * bins..(c + 1) * bins].iter_mut().enumerate() {
            let mut acc = T::from_f64(0.0);
            match &pre {
                Some(pre) => pre[bin * per_bin..(bin + 1) * per_bin].iter().for_each(|s| acc += interp(x, s)),
                None => {
                    for iy in 0..gh {
                        for ix in 0..gw {
                            acc += interp(x, &at(bin / g.pw, bin % g.pw, iy, ix));
                        }
                    }
                }
            }
            *o = acc / count;
        }
    }
}

/// `ps_roi_align(input, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio)`: position-sensitive
/// roi_align (aligned, no 1x1 forcing); returns the output and the input channel of each bin (int32).
#[pyfunction]
pub fn vision_ps_roi_align(
    py: Python<'_>, input: &PyTensor, rois: &PyTensor, spatial_scale: f64, pooled_height: i64, pooled_width: i64,
    sampling_ratio: i64,
) -> PyResult<(PyTensor, PyTensor)> {
    let (g, dims) = check("ps_roi_align", input, rois, pooled_height, pooled_width, Some(0), "input should have the same type as rois")?;
    if dims.contains(&0) {
        return Ok((zeros(&dims, input, input.dtype)?, zeros(&dims, input, DType::I32)?));
    }
    fn run<T: Real>(py: Python<'_>, input: &PyTensor, rois: &PyTensor, g: Geo, dims: &[usize], scale: f64, sampling: i64) -> PyResult<(PyTensor, PyTensor)> {
        let (r, batch) = read_rois::<T>(rois, g.n)?;
        reserve::<T>(dims)?;
        let total: usize = dims.iter().product();
        let (mut out, mut map) = (vec![T::from_f64(0.0); total], vec![0i32; total]);
        let scale = T::from_f64(scale);
        for (n, roi) in r.chunks_exact(5).enumerate() {
            check_grid("ps_roi_align", n, align_geometry(roi, &g, scale, sampling, true).grid, &g, false)?;
        }
        let c_out = dims[1];
        with_host::<T, _>(&input.t, |x| {
            super::maybe_detach(py, total * 4, || {
                per_roi(g.k, &mut out, &mut map, |n, o, m| {
                    let plane = g.h * g.w;
                    let img = &x[batch[n] * g.c * plane..(batch[n] + 1) * g.c * plane];
                    ps_roi_align_one(img, &r[n * 5..n * 5 + 5], &g, c_out, scale, sampling, o, m)
                })
            })
        })?;
        Ok((finish(out, dims, input, None)?, finish(map, dims, input, Some(DType::I32))?))
    }
    match compute_dtype("ps_roi_align_forward_kernel", input.dtype, true)? {
        candle_core::DType::F64 => run::<f64>(py, input, rois, g, &dims, spatial_scale, sampling_ratio),
        _ => run::<f32>(py, input, rois, g, &dims, spatial_scale, sampling_ratio),
    }
}

#[allow(clippy::too_many_arguments)]
fn ps_roi_align_one<T: Real>(img: &[T], roi: &[T], g: &Geo, c_out: usize, scale: T, sampling: i64, out: &mut [T], map: &mut [i32]) {
    // roi_align's aligned geometry (start - 0.5, no 1x1 forcing).
    let Align { start: [start_h, start_w], bin: [bin_h, bin_w], grid: [gh, gw] } = align_geometry(roi, g, scale, sampling, true);
    // No `max(…, 1)` here: an empty grid divides 0 by 0, as torchvision does.
    let count = T::from_f64(gh.saturating_mul(gw) as f64);
    let (gh, gw) = (gh.max(0) as usize, gw.max(0) as usize);
    let (gh_t, gw_t) = (T::from_f64(gh as f64), T::from_f64(gw as f64));
    let bins = g.ph * g.pw;
    let plane = g.h * g.w;
    let per_bin = gh.saturating_mul(gw);
    let at = |p: usize, q: usize, iy: usize, ix: usize| {
        // `hstart = static_cast<T>(ph) * bin_size_h + roi_start_h`, then `hstart + (iy + .5f) * bin_size_h / grid`.
        let hstart = T::from_f64(p as f64) * bin_h + start_h;
        let wstart = T::from_f64(q as f64) * bin_w + start_w;
        let y = hstart + half_step::<T>(iy as i64) * bin_h / gh_t;
        let x = wstart + half_step::<T>(ix as i64) * bin_w / gw_t;
        sample(g.h, g.w, y, x)
    };
    // The same sampling points serve every output channel.
    let pre: Option<Vec<Sample<T>>> = (per_bin.saturating_mul(bins) <= PRECALC_LIMIT).then(|| {
        let mut v = Vec::with_capacity(per_bin * bins);
        for bin in 0..bins {
            for iy in 0..gh {
                for ix in 0..gw {
                    v.push(at(bin / g.pw, bin % g.pw, iy, ix));
                }
            }
        }
        v
    });
    for co in 0..c_out {
        for bin in 0..bins {
            let c_in = co * bins + bin;
            let x = &img[c_in * plane..(c_in + 1) * plane];
            let mut acc = T::from_f64(0.0);
            match &pre {
                Some(pre) => pre[bin * per_bin..(bin + 1) * per_bin].iter().for_each(|s| acc += interp(x, s)),
                None => {
                    for iy in 0..gh {
                        for ix in 0..gw {
                            acc += interp(x, &at(bin / g.pw, bin % g.pw, iy, ix));
                        }
                    }
                }
            }
            out[co * bins + bin] = acc / count;
            map[co * bins + bin] = c_in as i32;
        }
    }
}

/// `roi_pool(input, rois, spatial_scale, pooled_h, pooled_w)`: max over integer bins; returns the
/// output and each maximum's flat position in its plane (int32, -1 for an empty bin).
#[pyfunction]
pub fn vision_roi_pool(
    py: Python<'_>, input: &PyTensor, rois: &PyTensor, spatial_scale: f64, pooled_height: i64, pooled_width: i64,
) -> PyResult<(PyTensor, PyTensor)> {
    pools(py, false, input, rois, spatial_scale, pooled_height, pooled_width)
}

/// `ps_roi_pool(input, rois, spatial_scale, pooled_h, pooled_w)`: position-sensitive average over
/// integer bins; returns the output and the input channel of each bin (int32).
#[pyfunction]
pub fn vision_ps_roi_pool(
    py: Python<'_>, input: &PyTensor, rois: &PyTensor, spatial_scale: f64, pooled_height: i64, pooled_width: i64,
) -> PyResult<(PyTensor, PyTensor)> {
    pools(py, true, input, rois, spatial_scale, pooled_height, pooled_width)
}

/// roi_pool (`ps` false) and ps_roi_pool (`ps` true): the output and its int32 companion.
fn pools(
    py: Python<'_>, ps: bool, input: &PyTensor, rois: &PyTensor, spatial_scale: f64, pooled_height: i64, pooled_width: i64,
) -> PyResult<(PyTensor, PyTensor)> {
    let (name, kernel) = if ps { ("ps_roi_pool", "ps_roi_pool_forward_kernel") } else { ("roi_pool", "roi_pool_forward_kernel") };
    let (g, dims) = check(name, input, rois, pooled_height, pooled_width, ps.then_some(0), "input and rois must have the same dtype")?;
    if dims.contains(&0) {
        return Ok((zeros(&dims, input, input.dtype)?, zeros(&dims, input, DType::I32)?));
    }
    fn run<T: Real>(py: Python<'_>, ps: bool, input: &PyTensor, rois: &PyTensor, g: Geo, dims: &[usize], scale: f64) -> PyResult<(PyTensor, PyTensor)> {
        let (r, batch) = read_rois::<T>(rois, g.n)?;
        reserve::<T>(dims)?;
        let total: usize = dims.iter().product();
        let (mut out, mut side) = (vec![T::from_f64(0.0); total], vec![0i32; total]);
        let scale = T::from_f64(scale);
        with_host::<T, _>(&input.t, |x| {
            super::maybe_detach(py, total * 4, || {
                per_roi(g.k, &mut out, &mut side, |n, o, a| {
                    let plane = g.h * g.w;
                    let img = &x[batch[n] * g.c * plane..(batch[n] + 1) * g.c * plane];
                    pool_one(img, &r[n * 5..n * 5 + 5], &g, scale, ps, o, a)
                })
            })
        })?;
        Ok((finish(out, dims, input, None)?, finish(side, dims, input, Some(DType::I32))?))
    }
    match compute_dtype(kernel, input.dtype, true)? {
        candle_core::DType::F64 => run::<f64>(py, ps, input, rois, g, &dims, spatial_scale),
        _ => run::<f32>(py, ps, input, rois, g, &dims, spatial_scale),
    }
}

/// One roi of `roi_pool` (max, `idx` = argmax) or of `ps_roi_pool` (`ps`: mean, `idx` = input channel).
/// Bins are integer windows: `floor`/`ceil` of the bin edges, shifted by the rounded roi start and
/// clipped to the plane (to h - 1 / w - 1 in ps_roi_pool, as torchvision clips there).
#[allow(clippy::too_many_arguments)]
fn pool_one<T: Real>(img: &[T], roi: &[T], g: &Geo, scale: T, ps: bool, out: &mut [T], idx: &mut [i32]) {
    // `int roi_start_w = round(offset_rois[1] * spatial_scale)`.
    let rnd = |v: T| trunc((v * scale).round());
    let (start_w, start_h, end_w, end_h) = (rnd(roi[1]), rnd(roi[2]), rnd(roi[3]), rnd(roi[4]));
    // Malformed rois are forced to 1x1 (roi_pool counts the end pixel, ps_roi_pool does not).
    let extra = if ps { 0 } else { 1 };
    let roi_w = cmax(end_w.saturating_sub(start_w).saturating_add(extra), 1);
    let roi_h = cmax(end_h.saturating_sub(start_h).saturating_add(extra), 1);
    let bin_h = T::from_f64(roi_h as f64) / T::from_f64(g.ph as f64);
    let bin_w = T::from_f64(roi_w as f64) / T::from_f64(g.pw as f64);
    let (h, w) = (g.h as i64, g.w as i64);
    let (lim_h, lim_w) = if ps { (h - 1, w - 1) } else { (h, w) };
    let clip = |v: i64, start: i64, lim: i64| cmin(cmax(v.saturating_add(start), 0), lim);
    let bins = g.ph * g.pw;
    let plane = g.h * g.w;
    let channels = out.len() / bins;
    // The bins' windows (rows, cols, area; empty ones read nothing), shared by all channels.
    let windows: Vec<(std::ops::Range<usize>, std::ops::Range<usize>, i64)> = (0..bins)
        .map(|bin| {
            let (p, q) = (bin / g.pw, bin % g.pw);
            let hs = clip(trunc((T::from_f64(p as f64) * bin_h).floor()), start_h, lim_h);
            let ws = clip(trunc((T::from_f64(q as f64) * bin_w).floor()), start_w, lim_w);
            let he = clip(trunc((T::from_f64((p + 1) as f64) * bin_h).ceil()), start_h, lim_h);
            let we = clip(trunc((T::from_f64((q + 1) as f64) * bin_w).ceil()), start_w, lim_w);
            if he <= hs || we <= ws {
                (0..0, 0..0, 0)
            } else {
                (hs as usize..he as usize, ws as usize..we as usize, (he - hs) * (we - ws))
            }
        })
        .collect();
    let zero = T::from_f64(0.0);
    let neg_max = T::from_f64(-(f32::MAX as f64));
    // Channel by channel, so that each plane stays in cache across its bins.
    for c in 0..channels {
        for (bin, (rows, cols, area)) in windows.iter().enumerate() {
            let o = c * bins + bin;
            let empty = *area == 0;
            if ps {
                let c_in = o;
                let x = &img[c_in * plane..(c_in + 1) * plane];
                let mut sum = zero;
                for r in rows.clone() {
                    x[r * g.w + cols.start..r * g.w + cols.end].iter().for_each(|&v| sum += v);
                }
                out[o] = if empty { zero } else { sum / T::from_f64(*area as f64) };
                idx[o] = c_in as i32;
            } else {
                let x = &img[c * plane..(c + 1) * plane];
                let (mut best, mut arg) = (if empty { zero } else { neg_max }, -1i64);
                for r in rows.clone() {
                    for (j, &v) in x[r * g.w + cols.start..r * g.w + cols.end].iter().enumerate() {
                        if v > best {
                            best = v;
                            arg = (r * g.w + cols.start + j) as i64;
                        }
                    }
                }
                out[o] = best;
                idx[o] = arg as i32;
            }
        }
    }
}
