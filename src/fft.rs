//! torch.fft and torch.stft on the CPU: batched 1-D transforms along one dim, with rustfft (complex to
//! complex) and realfft (real to complex, complex to real), in the input's precision (f32 or f64) as
//! torch. Complex tensors come and go as their interleaved parts (`[..., 2]` floats: what
//! `ComplexTensor` stores), so nothing round-trips through numpy. Python (`candle_bind/fft.py`,
//! `_spectral.py`) resolves torch's arguments (dims, sizes, norms) and composes n-dimensional
//! transforms from these 1-D passes.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use candle_core::{DType as CDType, Device, Tensor, WithDType};
use pyo3::prelude::*;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftNum, FftPlanner};

use crate::error::{dtype_err, value_err, IntoPyResult};
use crate::pool::{for_each, threads, SendPtr};
use crate::tensor::kernels::uninit_vec;
use crate::tensor::{with_slice, PyTensor};

/// Below this much work (length × log2 length, summed over lines) a transform runs on one thread.
const PAR_WORK: usize = 1 << 15;

/// f32 or f64, with the plan caches of that precision.
trait Float: FftNum + WithDType + num_traits::Float {
    fn planners() -> &'static Planners<Self>;
}

/// rustfft's and realfft's planners keep every plan they build (per length and direction): kept here
/// for the life of the process, a plan is built once and then shared by every call and thread.
struct Planners<T: FftNum> {
    complex: Mutex<FftPlanner<T>>,
    real: Mutex<RealFftPlanner<T>>,
}

impl<T: FftNum> Planners<T> {
    fn new() -> Self {
        Planners { complex: Mutex::new(FftPlanner::new()), real: Mutex::new(RealFftPlanner::new()) }
    }
}

macro_rules! float {
    ($t:ty) => {
        impl Float for $t {
            fn planners() -> &'static Planners<$t> {
                static P: OnceLock<Planners<$t>> = OnceLock::new();
                P.get_or_init(Planners::new)
            }
        }
    };
}
float!(f32);
float!(f64);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One dim of a contiguous tensor seen as `outer × len × inner`: its lines are the `outer * inner`
/// 1-D signals along it, element `k` of a line `inner` apart.
#[derive(Clone, Copy)]
struct Lines {
    outer: usize,
    inner: usize,
    len_in: usize,
    len_out: usize,
}

impl Lines {
    fn new(dims: &[usize], dim: usize, len_out: usize) -> Lines {
        Lines {
            outer: dims[..dim].iter().product(),
            inner: dims[dim + 1..].iter().product(),
            len_in: dims[dim],
            len_out,
        }
    }
    fn count(&self) -> usize {
        self.outer * self.inner
    }
    /// Where line `l` starts in a tensor whose transformed dim has `len` elements.
    fn start(&self, l: usize, len: usize) -> usize {
        (l / self.inner) * len * self.inner + l % self.inner
    }
}

/// Runs `f` over ranges of `0..count` lines on the pool (one range, on this thread, for small work).
fn par_lines(count: usize, len: usize, f: impl Fn(Range<usize>) + Sync) {
    let bits = (usize::BITS - len.leading_zeros()) as usize;
    let work = count.saturating_mul(len).saturating_mul(bits);
    let tasks = if work < PAR_WORK { 1 } else { (threads() * 4).min(count).max(1) };
    // Even ranges: the real transforms run two lines at a time.
    let per = count.div_ceil(tasks).next_multiple_of(2);
    for_each(tasks, &|t| {
        let end = ((t + 1) * per).min(count);
        if t * per < end {
            f(t * per..end)
        }
    });
}

/// The complex numbers of an interleaved `[re, im, ...]` slice (the same memory).
fn as_complex<T>(s: &[T]) -> &[Complex<T>] {
    // SAFETY: `Complex<T>` is `#[repr(C)] { re: T, im: T }`: two `T`s, aligned as `T`.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const Complex<T>, s.len() / 2) }
}

