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
    /// Max (or average) pooling of one f32 plane without indices, one axis at a time (a max over a
    /// box is the max of per-axis maxima, a box sum the sum of per-axis sums): along W within rows,
    /// then along H and D over whole rows, which vectorises. Max: NaN wins, as in torch. Average:
    /// the box sum divided by `divisor`, else by the product of per-axis counts (`count_pad`: the
    /// taps inside the padded input, else those inside the input), as torch's windows count.
    fn plane_separable<>(plane: &[f32], ax: &Axes, out: &mut [f32], max: bool, divisor: Option<f64>, count_pad: bool) where [] {
        #[inline(always)]
        fn pick(acc: f32, v: f32) -> f32 {
            if v > acc || v != v { v } else { acc }
        }
        // One axis: src viewed as (outer, len, inner) → dst (outer, windows, inner). Inlined, so it
        // is compiled for the caller's instruction set.
        #[inline(always)]
        fn axis(src: &[f32], dst: &mut [f32], len: usize, inner: usize, windows: &[Window], dil: usize, max: bool) {
            let outer = src.len() / (len * inner).max(1);
            let o = windows.len();
            for a in 0..outer {
                let s = &src[a * len * inner..(a + 1) * len * inner];
                for (j, &(start, taps, _)) in windows.iter().enumerate() {
                    let d = &mut dst[(a * o + j) * inner..(a * o + j + 1) * inner];
                    d.fill(if max { f32::NEG_INFINITY } else { 0.0 });
                    for t in 0..taps {
                        let i = start + (t * dil) as i64;
                        if i < 0 || i >= len as i64 {
                            continue;
                        }
                        let row = &s[i as usize * inner..(i as usize + 1) * inner];
                        if max {
                            d.iter_mut().zip(row).for_each(|(acc, &v)| *acc = pick(*acc, v));
                        } else {
                            d.iter_mut().zip(row).for_each(|(acc, &v)| *acc += v);
                        }
                    }
                }
            }
        }
        // Along W where the windows are k taps at a fixed stride (every pooling layer's; adaptive
        // ones vary): per row, the max (sum) of the k taps at every start the inner windows use,
        // over contiguous runs (vectorises; the same operations in the same order as one window's),
        // then those at the windows' starts; windows that reach into the padding go through `axis`.
        // One scalar window at a time took 85% of a 3x3 stride-2 max pool over 112x112 planes.
        #[inline(always)]
        fn along_rows(src: &[f32], dst: &mut [f32], len: usize, windows: &[Window], dil: usize, max: bool) -> bool {
            let (o, Some(&(s0, k, _))) = (windows.len(), windows.first()) else { return false };
            let step = windows.get(1).map_or(1, |w| w.0 - s0);
            let uniform = step > 0 && windows.iter().enumerate().all(|(j, w)| w.0 == s0 + j as i64 * step && w.1 == k);
            if !uniform || k == 0 || len == 0 {
                return false;
            }
            let span = ((k - 1) * dil) as i64;
            // Windows lo..hi lie inside the row.
            let lo = ((-s0).max(0) + step - 1) / step;
            let hi = if len as i64 - 1 - span - s0 < 0 { 0 } else { ((len as i64 - 1 - span - s0) / step + 1).min(o as i64) };
            if lo >= hi {
                return false;
            }
            let (lo, hi, step) = (lo as usize, hi as usize, step as usize);
            let first = (s0 + (lo * step) as i64) as usize;
            let starts = (hi - lo - 1) * step + 1;
            let mut run = vec![0f32; starts];
            for (s, d) in src.chunks_exact(len).zip(dst.chunks_exact_mut(o)) {
                run.fill(if max { f32::NEG_INFINITY } else { 0.0 });
                for t in 0..k {
                    let tap = &s[first + t * dil..][..starts];
                    if max {
                        run.iter_mut().zip(tap).for_each(|(acc, &v)| *acc = pick(*acc, v));
                    } else {
                        run.iter_mut().zip(tap).for_each(|(acc, &v)| *acc += v);
                    }
                }
                d[lo..hi].iter_mut().zip(run.iter().step_by(step)).for_each(|(x, &v)| *x = v);
                // The edge windows, one at a time.
                for j in (0..lo).chain(hi..o) {
                    axis(s, &mut d[j..j + 1], len, 1, &windows[j..j + 1], dil, max);
                }
            }
            true
        }
        let [ld, lh, lw] = ax.len;
        let (od, oh, ow) = (ax.windows[0].len(), ax.windows[1].len(), ax.windows[2].len());
        // Along W: inner = 1, one scalar window per output column.
        let mut w_out = crate::tensor::kernels::uninit_vec::<f32>(ld * lh * ow);
        if !along_rows(plane, &mut w_out, lw, &ax.windows[2], ax.dilation[2], max) {
            axis(plane, &mut w_out, lw, 1, &ax.windows[2], ax.dilation[2], max);
        }
        let mut h_out = crate::tensor::kernels::uninit_vec::<f32>(ld * oh * ow);
        axis(&w_out, &mut h_out, lh, ow, &ax.windows[1], ax.dilation[1], max);
        let out = &mut out[..od * oh * ow];
        axis(&h_out, out, ld, oh * ow, &ax.windows[0], ax.dilation[0], max);
        if max {
            return;
        }
        // Per-axis counts of each window, their products the divisors.
        let counts = |k: usize| -> Vec<f32> {
            ax.windows[k].iter().map(|&(start, taps, pad_taps)| {
                if count_pad {
                    return pad_taps as f32;
                }
                (0..taps).filter(|&t| (0..ax.len[k] as i64).contains(&(start + (t * ax.dilation[k]) as i64))).count() as f32
            }).collect()
        };
        let (cd, ch, cw) = (counts(0), counts(1), counts(2));
        for (plane, &a) in out.chunks_exact_mut((oh * ow).max(1)).zip(&cd) {
            for (row, &b) in plane.chunks_exact_mut(ow.max(1)).zip(&ch) {
                match divisor {
                    Some(d) => row.iter_mut().for_each(|v| *v /= d as f32),
                    None => row.iter_mut().zip(&cw).for_each(|(v, &c)| *v /= a * b * c),
                }
            }
        }
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
    if !crate::device::cpu_kernels(&input.t) {
        let (out, idx) = dev::pool(&input.t, max, &windows, &dilation, count_include_pad, divisor_override, indices, &out_dims)?;
        return Ok((PyTensor::new(out, input.dtype), idx.map(|i| PyTensor::new(i, DType::I64))));
    }
    let compute = if matches!(input.dtype, DType::F64 | DType::I64 | DType::I32) { candle_core::DType::F64 } else { candle_core::DType::F32 };
    let x = crate::tensor::convert(&input.t, compute)?.contiguous().py()?;
    let divisor = divisor_override.map(|d| d as f64);
    let par = planes * per_in >= crate::tensor::kernels::PAR_THRESHOLD;
    if (!max || !indices) && compute == candle_core::DType::F32 {
        let (storage, layout) = x.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
        let data = &cpu.as_slice::<f32>().py()?[layout.start_offset()..];
        let mut out = vec![0f32; planes * per_out];
        let run = |out: &mut [f32]| {
            crate::pool::chunks_mut(out, per_out.max(1), |p, o| {
                plane_separable(&data[p * per_in..(p + 1) * per_in], &ax, o, max, divisor, count_include_pad)
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
    if !crate::device::cpu_kernels(&input.t) {
        return Ok(input.same(dev::resample(&input.t, dim, &index, &weights)?));
    }
    let x = crate::tensor::cpu_vec::<f32>(&input.t)?;
    // Every element is written below (zeroed by its own task first where taps accumulate).
    let mut out = crate::tensor::kernels::uninit_vec::<f32>(outer * o * inner);
    // Taps as flat arrays of a fixed count per output (short windows padded with weight 0), so the
    // last-dim gather walks two plain slices.
    let taps = index.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let (mut fidx, mut fw) = (vec![0usize; o * taps], vec![0f32; o * taps]);
    for (j, (idx, w)) in index.iter().zip(&weights).enumerate() {
        fidx[j * taps..j * taps + idx.len()].copy_from_slice(idx);
        fw[j * taps..j * taps + w.len()].copy_from_slice(w);
    }
    // Nearest: one tap of weight 1 per output, a plain copy.
    let copy = taps == 1 && fw.iter().all(|&w| w == 1.0);
    let work = |dst: &mut [f32], p: usize| {
        let src = &x[p * l * inner..(p + 1) * l * inner];
        if copy {
            if inner == 1 {
                dst.iter_mut().zip(&fidx).for_each(|(d, &i)| *d = src[i]);
            } else {
                for (row, &i) in dst.chunks_exact_mut(inner).zip(&fidx) {
                    row.copy_from_slice(&src[i * inner..(i + 1) * inner]);
                }
            }
            return;
        }
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
        dst.fill(0.0);
        for (j, (idx, w)) in index.iter().zip(&weights).enumerate() {
            let row = &mut dst[j * inner..(j + 1) * inner];
            for (&i, &wt) in idx.iter().zip(w) {
                row.iter_mut().zip(&src[i * inner..(i + 1) * inner]).for_each(|(d, s)| *d += wt * s);
            }
        }
    };
    if outer * o * inner >= crate::tensor::kernels::PAR_THRESHOLD && outer > 1 {
        // Runs of whole planes per task (a plane can be a single row of the last dim).
        let per = outer.div_ceil(4 * crate::pool::threads()).max(1);
        let plane = o * inner;
        Python::attach(|py| {
            py.detach(|| {
                crate::pool::chunks_mut(&mut out, per * plane, |c, dst| {
                    dst.chunks_mut(plane.max(1)).enumerate().for_each(|(k, d)| work(d, c * per + k))
                })
            })
        });
    } else {
        out.chunks_mut((o * inner).max(1)).enumerate().for_each(|(p, dst)| work(dst, p));
    }
    let mut od = dims.clone();
    od[dim] = o;
    let t = Tensor::from_vec(out, od, &Device::Cpu).py()?;
    Ok(PyTensor::new(crate::tensor::convert(&t, input.dtype.candle())?.to_device(input.t.device()).py()?, input.dtype))
}

/// Nearest resampling of every spatial dim at once: out[p, o₁.., oₛ] = x[p, index₁[o₁].., indexₛ[oₛ]]
/// over x's dims 2.. (`index[i]` per output position of spatial dim i), in x's own dtype. The output
/// is written once, where `resample_axis` per dim wrote each intermediate too (x2 of (1,64,64,64):
/// 2 MB + 4 MB against torch's 4 MB); an output row whose source row is the previous row's (an
/// upscale) is copied from that row instead of gathered again.
#[pyfunction]
pub fn resample_nearest(input: &PyTensor, index: Vec<Vec<usize>>) -> PyResult<PyTensor> {
    let dims = input.dims().to_vec();
    let s = index.len();
    if s == 0 || dims.len() != s + 2 {
        return Err(runtime_err("resample_nearest: bad arguments"));
    }
    let (sp, osp): (&[usize], Vec<usize>) = (&dims[2..], index.iter().map(Vec::len).collect());
    if index.iter().zip(sp).any(|(ix, &l)| ix.iter().any(|&i| i >= l)) {
        return Err(runtime_err("resample_nearest: index out of range"));
    }
    if !crate::device::cpu_kernels(&input.t) {
        // (the device gathers read contiguous tensors)
        let mut x = input.t.contiguous().py()?;
        for (i, ix) in index.iter().enumerate().rev() {
            let taps: Vec<Vec<usize>> = ix.iter().map(|&j| vec![j]).collect();
            x = dev::resample(&x, 2 + i, &taps, &vec![vec![1.0f32]; ix.len()])?;
        }
        return Ok(input.same(x));
    }
    let mut od = dims[..2].to_vec();
    od.extend(&osp);
    let planes = dims[0] * dims[1];
    let (w_in, w_out, rows_out) = (sp[s - 1], osp[s - 1], osp[..s - 1].iter().product::<usize>());
    let (plane_in, plane_out) = (sp.iter().product::<usize>(), rows_out * w_out);
    // The source row (within a plane, in rows of w_in) of each output row.
    let src_rows: Vec<usize> = (0..rows_out)
        .map(|r| {
            let (mut rest, mut row, mut stride) = (r, 0, 1);
            for i in (0..s - 1).rev() {
                row += index[i][rest % osp[i]] * stride;
                rest /= osp[i];
                stride *= sp[i];
            }
            row
        })
        .collect();
    let x = if input.t.is_contiguous() { input.t.clone() } else { crate::tensor::copy_contiguous(&input.t)? };
    let out = crate::tensor::with_dtype!(x.dtype(), T => {
        let (storage, layout) = x.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
        let data = &cpu.as_slice::<T>().py()?[layout.start_offset()..layout.start_offset() + planes * plane_in];
        let mut out = crate::tensor::kernels::uninit_vec::<T>(planes * plane_out);
        let last = &index[s - 1];
        // Every element of a plane is written: a gathered row, or a copy of the row before it.
        let work = |dst: &mut [T], p: usize| {
            let src = &data[p * plane_in..(p + 1) * plane_in];
            for r in 0..rows_out {
                let (done, rest) = dst.split_at_mut(r * w_out);
                let row = &mut rest[..w_out];
                if r > 0 && src_rows[r] == src_rows[r - 1] {
                    row.copy_from_slice(&done[(r - 1) * w_out..]);
                } else {
                    let from = &src[src_rows[r] * w_in..(src_rows[r] + 1) * w_in];
                    row.iter_mut().zip(last).for_each(|(d, &i)| *d = from[i]);
                }
            }
        };
        if plane_out > 0 && planes * plane_out >= crate::tensor::kernels::PAR_THRESHOLD && planes > 1 {
            let per = planes.div_ceil(4 * crate::pool::threads()).max(1);
            Python::attach(|py| {
                py.detach(|| {
                    crate::pool::chunks_mut(&mut out, per * plane_out, |c, dst| {
                        dst.chunks_mut(plane_out).enumerate().for_each(|(k, d)| work(d, c * per + k))
                    })
                })
            });
        } else if plane_out > 0 {
            out.chunks_mut(plane_out).enumerate().for_each(|(p, d)| work(d, p));
        }
        drop(storage);
        Tensor::from_vec(out, od.as_slice(), &Device::Cpu).py()
    })?;
    Ok(input.same(out))
}

/// Pooling and resampling on other devices: the windows gathered by `window::gather` (one
/// `index_select` per axis), then reduced; index and divisor tables are built on the host.
mod dev {
    use candle_core::{DType, Tensor};
    use pyo3::prelude::*;

    use super::super::window::{self, Axis};
    use super::Window;
    use crate::error::IntoPyResult;

    #[allow(clippy::too_many_arguments)]
    pub fn pool(
        x: &Tensor, max: bool, windows: &[Vec<Window>], dilation: &[usize], count_pad: bool, divisor: Option<i64>,
        want_indices: bool, out_dims: &[usize],
    ) -> PyResult<(Tensor, Option<Tensor>)> {
        let k = windows.len();
        let lead = x.rank() - k;
        let spatial = &x.dims()[lead..];
        if out_dims.contains(&0) || x.elem_count() == 0 {
            let out = window::zeros(out_dims, x.dtype(), x.device())?;
            let idx = want_indices.then(|| window::zeros(out_dims, DType::I64, x.device())).transpose()?;
            return Ok((out, idx));
        }
        if let Some(y) = candle_pool2d(x, max, windows, dilation, divisor, want_indices, out_dims)? {
            return Ok((y, None));
        }
        // One padding slot at the end of every axis: taps outside the input (or past a shorter
        // window's end) read it.
        let pad = if !max {
            0.0
        } else if x.dtype().is_float() {
            f64::NEG_INFINITY
        } else if x.dtype() == DType::U8 {
            0.0
        } else {
            i64::MIN as f64
        };
        let mut xp = x.clone();
        let mut axes = vec![];
        // Per axis: for each output, its taps' input positions (None: padding).
        let mut taps_of: Vec<Vec<Vec<Option<usize>>>> = vec![];
        for (i, w) in windows.iter().enumerate() {
            xp = window::pad_axis(&xp, lead + i, 0, 1, pad)?;
            let len = spatial[i];
            let taps = w.iter().map(|&(_, n, _)| n).max().unwrap_or(1).max(1);
            let per: Vec<Vec<Option<usize>>> = w
                .iter()
                .map(|&(start, n, _)| {
                    (0..taps)
                        .map(|a| {
                            let p = start + (a * dilation[i]) as i64;
                            (a < n && p >= 0 && (p as usize) < len).then_some(p as usize)
                        })
                        .collect()
                })
                .collect();
            let index = per.iter().flatten().map(|p| p.unwrap_or(len) as u32).collect();
            axes.push(Axis { index, outs: w.len(), taps });
            taps_of.push(per);
        }
        let g = window::gather(&xp, &axes)?; // (.., *O, *K)
        let o_total: usize = axes.iter().map(|a| a.outs).product();
        let k_total: usize = axes.iter().map(|a| a.taps).product();
        let planes: usize = x.dims()[..lead].iter().product();
        let flat = g.reshape((planes, o_total, k_total)).py()?;
        if !max {
            let sum = flat.to_dtype(work(x.dtype())).py()?.sum_keepdim(2).py()?.squeeze(2).py()?;
            // The divisor of each output: the override, the window as padded, or its taps inside.
            let div: Vec<f32> = combos(windows)
                .map(|ws| match divisor {
                    Some(d) => d as f32,
                    None if count_pad => ws.iter().map(|&(_, _, inside)| inside).product::<usize>() as f32,
                    None => ws.iter().zip(0..).map(|(&(s, n, _), i)| inside_count(s, n, dilation[i], spatial[i])).product::<usize>() as f32,
                })
                .collect();
            let div = Tensor::from_vec(div, o_total, x.device()).py()?.to_dtype(sum.dtype()).py()?;
            let avg = sum.broadcast_div(&div).py()?.to_dtype(x.dtype()).py()?;
            return Ok((avg.reshape(out_dims).py()?, None));
        }
        let mut best = flat.max_keepdim(2).py()?;
        let isnan = flat.dtype().is_float().then(|| flat.ne(&flat)).transpose().py()?;
        if let Some(isnan) = &isnan {
            let has = isnan.max_keepdim(2).py()?;
            let nan = (best.zeros_like().py()? / best.zeros_like().py()?).py()?;
            best = has.where_cond(&nan, &best).py()?;
        }
        let best_out = best.squeeze(2).py()?.reshape(out_dims).py()?;
        if !want_indices {
            return Ok((best_out, None));
        }
        let mut arg = flat.argmax_keepdim(2).py()?;
        if let Some(isnan) = &isnan {
            let has = isnan.max_keepdim(2).py()?;
            arg = has.where_cond(&isnan.argmax_keepdim(2).py()?, &arg).py()?;
        }
        // Tap → flat input position (row-major over the spatial dims), per output.
        let strides: Vec<usize> = (0..k).map(|i| spatial[i + 1..].iter().product()).collect();
        let mut table = Vec::with_capacity(o_total * k_total);
        for outs in odometer(&axes.iter().map(|a| a.outs).collect::<Vec<_>>()) {
            for taps in odometer(&axes.iter().map(|a| a.taps).collect::<Vec<_>>()) {
                let pos = (0..k).map(|i| taps_of[i][outs[i]][taps[i]].map(|p| p * strides[i])).sum::<Option<usize>>();
                table.push(pos.unwrap_or(0) as i64);
            }
        }
        let table = Tensor::from_vec(table, o_total * k_total, x.device()).py()?;
        let base = Tensor::arange(0u32, (o_total * k_total) as u32, x.device()).py()?.reshape((1, o_total, k_total)).py()?;
        let base = base.narrow(2, 0, 1).py()?.broadcast_as((planes, o_total, 1)).py()?;
        let at = (base.to_dtype(DType::I64).py()? + arg.to_dtype(DType::I64).py()?).py()?;
        let idx = table.index_select(&at.flatten_all().py()?, 0).py()?;
        Ok((best_out, Some(idx.reshape(out_dims).py()?)))
    }

    /// Candle's own pooling kernel for the plain case: 2 spatial dims, windows of one size at a
    /// regular stride inside the input (no padding, dilation, divisor or indices). Its max skips NaN,
    /// so windows holding one get NaN back from a second pass over the NaN mask, as torch's.
    fn candle_pool2d(
        x: &Tensor, max: bool, windows: &[Vec<Window>], dilation: &[usize], divisor: Option<i64>, want_indices: bool,
        out_dims: &[usize],
    ) -> PyResult<Option<Tensor>> {
        if windows.len() != 2 || want_indices || divisor.is_some() || dilation.iter().any(|&d| d != 1) || !x.dtype().is_float() {
            return Ok(None);
        }
        let lead = x.rank() - 2;
        let mut ks = [0usize; 2];
        let mut ss = [1usize; 2];
        for (i, w) in windows.iter().enumerate() {
            let (k, len) = (w[0].1, x.dims()[lead + i]);
            let stride = if w.len() > 1 { (w[1].0 - w[0].0).max(1) as usize } else { 1 };
            let regular = w.iter().enumerate().all(|(o, &(start, n, inside))| {
                start == (o * stride) as i64 && n == k && inside == k && start as usize + k <= len
            });
            if !regular || k == 0 || w.len() != (len - k) / stride + 1 {
                return Ok(None);
            }
            ks[i] = k;
            ss[i] = stride;
        }
        let planes: usize = x.dims()[..lead].iter().product();
        let x4 = x.reshape((planes, 1, x.dims()[lead], x.dims()[lead + 1])).py()?;
        let (k, s) = ((ks[0], ks[1]), (ss[0], ss[1]));
        let y = if max { x4.max_pool2d_with_stride(k, s) } else { x4.avg_pool2d_with_stride(k, s) }.py()?;
        let y = if max {
            let nan = x4.ne(&x4).py()?.to_dtype(x.dtype()).py()?.max_pool2d_with_stride(k, s).py()?;
            let zero = nan.zeros_like().py()?;
            nan.gt(&zero).py()?.where_cond(&(&zero / &zero).py()?, &y).py()?
        } else {
            y
        };
        Ok(Some(y.reshape(out_dims).py()?))
    }

    /// The dtype an average is summed in.
    fn work(dt: DType) -> DType {
        if dt == DType::F64 { DType::F64 } else { DType::F32 }
    }

    /// Taps of a window that land inside an axis of `len`.
    fn inside_count(start: i64, n: usize, dil: usize, len: usize) -> usize {
        (0..n).filter(|&a| {
            let p = start + (a * dil) as i64;
            p >= 0 && (p as usize) < len
        })
        .count()
    }

    /// Every combination of one window per axis, row-major.
    fn combos(windows: &[Vec<Window>]) -> impl Iterator<Item = Vec<Window>> + '_ {
        odometer(&windows.iter().map(|w| w.len()).collect::<Vec<_>>())
            .map(move |ix| ix.iter().zip(windows).map(|(&i, w)| w[i]).collect())
    }

    /// All index tuples below `dims`, row-major.
    fn odometer(dims: &[usize]) -> impl Iterator<Item = Vec<usize>> {
        let total: usize = dims.iter().product();
        let dims = dims.to_vec();
        (0..total).map(move |mut f| {
            let mut ix = vec![0; dims.len()];
            for i in (0..dims.len()).rev() {
                ix[i] = f % dims[i];
                f /= dims[i];
            }
            ix
        })
    }

    /// `resample_axis` on a device: Σ_t weight·x[index] as one gather and a weighted sum per tap.
    pub fn resample(x: &Tensor, dim: usize, index: &[Vec<usize>], weights: &[Vec<f32>]) -> PyResult<Tensor> {
        let o = index.len();
        let taps = index.iter().map(|i| i.len()).max().unwrap_or(0);
        let mut out_dims = x.dims().to_vec();
        out_dims[dim] = o;
        if out_dims.contains(&0) || taps == 0 {
            return window::zeros(&out_dims, x.dtype(), x.device());
        }
        let wt = work(x.dtype());
        let xw = x.to_dtype(wt).py()?;
        let mut acc: Option<Tensor> = None;
        for t in 0..taps {
            // A shorter tap list reads its first position with weight 0.
            let idx: Vec<u32> = index.iter().map(|i| *i.get(t).unwrap_or(&i[0]) as u32).collect();
            let w: Vec<f32> = weights.iter().map(|w| *w.get(t).unwrap_or(&0.0)).collect();
            let mut wd = vec![1; x.rank()];
            wd[dim] = o;
            let w = Tensor::from_vec(w, wd, x.device()).py()?.to_dtype(wt).py()?;
            let term = xw.index_select(&window::positions(idx, x.device())?, dim).py()?.broadcast_mul(&w).py()?;
            acc = Some(match acc {
                None => term,
                Some(a) => (a + term).py()?,
            });
        }
        acc.map_or_else(|| window::zeros(&out_dims, x.dtype(), x.device()), |a| a.to_dtype(x.dtype()).py())
    }
}
