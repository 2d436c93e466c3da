//! Convolution and transposed convolution over 1-3 spatial dims, any stride/padding/dilation per
//! dim and groups: im2col tiles around a product per (batch, group), or our direct, Winograd and
//! depthwise kernels where they fit; a transposed conv runs as forward ones (transposed.rs).
//! Candle's own conv takes a single stride/padding for all dims and no groups in its transposed
//! form, so we do not use it on the CPU.
//! Padding here is symmetric zeros; other modes and asymmetric padding are applied by `F.pad` first.

use candle_core::{Device, Tensor, WithDType};
use pyo3::prelude::*;

use crate::dtype::DType;
use crate::error::{runtime_err, shape_err, IntoPyResult};
use crate::tensor::kernels::uninit_vec;
use crate::tensor::linalg::{gemm_serial, Elem};
use crate::tensor::{with_slice, PyTensor};

use super::Ptr;

/// Geometry of one convolution, spatial dims padded to 3 (leading ones).
pub(super) struct Geo {
    pub(super) len: [usize; 3],
    pub(super) k: [usize; 3],
    pub(super) out: [usize; 3],
    pub(super) stride: [usize; 3],
    pub(super) pad: [usize; 3],
    pub(super) dil: [usize; 3],
}

impl Geo {
    pub(super) fn kernel(&self) -> usize {
        self.k.iter().product()
    }
    pub(super) fn out_len(&self) -> usize {
        self.out.iter().product()
    }
    pub(super) fn in_len(&self) -> usize {
        self.len.iter().product()
    }
    /// For kernel column tap `c`: the output columns lo..hi whose input column lies inside the row,
    /// and the shift (input column = output column · stride + shift).
    pub(super) fn column_run(&self, c: usize) -> (usize, usize, i64) {
        let shift = (c * self.dil[2]) as i64 - self.pad[2] as i64;
        let s2 = self.stride[2] as i64;
        let lo = if shift >= 0 { 0 } else { ((-shift) + s2 - 1) / s2 } as usize;
        let hi = ((self.len[2] as i64 - 1 - shift).div_euclid(s2) + 1).clamp(0, self.out[2] as i64) as usize;
        (lo.min(hi), hi, shift)
    }
    /// The input row that kernel taps (a, b) read for output row r (= od·out[1] + oh), as a slice of
    /// the plane; None over padding.
    pub(super) fn source_row<'p, T>(&self, plane: &'p [T], a: usize, b: usize, r: usize) -> Option<&'p [T]> {
        let (od, oh) = (r / self.out[1], r % self.out[1]);
        let d = (od * self.stride[0] + a * self.dil[0]) as i64 - self.pad[0] as i64;
        let h = (oh * self.stride[1] + b * self.dil[1]) as i64 - self.pad[1] as i64;
        if d < 0 || h < 0 || d as usize >= self.len[0] || h as usize >= self.len[1] {
            return None;
        }
        Some(&plane[(d as usize * self.len[1] + h as usize) * self.len[2]..][..self.len[2]])
    }
}

/// A run of a tile's output positions along one output row: the row's first input coordinates
/// (kernel tap 0, padding taken off), its columns c0..c1 and where they start in the tile.
#[derive(Clone, Copy)]
pub(super) struct Segment {
    d: i64,
    h: i64,
    c0: usize,
    c1: usize,
    at: usize,
}

impl Geo {
    /// The output positions `pos` (flat over the output grid) as runs along the rows, found once
    /// per tile: per tap and row, im2col then only adds (the divisions per run cost more than a
    /// 14-value run's copy: a quarter of a 3x3 stride-2 conv over a 14x14 output).
    pub(super) fn segments(&self, pos: std::ops::Range<usize>) -> Vec<Segment> {
        let o2 = self.out[2].max(1);
        let mut segs = Vec::with_capacity(pos.len().div_ceil(o2) + 1);
        let mut p = pos.start;
        while p < pos.end {
            let (r, c0) = (p / o2, p % o2);
            let c1 = o2.min(c0 + pos.end - p);
            let (od, oh) = (r / self.out[1].max(1), r % self.out[1].max(1));
            let d = (od * self.stride[0]) as i64 - self.pad[0] as i64;
            let h = (oh * self.stride[1]) as i64 - self.pad[1] as i64;
            segs.push(Segment { d, h, c0, c1, at: p - pos.start });
            p += c1 - c0;
        }
        segs
    }