/// c2c: every line zero-padded or cut to `len_out`, transformed, times `scale` (`conj`: of the input).
fn c2c<T: Float>(x: &[Complex<T>], g: Lines, inverse: bool, conj: bool, scale: T) -> Vec<T> {
    let n = g.len_out;
    let plan = {
        let mut p = lock(&T::planners().complex);
        if inverse { p.plan_fft_inverse(n) } else { p.plan_fft_forward(n) }
    };
    // Every element is written below (each line's row, or its strided elements).
    let mut out = uninit_vec::<T>(g.count() * n * 2);
    let ptr = SendPtr(out.as_mut_ptr() as *mut Complex<T>);
    let copy = g.len_in.min(n);
    let zero = Complex::new(T::zero(), T::zero());
    par_lines(g.count(), n, |lines| {
        let mut scratch = vec![zero; plan.get_inplace_scratch_len()];
        let mut buf = vec![zero; if g.inner == 1 { 0 } else { n }];
        for l in lines {
            let src = g.start(l, g.len_in);
            // SAFETY: line `l` of the output is this task's alone (inner == 1: its row).
            let row: &mut [Complex<T>] = if g.inner == 1 { unsafe { ptr.block(l, n) } } else { &mut buf };
            gather(&mut row[..copy], x, src, g.inner, conj);
            row[copy..].fill(zero);
            plan.process_with_scratch(row, &mut scratch);
            if g.inner == 1 {
                if scale != T::one() {
                    row.iter_mut().for_each(|v| *v = *v * scale);
                }
            } else {
                let dst = g.start(l, n);
                for (k, v) in row.iter().enumerate() {
                    // SAFETY: element k of output line l, in bounds and written by this task only.
                    unsafe { *ptr.get().add(dst + k * g.inner) = *v * scale };
                }
            }
        }
    });
    out
}

/// r2c: every line zero-padded or cut to `n`, transformed, times `scale` (`conj`: the result
/// conjugated); `onesided` keeps the `n / 2 + 1` first bins, else all `n` (the rest by symmetry).
fn r2c<T: Float>(x: &[T], g: Lines, n: usize, onesided: bool, conj: bool, scale: T) -> Vec<T> {
    let m = n / 2 + 1;
    let plan = RealForward::<T>::new(n);
    // Every element is written below (each line's row, or its strided elements).
    let mut out = uninit_vec::<T>(g.count() * g.len_out * 2);
    let ptr = SendPtr(out.as_mut_ptr() as *mut Complex<T>);
    let copy = g.len_in.min(n);
    par_lines(g.count(), n, |lines| {
        let fill = |l: usize, input: &mut [T]| {
            gather(&mut input[..copy], x, g.start(l, g.len_in), g.inner, false);
            input[copy..].fill(T::zero());
        };
        plan.run(lines, fill, |l, spec| {
            if g.inner == 1 {
                // SAFETY: row `l` of the output is this task's alone.
                let row = unsafe { ptr.block(l, g.len_out) };
                row[..m].copy_from_slice(spec);
                finish_row(row, m, conj, scale);
            } else {
                write_spectrum(spec, ptr, g.start(l, g.len_out), g.inner, n, onesided, conj, scale);
            }
        });
    });
    out
}

/// Forward FFTs of real lines of `n` points, two at a time: one complex FFT of `a + i b` gives both
/// spectra (`A[k] = (Z[k] + conj Z[n-k]) / 2`, `B[k] = (Z[k] - conj Z[n-k]) / 2i`), about half the work
/// of two real FFTs; an odd line left over takes realfft's r2c.
struct RealForward<T: Float> {
    n: usize,
    pair: Arc<dyn Fft<T>>,
    single: Arc<dyn RealToComplex<T>>,
}

impl<T: Float> RealForward<T> {
    fn new(n: usize) -> Self {
        let pair = lock(&T::planners().complex).plan_fft_forward(n);
        let single = lock(&T::planners().real).plan_fft_forward(n);
        RealForward { n, pair, single }
    }

