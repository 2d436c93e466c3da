//! Max and average pooling over 1-3 spatial dims, plain or adaptive: one kernel for all of them.
//! The Python layer turns kernel/stride/padding/dilation/ceil_mode (or an adaptive output size) into
//! a list of windows per spatial axis; this walks them for every (batch, channel) plane in parallel.

use candle_core::{Device, Tensor, WithDType};
use pyo3::prelude::*;

use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};
use crate::tensor::PyTensor;

use super::Ptr;

/// One window along one axis: first tap (may be negative: padding), number of taps, and the taps
/// that fall inside the padded input (the divisor of `count_include_pad`).
type Window = (i64, usize, usize);

struct Axes {
    len: [usize; 3],
    windows: [Vec<Window>; 3],
    dilation: [usize; 3],
}

fn pool_plane<T: WithDType>(plane: &[T], ax: &Axes, max: bool, divisor: Option<f64>, count_pad: bool, out: &mut [T], idx: &mut [i64]) {
    let [ld, lh, lw] = ax.len;
    let [dd, dh, dw] = ax.dilation;
    let mut o = 0;
    for &(sd, nd, pd) in &ax.windows[0] {
        for &(sh, nh, ph) in &ax.windows[1] {
            for &(sw, nw, pw) in &ax.windows[2] {
                let (mut best, mut arg, mut sum, mut count) = (f64::NEG_INFINITY, -1i64, 0f64, 0usize);
                for a in 0..nd {
                    let d = sd + (a * dd) as i64;
                    if d < 0 || d >= ld as i64 {
                        continue;
                    }
                    for b in 0..nh {
                        let h = sh + (b * dh) as i64;
                        if h < 0 || h >= lh as i64 {
                            continue;
                        }
                        let row = (d as usize * lh + h as usize) * lw;
                        if dw == 1 {
                            // Unit dilation along the row: one clipped contiguous run, no per-tap checks.
                            let (w0, w1) = (sw.max(0) as usize, ((sw + nw as i64).min(lw as i64)).max(0) as usize);
                            if w0 >= w1 {
                                continue;
                            }
                            let run = &plane[row + w0..row + w1];
                            if max {
                                for (j, v) in run.iter().enumerate() {
                                    let v = v.to_f64();
                                    if arg < 0 || v > best || (v.is_nan() && !best.is_nan()) {
                                        best = v;
                                        arg = (row + w0 + j) as i64;
                                    }
                                }
                            } else {
                                sum += run.iter().map(|v| v.to_f64()).sum::<f64>();
                                count += w1 - w0;
                            }
                            continue;
                        }
                        for c in 0..nw {
                            let w = sw + (c * dw) as i64;
                            if w < 0 || w >= lw as i64 {
                                continue;
                            }
                            let v = plane[row + w as usize].to_f64();
                            if max {
                                // The first NaN wins and stays, as in torch.
                                if arg < 0 || v > best || (v.is_nan() && !best.is_nan()) {
                                    best = v;
                                    arg = (row + w as usize) as i64;
                                }
                            } else {
                                sum += v;
                                count += 1;
                            }
                        }
                    }
                }
                out[o] = T::from_f64(if max {
                    best
                } else {
                    let div = divisor.unwrap_or(if count_pad { (pd * ph * pw) as f64 } else { count as f64 });
                    sum / div
                });
                if max {
                    idx[o] = arg;
                }
                o += 1;
            }
        }
    }
}

crate::tensor::kernels::multiversion! {
    /// Max pooling of one plane without indices, one axis at a time (a max over a box is the max of
    /// per-axis maxima): along W within rows, then along H and D over whole rows, which vectorises.
    /// NaN wins, as in torch. `buf` is scratch the size of the plane.
    fn max_plane_separable<>(plane: &[f32], ax: &Axes, out: &mut [f32], buf: &mut Vec<f32>) where [] {
        #[inline(always)]
        fn pick(acc: f32, v: f32) -> f32 {
            if v > acc || v != v { v } else { acc }
        }
        // One axis: src viewed as (outer, len, inner) → dst (outer, windows, inner). Inlined, so it
        // is compiled for the caller's instruction set.
        #[inline(always)]
        fn axis(src: &[f32], dst: &mut [f32], len: usize, inner: usize, windows: &[Window], dil: usize) {
            let outer = src.len() / (len * inner).max(1);
            let o = windows.len();
            for a in 0..outer {
                let s = &src[a * len * inner..(a + 1) * len * inner];
                for (j, &(start, taps, _)) in windows.iter().enumerate() {
                    let d = &mut dst[(a * o + j) * inner..(a * o + j + 1) * inner];
                    d.fill(f32::NEG_INFINITY);
                    for t in 0..taps {
                        let i = start + (t * dil) as i64;
                        if i < 0 || i >= len as i64 {
                            continue;
                        }
                        let row = &s[i as usize * inner..(i as usize + 1) * inner];
                        d.iter_mut().zip(row).for_each(|(acc, &v)| *acc = pick(*acc, v));
                    }
                }
            }
        }
        let [ld, lh, lw] = ax.len;
        let (od, oh, ow) = (ax.windows[0].len(), ax.windows[1].len(), ax.windows[2].len());
        // Along W: inner = 1, one scalar window per output column.
        let mut w_out = vec![0f32; ld * lh * ow];
        axis(plane, &mut w_out, lw, 1, &ax.windows[2], ax.dilation[2]);
        buf.resize(ld * oh * ow, 0.0);
        axis(&w_out, buf, lh, ow, &ax.windows[1], ax.dilation[1]);
        axis(buf, &mut out[..od * oh * ow], ld, oh * ow, &ax.windows[0], ax.dilation[0]);
    }
}