    /// im2col of a tile's output positions (`segs`, `width` of them) for one input plane: `dst`
    /// (k × width) gets, for every kernel tap, the input value each of those outputs reads (zero
    /// over padding).
    #[inline(always)]
    fn im2col<T: Copy + Default>(&self, plane: &[T], segs: &[Segment], width: usize, dst: &mut [T]) {
        let mut t = 0;
        for a in 0..self.k[0] {
            for b in 0..self.k[1] {
                for c in 0..self.k[2] {
                    let tap = &mut dst[t * width..(t + 1) * width];
                    let (lo, hi, shift) = self.column_run(c);
                    for sg in segs {
                        let seg = &mut tap[sg.at..sg.at + (sg.c1 - sg.c0)];
                        let (vlo, vhi) = (lo.clamp(sg.c0, sg.c1), hi.clamp(sg.c0, sg.c1));
                        let d = sg.d + (a * self.dil[0]) as i64;
                        let h = sg.h + (b * self.dil[1]) as i64;
                        let inside = d >= 0 && h >= 0 && (d as usize) < self.len[0] && (h as usize) < self.len[1];
                        if inside && vlo < vhi {
                            let src = &plane[(d as usize * self.len[1] + h as usize) * self.len[2]..][..self.len[2]];
                            seg[..vlo - sg.c0].fill(T::default());
                            seg[vhi - sg.c0..].fill(T::default());
                            let from = (vlo as i64 * self.stride[2] as i64 + shift) as usize;
                            gather(&mut seg[vlo - sg.c0..vhi - sg.c0], &src[from..], self.stride[2]);
                        } else {
                            seg.fill(T::default());
                        }
                    }
                    t += 1;
                }
            }
        }
    }
}

/// dst[i] = src[i·stride]: a copy for stride 1, pairs for stride 2 (vectorises as a deinterleave).
#[inline(always)]
pub(super) fn gather<T: Copy>(dst: &mut [T], src: &[T], stride: usize) {
    match stride {
        1 => dst.copy_from_slice(&src[..dst.len()]),
        2 => {
            let n = dst.len();
            let (pairs, rest) = src[..2 * n - 1].split_at(2 * (n - 1));
            for (d, p) in dst.iter_mut().zip(pairs.chunks_exact(2)) {
                *d = p[0];
            }
            dst[n - 1] = rest[0];
        }
        s => dst.iter_mut().zip(src.iter().step_by(s)).for_each(|(d, &v)| *d = v),
    }
}

fn pad3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[3 - v.len()..].copy_from_slice(v);
    out
}

/// conv{1,2,3}d: input (N, C_in, *L), weight (C_out, C_in/groups, *k) → (N, C_out, *out).
#[pyfunction]
#[pyo3(signature = (input, weight, bias, stride, padding, dilation, groups))]
pub fn conv(input: &PyTensor, weight: &PyTensor, bias: Option<&PyTensor>, stride: Vec<i64>, padding: Vec<i64>, dilation: Vec<i64>, groups: i64) -> PyResult<PyTensor> {
    run(input, weight, bias, stride, padding, dilation, groups, None)
}

/// conv_transpose{1,2,3}d: input (N, C_in, *L), weight (C_in, C_out/groups, *k) → (N, C_out, *out).
#[pyfunction]
#[pyo3(signature = (input, weight, bias, stride, padding, output_padding, dilation, groups))]
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose(
    input: &PyTensor,
    weight: &PyTensor,
    bias: Option<&PyTensor>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    output_padding: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
) -> PyResult<PyTensor> {
    let output_padding = output_padding.iter().map(|&x| x.max(0) as usize).collect();
    run(input, weight, bias, stride, padding, dilation, groups, Some(output_padding))
}