    /// Transforms `lines`: `fill(l, buf)` writes line `l`'s `n` samples, `emit(l, spectrum)` takes its
    /// `n / 2 + 1` bins.
    fn run(&self, lines: Range<usize>, fill: impl Fn(usize, &mut [T]), mut emit: impl FnMut(usize, &[Complex<T>])) {
        let (n, m) = (self.n, self.n / 2 + 1);
        let zero = Complex::new(T::zero(), T::zero());
        let half = T::one() / (T::one() + T::one());
        let (mut a, mut b) = (vec![T::zero(); n], vec![T::zero(); n]);
        let (mut sa, mut sb) = (vec![zero; m], vec![zero; m]);
        let mut z = vec![zero; n];
        let mut scratch = vec![zero; self.pair.get_inplace_scratch_len()];
        let mut l = lines.start;
        while l + 1 < lines.end {
            fill(l, &mut a);
            fill(l + 1, &mut b);
            z.iter_mut().zip(a.iter().zip(&b)).for_each(|(z, (&re, &im))| *z = Complex::new(re, im));
            self.pair.process_with_scratch(&mut z, &mut scratch);
            sa[0] = Complex::new(z[0].re, T::zero());
            sb[0] = Complex::new(z[0].im, T::zero());
            for k in 1..m {
                let (zk, zn) = (z[k], z[n - k].conj());
                let (s, d) = (zk + zn, zk - zn);
                sa[k] = s * half;
                sb[k] = Complex::new(d.im * half, -d.re * half);
            }
            emit(l, &sa);
            emit(l + 1, &sb);
            l += 2;
        }
        if l < lines.end {
            let mut scratch = vec![zero; self.single.get_scratch_len()];
            fill(l, &mut a);
            // Lengths are the plan's own, so this cannot fail.
            let _ = self.single.process_with_scratch(&mut a, &mut sa, &mut scratch);
            emit(l, &sa);
        }
    }
}

/// Copies `dst.len()` elements of a line (`stride` apart from `src`), conjugated if `conj`.
fn gather<V: Conj>(dst: &mut [V], x: &[V], src: usize, stride: usize, conj: bool) {
    if stride == 1 {
        dst.copy_from_slice(&x[src..src + dst.len()]);
    } else {
        for (k, r) in dst.iter_mut().enumerate() {
            *r = x[src + k * stride];
        }
    }
    if conj {
        dst.iter_mut().for_each(|v| *v = v.conj());
    }
}

/// Conjugation, the identity on reals.
trait Conj: Copy {
    fn conj(self) -> Self;
}
impl<T: Float> Conj for T {
    fn conj(self) -> Self {
        self
    }
}
impl<T: Float> Conj for Complex<T> {
    fn conj(self) -> Self {
        Complex::conj(&self)
    }
}

/// Finishes an output row whose first `m` bins hold a one-sided spectrum: times `scale`, conjugated
/// if `conj`, and the rest of the row (if any) by Hermitian symmetry.
fn finish_row<T: Float>(row: &mut [Complex<T>], m: usize, conj: bool, scale: T) {
    if conj || scale != T::one() {
        let im = if conj { -scale } else { scale };
        row[..m].iter_mut().for_each(|v| *v = Complex::new(v.re * scale, v.im * im));
    }
    let n = row.len();
    for k in m..n {
        row[k] = row[n - k].conj();
    }
}

/// Writes a one-sided spectrum (times `scale`, conjugated if `conj`) to an output line, plus its
/// Hermitian-symmetric other half when not `onesided`.
#[allow(clippy::too_many_arguments)]
fn write_spectrum<T: Float>(
    spec: &[Complex<T>],
    ptr: SendPtr<Complex<T>>,
    dst: usize,
    stride: usize,
    n: usize,
    onesided: bool,
    conj: bool,
    scale: T,
) {
    let at = |k: usize| -> Complex<T> {
        let v = spec[k] * scale;
        if conj { v.conj() } else { v }
    };
    let len = if onesided { spec.len() } else { n };
    for k in 0..len {
        let v = if k < spec.len() { at(k) } else { at(n - k).conj() };
        // SAFETY: element k of this task's output line, in bounds.
        unsafe { *ptr.get().add(dst + k * stride) = v };
    }
}

/// c2r: every line's first `n / 2 + 1` bins (zero-padded or cut), inverse-transformed to `n` real
/// samples, times `scale` (`conj`: of the input). The imaginary parts of the DC and Nyquist bins are
/// ignored, as pocketfft and MKL do.
fn c2r<T: Float>(x: &[Complex<T>], g: Lines, conj: bool, scale: T) -> Vec<T> {
    let n = g.len_out;
    let m = n / 2 + 1;
    let plan = RealInverse::<T>::new(n);
    // Every element is written below (each line's row, or its strided elements).
    let mut out = uninit_vec::<T>(g.count() * n);
    let ptr = SendPtr(out.as_mut_ptr());
    let copy = g.len_in.min(m);
    let zero = Complex::new(T::zero(), T::zero());
    par_lines(g.count(), n, |lines| {
        let fill = |l: usize, spec: &mut [Complex<T>]| {
            gather(&mut spec[..copy], x, g.start(l, g.len_in), g.inner, conj);
            spec[copy..].fill(zero);
        };
        plan.run(lines, fill, |l, samples| {
            if g.inner == 1 {
                // SAFETY: row `l` of the output is this task's alone.
                let row = unsafe { ptr.block(l, n) };
                row.iter_mut().zip(samples).for_each(|(r, &v)| *r = v * scale);
            } else {
                let dst = g.start(l, n);
                for (k, &v) in samples.iter().enumerate() {
                    // SAFETY: element k of output line l, in bounds and written by this task only.
                    unsafe { *ptr.get().add(dst + k * g.inner) = v * scale };
                }
            }
        });
    });
    out
}