/// `kind` "max" or "avg" over `input` (N?, C, *spatial) with the given windows per spatial axis.
/// Returns the pooled tensor and, for max with `indices`, the flat spatial index of each maximum.
#[pyfunction]
#[pyo3(signature = (input, kind, windows, dilation, count_include_pad=true, divisor_override=None, indices=true))]
#[allow(clippy::too_many_arguments)]
pub fn pool(
    input: &PyTensor,
    kind: &str,
    windows: Vec<Vec<Window>>,
    dilation: Vec<usize>,
    count_include_pad: bool,
    divisor_override: Option<i64>,
    indices: bool,
) -> PyResult<(PyTensor, Option<PyTensor>)> {
    let k = windows.len();
    if !(1..=3).contains(&k) || dilation.len() != k || input.rank() < k + 1 {
        return Err(runtime_err("pool: expected 1 to 3 spatial dims after the channel dim"));
    }
    let max = kind == "max";
    // torch max-pools integers too (exact here: int64/int32 through f64, narrower ones through f32).
    if !(input.dtype.is_float() || max && input.dtype != DType::Bool) {
        return Err(runtime_err(format!("\"{kind}_pool\" not implemented for '{}'", input.dtype.title())));
    }
    let dims = input.dims();
    let spatial = &dims[dims.len() - k..];
    let planes: usize = dims[..dims.len() - k].iter().product();
    let pad = 3 - k;
    let mut len = [1usize; 3];
    let mut dil = [1usize; 3];
    let mut win: [Vec<Window>; 3] = [vec![(0, 1, 1)], vec![(0, 1, 1)], vec![(0, 1, 1)]];
    for i in 0..k {
        len[pad + i] = spatial[i];
        dil[pad + i] = dilation[i];
        win[pad + i] = windows[i].clone();
    }
    let ax = Axes { len, windows: win, dilation: dil };
    let out_sp: Vec<usize> = windows.iter().map(|w| w.len()).collect();
    let per_out: usize = out_sp.iter().product();
    let per_in: usize = spatial.iter().product();
    let mut out_dims = dims[..dims.len() - k].to_vec();
    out_dims.extend(&out_sp);
    let compute = if matches!(input.dtype, DType::F64 | DType::I64 | DType::I32) { candle_core::DType::F64 } else { candle_core::DType::F32 };
    let x = crate::tensor::convert(&input.t.to_device(&Device::Cpu).py()?, compute)?.contiguous().py()?;
    let divisor = divisor_override.map(|d| d as f64);
    let par = planes * per_in >= crate::tensor::kernels::PAR_THRESHOLD;
    if max && !indices && compute == candle_core::DType::F32 {
        let (storage, layout) = x.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
        let data = &cpu.as_slice::<f32>().py()?[layout.start_offset()..];
        let mut out = vec![0f32; planes * per_out];
        let run = |out: &mut [f32]| {
            crate::pool::chunks_mut(out, per_out.max(1), |p, o| {
                max_plane_separable(&data[p * per_in..(p + 1) * per_in], &ax, o, &mut Vec::new())
            })
        };
        if par {
            Python::attach(|py| py.detach(|| run(&mut out)));
        } else {
            run(&mut out);
        }
        drop(storage);
        let t = Tensor::from_vec(out, out_dims.as_slice(), &Device::Cpu).py()?;
        let t = crate::tensor::convert(&t, input.dtype.candle())?.to_device(input.t.device()).py()?;
        return Ok((PyTensor::new(t, input.dtype), None));
    }
    let mut idx = vec![0i64; if max { planes * per_out } else { 0 }];
    let out = crate::with_dtype!(compute, T => {
        let data = x.flatten_all().py()?.to_vec1::<T>().py()?;
        let mut out = vec![T::from_f64(0.0); planes * per_out];
        let (op, ip) = (Ptr(out.as_mut_ptr()), Ptr(idx.as_mut_ptr()));
        let work = |p: usize| {
            // SAFETY: plane p writes only its own output block; the buffers outlive the loop.
            let o = unsafe { std::slice::from_raw_parts_mut(op.get().add(p * per_out), per_out) };
            let i: &mut [i64] = if max { unsafe { std::slice::from_raw_parts_mut(ip.get().add(p * per_out), per_out) } } else { &mut [] };
            pool_plane(&data[p * per_in..(p + 1) * per_in], &ax, max, divisor, count_include_pad, o, i);
        };
        // Planes in batches of about 16k input elements per task.
        let per_task = (16384 / per_in.max(1)).clamp(1, planes.max(1));
        let batches = planes.div_ceil(per_task);
        let run = |b: usize| (b * per_task..((b + 1) * per_task).min(planes)).for_each(&work);
        if par {
            Python::attach(|py| py.detach(|| crate::pool::for_each(batches, &run)));
        } else {
            (0..batches).for_each(run);
        }
        Tensor::from_vec(out, out_dims.as_slice(), &Device::Cpu).py()
    })?;
    let out = crate::tensor::convert(&out, input.dtype.candle())?.to_device(input.t.device()).py()?;
    let indices = if max {
        Some(PyTensor::new(Tensor::from_vec(idx, out_dims.as_slice(), input.t.device()).py()?, DType::I64))
    } else {
        None
    };
    Ok((PyTensor::new(out, input.dtype), indices))
}