#[allow(clippy::too_many_arguments)]
fn run(
    input: &PyTensor,
    weight: &PyTensor,
    bias: Option<&PyTensor>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
    output_padding: Option<Vec<usize>>,
) -> PyResult<PyTensor> {
    // torch's argument checks, in its order.
    if stride.iter().any(|&x| x <= 0) {
        return Err(runtime_err("non-positive stride is not supported"));
    }
    if dilation.iter().any(|&x| x <= 0) {
        return Err(runtime_err(format!("dilation should be greater than zero, but got {dilation:?}")));
    }
    if padding.iter().any(|&x| x < 0) {
        return Err(runtime_err("negative padding is not supported"));
    }
    if groups <= 0 {
        return Err(runtime_err("non-positive groups is not supported"));
    }
    let usizes = |v: &[i64]| v.iter().map(|&x| x as usize).collect::<Vec<usize>>();
    let (stride, padding, dilation, groups) = (usizes(&stride), usizes(&padding), usizes(&dilation), groups as usize);
    let ns = input.rank().saturating_sub(2);
    if !(1..=3).contains(&ns) || weight.rank() != ns + 2 || [stride.len(), padding.len(), dilation.len()] != [ns; 3] {
        return Err(runtime_err(format!(
            "conv: expected input (N, C, *spatial) with 1-3 spatial dims and a weight of the same rank, got {:?} and {:?}",
            input.dims(),
            weight.dims()
        )));
    }
    if !input.dtype.is_float() || input.dtype != weight.dtype {
        return Err(crate::error::dtype_err(format!(
            "Input type ({}) and weight type ({}) should be the same floating point type",
            input.dtype.title(),
            weight.dtype.title()
        )));
    }
    let (n, c_in) = (input.dims()[0], input.dims()[1]);
    let wd = weight.dims();
    let transposed = output_padding.is_some();
    if wd[0] < groups {
        return Err(runtime_err(format!(
            "Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got weight of size {wd:?} instead"
        )));
    }
    let (c_out, cin_g) = if transposed { (wd[1] * groups, wd[0] / groups) } else { (wd[0], wd[1]) };
    let groups_ok = groups > 0 && c_in % groups == 0 && c_out % groups == 0;
    let cin_ok = if transposed { wd[0] == c_in } else { cin_g * groups == c_in };
    if !groups_ok || !cin_ok {
        return Err(shape_err(format!(
            "Given groups={groups}, weight of size {:?}, expected input{:?} to have {} channels, but got {c_in} channels instead",
            wd,
            input.dims(),
            if transposed { wd[0] } else { wd[1] * groups }
        )));
    }
    let len = pad3(&input.dims()[2..], 1);
    let k = pad3(&wd[2..], 1);
    let (s, p, d) = (pad3(&stride, 1), pad3(&padding, 0), pad3(&dilation, 1));
    let op = pad3(output_padding.as_deref().unwrap_or(&[]), 0);
    if wd[2..].contains(&0) {
        return Err(runtime_err(format!("kernel size should be greater than zero, but got kernel size {:?}", &wd[2..])));
    }
    // Sizes in i128: a stride, padding or dilation as large as an int64 must not wrap around.
    let mut out = [1usize; 3];
    let mut out_i = [1i128; 3];
    for i in 0..3 {
        let span = d[i] as i128 * (k[i] as i128 - 1) + 1;
        let padded = len[i] as i128 + 2 * p[i] as i128;
        if span.max(padded).max(s[i] as i128 * len[i] as i128) > 1 << 40 {
            return Err(runtime_err(format!("conv: stride, padding or dilation too large for input size {:?}", input.dims())));
        }
        out_i[i] = if transposed {
            (len[i] as i128 - 1) * s[i] as i128 - 2 * p[i] as i128 + span + op[i] as i128
        } else {
            if padded < span {
                return Err(runtime_err(format!(
                    "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                    padded, span
                )));
            }
            (padded - span) / s[i] as i128 + 1
        };
        out[i] = out_i[i].max(0) as usize;
    }
    if transposed && out_i.iter().any(|&o| o <= 0) {
        let show = |v: &[i128]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" x ");
        let ins: Vec<i128> = input.dims()[2..].iter().map(|&x| x as i128).collect();
        return Err(runtime_err(format!(
            "Given input size per channel: ({}). Calculated output size per channel: ({}). Output size is too small",
            show(&ins),
            show(&out_i[3 - ns..])
        )));
    }
    if !transposed && c_in == 0 {
        // torch answers a convolution over zero input channels with an empty (N, 0, *out) tensor,
        // whatever the weight's output channels and the bias.
        let mut od = vec![n, 0];
        od.extend(&out[3 - ns..]);
        return Ok(PyTensor::new(Tensor::zeros(od, input.dtype.candle(), input.t.device()).py()?, input.dtype));
    }
    if !crate::device::cpu_kernels(&input.t) || !crate::device::cpu_kernels(&weight.t) {
        let mut od = vec![n, c_out];
        od.extend(&out[3 - ns..]);
        crate::memory::ensure(&od, input.t.dtype(), input.t.device())?;
        let mut ts = vec![&input.t, &weight.t];
        ts.extend(bias.map(|b| &b.t));
        crate::device::common(&ts)?;
        if let Some(b) = bias {
            if b.numel() != c_out {
                return Err(shape_err(format!("bias should have {c_out} elements")));
            }
        }
        let mut out_dims = vec![n, c_out];
        out_dims.extend(&out[3 - ns..]);
        let spec = dev::Spec { stride, padding, dilation, groups, output_padding };
        let y = dev::conv(&input.t, &weight.t, &spec, &out_dims)?;
        let y = match bias {
            Some(b) => {
                let mut bd = vec![1; out_dims.len()];
                bd[1] = c_out;
                y.broadcast_add(&b.t.to_dtype(y.dtype()).py()?.reshape(bd).py()?).py()?
            }
            None => y,
        };
        return Ok(PyTensor::new(y, input.dtype));
    }
    let geo = Geo { len, k, out, stride: s, pad: p, dil: d };
    let shape = (n, c_in, c_out, groups);
    // A transposed conv runs as forward convs over its phases (transposed.rs).
    let plan = transposed.then(|| super::transposed::Plan::new(shape, len, k, out, s, p, d));
    let compute = if input.dtype == DType::F64 { candle_core::DType::F64 } else { candle_core::DType::F32 };
    let mut out_dims = vec![n, c_out];
    out_dims.extend(&out[3 - ns..]);
    crate::memory::ensure(&out_dims, compute, &Device::Cpu)?;
    if let Some(plan) = &plan {
        crate::memory::ensure(&[plan.scratch_elems()], compute, &Device::Cpu)?;
    }
    fn typed<T: Elem + WithDType>(
        input: &PyTensor, weight: &PyTensor, bias: Option<&PyTensor>, geo: &Geo, (n, c_in, c_out, groups): (usize, usize, usize, usize),
        plan: Option<&super::transposed::Plan>, out_dims: &[usize],
    ) -> PyResult<Tensor> {
        let b = match bias { Some(b) => Some(crate::tensor::cpu_vec::<T>(&b.t)?), None => None };
        if b.as_ref().is_some_and(|b| b.len() != c_out) {
            return Err(shape_err(format!("bias should have {c_out} elements")));
        }
        // Input and weight are read in place when they already are contiguous CPU tensors of T.
        let y = with_slice::<T, _>(&input.t, |x| {
            with_slice::<T, _>(&weight.t, |w| {
                Python::attach(|py| py.detach(|| {
                    match plan {
                        Some(plan) => plan.run::<T>(x, w, b.as_deref()),
                        None => conv_impl::<T>(x, w, b.as_deref(), geo, n, c_in, c_out, groups),
                    }
                }))
            })
        })??;
        Tensor::from_vec(y, out_dims, &Device::Cpu).py()
    }
    let result = if compute == candle_core::DType::F64 {
        typed::<f64>(input, weight, bias, &geo, shape, plan.as_ref(), &out_dims)?
    } else {
        typed::<f32>(input, weight, bias, &geo, shape, plan.as_ref(), &out_dims)?
    };
    let result = result.to_dtype(input.dtype.candle()).py()?.to_device(input.t.device()).py()?;
    Ok(PyTensor::new(result, input.dtype))
}

