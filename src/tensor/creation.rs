//! Tensor creation with torch's signatures and dtype inference; a seeded global generator.

use std::sync::Mutex;

use candle_core::{Device, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PySequence, PyTuple};
use ::rand::{Rng, SeedableRng};

use super::shape::{int_arg, shape_args};
use super::{cast, PyTensor, Scalar};
use crate::device::{opt_device, opt_place, Place};
use crate::dtype::{opt_dtype, DType, Kind};
use crate::error::{runtime_err, type_err, IntoPyResult};

/// The global generator: ChaCha12 (rand's StdRng algorithm, the same stream for a seed), named
/// directly so that its whole state can be read and restored (`get_rng_state`).
type Rng12 = rand_chacha::ChaCha12Rng;

static RNG: Mutex<Option<Rng12>> = Mutex::new(None);
const DEFAULT_SEED: u64 = 67280421310721;

/// Runs `f` with the global generator (seeded with torch's default seed until `manual_seed`).
pub(crate) fn with_rng<T>(f: impl FnOnce(&mut Rng12) -> T) -> T {
    let mut g = RNG.lock().unwrap_or_else(|p| p.into_inner());
    f(g.get_or_insert_with(|| Rng12::seed_from_u64(DEFAULT_SEED)))
}

#[pyfunction]
pub fn manual_seed(seed: i64) -> i64 {
    *RNG.lock().unwrap_or_else(|p| p.into_inner()) = Some(Rng12::seed_from_u64(seed as u64));
    seed
}

#[pyfunction]
pub fn seed() -> u64 {
    let s: u64 = ::rand::random();
    *RNG.lock().unwrap_or_else(|p| p.into_inner()) = Some(Rng12::seed_from_u64(s));
    s
}

/// The generator's whole state as 56 bytes: key (32), stream (8), position in words (16).
#[pyfunction]
pub fn rng_state() -> Vec<u8> {
    with_rng(|g| {
        let mut out = g.get_seed().to_vec();
        out.extend_from_slice(&g.get_stream().to_le_bytes());
        out.extend_from_slice(&g.get_word_pos().to_le_bytes());
        out
    })
}

/// Restores a state from `rng_state`.
#[pyfunction]
pub fn set_rng_state(state: Vec<u8>) -> PyResult<()> {
    if state.len() != 56 {
        return Err(runtime_err(format!("RNG state must be 56 bytes (from get_rng_state), got {}", state.len())));
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&state[..32]);
    let mut g = Rng12::from_seed(key);
    g.set_stream(u64::from_le_bytes(state[32..40].try_into().map_err(|_| runtime_err("bad RNG state"))?));
    g.set_word_pos(u128::from_le_bytes(state[40..56].try_into().map_err(|_| runtime_err("bad RNG state"))?));
    *RNG.lock().unwrap_or_else(|p| p.into_inner()) = Some(g);
    Ok(())
}

/// Sizes given as varargs or one sequence, checked non-negative as torch checks them.
pub fn size_arg(args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    let s = shape_args(args)?;
    if let Some(&bad) = s.iter().find(|&&d| d < 0) {
        return Err(runtime_err(format!("Trying to create tensor with negative dimension {bad}: {s:?}")));
    }
    Ok(s.into_iter().map(|d| d as usize).collect())
}

fn filled(dims: &[usize], value: Scalar, dtype: DType, device: &Device) -> PyResult<PyTensor> {
    crate::memory::ensure(dims, dtype.candle(), device)?;
    crate::device::check_dtype(device, dtype)?;
    let one = value.tensor(dtype, &Device::Cpu)?;
    if !device.is_cpu() {
        // One value uploaded, then copied out on the device.
        return Ok(PyTensor::new(one.to_device(device).py()?.broadcast_as(dims).py()?.contiguous().py()?, dtype));
    }
    // Candle's broadcast-then-copy is a strided gather; a plain fill of the element is ~20x faster.
    let n: usize = dims.iter().product();
    let t = super::with_dtype!(one.dtype(), T => {
        let v = one.to_scalar::<T>().py()?;
        Tensor::from_vec(super::kernels::filled_vec(n, v), dims, device).py()
    })?;
    Ok(PyTensor::new(t, dtype))
}

