//! Dynamic int8 Linear (`torch.ao.nn.quantized.dynamic.Linear`) with the numerics of torch's fbgemm
//! backend, so outputs match torch's bit for bit: the weight arrives quantized (int8, per tensor or
//! per output channel, with zero points); each call quantizes the whole input to uint8 from its
//! min/max (`choose_qparams`, torch's `ChooseQuantizationParams`; `reduce_range` uses 0..127) as
//! `round_half_even(f32(x · (1/scale))) + zp` (so ties fall as torch's do), sums
//! u8·i8 products in int32, and writes `fma(f32(acc − a_zp·Σw − Σa·w_zp), a_scale·w_scale, bias)`.
//!
//! Kernels, by `isa::level()`: AVX512-VNNI `vpdpbusd` (4 products per i32 lane); AVX2 `vpmaddubsw` +
//! `vpmaddwd` (also for AVX-512 CPUs without VNNI; its i16 pair sums are exact while activations stay
//! ≤ 128, which reduce_range guarantees, else the portable loop runs); portable scalar. The weight
//! is packed once into panels of 64 columns with k in groups of 4 bytes, the layout both instruction
//! sets read, so a tile streams its panel front to back.

use candle_core::{Device, Tensor};
use pyo3::prelude::*;

use crate::dtype::DType;
use crate::error::{runtime_err, IntoPyResult};
use crate::isa::Level;
use crate::pool::SendPtr;
use crate::tensor::kernels::uninit_vec;
use crate::tensor::PyTensor;

/// Columns per packed panel: four AVX-512 registers of i32 lanes.
const NR: usize = 64;
/// Bytes of one k-group (4 values of k) of a panel.
const GROUP: usize = NR * 4;
/// Bytes of quantized input rows a row block keeps in L2 while the panels stream past it.
const A_BLOCK_BYTES: usize = 256 << 10;
/// Below this many multiply-adds a call runs on one thread.
const PAR_MACS: usize = 1 << 18;
/// Inputs longer than this find their min/max and quantize on the pool.
const PAR_ELEMS: usize = 1 << 16;
/// torch's SMALL_SCALE_THRESHOLD: input scales below it are raised to it (fp16's smallest normal).
const SMALL_SCALE: f32 = 6.1e-5;

/// A quantized weight packed for the kernels (torch's `LinearPackedParamsBase`).
#[pyclass(name = "LinearPackedParamsBase", module = "candle_bind._C", frozen)]
pub struct PackedLinear {
    n: usize,
    k: usize,
    /// k rounded up to groups of 4.
    kq: usize,
    /// `n.div_ceil(NR)` panels, each `kq` groups of NR columns × 4 bytes (zero padded).
    panels: Vec<i8>,
    /// Per column, padded to whole panels: Σₖ w − w_zp·K, the zero point, the f32 scale, the bias.
    col_off: Vec<i32>,
    w_zp: Vec<i32>,
    w_scale: Vec<f32>,
    bias: Vec<f32>,
    /// As given (torch keeps them as doubles): one of each per tensor, or one per output channel.
    scales: Vec<f64>,
    zero_points: Vec<i64>,
    per_channel: bool,
    /// The bias tensor as given, handed back by `unpack` as torch does.
    bias_obj: Option<Py<PyAny>>,
}