/// Resampling along one axis: x viewed as (outer, L, inner) → (outer, O, inner) with
/// out[:, j, :] = Σ_t weights[j][t] · x[:, index[j][t], :] — nearest (1 tap), linear (2), cubic (4).
/// `F.interpolate` calls it once per spatial dim.
#[pyfunction]
pub fn resample_axis(input: &PyTensor, dim: usize, index: Vec<Vec<usize>>, weights: Vec<Vec<f32>>) -> PyResult<PyTensor> {
    let dims = input.dims().to_vec();
    if dim >= dims.len() || index.len() != weights.len() {
        return Err(runtime_err("resample_axis: bad arguments"));
    }
    let (outer, l, inner) = (dims[..dim].iter().product::<usize>(), dims[dim], dims[dim + 1..].iter().product::<usize>());
    if index.iter().flatten().any(|&i| i >= l) || index.iter().zip(&weights).any(|(i, w)| i.len() != w.len()) {
        return Err(runtime_err("resample_axis: index out of range"));
    }
    let o = index.len();
    let x = crate::tensor::cpu_vec::<f32>(&input.t)?;
    let mut out = vec![0f32; outer * o * inner];
    // Taps as flat arrays of a fixed count per output (short windows padded with weight 0), so the
    // last-dim gather walks two plain slices.
    let taps = index.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let (mut fidx, mut fw) = (vec![0usize; o * taps], vec![0f32; o * taps]);
    for (j, (idx, w)) in index.iter().zip(&weights).enumerate() {
        fidx[j * taps..j * taps + idx.len()].copy_from_slice(idx);
        fw[j * taps..j * taps + w.len()].copy_from_slice(w);
    }
    let work = |dst: &mut [f32], p: usize| {
        let src = &x[p * l * inner..(p + 1) * l * inner];
        if inner == 1 {
            // The last dim: a gather-and-weigh per output position.
            if taps == 2 {
                for (d, (i, w)) in dst.iter_mut().zip(fidx.chunks_exact(2).zip(fw.chunks_exact(2))) {
                    *d = w[0] * src[i[0]] + w[1] * src[i[1]];
                }
            } else {
                for (d, (i, w)) in dst.iter_mut().zip(fidx.chunks_exact(taps).zip(fw.chunks_exact(taps))) {
                    *d = i.iter().zip(w).map(|(&i, &wt)| wt * src[i]).sum();
                }
            }
            return;
        }
        for (j, (idx, w)) in index.iter().zip(&weights).enumerate() {
            let row = &mut dst[j * inner..(j + 1) * inner];
            for (&i, &wt) in idx.iter().zip(w) {
                row.iter_mut().zip(&src[i * inner..(i + 1) * inner]).for_each(|(d, s)| *d += wt * s);
            }
        }
    };
    if outer * o * inner >= crate::tensor::kernels::PAR_THRESHOLD && outer > 1 {
        Python::attach(|py| py.detach(|| crate::pool::chunks_mut(&mut out, o * inner, |p, dst| work(dst, p))));
    } else {
        out.chunks_mut((o * inner).max(1)).enumerate().for_each(|(p, dst)| work(dst, p));
    }
    let mut od = dims.clone();
    od[dim] = o;
    let t = Tensor::from_vec(out, od, &Device::Cpu).py()?;
    Ok(PyTensor::new(crate::tensor::convert(&t, input.dtype.candle())?.to_device(input.t.device()).py()?, input.dtype))
}