/// Column-buffer elements one im2col tile may take (~1 MB of f32, an L2's worth): bigger tiles mean
/// fewer gemm calls, and each call packs the whole weight again (2.4 MB for a 3x3 conv over 256
/// channels).
const TILE_ELEMS: usize = 1 << 18;

#[allow(clippy::too_many_arguments)]
pub(super) fn conv_impl<T: Elem + WithDType>(x: &[T], w: &[T], b: Option<&[T]>, g: &Geo, n: usize, c_in: usize, c_out: usize, groups: usize) -> Vec<T> {
    let (kk, ol, il) = (g.kernel(), g.out_len(), g.in_len());
    let (cin_g, cout_g) = (c_in / groups, c_out / groups);
    if n * c_out * ol == 0 || cin_g == 0 {
        // Nothing to compute, or nothing to sum: the bias alone (zeros without one).
        return (0..n * c_out * ol).map(|i| b.map_or(T::default(), |b| b[i / ol % c_out])).collect();
    }
    // A 1x1 kernel with stride 1 and no padding reads the input as it is: no im2col.
    let direct = kk == 1 && g.stride == [1; 3] && g.pad == [0; 3];
    if cin_g == 1 && cout_g == 1 && !direct {
        let mut y = uninit_vec::<T>(n * c_out * ol);
        super::depthwise::depthwise(x, w, b, &mut y, g, n * c_in, c_in);
        return y;
    }
    if let (Some(xf), Some(wf)) = (as_f32(x), as_f32(w)) {
        let square3 = g.k == [1, 3, 3] && g.len[0] == 1 && g.stride == [1; 3] && g.dil == [1; 3];
        let winograd = square3 && groups == 1 && super::winograd::worth_it(c_in, c_out, g.out[1], g.out[2]);
        // Other f32 convs with a kernel (a 1x1 stays a plain product) on the direct kernel.
        #[cfg(target_arch = "x86_64")]
        if let (false, Some(rule)) = (winograd, super::winograd_rows::rule(g, c_in, c_out, groups)) {
            let y = super::winograd_rows::conv(xf, wf, b.and_then(as_f32), g, n, c_in, c_out, rule);
            // SAFETY: T is f32 here (as_f32 succeeded), so the Vec's layout is the same.
            return unsafe { std::mem::transmute::<Vec<f32>, Vec<T>>(y) };
        }
        #[cfg(target_arch = "x86_64")]
        if kk > 1 && !winograd && super::direct::suits(g) {
            let y = super::direct::conv(xf, wf, b.and_then(as_f32), g, n, c_in, c_out, groups);
            // SAFETY: T is f32 here (as_f32 succeeded), so the Vec's layout is the same.
            return unsafe { std::mem::transmute::<Vec<f32>, Vec<T>>(y) };
        }
        if winograd {
            let plan = super::winograd::Plan {
                n, cin: c_in, cout: c_out, h: g.len[1], w: g.len[2], pad: [g.pad[1], g.pad[2]], oh: g.out[1], ow: g.out[2],
            };
            let y = super::winograd::conv3x3(xf, wf, b.and_then(as_f32), &plan);
            // SAFETY: T is f32 here (as_f32 succeeded), so the Vec's layout is the same.
            return unsafe { std::mem::transmute::<Vec<f32>, Vec<T>>(y) };
        }
    }
    let mut y = uninit_vec::<T>(n * c_out * ol);
    let kdim = cin_g * kk;
    // Tiles of output positions with about TILE_ELEMS of im2col columns each: whole output rows
    // where a row is small enough, else parts of one row (long 1-D signals).
    let (ol_rows, o2) = (g.out[0] * g.out[1], g.out[2].max(1));
    // A 1x1 conv has no im2col buffer to bound; its tiles only split the columns over the threads
    // when there are fewer (batch, group) products than threads.
    let parts = if n * groups < crate::pool::threads() { crate::pool::threads() } else { 1 };
    let span = if direct {
        ol.div_ceil(parts).next_multiple_of(16).min(ol).max(1)
    } else if kdim * o2 <= TILE_ELEMS {
        // Whole rows per tile, but at least one tile per thread when (batch, group) products are fewer.
        let rows = (TILE_ELEMS / (kdim * o2)).clamp(1, ol_rows.max(1));
        rows.min(ol_rows.div_ceil(parts).max(1)) * o2
    } else {
        // Parts of a row: as many as the budget needs, rounded up to a multiple of the threads so
        // that a lone long row (a 1-D signal) splits evenly.
        let pieces = o2.div_ceil((TILE_ELEMS / kdim).max(16)).next_multiple_of(parts);
        o2.div_ceil(pieces).next_multiple_of(16).min(o2)
    };
    let per_row = o2.div_ceil(span).max(1);
    // Tiles are runs of whole rows, or parts of one row; a 1x1 conv's may cut rows anywhere.
    let flat = direct || span >= o2;
    let tiles = if flat { ol.div_ceil(span).max(1) } else { ol_rows * per_row };
    // Tile ti covers output positions tile_pos(ti), a contiguous range.
    let tile_pos = |ti: usize| -> std::ops::Range<usize> {
        if flat {
            ti * span..((ti + 1) * span).min(ol)
        } else {
            let (r, j) = (ti / per_row, ti % per_row);
            r * o2 + j * span..r * o2 + ((j + 1) * span).min(o2)
        }
    };
    let yp = Ptr(y.as_mut_ptr());
    // One tile of (batch, group): im2col of its positions into a small buffer, bias, one gemm.
    let tile = |task: usize| {
        let (bi, gi, ti) = (task / (groups * tiles), task / tiles % groups, task % tiles);
        let pos = tile_pos(ti);
        let (c0, width) = (pos.start, pos.len());
        let xg = &x[(bi * c_in + gi * cin_g) * il..(bi * c_in + (gi + 1) * cin_g) * il];
        let wg = &w[gi * cout_g * kdim..(gi + 1) * cout_g * kdim];
        let mut cols: Vec<T>;
        let (rhs, ldb): (&[T], usize) = if direct {
            (&xg[c0..], il)
        } else {
            // 16 elements of slack: the f32 tiles' last vector may read past the last row.
            cols = uninit_vec::<T>(kdim * width + 16);
            cols[kdim * width..].fill(T::default());
            let segs = g.segments(pos.clone());
            for (c, dst) in cols[..kdim * width].chunks_exact_mut(kk * width).enumerate() {
                g.im2col(&xg[c * il..(c + 1) * il], &segs, width, dst);
            }
            (&cols, width)
        };
        // SAFETY: this task alone writes columns c0..c0+width of output channels gi·cout_g.. of batch bi.
        let dst = unsafe { yp.get().add((bi * c_out + gi * cout_g) * ol + c0) };
        #[cfg(target_arch = "x86_64")]
        if let (false, true, Some(wf)) = (direct, super::direct::available(), as_f32(wg)) {
            // The f32 product on our register tiles, the weight read in place (gemm packs it again
            // on every call).
            // SAFETY: as below; T is f32 (as_f32 succeeded); cols has 16 elements of slack.
            unsafe {
                super::direct::product(super::direct::InPlace { w: wf.as_ptr(), m: cout_g, ld: kdim }, cout_g, kdim, rhs.as_ptr() as *const f32, width, dst as *mut f32, ol, b.and_then(as_f32).map(|b| &b[gi * cout_g..(gi + 1) * cout_g]))
            };
            return;
        }
        if let Some(b) = b {
            for co in 0..cout_g {
                // SAFETY: as above, row co of the tile.
                unsafe { std::slice::from_raw_parts_mut(dst.add(co * ol), width) }.fill(b[gi * cout_g + co]);
            }
        }
        // SAFETY: wg is cout_g × kdim, rhs kdim × width at row stride ldb, dst cout_g × width at ol.
        unsafe { gemm_serial(cout_g, kdim, width, wg.as_ptr(), kdim, rhs.as_ptr(), ldb, dst, ol, b.is_some()) };
    };
    crate::pool::for_each(n * groups * tiles, &tile);
    y
}