/// Packs an int8 weight (N, K) with its scale and zero point, or one of each per output channel.
#[pyfunction]
#[pyo3(signature = (weight, scales, zero_points, bias=None, per_channel=false))]
pub fn qlinear_prepack(
    py: Python<'_>,
    weight: &PyTensor,
    scales: Vec<f64>,
    zero_points: Vec<i64>,
    bias: Option<Bound<'_, PyAny>>,
    per_channel: bool,
) -> PyResult<PackedLinear> {
    if weight.rank() != 2 {
        return Err(runtime_err("quantized::linear_prepack (fbgemm): Weight tensor rank should be == 2"));
    }
    if weight.dtype != DType::I8 {
        return Err(runtime_err(format!("linear_prepack: expected an int8 weight, got {}", weight.dtype.name())));
    }
    let (n, k) = (weight.dims()[0], weight.dims()[1]);
    if scales.len() != zero_points.len() || scales.len() != if per_channel { n } else { 1 } {
        return Err(runtime_err(format!(
            "linear_prepack: {} scales and {} zero points for a weight of {n} output channels",
            scales.len(),
            zero_points.len()
        )));
    }
    let bias = bias.filter(|b| !b.is_none());
    let bias_vals = match &bias {
        Some(b) => {
            let t = b.cast::<PyTensor>()?.borrow();
            if t.rank() != 1 || t.dims()[0] != n {
                return Err(runtime_err(format!("bias should have N elements: {n}")));
            }
            Some(crate::tensor::host_vec::<f32>(&t.t)?)
        }
        None => None,
    };
    let w = crate::tensor::host_vec::<i16>(&weight.t)?;
    let (np, kq) = (n.div_ceil(NR), k.div_ceil(4));
    let padded = np * NR;
    let chan = |j: usize| if per_channel { j } else { 0 };
    let mut w_zp = vec![0i32; padded];
    let mut w_scale = vec![0f32; padded];
    let mut col_off = vec![0i32; padded];
    for j in 0..n {
        w_zp[j] = zero_points[chan(j)] as i32;
        w_scale[j] = scales[chan(j)] as f32;
        let sum: i32 = w[j * k..(j + 1) * k].iter().map(|&v| v as i32).sum();
        col_off[j] = sum.wrapping_sub(w_zp[j].wrapping_mul(k as i32));
    }
    let mut bias_p = vec![0f32; padded];
    if let Some(b) = &bias_vals {
        bias_p[..n].copy_from_slice(b);
    }
    let mut panels = vec![0i8; np * kq * GROUP];
    py.detach(|| {
        crate::pool::chunks_mut(&mut panels, (kq * GROUP).max(1), |p, panel| {
            for c in 0..NR.min(n - p * NR) {
                let row = &w[(p * NR + c) * k..(p * NR + c + 1) * k];
                for (kk, &v) in row.iter().enumerate() {
                    panel[(kk / 4) * GROUP + c * 4 + kk % 4] = v as i8;
                }
            }
        })
    });
    Ok(PackedLinear {
        n,
        k,
        kq,
        panels,
        col_off,
        w_zp,
        w_scale,
        bias: bias_p,
        scales,
        zero_points,
        per_channel,
        bias_obj: bias.map(|b| b.unbind()),
    })
}

#[pymethods]
impl PackedLinear {
    /// (int8 weight (N, K), bias or None): the weight as it was packed.
    fn unpack(&self, py: Python<'_>) -> PyResult<(PyTensor, Option<Py<PyAny>>)> {
        let (n, k) = (self.n, self.k);
        let mut w = vec![0i16; n * k];
        for (j, row) in w.chunks_exact_mut(k.max(1)).enumerate().take(n) {
            let panel = &self.panels[(j / NR) * self.kq * GROUP..];
            for (kk, v) in row.iter_mut().enumerate() {
                *v = panel[(kk / 4) * GROUP + (j % NR) * 4 + kk % 4] as i16;
            }
        }
        let t = Tensor::from_vec(w, (n, k), &Device::Cpu).py()?;
        Ok((PyTensor::new(t, DType::I8), self.bias_obj.as_ref().map(|b| b.clone_ref(py))))
    }
    #[getter]
    fn scales(&self) -> Vec<f64> {
        self.scales.clone()
    }
    #[getter]
    fn zero_points(&self) -> Vec<i64> {
        self.zero_points.clone()
    }
    #[getter]
    fn per_channel(&self) -> bool {
        self.per_channel
    }
    #[getter]
    fn in_features(&self) -> usize {
        self.k
    }
    #[getter]
    fn out_features(&self) -> usize {
        self.n
    }
    /// Pickles (and deep-copies) as `qlinear_prepack(*unpacked)`.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let f = py.import("candle_bind._C")?.getattr("qlinear_prepack")?;
        let (w, b) = self.unpack(py)?;
        let args = (w, self.scales.clone(), self.zero_points.clone(), b, self.per_channel).into_pyobject(py)?.into_any();
        Ok((f, args))
    }
}