fn zeros_t(dims: &[usize], dtype: DType, device: &Device) -> PyResult<PyTensor> {
    crate::memory::ensure(dims, dtype.candle(), device)?;
    crate::device::check_dtype(device, dtype)?;
    let n: usize = dims.iter().product();
    if device.is_cpu() && n >= super::kernels::PAR_THRESHOLD && dtype.candle() != candle_core::DType::F8E4M3 {
        // Zeroed over the pool (Candle's zeros is one thread's memset).
        let t = super::with_dtype!(dtype.candle(), T => {
            Tensor::from_vec(super::kernels::filled_vec(n, <T as candle_core::WithDType>::from_f64(0.0)), dims, device).py()
        })?;
        return Ok(PyTensor::new(t, dtype));
    }
    Ok(PyTensor::new(Tensor::zeros(dims, dtype.candle(), device).py()?, dtype))
}

/// Parses nested Python sequences into a flat list of scalars and a shape.
fn walk(ob: &Bound<'_, PyAny>, depth: usize, shape: &mut Vec<usize>, out: &mut Vec<Scalar>, kind: &mut Kind) -> PyResult<()> {
    if let Ok(t) = ob.cast::<PyTensor>() {
        let t = t.borrow();
        if t.numel() != 1 || t.rank() != 0 {
            if depth == shape.len() {
                // A tensor inside a list: take its values as a nested list.
                let l = super::convert::to_list(ob.py(), &t)?;
                return walk(l.bind(ob.py()), depth, shape, out, kind);
            }
        }
        let s = super::convert::scalar_of(&t)?;
        *kind = (*kind).max(s.kind());
        out.push(s);
        return check_leaf(depth, shape);
    }
    if let Some(s) = Scalar::extract(ob) {
        *kind = (*kind).max(s.kind());
        out.push(s);
        return check_leaf(depth, shape);
    }
    if depth > 64 || ob.is_instance_of::<pyo3::types::PyString>() || ob.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(type_err(format!(
            "new(): invalid data type '{}'",
            ob.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        )));
    }
    let seq = ob.cast::<PySequence>().map_err(|_| {
        type_err(format!(
            "new(): invalid data type '{}'",
            ob.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let n = seq.len()?;
    if depth == shape.len() {
        if !out.is_empty() {
            return Err(type_err("new(): mixed scalars and sequences at the same depth"));
        }
        shape.push(n);
    } else if shape[depth] != n {
        return Err(crate::error::value_err(format!(
            "expected sequence of length {} at dim {depth} (got {n})",
            shape[depth]
        )));
    }
    for item in seq.try_iter()? {
        walk(&item?, depth + 1, shape, out, kind)?;
    }
    Ok(())
}

fn check_leaf(depth: usize, shape: &[usize]) -> PyResult<()> {
    if depth != shape.len() {
        return Err(type_err(format!("expected a sequence at dim {depth} but found a scalar")));
    }
    Ok(())
}

/// Builds a tensor from Python data (numbers, nested lists/tuples, numpy arrays, tensors).
pub fn from_data(data: &Bound<'_, PyAny>, dtype: Option<DType>, device: &Device) -> PyResult<PyTensor> {
    if let Ok(t) = data.cast::<PyTensor>() {
        let t = t.borrow();
        let d = dtype.unwrap_or(t.dtype);
        return Ok(PyTensor::new(cast(&t.t.copy().py()?, t.dtype, d)?.to_device(device).py()?, d));
    }
    if super::convert::is_ndarray(data) {
        let t = super::convert::from_numpy_any(data)?;
        let d = dtype.unwrap_or(t.dtype);
        return Ok(PyTensor::new(cast(&t.t, t.dtype, d)?.to_device(device).py()?, d));
    }
    let mut shape = Vec::new();
    let mut vals = Vec::new();
    let mut kind = Kind::Bool;
    walk(data, 0, &mut shape, &mut vals, &mut kind)?;
    if vals.is_empty() {
        kind = Kind::Float;
    }
    let d = dtype.unwrap_or(DType::default_for(kind));
    let t = match d {
        DType::Bool => Tensor::from_vec(vals.iter().map(|s| s.truthy() as u8).collect::<Vec<_>>(), shape, device),
        DType::U8 => Tensor::from_vec(vals.iter().map(|s| s.as_i64() as u8).collect::<Vec<_>>(), shape, device),
        DType::I32 => Tensor::from_vec(vals.iter().map(|s| s.as_i64() as i32).collect::<Vec<_>>(), shape, device),
        DType::I64 => Tensor::from_vec(vals.iter().map(|s| s.as_i64()).collect::<Vec<_>>(), shape, device),
        DType::F64 => Tensor::from_vec(vals.iter().map(|s| s.as_f64()).collect::<Vec<_>>(), shape, device),
        other => Tensor::from_vec(vals.iter().map(|s| s.as_f64() as f32).collect::<Vec<_>>(), shape, device)
            .and_then(|t| t.to_dtype(other.candle())),
    }
    .py()?;
    Ok(PyTensor::new(t, d))
}

#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false, pin_memory=false))]
pub fn tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = (requires_grad, pin_memory);
    let place = opt_place(device)?;
    let t = from_data(data, opt_dtype(dtype)?, &Device::Cpu)?;
    match place {
        Place::Meta => t.meta_like(t.dims()),
        Place::Real(dev) if dev.is_cpu() => Ok(t),
        Place::Real(dev) => {
            crate::device::check_dtype(&dev, t.dtype)?;
            Ok(t.same(t.t.to_device(&dev).py()?))
        }
    }
}

/// as_tensor: shares memory with a tensor argument when no conversion is needed.
#[pyfunction]
#[pyo3(signature = (data, dtype=None, device=None))]
pub fn as_tensor(data: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let d = opt_dtype(dtype)?;
    if let Ok(t) = data.cast::<PyTensor>() {
        let t = t.borrow();
        let dt = d.unwrap_or(t.dtype);
        let dev = match device.filter(|d| !d.is_none()) {
            Some(dv) => crate::device::extract_device(dv)?.candle()?,
            None => t.t.device().clone(),
        };
        crate::device::check_dtype(&dev, dt)?;
        return Ok(PyTensor::new(cast(&t.t, t.dtype, dt)?.to_device(&dev).py()?, dt));
    }
    from_data(data, d, &opt_device(device)?)
}

macro_rules! factory {
    ($name:ident, $body:expr) => {
        #[pyfunction]
        #[pyo3(signature = (*args, size=None, dtype=None, device=None, requires_grad=false, out=None, layout=None, pin_memory=false, generator=None, memory_format=None))]
        #[allow(clippy::too_many_arguments)]
        pub fn $name(
            args: &Bound<'_, PyTuple>,
            size: Option<&Bound<'_, PyAny>>,
            dtype: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
            out: Option<&Bound<'_, PyAny>>,
            layout: Option<&Bound<'_, PyAny>>,
            pin_memory: bool,
            generator: Option<&Bound<'_, PyAny>>,
            memory_format: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyTensor> {
            // generator: one global stream (torch.Generator.manual_seed seeds it).
            let _ = (requires_grad, out, layout, pin_memory, generator, memory_format);
            let dims = match size {
                Some(s) if args.is_empty() => size_arg(&PyTuple::new(args.py(), [s])?)?,
                Some(_) => return Err(crate::error::type_err(concat!(stringify!($name), "() got multiple values for argument 'size'"))),
                None => size_arg(args)?,
            };
            let dt = opt_dtype(dtype)?.unwrap_or(crate::dtype::default_float());
            match opt_place(device)? {
                Place::Meta => super::meta::meta_tensor(&dims, dt),
                #[allow(clippy::redundant_closure_call)]
                Place::Real(dev) => ($body)(&dims, dt, &dev),
            }
        }
    };
}

factory!(zeros, |d: &[usize], dt, dev| zeros_t(d, dt, dev));
factory!(empty, |d: &[usize], dt, dev| zeros_t(d, dt, dev));
factory!(ones, |d: &[usize], dt, dev| filled(d, Scalar::Int(1), dt, dev));
factory!(rand, |d: &[usize], dt: DType, dev: &Device| random(d, dt, dev, false));
factory!(randn, |d: &[usize], dt: DType, dev: &Device| random(d, dt, dev, true));

fn random(dims: &[usize], dt: DType, dev: &Device, normal: bool) -> PyResult<PyTensor> {
    if !dt.is_float() {
        return Err(runtime_err(format!(
            "\"{}\" not implemented for '{}'",
            if normal { "normal_kernel_cpu" } else { "check_uniform_bounds" },
            dt.name()
        )));
    }
    let dist = if normal { Dist::Normal(0.0, 1.0) } else { Dist::Uniform(0.0, 1.0) };
    Ok(PyTensor::new(random_tensor(dims, dt, dev, dist)?, dt))
}

/// The distributions of rand/randn/uniform_/normal_: (from, to) and (mean, std).
#[derive(Clone, Copy)]
pub(crate) enum Dist {
    Uniform(f64, f64),
    Normal(f64, f64),
}

/// A float tensor of samples. Blocks of 4096 are filled in parallel, each by its own small generator
/// seeded from the global stream, so the numbers depend on the seed and not on the thread count.
/// float64 is sampled in f64; the other float dtypes in f32 and cast.
pub(crate) fn random_tensor(dims: &[usize], dt: DType, dev: &Device, dist: Dist) -> PyResult<Tensor> {
    const BLOCK: usize = 4096;
    // f32 samples for every float dtype but float64.
    crate::memory::ensure(dims, if dt == DType::F64 { candle_core::DType::F64 } else { candle_core::DType::F32 }, dev)?;
    let n: usize = dims.iter().product();
    let seeds: Vec<u64> = with_rng(|r| (0..n.div_ceil(BLOCK)).map(|_| r.random()).collect());
    let t = if dt == DType::F64 {
        let mut v = vec![0f64; n];
        crate::pool::chunks_mut(&mut v, BLOCK, |i, out| {
            let mut g = ::rand::rngs::SmallRng::seed_from_u64(seeds[i]);
            fill_block(&mut g, out, dist, box_muller_f64);
        });
        Tensor::from_vec(v, dims, dev).py()?
    } else {
        let mut v = super::kernels::uninit_vec::<f32>(n);
        crate::pool::chunks_mut(&mut v, BLOCK, |i, out| {
            let mut g = ::rand::rngs::SmallRng::seed_from_u64(seeds[i]);
            fill_block(&mut g, out, dist, box_muller_f32);
        });
        Tensor::from_vec(v, dims, dev).py()?.to_dtype(dt.candle()).py()?
    };
    Ok(t)
}

/// One block of samples: uniforms, then scaled, or turned into normals by `box_muller`.
fn fill_block<T, R: Rng>(g: &mut R, out: &mut [T], dist: Dist, box_muller: impl Fn(&mut [T], T, T, T))
where
    T: num_traits::Float,
    ::rand::distr::StandardUniform: ::rand::distr::Distribution<T>,
{
    let cast = |x: f64| T::from(x).unwrap_or_else(T::zero);
    out.iter_mut().for_each(|o| *o = g.random::<T>());
    match dist {
        Dist::Uniform(from, to) => {
            let (a, w) = (cast(from), cast(to - from));
            out.iter_mut().for_each(|o| *o = a + w * *o);
        }
        Dist::Normal(mean, std) => box_muller(out, cast(mean), cast(std), g.random::<T>()),
    }
}

/// Box–Muller in place over uniforms in [0, 1), neighbours paired; an odd last value is paired with
/// `partner`.
fn box_muller_f64(u: &mut [f64], mean: f64, std: f64, partner: f64) {
    let n = u.len();
    for i in (0..n).step_by(2) {
        let u2 = if i + 1 < n { u[i + 1] } else { partner };
        let r = (-2.0 * (1.0 - u[i]).ln()).sqrt();
        let (sin, cos) = (std::f64::consts::TAU * u2).sin_cos();
        u[i] = mean + std * r * cos;
        if i + 1 < n {
            u[i + 1] = mean + std * r * sin;
        }
    }
}

super::kernels::multiversion! {
    /// Box–Muller in place over uniforms in [0, 1): lanes j and j + 8 of each 16 become two normals
    /// (branch-free, so it vectorises); a short tail pairs neighbours, and an odd last value is paired
    /// with `partner`.
    fn box_muller_f32<>(u: &mut [f32], mean: f32, std: f32, partner: f32) where [] {
        #[inline(always)]
        fn pair(u1: f32, u2: f32) -> (f32, f32) {
            let r = (-2.0 * super::kernels::ln_pos_f32(1.0 - u1)).sqrt();
            // θ = 2h with h in [-π/2, π/2): sin h by its odd series (error < 4e-6), then double angle.
            let h = std::f32::consts::PI * (u2 - 0.5);
            let h2 = h * h;
            let s = h * (1.0 + h2 * (-1.0 / 6.0 + h2 * (1.0 / 120.0 + h2 * (-1.0 / 5040.0 + h2 * (1.0 / 362_880.0)))));
            (r * (1.0 - 2.0 * s * s), r * 2.0 * s * (1.0 - s * s).max(0.0).sqrt())
        }
        let mut blocks = u.chunks_exact_mut(16);
        for b in &mut blocks {
            let (lo, hi) = b.split_at_mut(8);
            for (a, c) in lo.iter_mut().zip(hi.iter_mut()) {
                let (x, y) = pair(*a, *c);
                *a = mean + std * x;
                *c = mean + std * y;
            }
        }
        let tail = blocks.into_remainder();
        let n = tail.len();
        for i in (0..n).step_by(2) {
            let (x, y) = pair(tail[i], if i + 1 < n { tail[i + 1] } else { partner });
            tail[i] = mean + std * x;
            if i + 1 < n {
                tail[i + 1] = mean + std * y;
            }
        }
    }
}

#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false, layout=None, pin_memory=false))]
#[allow(clippy::too_many_arguments)]
pub fn full(
    size: &Bound<'_, PyAny>, fill_value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool, layout: Option<&Bound<'_, PyAny>>, pin_memory: bool,
) -> PyResult<PyTensor> {
    let _ = (requires_grad, layout, pin_memory);
    let dims = size_arg(&PyTuple::new(size.py(), [size])?)?;
    let v = fill_scalar(fill_value)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::default_for(v.kind()));
    place_or(opt_place(device)?, &dims, dt, |dev| filled(&dims, v, dt, dev))
}

/// `make(device)` on a real device; on the meta device, a meta tensor of `dims` and `dtype` instead.
fn place_or(place: Place, dims: &[usize], dtype: DType, make: impl FnOnce(&Device) -> PyResult<PyTensor>) -> PyResult<PyTensor> {
    match place {
        Place::Meta => super::meta::meta_tensor(dims, dtype),
        Place::Real(dev) => make(&dev),
    }
}

fn fill_scalar(ob: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Ok(t) = ob.cast::<PyTensor>() {
        return super::convert::scalar_of(&t.borrow());
    }
    Scalar::extract(ob).ok_or_else(|| type_err(format!("fill_value must be a number, not {}", ob.get_type().name().map(|n| n.to_string()).unwrap_or_default())))
}

/// The dtype and place of a `*_like` result: the input's unless given (a meta input gives meta).
fn like_args(input: &PyTensor, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>) -> PyResult<(DType, Place)> {
    let dt = opt_dtype(dtype)?.unwrap_or(input.dtype);
    let place = match device.filter(|d| !d.is_none()) {
        Some(d) => crate::device::extract_device(d)?.place()?,
        None if input.is_meta() => Place::Meta,
        None => Place::Real(input.t.device().clone()),
    };
    Ok((dt, place))
}

macro_rules! like {
    ($name:ident, $body:expr) => {
        #[pyfunction]
        #[pyo3(signature = (input, *, dtype=None, device=None, requires_grad=false, memory_format=None, layout=None))]
        pub fn $name(
            input: &PyTensor,
            dtype: Option<&Bound<'_, PyAny>>,
            device: Option<&Bound<'_, PyAny>>,
            requires_grad: bool,
            memory_format: Option<&Bound<'_, PyAny>>,
            layout: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<PyTensor> {
            let _ = (requires_grad, memory_format, layout);
            let (dt, place) = like_args(input, dtype, device)?;
            #[allow(clippy::redundant_closure_call)]
            place_or(place, input.dims(), dt, |dev| ($body)(input.dims(), dt, dev))
        }
    };
}

like!(zeros_like, |d: &[usize], dt, dev| zeros_t(d, dt, dev));
like!(empty_like, |d: &[usize], dt, dev| zeros_t(d, dt, dev));
like!(ones_like, |d: &[usize], dt, dev| filled(d, Scalar::Int(1), dt, dev));
like!(rand_like, |d: &[usize], dt, dev| random(d, dt, dev, false));
like!(randn_like, |d: &[usize], dt, dev| random(d, dt, dev, true));

#[pyfunction]
#[pyo3(signature = (input, fill_value, *, dtype=None, device=None, requires_grad=false, memory_format=None, layout=None))]
#[allow(clippy::too_many_arguments)]
pub fn full_like(
    input: &PyTensor, fill_value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool, memory_format: Option<&Bound<'_, PyAny>>, layout: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    // Accepted as torch's `*_like` functions take them (torchvision passes layout=torch.strided).
    let _ = (requires_grad, memory_format, layout);
    let (dt, place) = like_args(input, dtype, device)?;
    let v = fill_scalar(fill_value)?;
    place_or(place, input.dims(), dt, |dev| filled(input.dims(), v, dt, dev))
}

/// randint(high, size) or randint(low, high, size); int64 unless dtype says otherwise.
#[pyfunction]
#[pyo3(signature = (*args, size=None, dtype=None, device=None, generator=None))]
pub fn randint(args: &Bound<'_, PyTuple>, size: Option<&Bound<'_, PyAny>>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let _ = generator;
    let mut a: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let size_ob = match size {
        Some(s) => s.clone(),
        None => a.pop().ok_or_else(|| type_err("randint() missing required argument 'size'"))?,
    };
    let (low, high) = match a.len() {
        1 => (0, int_arg(&a[0])?),
        2 => (int_arg(&a[0])?, int_arg(&a[1])?),
        _ => return Err(type_err("randint() takes (high, size) or (low, high, size)")),
    };
    if low >= high {
        return Err(runtime_err(format!("random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")));
    }
    let dims = size_arg(&PyTuple::new(args.py(), [size_ob])?)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::I64);
    place_or(opt_place(device)?, &dims.clone(), dt, |dev| {
        crate::memory::ensure(&dims, candle_core::DType::I64, dev)?;
        let n: usize = dims.iter().product();
        let v: Vec<i64> = with_rng(|r| (0..n).map(|_| r.random_range(low..high)).collect());
        let t = Tensor::from_vec(v, dims, dev).py()?;
        Ok(PyTensor::new(cast(&t, DType::I64, dt)?, dt))
    })
}

#[pyfunction]
#[pyo3(signature = (n, *, dtype=None, device=None, generator=None))]
pub fn randperm(n: usize, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let _ = generator;
    crate::memory::ensure(&[n], candle_core::DType::I64, &Device::Cpu)?;
    let mut v: Vec<i64> = (0..n as i64).collect();
    with_rng(|r| {
        for i in (1..n).rev() {
            let j = r.random_range(0..=i);
            v.swap(i, j);
        }
    });
    let dt = opt_dtype(dtype)?.unwrap_or(DType::I64);
    let place = opt_place(device)?;
    let t = Tensor::from_vec(v, n, &real_device(&place)).py()?;
    on_place(place, PyTensor::new(cast(&t, DType::I64, dt)?, dt))
}

/// arange(end) / arange(start, end, step): int64 unless an argument is a float (then float32).
#[pyfunction]
#[pyo3(signature = (*args, dtype=None, device=None, requires_grad=false, end=None, step=None))]
pub fn arange(args: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool, end: Option<&Bound<'_, PyAny>>, step: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let _ = requires_grad;
    let mut vals: Vec<Scalar> = args.iter().map(|a| fill_scalar(&a)).collect::<PyResult<_>>()?;
    if let Some(e) = end {
        vals.push(fill_scalar(e)?);
    }
    if let Some(s) = step {
        if vals.len() == 1 {
            vals.insert(0, Scalar::Int(0));
        }
        vals.push(fill_scalar(s)?);
    }
    let (start, stop, st) = match vals.as_slice() {
        [e] => (Scalar::Int(0), *e, Scalar::Int(1)),
        [s, e] => (*s, *e, Scalar::Int(1)),
        [s, e, st] => (*s, *e, *st),
        _ => return Err(type_err("arange() takes 1 to 3 positional arguments")),
    };
    let kind = start.kind().max(stop.kind()).max(st.kind()).max(Kind::Int);
    let dt = opt_dtype(dtype)?.unwrap_or(DType::default_for(kind));
    let (a, b, s) = (start.as_f64(), stop.as_f64(), st.as_f64());
    let show = |v: f64| if v.is_nan() { "nan".to_string() } else { v.to_string() };
    if !(a.is_finite() && b.is_finite()) {
        return Err(runtime_err(format!("unsupported range: {} -> {}", show(a), show(b))));
    }
    if !s.is_finite() {
        return Err(runtime_err(format!("step must be finite but got {}", show(s))));
    }
    if s == 0.0 {
        return Err(runtime_err("step must be nonzero"));
    }
    if (s > 0.0 && b < a) || (s < 0.0 && b > a) {
        return Err(runtime_err("upper bound and larger bound inconsistent with step sign"));
    }
    let place = opt_place(device)?;
    let dev = match &place {
        Place::Meta => Device::Cpu,
        Place::Real(d) => d.clone(),
    };
    let t = if kind == Kind::Int {
        // All-integer arguments: exact integer arithmetic.
        let (a, b, s) = (start.as_i64(), stop.as_i64(), st.as_i64());
        let n = ((b - a) as i128 + (s as i128) - s.signum() as i128) / s as i128;
        let n = n.max(0) as usize;
        crate::memory::ensure(&[n], candle_core::DType::I64, &Device::Cpu)?;
        Tensor::from_vec((0..n as i64).map(|i| a + i * s).collect::<Vec<_>>(), n, &dev).py()?
    } else {
        let n = ((b - a) / s).ceil().max(0.0) as usize;
        crate::memory::ensure(&[n], candle_core::DType::F64, &Device::Cpu)?;
        Tensor::from_vec((0..n).map(|i| a + i as f64 * s).collect::<Vec<_>>(), n, &dev).py()?
    };
    let from = DType::from_candle(t.dtype())?;
    on_place(place, PyTensor::new(cast(&t, from, dt)?, dt))
}

/// A small factory result built on the CPU (or its real device), as a meta tensor if meta was asked for.
fn on_place(place: Place, t: PyTensor) -> PyResult<PyTensor> {
    match place {
        Place::Meta => t.meta_like(t.dims()),
        Place::Real(_) => Ok(t),
    }
}

fn real_device(place: &Place) -> Device {
    match place {
        Place::Meta => Device::Cpu,
        Place::Real(d) => d.clone(),
    }
}

#[pyfunction]
#[pyo3(signature = (n, m=None, *, dtype=None, device=None, requires_grad=false))]
pub fn eye(n: usize, m: Option<usize>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool) -> PyResult<PyTensor> {
    let _ = requires_grad;
    let m = m.unwrap_or(n);
    let dt = opt_dtype(dtype)?.unwrap_or(crate::dtype::default_float());
    let place = opt_place(device)?;
    if let Place::Meta = place {
        return super::meta::meta_tensor(&[n, m], dt);
    }
    crate::memory::ensure(&[n, m], dt.candle(), &Device::Cpu)?;
    let v: Vec<u8> = (0..n * m).map(|i| (i / m == i % m) as u8).collect();
    let t = Tensor::from_vec(v, (n, m), &real_device(&place)).py()?;
    Ok(PyTensor::new(cast(&t, DType::Bool, dt)?, dt))
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
    fn new_zeros(&self, size: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool) -> PyResult<PyTensor> {
        let _ = requires_grad;
        let (dt, place) = like_args(self, dtype, device)?;
        let dims = size_arg(size)?;
        place_or(place, &dims, dt, |dev| zeros_t(&dims, dt, dev))
    }
    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
    fn new_empty(&self, size: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool) -> PyResult<PyTensor> {
        self.new_zeros(size, dtype, device, requires_grad)
    }
    #[pyo3(signature = (*size, dtype=None, device=None, requires_grad=false))]
    fn new_ones(&self, size: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool) -> PyResult<PyTensor> {
        let _ = requires_grad;
        let (dt, place) = like_args(self, dtype, device)?;
        let dims = size_arg(size)?;
        place_or(place, &dims, dt, |dev| filled(&dims, Scalar::Int(1), dt, dev))
    }
    #[pyo3(signature = (size, fill_value, *, dtype=None, device=None, requires_grad=false))]
    fn new_full(&self, size: &Bound<'_, PyAny>, fill_value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool) -> PyResult<PyTensor> {
        let _ = requires_grad;
        let (dt, place) = like_args(self, dtype, device)?;
        let dims = size_arg(&PyTuple::new(size.py(), [size])?)?;
        let v = fill_scalar(fill_value)?;
        place_or(place, &dims, dt, |dev| filled(&dims, v, dt, dev))
    }
    #[pyo3(signature = (data, *, dtype=None, device=None, requires_grad=false))]
    fn new_tensor(&self, data: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, device: Option<&Bound<'_, PyAny>>, requires_grad: bool) -> PyResult<PyTensor> {
        let _ = requires_grad;
        let (dt, place) = like_args(self, dtype, device)?;
        let t = from_data(data, Some(dt), &real_device(&place))?;
        on_place(place, t)
    }
}

#[pymethods]
impl PyTensor {
    /// torch.Tensor(...): a tensor shares `Tensor(t)`'s memory (what `nn.Parameter(t)` builds on),
    /// data gives float32, sizes give a float32 tensor of zeros, nothing gives an empty one.
    #[new]
    #[pyo3(signature = (*args, **kwargs))]
    fn py_new(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, pyo3::types::PyDict>>) -> PyResult<Self> {
        let _ = kwargs;
        if args.is_empty() {
            return zeros_t(&[0], DType::F32, &Device::Cpu);
        }
        if args.len() == 1 {
            let a = args.get_item(0)?;
            if let Ok(t) = a.cast::<PyTensor>() {
                let t = t.borrow();
                return Ok(PyTensor::new(t.t.clone(), t.dtype));
            }
            if !a.is_instance_of::<pyo3::types::PyInt>() {
                return from_data(&a, Some(crate::dtype::default_float()), &Device::Cpu);
            }
        }
        zeros_t(&size_arg(args)?, crate::dtype::default_float(), &Device::Cpu)
    }
}