/// Inverse FFTs of Hermitian spectra (`n / 2 + 1` bins) to `n` real samples, two at a time: one
/// complex inverse FFT of `A + i B` (both extended by symmetry) has `a` as its real part and `b` as
/// its imaginary part; an odd line left over takes realfft's c2r. The imaginary parts of the DC and
/// Nyquist bins are ignored, as pocketfft and MKL do.
struct RealInverse<T: Float> {
    n: usize,
    pair: Arc<dyn Fft<T>>,
    single: Arc<dyn ComplexToReal<T>>,
}

impl<T: Float> RealInverse<T> {
    fn new(n: usize) -> Self {
        let pair = lock(&T::planners().complex).plan_fft_inverse(n);
        let single = lock(&T::planners().real).plan_fft_inverse(n);
        RealInverse { n, pair, single }
    }

    /// Transforms `lines`: `fill(l, bins)` writes line `l`'s `n / 2 + 1` bins, `emit(l, samples)` takes
    /// its `n` samples.
    fn run(&self, lines: Range<usize>, fill: impl Fn(usize, &mut [Complex<T>]), mut emit: impl FnMut(usize, &[T])) {
        let (n, m) = (self.n, self.n / 2 + 1);
        let zero = Complex::new(T::zero(), T::zero());
        let (mut sa, mut sb) = (vec![zero; m], vec![zero; m]);
        let (mut a, mut b) = (vec![T::zero(); n], vec![T::zero(); n]);
        let mut z = vec![zero; n];
        let mut scratch = vec![zero; self.pair.get_inplace_scratch_len()];
        let mut l = lines.start;
        while l + 1 < lines.end {
            fill(l, &mut sa);
            fill(l + 1, &mut sb);
            for s in [&mut sa, &mut sb] {
                s[0].im = T::zero();
                if n % 2 == 0 {
                    s[m - 1].im = T::zero();
                }
            }
            for k in 0..m {
                let (p, q) = (sa[k], sb[k]);
                z[k] = Complex::new(p.re - q.im, p.im + q.re);
            }
            for k in m..n {
                let (p, q) = (sa[n - k], sb[n - k]);
                z[k] = Complex::new(p.re + q.im, q.re - p.im);
            }
            self.pair.process_with_scratch(&mut z, &mut scratch);
            for ((a, b), z) in a.iter_mut().zip(b.iter_mut()).zip(&z) {
                *a = z.re;
                *b = z.im;
            }
            emit(l, &a);
            emit(l + 1, &b);
            l += 2;
        }
        if l < lines.end {
            let mut scratch = vec![zero; self.single.get_scratch_len()];
            fill(l, &mut sa);
            // The only error left once lengths match is "non-zero imaginary DC/Nyquist", reported
            // after the transform ran with them ignored: what torch computes too.
            let _ = self.single.process_with_scratch(&mut sa, &mut a, &mut scratch);
            emit(l, &a);
        }
    }
}