pub(super) use crate::tensor::kernels::as_f32;

/// Convolution on other devices: Candle's conv1d/conv2d/conv_transpose kernels where their single
/// stride/padding/dilation fits, else im2col through `window::gather` and one batched matmul.
mod dev {
    use candle_core::Tensor;
    use pyo3::prelude::*;

    use super::super::window::{self, Axis};
    use crate::error::IntoPyResult;

    pub struct Spec {
        pub stride: Vec<usize>,
        pub padding: Vec<usize>,
        pub dilation: Vec<usize>,
        pub groups: usize,
        pub output_padding: Option<Vec<usize>>,
    }

    fn to_candle(e: PyErr) -> candle_core::Error {
        candle_core::Error::Msg(e.to_string())
    }

    fn same(v: &[usize]) -> Option<usize> {
        v.iter().all(|&x| x == v[0]).then(|| v[0])
    }

    pub fn conv(x: &Tensor, w: &Tensor, spec: &Spec, out_dims: &[usize]) -> PyResult<Tensor> {
        if out_dims.contains(&0) || x.elem_count() == 0 || w.elem_count() == 0 {
            return window::zeros(out_dims, x.dtype(), x.device());
        }
        let ns = x.rank() - 2;
        // The im2col gathers (index_select) read contiguous tensors only.
        let x = &x.contiguous().py()?;
        let (s, p, d, g) = (same(&spec.stride), same(&spec.padding), same(&spec.dilation), spec.groups);
        let y = crate::device::matmul_precision(&[x, w], |v| {
            let (x, w) = (&v[0], &v[1]);
            match (&spec.output_padding, ns, s, p, d) {
                (None, 1, _, _, _) => x.conv1d(w, spec.padding[0], spec.stride[0], spec.dilation[0], g),
                // Candle's direct kernel, fed a weight view that is not contiguous: its col2im
                // path (taken for a contiguous one) gave wrong results for batch > 1.
                (Some(op), 1, _, _, _) => {
                    let (ci, co, k) = w.dims3()?;
                    let wide = Tensor::cat(&[w, &Tensor::zeros((ci, co, 1), w.dtype(), w.device())?], 2)?;
                    x.conv_transpose1d(&wide.narrow(2, 0, k)?, spec.padding[0], op[0], spec.stride[0], spec.dilation[0], g)
                }
                (None, 2, Some(s), Some(p), Some(d)) => x.conv2d(w, p, s, d, g),
                (Some(op), 2, Some(s), Some(p), Some(d)) if g == 1 && same(op).is_some() => x.conv_transpose2d(w, p, op[0], s, d),
                (None, ..) => im2col(x, w, &spec.stride, &spec.padding, &spec.dilation, g).map_err(to_candle),
                (Some(op), ..) => transposed(x, w, spec, op).map_err(to_candle),
            }
        })?;
        if y.dims() != out_dims {
            return Err(crate::error::runtime_err(format!("conv: computed {:?}, expected {out_dims:?}", y.dims())));
        }
        Ok(y)
    }