/// torch's `quantized::linear_dynamic(input, packed, reduce_range)`: float32 input (…, K) → (…, N).
#[pyfunction]
#[pyo3(signature = (input, packed, reduce_range=true))]
pub fn qlinear_dynamic(input: &PyTensor, packed: &PackedLinear, reduce_range: bool) -> PyResult<PyTensor> {
    if input.rank() < 2 {
        return Err(runtime_err("The dimension of input tensor should be larger than or equal to 2"));
    }
    if input.dtype != DType::F32 {
        return Err(runtime_err(format!("expected scalar type Float but found {}", input.dtype.title())));
    }
    let dims = input.dims().to_vec();
    let k = dims[dims.len() - 1];
    if k != packed.k {
        return Err(runtime_err(format!("The number of rows in the packB should be equal to K: {k}")));
    }
    let m: usize = dims[..dims.len() - 1].iter().product();
    let mut out_dims = dims.clone();
    if let Some(last) = out_dims.last_mut() {
        *last = packed.n;
    }
    let run = |t: &Tensor| -> PyResult<Tensor> {
        let out = crate::tensor::with_f32(t, |x| Python::attach(|py| py.detach(|| forward(x, m, packed, reduce_range))))?;
        Tensor::from_vec(out, out_dims.as_slice(), &Device::Cpu).py()
    };
    let t = if crate::device::cpu_kernels(&input.t) { run(&input.t)? } else { crate::device::via_host(&[&input.t], |h| run(&h[0]))? };
    Ok(PyTensor::new(t, DType::F32))
}

/// `_C.qlinear_choose_qparams(min, max, reduce_range)`: the (scale, zero point) a call quantizes its
/// input with (torch's `ChooseQuantizationParams` for uint8), for tests.
#[pyfunction]
pub fn qlinear_choose_qparams(min: f32, max: f32, reduce_range: bool) -> (f64, i32) {
    choose_qparams(min, max, reduce_range)
}

/// torch's `quant_utils::ChooseQuantizationParams(min, max, 0, 255, false, false, reduce_range)`,
/// line for line (double intermediates, float inputs).
fn choose_qparams(min: f32, max: f32, reduce_range: bool) -> (f64, i32) {
    let (qmin, qmax) = if reduce_range { (0i32, 127i32) } else { (0, 255) };
    let (mut min, mut max) = (if min < 0.0 { min } else { 0.0 }, if max > 0.0 { max } else { 0.0 });
    let range = (qmax - qmin) as f64;
    let mut scale = (max as f64 - min as f64) / range;
    if scale as f32 == 0.0 || (1.0f32 / scale as f32).is_infinite() {
        scale = 0.1;
    }
    if scale < SMALL_SCALE as f64 {
        let org = scale as f32;
        scale = SMALL_SCALE as f64;
        if min == 0.0 {
            max = SMALL_SCALE * (qmax - qmin) as f32;
        } else if max == 0.0 {
            min = -SMALL_SCALE * (qmax - qmin) as f32;
        } else {
            let amplifier = SMALL_SCALE / org;
            min *= amplifier;
            max *= amplifier;
        }
    }
    let (from_min, from_max) = (qmin as f64 - min as f64 / scale, qmax as f64 - max as f64 / scale);
    let err_min = (qmin as f64).abs() - (min as f64 / scale).abs();
    let err_max = (qmax as f64).abs() - (max as f64 / scale).abs();
    let initial = if err_min < err_max { from_min } else { from_max };
    let zp = if initial < qmin as f64 {
        qmin
    } else if initial > qmax as f64 {
        qmax
    } else {
        initial.round_ties_even() as i32
    };
    (scale, zp)
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kernel {
    Vnni,
    Avx2,
    Portable,
}

/// AVX512-VNNI, unless `CANDLE_BIND_ISA` caps it (`avx512` keeps the level without its extensions).
fn vnni() -> bool {
    crate::isa::has_avx512_vnni()
}

/// The kernel for this CPU and `CANDLE_BIND_ISA`; `a_max` is the largest quantized input value
/// (vpmaddubsw's i16 pair sums saturate past 128·128·2).
fn kernel(a_max: u8) -> Kernel {
    match crate::isa::level() {
        Level::Avx512 if vnni() => Kernel::Vnni,
        Level::Avx512 | Level::Avx2 if a_max <= 128 => Kernel::Avx2,
        _ => Kernel::Portable,
    }
}

/// `_C.qlinear_kernel()`: which kernel a call with reduce_range runs here ("vnni", "avx2", "portable").
#[pyfunction]
pub fn qlinear_kernel() -> &'static str {
    match kernel(127) {
        Kernel::Vnni => "vnni",
        Kernel::Avx2 => "avx2",
        Kernel::Portable => "portable",
    }
}

