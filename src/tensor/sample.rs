//! The samplers: multinomial, bernoulli(_), uniform_ and normal_, from the generator `manual_seed`
//! sets (creation.rs).

use candle_core::{Device, Tensor};
use pyo3::prelude::*;
use rand::Rng;

use super::creation::Dist;
use super::select::i64_tensor;
use super::{cast, Arg, Operand, PyTensor};
use crate::error::{runtime_err, type_err, IntoPyResult};

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (num_samples, replacement=false, *, generator=None))]
    fn multinomial(&self, num_samples: usize, replacement: bool, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let _ = generator;
        if self.rank() == 0 || self.rank() > 2 {
            return Err(runtime_err("prob_dist must be 1 or 2 dim"));
        }
        if !self.dtype.is_float() {
            return Err(runtime_err(format!("multinomial only supports floating-point dtypes for input, got: {}", self.dtype.title())));
        }
        let n = self.dims()[self.rank() - 1];
        if num_samples == 0 {
            return Err(runtime_err("cannot sample n_sample <= 0 samples"));
        }
        if n == 0 {
            return Err(runtime_err("cannot sample from an empty distribution (prob_dist.size(-1) is 0)"));
        }
        if !replacement && num_samples > n {
            return Err(runtime_err("cannot sample n_sample > prob_dist.size(-1) samples without replacement"));
        }
        let dims: Vec<usize> = if self.rank() == 1 { vec![num_samples] } else { vec![self.dims()[0], num_samples] };
        // The sample count is the user's: check the output's size before reserving it.
        crate::memory::ensure_bytes(crate::memory::bytes_of(&dims, 8)?)?;
        let rows = self.numel() / n;
        // The draws in row order, as one thread would take them: the rows then sample in parallel
        // with the same results at every thread count.
        let draws: Vec<f64> = super::creation::with_rng(|r| (0..rows * num_samples).map(|_| r.random::<f64>()).collect());
        let out = if self.t.dtype() == candle_core::DType::F32 {
            sample_rows(&super::host_vec::<f32>(&self.t)?, n, rows, num_samples, replacement, &draws)?
        } else {
            sample_rows(&super::host_vec::<f64>(&self.t)?, n, rows, num_samples, replacement, &draws)?
        };
        i64_tensor(out, &dims, self.t.device())
    }

    #[pyo3(signature = (p=None, *, generator=None))]
    fn bernoulli(&self, p: Option<f64>, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let _ = generator;
        if !self.dtype.is_float() {
            return Err(runtime_err(format!("bernoulli_ expects a floating point tensor, got {}", self.dtype.title())));
        }
        let probs: Vec<f64> = match p {
            Some(p) => vec![p; self.numel()],
            None => super::host_vec::<f64>(&self.t)?,
        };
        if probs.iter().any(|&x| !(0.0..=1.0).contains(&x)) {
            return Err(runtime_err("Expected p_in >= 0 && p_in <= 1 to be true, but got false."));
        }
        let v: Vec<f64> = super::creation::with_rng(|r| probs.iter().map(|&q| (r.random::<f64>() < q) as u8 as f64).collect());
        let t = Tensor::from_vec(v, self.dims(), self.t.device()).py()?.to_dtype(self.t.dtype()).py()?;
        Ok(self.same(t))
    }
    #[pyo3(signature = (p=None, *, generator=None))]
    fn bernoulli_<'py>(slf: PyRef<'py, Self>, p: Option<&Bound<'_, PyAny>>, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        let r = match p.map(Arg::extract) {
            None => slf.bernoulli(Some(0.5), generator)?,
            Some(Some(Arg::S(s))) => slf.bernoulli(Some(s.as_f64()), generator)?,
            Some(Some(Arg::T(t))) => t.to_dtype_of(&slf)?.bernoulli(None, generator)?,
            Some(None) => return Err(type_err("bernoulli_(): p must be a float or a Tensor")),
        };
        slf.assign(Operand::T(&r))?;
        Ok(slf)
    }
    #[pyo3(signature = (from_=0.0, to=1.0, *, generator=None))]
    #[pyo3(name = "uniform_")]
    fn uniform_<'py>(slf: PyRef<'py, Self>, from_: f64, to: f64, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        let _ = generator;
        slf.fill_random(Dist::Uniform(from_, to))?;
        Ok(slf)
    }
    #[pyo3(signature = (mean=0.0, std=1.0, *, generator=None))]
    fn normal_<'py>(slf: PyRef<'py, Self>, mean: f64, std: f64, generator: Option<&Bound<'_, PyAny>>) -> PyResult<PyRef<'py, Self>> {
        let _ = generator;
        slf.fill_random(Dist::Normal(mean, std))?;
        Ok(slf)
    }
}

impl PyTensor {
    fn to_dtype_of(&self, other: &PyTensor) -> PyResult<PyTensor> {
        Ok(PyTensor::new(cast(&self.t, self.dtype, other.dtype)?.broadcast_as(other.dims()).py()?.contiguous().py()?, other.dtype))
    }