/// STFT of real signals `x` (`batch × len`): frames `hop` apart, times `window`, r2c each, times
/// `scale`; the result is `batch × frames × bins` complex (torch returns its `bins × frames` transpose).
#[allow(clippy::too_many_arguments)]
fn stft<T: Float>(
    x: &[T],
    batch: usize,
    len: usize,
    n: usize,
    hop: usize,
    frames: usize,
    window: Option<&[T]>,
    onesided: bool,
    scale: T,
) -> Vec<T> {
    let m = n / 2 + 1;
    let bins = if onesided { m } else { n };
    let plan = RealForward::<T>::new(n);
    // Every element is written below (each frame's row).
    let mut out = uninit_vec::<T>(batch * frames * bins * 2);
    let ptr = SendPtr(out.as_mut_ptr() as *mut Complex<T>);
    par_lines(batch * frames, n, |lines| {
        let fill = |l: usize, input: &mut [T]| {
            let src = (l / frames) * len + (l % frames) * hop;
            let frame = &x[src..src + n];
            match window {
                Some(w) => input.iter_mut().zip(frame).zip(w).for_each(|((r, &v), &w)| *r = v * w),
                None => input.copy_from_slice(frame),
            }
        };
        plan.run(lines, fill, |l, spec| {
            // SAFETY: row `l` of the output is this task's alone.
            let row = unsafe { ptr.block(l, bins) };
            row[..m].copy_from_slice(spec);
            finish_row(row, m, false, scale);
        });
    });
    out
}

// ------------------------------------------------------------------------------------ Python entry

/// The precision of a float32/float64 CPU tensor (for a complex one: its parts, `[..., 2]`).
fn precision(x: &PyTensor, complex: bool, op: &str) -> PyResult<CDType> {
    let dt = x.t.dtype();
    if !matches!(dt, CDType::F32 | CDType::F64) {
        return Err(dtype_err(format!("{op}: expected float32 or float64 data, got {}", x.dtype.name())));
    }
    if !x.t.device().is_cpu() {
        return Err(value_err(format!("{op}: expected a CPU tensor")));
    }
    if complex && x.dims().last() != Some(&2) {
        return Err(value_err(format!("{op}: expected interleaved complex parts (a last dim of 2)")));
    }
    Ok(dt)
}

/// Checks the transformed dim and length; returns the logical dims (without the parts dim).
fn logical_dims(x: &PyTensor, complex: bool, dim: usize, n: usize, op: &str) -> PyResult<Vec<usize>> {
    let dims = x.dims();
    let dims = if complex { &dims[..dims.len() - 1] } else { dims };
    if dim >= dims.len() {
        return Err(value_err(format!("{op}: dim {dim} out of range for {} dims", dims.len())));
    }
    if n == 0 {
        return Err(value_err(format!("{op}: the transform length must be positive")));
    }
    Ok(dims.to_vec())
}

/// Runs `work` over `t`'s elements (read in place when contiguous), without the GIL when large, and
/// makes a CPU tensor of `dims` from its result.
fn compute<T: Float>(
    py: Python<'_>,
    t: &Tensor,
    dims: Vec<usize>,
    work: impl FnOnce(&[T]) -> Vec<T> + Send,
) -> PyResult<PyTensor> {
    let t = t.clone();
    let large = dims.iter().product::<usize>() >= 4096;
    let go = move || -> PyResult<Tensor> {
        // a host computation on purpose (device tensors come here through .cpu()): so in the generic
        // test mode too, where CPU tensors otherwise take the device paths
        let out = crate::device::on_host(|| with_slice::<T, _>(&t, work))?;
        Tensor::from_vec(out, dims, &Device::Cpu).py()
    };
    let out = if large { py.detach(go)? } else { go()? };
    PyTensor::wrap(out)
}

/// `fft_c2c(x, dim, n, inverse, scale=1.0, conj=False)`: the complex FFT (inverse: unnormalised
/// backward) along logical `dim` of the complex tensor whose interleaved parts are `x` (`[..., 2]`,
/// float32/float64), that dim zero-padded or cut to `n`, times `scale`; the input conjugated first
/// if `conj`. Returns the result's parts.
#[pyfunction]
#[pyo3(signature = (x, dim, n, inverse, scale=1.0, conj=false))]
pub fn fft_c2c(py: Python<'_>, x: &PyTensor, dim: usize, n: usize, inverse: bool, scale: f64, conj: bool) -> PyResult<PyTensor> {
    let dt = precision(x, true, "fft_c2c")?;
    let mut dims = logical_dims(x, true, dim, n, "fft_c2c")?;
    let g = Lines::new(&dims, dim, n);
    dims[dim] = n;
    dims.push(2);
    if dt == CDType::F64 {
        compute::<f64>(py, &x.t, dims, move |s| c2c(as_complex(s), g, inverse, conj, scale))
    } else {
        compute::<f32>(py, &x.t, dims, move |s| c2c(as_complex(s), g, inverse, conj, scale as f32))
    }
}