/// What the requantisation of one call needs per output column (padded to whole panels) and row.
struct Epilogue<'a> {
    /// a_zp · col_off
    zoff: &'a [i32],
    /// a_scale · w_scale (f32 product, as fbgemm)
    mult: &'a [f32],
    bias: &'a [f32],
    w_zp: &'a [i32],
    /// Σ of each quantized input row
    rowsum: &'a [i32],
}

impl Epilogue<'_> {
    #[inline(always)]
    fn value(&self, acc: i32, row: usize, col: usize) -> f32 {
        let raw = acc.wrapping_sub(self.zoff[col]).wrapping_sub(self.rowsum[row].wrapping_mul(self.w_zp[col]));
        (raw as f32).mul_add(self.mult[col], self.bias[col])
    }
}

fn forward(x: &[f32], m: usize, p: &PackedLinear, reduce_range: bool) -> Vec<f32> {
    let (n, k, kq) = (p.n, p.k, p.kq);
    let (lo, hi) = min_max(x);
    let (scale, zp) = choose_qparams(lo, hi, reduce_range);
    let a_scale = scale as f32;
    let kp = kq * 4;
    let mut a = uninit_vec::<u8>(m * kp);
    let mut rowsum = vec![0i32; m];
    let a_max = quantize(x, m, k, kp, 1.0 / a_scale, zp, &mut a, &mut rowsum);
    let mult: Vec<f32> = p.w_scale.iter().map(|&w| a_scale * w).collect();
    let zoff: Vec<i32> = p.col_off.iter().map(|&c| zp.wrapping_mul(c)).collect();
    let ep = Epilogue { zoff: &zoff, mult: &mult, bias: &p.bias, w_zp: &p.w_zp, rowsum: &rowsum };
    let mut out = uninit_vec::<f32>(m * n);
    gemm(kernel(a_max), &a, m, kp, p, &ep, &mut out);
    out
}

crate::tensor::kernels::multiversion! {
    /// (min, max) of `x` as fbgemm's FindMinMax: (0, 0) when empty.
    fn min_max_chunk<>(x: &[f32]) -> (f32, f32) where [] {
        let Some(&first) = x.first() else { return (0.0, 0.0) };
        // Lane-wise, so it vectorises (a single running min is a loop-carried float select).
        let (mut lo, mut hi) = ([first; 16], [first; 16]);
        let mut chunks = x.chunks_exact(16);
        for c in &mut chunks {
            for l in 0..16 {
                lo[l] = if c[l] < lo[l] { c[l] } else { lo[l] };
                hi[l] = if c[l] > hi[l] { c[l] } else { hi[l] };
            }
        }
        let (mut mn, mut mx) = (first, first);
        for &v in lo.iter().chain(chunks.remainder()) {
            mn = if v < mn { v } else { mn };
        }
        for &v in hi.iter().chain(chunks.remainder()) {
            mx = if v > mx { v } else { mx };
        }
        (mn, mx)
    }
}

fn min_max(x: &[f32]) -> (f32, f32) {
    if x.len() <= PAR_ELEMS {
        return min_max_chunk(x);
    }
    let parts = x.len().div_ceil(PAR_ELEMS);
    let mut res = vec![(0f32, 0f32); parts];
    crate::pool::chunks_mut(&mut res, 1, |i, r| r[0] = min_max_chunk(&x[i * PAR_ELEMS..((i + 1) * PAR_ELEMS).min(x.len())]));
    res.iter().skip(1).fold(res[0], |(a, b), &(c, d)| (if c < a { c } else { a }, if d > b { d } else { b }))
}