    /// Writes row-major values (as f64) into self, converted to self's dtype.
    fn fill_random(&self, dist: Dist) -> PyResult<()> {
        if !self.dtype.is_float() {
            return Err(runtime_err(format!("random fill expects a floating point tensor, got {}", self.dtype.title())));
        }
        if self.is_meta() {
            return Ok(());
        }
        let t = super::creation::random_tensor(self.dims(), self.dtype, &Device::Cpu, dist)?;
        self.assign(Operand::T(&self.same(t)))
    }
}

/// `multinomial`'s rows: each checked (torch's errors, the first bad row's), then `k` picks with the
/// uniform draws `draws[row · k..]`, over the pool when there is enough of them.
fn sample_rows<T: Copy + Into<f64> + Sync>(p: &[T], n: usize, rows: usize, k: usize, replacement: bool, draws: &[f64]) -> PyResult<Vec<i64>> {
    let row = |i: usize| -> Result<Vec<i64>, &'static str> {
        let mut w = Blocked::new(&p[i * n..(i + 1) * n]).ok_or("probability tensor contains either `inf`, `nan` or element < 0")?;
        if w.total() <= 0.0 {
            return Err("invalid multinomial distribution (sum of probabilities <= 0)");
        }
        if !replacement && w.positive < k {
            return Err("invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)");
        }
        Ok((0..k).map(|s| {
            let j = w.pick(draws[i * k + s]);
            if !replacement {
                w.zero(j);
            }
            j as i64
        }).collect())
    };
    let mut res: Vec<Result<Vec<i64>, &'static str>> = vec![Ok(Vec::new()); rows];
    if rows > 1 && rows * n >= 1 << 15 {
        crate::pool::chunks_mut(&mut res, 1, |i, r| r[0] = row(i));
    } else {
        res.iter_mut().enumerate().for_each(|(i, r)| *r = row(i));
    }
    let mut out = Vec::with_capacity(rows * k);
    for r in res {
        out.extend(r.map_err(runtime_err)?);
    }
    Ok(out)
}

/// Σ row in eight interleaved partial sums (vectorised; one running sum waits on every add).
fn sum_f64(row: &[f64]) -> f64 {
    let mut acc = [0f64; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    acc.iter().sum::<f64>() + chunks.remainder().iter().sum::<f64>()
}

/// A row of non-negative weights for sampling: the running totals of its blocks of `SAMPLE_BLOCK`,
/// so a draw finds its block by binary search and walks one block (a walk over the whole row was a
/// chain of dependent adds: 1 ms for 8 rows of 32000).
struct Blocked {
    w: Vec<f64>,
    /// Each block's sum, and cum[b]: the sum of blocks 0..=b.
    sums: Vec<f64>,
    cum: Vec<f64>,
    /// Weights above zero.
    positive: usize,
}

const SAMPLE_BLOCK: usize = 64;

impl Blocked {
    /// None when a weight is negative, infinite or NaN.
    fn new<T: Copy + Into<f64>>(row: &[T]) -> Option<Blocked> {
        let w: Vec<f64> = row.iter().map(|&x| x.into()).collect();
        // Counted branch-free, so that the passes vectorise.
        let bad: usize = w.iter().map(|x| !(0.0..=f64::MAX).contains(x) as usize).sum();
        if bad > 0 {
            return None;
        }
        let positive = w.iter().map(|&x| (x > 0.0) as usize).sum();
        let sums: Vec<f64> = w.chunks(SAMPLE_BLOCK).map(sum_f64).collect();
        let mut b = Blocked { w, cum: vec![0.0; sums.len()], sums, positive };
        b.totals();
        Some(b)
    }

    fn total(&self) -> f64 {
        self.cum.last().copied().unwrap_or(0.0)
    }

    fn totals(&mut self) {
        let mut acc = 0.0;
        for (c, &s) in self.cum.iter_mut().zip(&self.sums) {
            acc += s;
            *c = acc;
        }
    }

    /// The first positive weight whose running total passes u · total (the last positive one if
    /// rounding leaves u past them all).
    fn pick(&self, u: f64) -> usize {
        let target = u * self.total();
        let b = self.cum.partition_point(|&c| c <= target);
        let mut acc = if b == 0 { 0.0 } else { self.cum[b - 1] };
        for (j, &x) in self.w.iter().enumerate().skip(b * SAMPLE_BLOCK) {
            acc += x;
            if target < acc && x > 0.0 {
                return j;
            }
        }
        self.w.iter().rposition(|&x| x > 0.0).unwrap_or(0)
    }

    /// Drops weight `j` (sampling without replacement): its block's sum again, then the totals.
    fn zero(&mut self, j: usize) {
        self.w[j] = 0.0;
        let b = j / SAMPLE_BLOCK;
        self.sums[b] = sum_f64(&self.w[b * SAMPLE_BLOCK..((b + 1) * SAMPLE_BLOCK).min(self.w.len())]);
        self.totals();
    }
}