/// `fft_r2c(x, dim, n, onesided=True, scale=1.0, conj=False)`: the FFT along `dim` of the real
/// float32/float64 tensor `x`, that dim zero-padded or cut to `n`: its `n // 2 + 1` first bins
/// (all `n` unless `onesided`), times `scale`, conjugated if `conj`. Returns the result's parts.
#[pyfunction]
#[pyo3(signature = (x, dim, n, onesided=true, scale=1.0, conj=false))]
pub fn fft_r2c(py: Python<'_>, x: &PyTensor, dim: usize, n: usize, onesided: bool, scale: f64, conj: bool) -> PyResult<PyTensor> {
    let dt = precision(x, false, "fft_r2c")?;
    let mut dims = logical_dims(x, false, dim, n, "fft_r2c")?;
    let bins = if onesided { n / 2 + 1 } else { n };
    let g = Lines::new(&dims, dim, bins);
    dims[dim] = bins;
    dims.push(2);
    if dt == CDType::F64 {
        compute::<f64>(py, &x.t, dims, move |s| r2c(s, g, n, onesided, conj, scale))
    } else {
        compute::<f32>(py, &x.t, dims, move |s| r2c(s, g, n, onesided, conj, scale as f32))
    }
}

/// `fft_c2r(x, dim, n, scale=1.0, conj=False)`: the inverse real FFT (unnormalised) along logical
/// `dim` of the complex tensor whose parts are `x`: its first `n // 2 + 1` bins (zero-padded or cut)
/// to `n` real samples, times `scale`; the input conjugated first if `conj`.
#[pyfunction]
#[pyo3(signature = (x, dim, n, scale=1.0, conj=false))]
pub fn fft_c2r(py: Python<'_>, x: &PyTensor, dim: usize, n: usize, scale: f64, conj: bool) -> PyResult<PyTensor> {
    let dt = precision(x, true, "fft_c2r")?;
    let mut dims = logical_dims(x, true, dim, n, "fft_c2r")?;
    let g = Lines::new(&dims, dim, n);
    dims[dim] = n;
    if dt == CDType::F64 {
        compute::<f64>(py, &x.t, dims, move |s| c2r(as_complex(s), g, conj, scale))
    } else {
        compute::<f32>(py, &x.t, dims, move |s| c2r(as_complex(s), g, conj, scale as f32))
    }
}

/// `stft_frames(x, n_fft, hop, window=None, onesided=True, scale=1.0)`: the STFT of the real
/// signals `x` (`batch × length`, float32/float64, already padded): frames of `n_fft` samples `hop`
/// apart, times `window` (`n_fft` values of `x`'s dtype), FFT'd, times `scale`. Returns the parts of
/// the `batch × frames × bins` complex result.
#[pyfunction]
#[pyo3(signature = (x, n_fft, hop, window=None, onesided=true, scale=1.0))]
pub fn stft_frames(
    py: Python<'_>,
    x: &PyTensor,
    n_fft: usize,
    hop: usize,
    window: Option<&PyTensor>,
    onesided: bool,
    scale: f64,
) -> PyResult<PyTensor> {
    let dt = precision(x, false, "stft_frames")?;
    let &[batch, len] = x.dims() else {
        return Err(value_err("stft_frames: expected a (batch, length) tensor"));
    };
    if n_fft == 0 || hop == 0 || n_fft > len {
        return Err(value_err(format!("stft_frames: expected 0 < n_fft <= {len} and hop > 0")));
    }
    let frames = 1 + (len - n_fft) / hop;
    let bins = if onesided { n_fft / 2 + 1 } else { n_fft };
    let w = match window {
        None => None,
        Some(w) => {
            if precision(w, false, "stft_frames")? != dt || w.dims() != [n_fft] {
                return Err(value_err("stft_frames: expected a window of n_fft values of the input's dtype"));
            }
            Some(w.t.clone())
        }
    };
    let dims = vec![batch, frames, bins, 2];
    macro_rules! go {
        ($t:ty) => {{
            let window: Option<Vec<$t>> = match &w {
                Some(w) => Some(crate::device::on_host(|| with_slice::<$t, _>(w, |s| s.to_vec()))?),
                None => None,
            };
            compute::<$t>(py, &x.t, dims, move |s| {
                stft(s, batch, len, n_fft, hop, frames, window.as_deref(), onesided, scale as $t)
            })
        }};
    }
    if dt == CDType::F64 { go!(f64) } else { go!(f32) }
}