crate::tensor::kernels::multiversion! {
    /// Quantizes rows of `x` (`k` long) into rows of `a` (`kp` long, zero padded) as fbgemm's
    /// QuantizeAvx2 (non-legacy): round-half-even of the f32 product x·(1/scale), plus zp, clamped to
    /// 0..=255. Returns the largest value written; fills `rowsum`.
    fn quantize_rows<>(x: &[f32], k: usize, kp: usize, inv: f32, zp: i32, a: &mut [u8], rowsum: &mut [i32]) -> u8 where [] {
        let mut top = 0u8;
        for ((xr, ar), s) in x.chunks_exact(k.max(1)).zip(a.chunks_exact_mut(kp.max(1))).zip(rowsum.iter_mut()) {
            let mut sum = 0i32;
            let mut hi = 0u8;
            for (d, &v) in ar[..k].iter_mut().zip(xr) {
                // The min, the wrapping add: fbgemm's steps, which also decide what NaN becomes.
                let t = (v * inv).min(2_147_483_520.0);
                let q = (t.round_ties_even() as i32).wrapping_add(zp).clamp(0, 255) as u8;
                *d = q;
                sum += q as i32;
                hi = hi.max(q);
            }
            ar[k..].fill(0);
            *s = sum;
            top = top.max(hi);
        }
        top
    }
}

#[allow(clippy::too_many_arguments)]
fn quantize(x: &[f32], m: usize, k: usize, kp: usize, inv: f32, zp: i32, a: &mut [u8], rowsum: &mut [i32]) -> u8 {
    if k == 0 {
        a.fill(0);
        return 0;
    }
    let rows = (PAR_ELEMS / k).max(1);
    if m * k <= PAR_ELEMS || crate::pool::threads() <= 1 {
        return quantize_rows(x, k, kp, inv, zp, a, rowsum);
    }
    let blocks = m.div_ceil(rows);
    let mut tops = vec![0u8; blocks];
    let (ap, sp) = (SendPtr(a.as_mut_ptr()), SendPtr(rowsum.as_mut_ptr()));
    crate::pool::chunks_mut(&mut tops, 1, |i, top| {
        let r1 = ((i + 1) * rows).min(m);
        let nr = r1 - i * rows;
        // SAFETY: block i alone writes rows i·rows..r1 of `a` (kp bytes each) and of `rowsum`.
        let (ab, sb) = unsafe {
            (std::slice::from_raw_parts_mut(ap.get().add(i * rows * kp), nr * kp), std::slice::from_raw_parts_mut(sp.get().add(i * rows), nr))
        };
        top[0] = quantize_rows(&x[i * rows * k..r1 * k], k, kp, inv, zp, ab, sb);
    });
    tops.into_iter().max().unwrap_or(0)
}

/// out (m × n) from the quantized input `a` (m × kp) and the packed weight, in tiles of `mr` rows by
/// one panel: row blocks of about A_BLOCK_BYTES, split further over panel groups when there are
/// fewer blocks than threads (decoding: one row, every panel).
fn gemm(kern: Kernel, a: &[u8], m: usize, kp: usize, p: &PackedLinear, ep: &Epilogue<'_>, out: &mut [f32]) {
    let (n, np) = (p.n, p.n.div_ceil(NR));
    if m == 0 || n == 0 {
        return;
    }
    let mr = match kern {
        Kernel::Vnni => 6,
        _ => 4,
    };
    let mc = ((A_BLOCK_BYTES / kp.max(1)).max(mr) / mr * mr).min(m.next_multiple_of(mr));
    let blocks = m.div_ceil(mc);
    let threads = if m * n * kp >= PAR_MACS { crate::pool::threads() } else { 1 };
    let groups = if blocks >= 2 * threads || threads == 1 { 1 } else { (2 * threads).div_ceil(blocks).min(np) };
    let per = np.div_ceil(groups);
    let groups = np.div_ceil(per);
    let op = SendPtr(out.as_mut_ptr());
    let task = |t: usize| {
        let (b, g) = (t / groups, t % groups);
        let rows = b * mc..((b + 1) * mc).min(m);
        for pi in g * per..((g + 1) * per).min(np) {
            let panel = &p.panels[pi * p.kq * GROUP..(pi + 1) * p.kq * GROUP];
            let cols = NR.min(n - pi * NR);
            for r0 in rows.clone().step_by(mr) {
                let r = mr.min(rows.end - r0);
                let t = Tile { a: &a[r0 * kp..(r0 + r) * kp], kp, panel, kq: p.kq, row0: r0, col0: pi * NR, cols, out: op, ldc: n };
                t.run(kern, r, ep);
            }
        }
    };
    if threads == 1 {
        (0..blocks * groups).for_each(task);
    } else {
        crate::pool::for_each(blocks * groups, &task);
    }
}