    /// Any convolution: zero padding, every window's taps gathered (N, C, *O, *K), then per group
    /// (N, G, O, Cg·K) @ (G, Cg·K, Cout/G).
    fn im2col(x: &Tensor, w: &Tensor, stride: &[usize], padding: &[usize], dilation: &[usize], groups: usize) -> PyResult<Tensor> {
        let ns = x.rank() - 2;
        let (n, c) = (x.dims()[0], x.dims()[1]);
        let (cout, k) = (w.dims()[0], &w.dims()[2..]);
        let mut xp = x.clone();
        let mut axes = vec![];
        for i in 0..ns {
            xp = window::pad_axis(&xp, 2 + i, padding[i], padding[i], 0.0)?;
            let span = dilation[i] * (k[i] - 1) + 1;
            let outs = (xp.dims()[2 + i] - span) / stride[i] + 1;
            axes.push(Axis::regular(outs, k[i], stride[i], dilation[i]));
        }
        let cols = window::gather(&xp, &axes)?; // (N, C, *O, *K)
        let o: usize = axes.iter().map(|a| a.outs).product();
        let kk: usize = k.iter().product();
        let cg = c / groups;
        // (N, G, Cg, O, K) → (N, G, O, Cg, K) → (N, G, O, Cg·K)
        let cols = cols.reshape((n, groups, cg, o, kk)).py()?.permute((0, 1, 3, 2, 4)).py()?.contiguous().py()?;
        let cols = cols.reshape((n, groups, o, cg * kk)).py()?;
        let wg = w.reshape((groups, cout / groups, cg * kk)).py()?.transpose(1, 2).py()?.contiguous().py()?;
        let y = cols.broadcast_matmul(&wg).py()?; // (N, G, O, Cout/G)
        let y = y.permute((0, 1, 3, 2)).py()?.contiguous().py()?;
        let mut dims = vec![n, cout];
        dims.extend(axes.iter().map(|a| a.outs));
        y.reshape(dims).py()
    }