/// One tile: rows `row0..` (their quantized input in `a`) by the columns `col0..col0+cols` of one panel.
struct Tile<'a> {
    a: &'a [u8],
    kp: usize,
    panel: &'a [i8],
    kq: usize,
    row0: usize,
    col0: usize,
    cols: usize,
    out: SendPtr<f32>,
    ldc: usize,
}

impl Tile<'_> {
    fn run(&self, kern: Kernel, rows: usize, ep: &Epilogue<'_>) {
        #[cfg(target_arch = "x86_64")]
        {
            macro_rules! rows {
                ($f:ident, $($r:literal)*) => {
                    // SAFETY: the CPU has the kernel's features (`kernel`); the tile's slices are in bounds
                    // and its output block is written by this task alone.
                    match rows { $($r => unsafe { self.$f::<$r>(ep) },)* _ => unreachable!("tile of {rows} rows") }
                };
            }
            match kern {
                Kernel::Vnni => return rows!(vnni, 1 2 3 4 5 6),
                Kernel::Avx2 => return rows!(avx2, 1 2 3 4),
                Kernel::Portable => {}
            }
        }
        let _ = kern;
        self.portable(rows, ep)
    }

    /// Writes one output element; the caller keeps `(i, j)` inside the tile.
    #[inline(always)]
    fn put(&self, i: usize, j: usize, v: f32) {
        // SAFETY: row0+i < m and col0+j < n: inside this task's own block of the output.
        unsafe { *self.out.get().add((self.row0 + i) * self.ldc + self.col0 + j) = v };
    }

    fn portable(&self, rows: usize, ep: &Epilogue<'_>) {
        let mut acc = [0i32; NR];
        for i in 0..rows {
            acc.fill(0);
            let ar = &self.a[i * self.kp..(i + 1) * self.kp];
            for (q, g) in self.panel.chunks_exact(GROUP).enumerate() {
                let av = &ar[q * 4..q * 4 + 4];
                for (c, w) in acc.iter_mut().zip(g.chunks_exact(4)) {
                    *c += av[0] as i32 * w[0] as i32 + av[1] as i32 * w[1] as i32 + av[2] as i32 * w[2] as i32 + av[3] as i32 * w[3] as i32;
                }
            }
            for (j, &c) in acc.iter().enumerate().take(self.cols) {
                self.put(i, j, ep.value(c, self.row0 + i, self.col0 + j));
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
    unsafe fn vnni<const R: usize>(&self, ep: &Epilogue<'_>) {
        use std::arch::x86_64::*;
        let mut acc = [[_mm512_setzero_si512(); 4]; R];
        let (a, b) = (self.a.as_ptr(), self.panel.as_ptr());
        for q in 0..self.kq {
            // SAFETY (all loads): group q of the panel holds GROUP bytes; row r of `a` holds kp = 4·kq bytes.
            let bq = unsafe { b.add(q * GROUP) };
            let bv: [__m512i; 4] = std::array::from_fn(|v| unsafe { _mm512_loadu_si512(bq.add(v * 64) as *const _) });
            for (r, accr) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_epi32(unsafe { (a.add(r * self.kp + q * 4) as *const i32).read_unaligned() });
                for v in 0..4 {
                    accr[v] = _mm512_dpbusd_epi32(accr[v], av, bv[v]);
                }
            }
        }
        for (r, accr) in acc.iter().enumerate() {
            let row = self.row0 + r;
            let rs = _mm512_set1_epi32(ep.rowsum[row]);
            for (v, &x) in accr.iter().enumerate() {
                let j = v * 16;
                if j >= self.cols {
                    break;
                }
                let c = self.col0 + j;
                // SAFETY: the per-column arrays are padded to whole panels.
                let y = unsafe {
                    let raw = _mm512_sub_epi32(
                        _mm512_sub_epi32(x, _mm512_loadu_si512(ep.zoff.as_ptr().add(c) as *const _)),
                        _mm512_mullo_epi32(rs, _mm512_loadu_si512(ep.w_zp.as_ptr().add(c) as *const _)),
                    );
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(raw), _mm512_loadu_ps(ep.mult.as_ptr().add(c)), _mm512_loadu_ps(ep.bias.as_ptr().add(c)))
                };
                let mask: __mmask16 = if self.cols - j >= 16 { 0xffff } else { (1u16 << (self.cols - j)) - 1 };
                // SAFETY: the masked lanes are inside this tile's block of the output.
                unsafe { _mm512_mask_storeu_ps(self.out.get().add(row * self.ldc + c), mask, y) };
            }
        }
    }

    /// 16 columns at a time (4 sub-blocks of the panel), `R` ≤ 4 rows: 8 accumulators in 16 registers.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2<const R: usize>(&self, ep: &Epilogue<'_>) {
        use std::arch::x86_64::*;
        let ones = _mm256_set1_epi16(1);
        let (a, b) = (self.a.as_ptr(), self.panel.as_ptr());
        for s in 0..self.cols.div_ceil(16) {
            let mut acc = [[_mm256_setzero_si256(); 2]; R];
            for q in 0..self.kq {
                // SAFETY: as in `vnni`; sub-block s is bytes 64·s..64·s+64 of the group.
                let bq = unsafe { b.add(q * GROUP + s * 64) };
                let bv: [__m256i; 2] = std::array::from_fn(|v| unsafe { _mm256_loadu_si256(bq.add(v * 32) as *const _) });
                for (r, accr) in acc.iter_mut().enumerate() {
                    let av = _mm256_set1_epi32(unsafe { (a.add(r * self.kp + q * 4) as *const i32).read_unaligned() });
                    for v in 0..2 {
                        accr[v] = _mm256_add_epi32(accr[v], _mm256_madd_epi16(_mm256_maddubs_epi16(av, bv[v]), ones));
                    }
                }
            }
            for (r, accr) in acc.iter().enumerate() {
                let row = self.row0 + r;
                let rs = _mm256_set1_epi32(ep.rowsum[row]);
                for (v, &x) in accr.iter().enumerate() {
                    let j = s * 16 + v * 8;
                    if j >= self.cols {
                        break;
                    }
                    let c = self.col0 + j;
                    // SAFETY: the per-column arrays are padded to whole panels.
                    let y = unsafe {
                        let raw = _mm256_sub_epi32(
                            _mm256_sub_epi32(x, _mm256_loadu_si256(ep.zoff.as_ptr().add(c) as *const _)),
                            _mm256_mullo_epi32(rs, _mm256_loadu_si256(ep.w_zp.as_ptr().add(c) as *const _)),
                        );
                        _mm256_fmadd_ps(_mm256_cvtepi32_ps(raw), _mm256_loadu_ps(ep.mult.as_ptr().add(c)), _mm256_loadu_ps(ep.bias.as_ptr().add(c)))
                    };
                    if self.cols - j >= 8 {
                        // SAFETY: the 8 columns are inside this tile's block of the output.
                        unsafe { _mm256_storeu_ps(self.out.get().add(row * self.ldc + c), y) };
                    } else {
                        let mut tmp = [0f32; 8];
                        // SAFETY: tmp holds 8 floats.
                        unsafe { _mm256_storeu_ps(tmp.as_mut_ptr(), y) };
                        for (t, &val) in tmp.iter().enumerate().take(self.cols - j) {
                            self.put(r, j + t, val);
                        }
                    }
                }
            }
        }
    }
}