    /// A transposed convolution as a direct one: the input spread by the stride (zeros between),
    /// padded by dilation·(k−1) − padding (cropped where that is negative) plus the output padding,
    /// convolved with the weight flipped and its in/out channels swapped per group.
    fn transposed(x: &Tensor, w: &Tensor, spec: &Spec, op: &[usize]) -> PyResult<Tensor> {
        let ns = x.rank() - 2;
        let g = spec.groups;
        let (cin, coutg, k) = (w.dims()[0], w.dims()[1], w.dims()[2..].to_vec());
        let mut xs = x.clone();
        for i in 0..ns {
            let dim = 2 + i;
            xs = window::dilate(&xs, dim, spec.stride[i])?;
            let full = (spec.dilation[i] * (k[i] - 1)) as i64;
            let before = full - spec.padding[i] as i64;
            let after = before + op[i] as i64;
            xs = window::pad_axis(&xs, dim, before.max(0) as usize, after.max(0) as usize, 0.0)?;
            let (cut_lo, cut_hi) = ((-before).max(0) as usize, (-after).max(0) as usize);
            if cut_lo + cut_hi > 0 {
                let len = xs.dims()[dim];
                xs = xs.narrow(dim, cut_lo, len.saturating_sub(cut_lo + cut_hi)).py()?;
            }
        }
        // (Cin, Cout/G, *k) → (G, Cin/G, Cout/G, *k) → (G, Cout/G, Cin/G, *k) → (Cout, Cin/G, *k), flipped.
        let mut wd = vec![g, cin / g, coutg];
        wd.extend(&k);
        let mut wt = w.reshape(wd).py()?.transpose(1, 2).py()?.contiguous().py()?;
        let mut nd = vec![g * coutg, cin / g];
        nd.extend(&k);
        wt = wt.reshape(nd).py()?;
        for i in 0..ns {
            wt = window::flip(&wt, 2 + i)?;
        }
        im2col(&xs, &wt, &vec![1; ns], &vec![0; ns], &spec.dilation, g)
    }
}