/// `_C.quantize_affine(x, scales, zero_points, axis, dtype)`: torch's quantize_per_tensor /
/// quantize_per_channel on float input: `zp + round_half_even(x · (1 / f32(scale)))` clamped to the
/// range of qint8 / quint8 / qint32, as the integer tensor (int8 / uint8 / int32) a quantized tensor
/// holds. `axis` (per channel) picks the scale of each element; None: one scale for all.
#[pyfunction]
#[pyo3(signature = (x, scales, zero_points, axis, dtype))]
pub fn quantize_affine(
    py: Python<'_>,
    x: &PyTensor,
    scales: Vec<f64>,
    zero_points: Vec<i64>,
    axis: Option<usize>,
    dtype: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let dt = crate::dtype::extract_any_dtype(dtype)?;
    let (lo, hi, out_dt) = match dt {
        DType::QInt8 => (-128i64, 127i64, DType::I8),
        DType::QUInt8 => (0, 255, DType::U8),
        DType::QInt32 => (i32::MIN as i64, i32::MAX as i64, DType::I32),
        other => return Err(runtime_err(format!("quantize: unsupported dtype {}", other.name()))),
    };
    let dims = x.dims().to_vec();
    let (channels, inner) = match axis {
        Some(ax) if ax < dims.len() => (dims[ax], dims[ax + 1..].iter().product::<usize>()),
        Some(ax) => return Err(runtime_err(format!("quantize: axis {ax} out of range for {} dims", dims.len()))),
        None => (1, PAR_ELEMS),
    };
    if scales.len() != channels || zero_points.len() != channels {
        return Err(runtime_err(format!(
            "quantize: {} scales and {} zero points for {channels} channels",
            scales.len(),
            zero_points.len()
        )));
    }
    let q = Quantizer { inv: scales.iter().map(|&s| 1.0f32 / s as f32).collect(), zps: zero_points, inner: inner.max(1), lo, hi };
    let run = |t: &Tensor| -> PyResult<Tensor> {
        crate::tensor::with_f32(t, |xs| {
            py.detach(|| match out_dt {
                DType::I8 => Tensor::from_vec(q.run(xs, |v| v as i16), dims.as_slice(), &Device::Cpu),
                DType::U8 => Tensor::from_vec(q.run(xs, |v| v as u8), dims.as_slice(), &Device::Cpu),
                _ => Tensor::from_vec(q.run(xs, |v| v as i32), dims.as_slice(), &Device::Cpu),
            })
        })?
        .py()
    };
    // Quantized tensors live on the CPU (as torch's): input from another device is read there.
    let t = if crate::device::cpu_kernels(&x.t) {
        run(&x.t)?
    } else {
        let host = x.t.to_device(&Device::Cpu).py()?;
        crate::device::on_host(|| run(&host))?
    };
    Ok(PyTensor::new(t, out_dt))
}

/// Affine quantization of float values, one (1/scale, zero point) per block of `inner` elements
/// cycling through the channels (a single pair: per tensor).
struct Quantizer {
    inv: Vec<f32>,
    zps: Vec<i64>,
    inner: usize,
    lo: i64,
    hi: i64,
}

impl Quantizer {
    fn run<T: Copy + Send + Default>(&self, x: &[f32], cast: impl Fn(i64) -> T + Sync) -> Vec<T> {
        let mut out = vec![T::default(); x.len()];
        let per = (PAR_ELEMS / self.inner).max(1) * self.inner;
        crate::pool::chunks_mut(&mut out, per, |ci, o| {
            for (b, blk) in o.chunks_mut(self.inner).enumerate() {
                let start = ci * per + b * self.inner;
                let c = (start / self.inner) % self.inv.len();
                let (inv, zp) = (self.inv[c], self.zps[c]);
                for (d, &v) in blk.iter_mut().zip(&x[start..]) {
                    // NaN and ±inf saturate in the cast, then clamp, as torch's.
                    *d = cast(zp.saturating_add((v * inv).round_ties_even() as i64).clamp(self.lo, self.hi));
                }
            }
        });
        out
    }
}
