//! Selection by order: sort/argsort/topk/kthvalue over the lines along a dim (rows in parallel,
//! on sortable integer keys), unique, searchsorted and bucketize.

use std::cmp::Ordering;

use candle_core::{Device, Tensor, WithDType};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::reduce::values_indices;
use super::select::i64_tensor;
use super::{cast, norm_dim, with_dtype, PyTensor, Scalar};
use crate::dtype::DType;
use crate::error::{index_err, runtime_err, type_err, IntoPyResult};


/// Total order used by sort/topk/unique: NaN above everything, as torch orders it.
pub trait Key: Copy {
    fn cmp_key(&self, other: &Self) -> Ordering;
}
macro_rules! int_key {
    ($($t:ty),*) => {$(impl Key for $t { fn cmp_key(&self, o: &Self) -> Ordering { self.cmp(o) } })*};
}
int_key!(u8, i16, i32, i64);
macro_rules! float_key {
    ($($t:ty),*) => {$(impl Key for $t {
        fn cmp_key(&self, o: &Self) -> Ordering {
            self.partial_cmp(o).unwrap_or_else(|| self.is_nan().cmp(&o.is_nan()))
        }
    })*};
}
float_key!(f32, f64, half::f16, half::bf16, float8::F8E4M3);

/// An unsigned key with the same order as `Key` (NaN largest): sorting keys is much faster than
/// comparing floats through a closure.
pub trait OrdKey: Copy {
    fn ord_key(self) -> u64;
}
impl OrdKey for u8 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        self as u64
    }
}
impl OrdKey for i16 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        (self as u16 ^ 0x8000) as u64
    }
}
impl OrdKey for i32 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        (self as u32 ^ 0x8000_0000) as u64
    }
}
impl OrdKey for i64 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        self as u64 ^ (1 << 63)
    }
}
impl OrdKey for f32 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        let b = if self.is_nan() { f32::NAN.to_bits() & 0x7fff_ffff | 0x7fc0_0000 } else { (self + 0.0).to_bits() };
        (if b >> 31 == 1 { !b } else { b | 0x8000_0000 }) as u64
    }
}
impl OrdKey for f64 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        let b = if self.is_nan() { 0x7ff8_0000_0000_0000 } else { (self + 0.0).to_bits() };
        if b >> 63 == 1 { !b } else { b | (1 << 63) }
    }
}
impl OrdKey for half::f16 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        self.to_f32().ord_key()
    }
}
impl OrdKey for float8::F8E4M3 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        self.to_f32().ord_key()
    }
}
impl OrdKey for half::bf16 {
    #[inline(always)]
    fn ord_key(self) -> u64 {
        self.to_f32().ord_key()
    }
}

/// Rows longer than this take the radix passes, shorter ones the comparison sort: the passes'
/// fixed cost (three rounds over 8192 cursors) outweighs a comparison sort's up to about 4096 keys
/// (4 rows of 1000 took 3.9x torch's time on the passes, 0.89x now; Zen 5).
const RADIX_MIN: usize = 4096;

/// Positions of one row in sorted order (stable: equal values keep their order; NaN largest).
fn sorted_positions<T: OrdKey>(row: &[T], descending: bool) -> Vec<u32> {
    let flip = if descending { u64::MAX } else { 0 };
    if std::mem::size_of::<T>() <= 4 && row.len() <= u32::MAX as usize {
        // Keys of 32 bits or less pack with the position into one u64: half the bytes to sort.
        let flip = flip >> 32;
        let mut keys: Vec<u64> = row.iter().enumerate().map(|(j, &x)| ((x.ord_key() ^ flip) << 32) | j as u64).collect();
        if keys.len() > RADIX_MIN {
            radix_sort_high32(&mut keys);
        } else {
            keys.sort_unstable();
        }
        return keys.into_iter().map(|k| k as u32).collect();
    }
    let mut keys: Vec<(u64, u32)> = row.iter().enumerate().map(|(j, &x)| (x.ord_key() ^ flip, j as u32)).collect();
    keys.sort_unstable();
    keys.into_iter().map(|(_, j)| j).collect()
}

/// Stable sort of `v` (keys in the high 32 bits, positions in order below) by its keys. The keys
/// equal to the first or last key, where they are an eighth of `v` or more (logits masked to -inf,
/// sorted for top-p sampling: 31950 of 32000), are moved to their end by one stable partition and
/// only the rest goes through the radix passes (there a repeated key's cursor is a chain of
/// dependent increments through memory).
fn radix_sort_high32(v: &mut Vec<u64>) {
    let n = v.len();
    // 64 keys spread over v first: a key that is an eighth of v shows up about 8 times among them
    // (2 or fewer: 1%, and then only the partition is missed); distinct keys skip the full count.
    let sample: Vec<u64> = (0..64).map(|i| v[i * (n / 64)] >> 32).collect();
    let (s_lo, s_hi) = (sample.iter().copied().fold(u64::MAX, u64::min), sample.iter().copied().fold(0, u64::max));
    if sample.iter().filter(|&&k| k == s_lo).count() < 3 && sample.iter().filter(|&&k| k == s_hi).count() < 3 {
        return radix_passes(v);
    }
    let (lo, hi, n_lo, n_hi) = key_ends(v);
    if lo == hi || (n_lo < n / 8 && n_hi < n / 8) {
        return radix_passes(v);
    }
    let mut mid = Vec::with_capacity(n - n_lo - n_hi);
    let (mut at_lo, mut at_hi) = (0, n - n_hi);
    let mut out = super::kernels::uninit_vec::<u64>(n);
    for &x in v.iter() {
        let key = x >> 32;
        if key == lo {
            out[at_lo] = x;
            at_lo += 1;
        } else if key == hi {
            out[at_hi] = x;
            at_hi += 1;
        } else {
            mid.push(x);
        }
    }
    if mid.len() > RADIX_MIN {
        radix_passes(&mut mid);
    } else {
        mid.sort_unstable(); // keys with their positions are distinct: stable
    }
    out[n_lo..n - n_hi].copy_from_slice(&mid);
    *v = out;
}

super::kernels::multiversion! {
    /// The smallest and largest key of `v` and how many keys equal each (vector loops).
    fn key_ends<>(v: &[u64]) -> (u64, u64, usize, usize) where [] {
        let lo = v.iter().map(|&x| x >> 32).fold(u64::MAX, u64::min);
        let hi = v.iter().map(|&x| x >> 32).fold(0, u64::max);
        let n_lo = v.iter().filter(|&&x| x >> 32 == lo).count();
        let n_hi = v.iter().filter(|&&x| x >> 32 == hi).count();
        (lo, hi, n_lo, n_hi)
    }
}

/// Stable LSD radix sort of `v` by its high 32 bits, 11 bits per pass (three passes, not four
/// bytes; the low bits, positions, are already in order, so equal keys keep their order). Four
/// quarters of `v` are counted and scattered side by side, each with its own cursors (a bucket's
/// four next to each other): on keys that repeat (logits masked to -inf) one cursor's increments
/// form a chain through memory, four run at once. Bucket b takes quarter 0's keys, then 1's, ...
fn radix_passes(v: &mut Vec<u64>) {
    const BITS: usize = 11;
    const LANES: usize = 4;
    const MASK: u64 = (1 << BITS) - 1;
    let n = v.len();
    let q = n / LANES;
    let mut tmp = super::kernels::uninit_vec::<u64>(n);
    // u32 cursors: 32 KB for all buckets and lanes, L1-resident (n < 2^32 here).
    let mut at = vec![[0u32; LANES]; 1 << BITS];
    for p in 0..32usize.div_ceil(BITS) {
        let shift = 32 + BITS * p;
        let digit = |x: u64| ((x >> shift) & MASK) as usize;
        at.iter_mut().for_each(|c| *c = [0; LANES]);
        for i in 0..q {
            for l in 0..LANES {
                at[digit(v[l * q + i])][l] += 1;
            }
        }
        for &x in &v[LANES * q..] {
            at[digit(x)][LANES - 1] += 1;
        }
        if at.iter().any(|c| c.iter().map(|&k| k as usize).sum::<usize>() == n) {
            continue; // every key has the same digit here
        }
        let mut start = 0u32;
        for k in at.iter_mut().flatten() {
            (*k, start) = (start, start + *k);
        }
        for i in 0..q {
            for l in 0..LANES {
                let x = v[l * q + i];
                let c = &mut at[digit(x)][l];
                // SAFETY: a cursor stays inside its lane's share of its bucket, below n (the
                // counts sum to n).
                unsafe { *tmp.get_unchecked_mut(*c as usize) = x };
                *c += 1;
            }
        }
        for &x in &v[LANES * q..] {
            let c = &mut at[digit(x)][LANES - 1];
            tmp[*c as usize] = x;
            *c += 1;
        }
        std::mem::swap(v, &mut tmp);
    }
}

/// The `k` best positions of one row (largest or smallest first; ties: lower position first).
fn top_positions<T: OrdKey>(row: &[T], k: usize, largest: bool) -> Vec<u32> {
    if k == 0 {
        return vec![];
    }
    // Smaller transformed key = better, so the buffer keeps the k smallest (key, position) pairs.
    let flip = if largest { u64::MAX } else { 0 };
    let mut buf: Vec<(u64, u32)> = Vec::with_capacity(2 * k + 1);
    // Positions only grow, so a later element equal to the current k-th key never displaces it.
    let mut worst = u64::MAX;
    let mut full = false;
    let mut j = 0;
    while j < row.len() {
        // Once the buffer has filled, most of a long row cannot enter it: whole chunks are
        // skipped by one vectorised test (a row of 32000 logits: a few hundred pass).
        if full {
            j = next_chunk_below(row, j, worst, flip);
        }
        let end = (j + SKIP_CHUNK).min(row.len());
        for (i, &x) in row[j..end].iter().enumerate() {
            let key = x.ord_key() ^ flip;
            if full && key >= worst {
                continue;
            }
            buf.push((key, (j + i) as u32));
            if buf.len() >= 2 * k.max(16) {
                buf.select_nth_unstable(k - 1);
                buf.truncate(k);
                worst = buf.iter().map(|e| e.0).max().unwrap_or(u64::MAX);
                full = true;
            }
        }
        j = end;
    }
    buf.sort_unstable();
    buf.truncate(k);
    buf.into_iter().map(|(_, j)| j).collect()
}

const SKIP_CHUNK: usize = 16;

super::kernels::multiversion! {
    /// The start of the first whole chunk from `from` on holding a key (`^ flip`) below `worst`,
    /// or of the last partial chunk.
    fn next_chunk_below<T>(row: &[T], from: usize, worst: u64, flip: u64) -> usize where [T: OrdKey]
    {
        let mut j = from;
        while j + SKIP_CHUNK <= row.len() {
            let any = row[j..j + SKIP_CHUNK].iter().fold(false, |a, &x| a | ((x.ord_key() ^ flip) < worst));
            if any {
                break;
            }
            j += SKIP_CHUNK;
        }
        j
    }
}

/// `t` with `dim` moved last, contiguous: its rows are the lines along `dim`.
fn rows_of(t: &Tensor, dim: usize) -> PyResult<Tensor> {
    let last = t.rank().max(1) - 1;
    let t = if t.rank() == 0 { t.reshape(1).py()? } else { t.clone() };
    if dim == last { t.contiguous().py() } else { t.transpose(dim, last).py()?.contiguous().py() }
}

/// Inverse of `rows_of` for a result of row length `n` (shape of the rows tensor with last dim `n`).
fn from_rows(v: Tensor, rows_dims: &[usize], n: usize, dim: usize, rank: usize) -> PyResult<Tensor> {
    let mut dims = rows_dims.to_vec();
    if let Some(l) = dims.last_mut() {
        *l = n;
    }
    let t = v.reshape(dims).py()?;
    if rank == 0 {
        return t.reshape(()).py();
    }
    let last = rank - 1;
    if dim == last { Ok(t) } else { t.transpose(dim, last).py()?.contiguous().py() }
}
fn tensor_arg<'py>(ob: &Bound<'py, PyAny>, what: &str) -> PyResult<PyRef<'py, PyTensor>> {
    ob.cast::<PyTensor>()
        .map_err(|_| type_err(format!("{what} must be a Tensor, not {}", ob.get_type().name().map(|n| n.to_string()).unwrap_or_default())))?
        .try_borrow()
        .map_err(Into::into)
}

/// Sorted order of one row: (values, original positions), stable, NaN last (first if descending).
fn sort_row<T: Key>(row: &[T], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..row.len()).collect();
    if descending {
        idx.sort_by(|&a, &b| row[b].cmp_key(&row[a]));
    } else {
        idx.sort_by(|&a, &b| row[a].cmp_key(&row[b]));
    }
    idx
}

#[pymethods]
impl PyTensor {
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false))]
    fn sort(&self, py: Python<'_>, dim: i64, descending: bool, stable: bool) -> PyResult<Py<PyAny>> {
        let (v, i) = self.sort_impl(dim, descending, stable)?;
        values_indices(py, "sort", v, i)
    }
    #[pyo3(signature = (dim=-1, descending=false, *, stable=false))]
    fn argsort(&self, dim: i64, descending: bool, stable: bool) -> PyResult<PyTensor> {
        Ok(self.sort_impl(dim, descending, stable)?.1)
    }
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn topk(&self, py: Python<'_>, k: i64, dim: i64, largest: bool, sorted: bool) -> PyResult<Py<PyAny>> {
        let _ = sorted; // always sorted
        let d = norm_dim(dim, self.rank())?;
        let n = self.dims().get(d).copied().unwrap_or(1);
        if k < 0 || k as usize > n {
            return Err(runtime_err(format!("selected index k out of range (k = {k}, size along dim {d} = {n})")));
        }
        // A 0-d tensor is its own top element for k = 0 as for k = 1, as in torch.
        let k = if self.rank() == 0 { 1 } else { k as usize };
        let (v, i) = self.order_rows(d, Order::Top(k, largest))?;
        values_indices(py, "topk", v, i)
    }
    #[pyo3(signature = (k, dim=-1, keepdim=false))]
    fn kthvalue(&self, py: Python<'_>, k: i64, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
        let d = norm_dim(dim, self.rank())?;
        let n = self.dims().get(d).copied().unwrap_or(1);
        if k < 1 || k as usize > n {
            return Err(index_err(format!("kthvalue(): selected number k out of range for dimension {d}")));
        }
        let (v, i) = self.sort_impl(dim, false, true)?;
        let pick = |t: &PyTensor| -> PyResult<PyTensor> {
            let x = if t.rank() == 0 { t.t.clone() } else { t.t.narrow(d, k as usize - 1, 1).py()? };
            let x = if keepdim || t.rank() == 0 { x } else { x.squeeze(d).py()? };
            Ok(t.same(x.contiguous().py()?))
        };
        values_indices(py, "kthvalue", pick(&v)?, pick(&i)?)
    }
}

impl PyTensor {
    /// Sorted values and positions along `dim`. On the CPU always stable; on other devices stable
    /// when asked (then on the host).
    pub fn sort_impl(&self, dim: i64, descending: bool, stable: bool) -> PyResult<(PyTensor, PyTensor)> {
        self.order_rows(norm_dim(dim, self.rank())?, Order::Sort(descending, stable))
    }

    /// Sorts (or takes the top k of) every line along `d`, rows in parallel: (values, int64 positions).
    fn order_rows(&self, d: usize, order: Order) -> PyResult<(PyTensor, PyTensor)> {
        if !super::is_cpu(&self.t) {
            return self.order_rows_dev(d, order);
        }
        let rows = rows_of(&self.t, d)?;
        let n = rows.dims().last().copied().unwrap_or(1);
        let k = match order {
            Order::Sort(..) => n,
            Order::Top(k, _) => k,
        };
        let nrows = if n == 0 { rows.elem_count() } else { rows.elem_count() / n };
        let nrows = if n == 0 { rows.dims()[..rows.rank() - 1].iter().product() } else { nrows };
        // A sort writes every output (its rows' positions are all n of them); top-k's are zeroed first.
        let sort = matches!(order, Order::Sort(..));
        let mut idx = if sort { super::kernels::uninit_vec::<i64>(nrows * k) } else { vec![0i64; nrows * k] };
        let (storage, layout) = rows.storage_and_layout();
        let candle_core::Storage::Cpu(cpu) = &*storage else { return Err(runtime_err("expected a CPU tensor")) };
        let vals = with_dtype!(rows.dtype(), T => {
            // `rows` is contiguous: read its lines straight from the storage.
            let data = &cpu.as_slice::<T>().py()?[layout.start_offset()..layout.start_offset() + rows.elem_count()];
            let mut vo = if sort { super::kernels::uninit_vec::<T>(nrows * k) } else { vec![T::from_f64(0.0); nrows * k] };
            if k > 0 {
                let (vp, ip) = (crate::pool::SendPtr(vo.as_mut_ptr()), crate::pool::SendPtr(idx.as_mut_ptr()));
                let work = |r: usize| {
                    let row = &data[r * n..(r + 1) * n];
                    let pos = match order {
                        Order::Sort(desc, _) => sorted_positions(row, desc),
                        Order::Top(k, largest) => top_positions(row, k, largest),
                    };
                    // SAFETY: row r owns outputs r*k..(r+1)*k; the vectors outlive the loop.
                    let (vs, is) = unsafe { (std::slice::from_raw_parts_mut(vp.get().add(r * k), k), std::slice::from_raw_parts_mut(ip.get().add(r * k), k)) };
                    for (j, &p) in pos.iter().enumerate() {
                        vs[j] = row[p as usize];
                        is[j] = p as i64;
                    }
                };
                if nrows * n >= 16384 {
                    crate::pool::for_each(nrows, &work);
                } else {
                    (0..nrows).for_each(work);
                }
            }
            Tensor::from_vec(vo, nrows * k, &Device::Cpu).py()
        })?;
        drop(storage);
        let rd = rows.dims().to_vec();
        let vals = from_rows(vals, &rd, k, d, self.rank())?;
        let idx = from_rows(Tensor::from_vec(idx, nrows * k, &Device::Cpu).py()?, &rd, k, d, self.rank())?;
        Ok((self.same(vals), PyTensor::new(idx, DType::I64)))
    }
}

/// The device paths of selection: Candle's gather/scatter/index_add/arg_sort kernels, indices
/// bounds-checked first (their range read back from the device).
impl PyTensor {

    fn order_rows_dev(&self, d: usize, order: Order) -> PyResult<(PyTensor, PyTensor)> {
        let rows = rows_of(&self.t, d)?;
        let n = rows.dims().last().copied().unwrap_or(1);
        let (k, asc, stable) = match order {
            Order::Sort(desc, stable) => (n, !desc, stable),
            Order::Top(k, largest) => (k, !largest, false),
        };
        // Candle's CUDA sort (bitonic: not stable, NaN unordered) holds a padded row in shared
        // memory: up to 8192 elements. Longer rows (a vocabulary's logits), stable sorts and rows
        // with NaN are sorted on the host.
        let nan = rows.dtype().is_float() && rows.elem_count() > 0 && {
            let any = rows.ne(&rows).py()?.flatten_all().py()?.max_keepdim(0).py()?;
            super::host_vec::<u8>(&any)?[0] != 0
        };
        if n > 8192 || rows.elem_count() == 0 || k == 0 || stable || nan {
            let host = self.same(self.t.to_device(&Device::Cpu).py()?);
            let (v, i) = crate::device::on_host(|| host.order_rows(d, order))?;
            let dev = self.t.device();
            return Ok((v.same(v.t.to_device(dev).py()?), i.same(i.t.to_device(dev).py()?)));
        }
        let last = rows.rank() - 1;
        let idx = rows.arg_sort_last_dim(asc).py()?.narrow(last, 0, k).py()?.contiguous().py()?;
        let vals = rows.gather(&idx, last).py()?;
        let rd = rows.dims().to_vec();
        let vals = from_rows(vals.flatten_all().py()?, &rd, k, d, self.rank())?;
        let idx = from_rows(idx.to_dtype(candle_core::DType::I64).py()?.flatten_all().py()?, &rd, k, d, self.rank())?;
        Ok((self.same(vals), PyTensor::new(idx, DType::I64)))
    }
}

#[derive(Clone, Copy)]
enum Order {
    /// (descending, stable)
    Sort(bool, bool),
    Top(usize, bool),
}


/// torch.unique over all elements: sorted values, and optionally the inverse map and counts.
#[pyfunction]
#[pyo3(signature = (input, sorted=true, return_inverse=false, return_counts=false, dim=None))]
pub fn unique(py: Python<'_>, input: &PyTensor, sorted: bool, return_inverse: bool, return_counts: bool, dim: Option<i64>) -> PyResult<Py<PyAny>> {
    let _ = sorted; // always sorted, as torch's CPU kernel returns it
    if dim.is_some() {
        return Err(pyo3::exceptions::PyNotImplementedError::new_err("unique(dim=...) is not supported by candle_bind yet"));
    }
    let (vals, inverse, counts) = with_dtype!(input.t.dtype(), T => {
        let data = super::host_vec::<T>(&input.t)?;
        let order = sort_row(&data, false);
        let mut uniq: Vec<T> = Vec::new();
        let mut counts: Vec<i64> = Vec::new();
        let mut inverse = vec![0i64; data.len()];
        for &j in &order {
            if uniq.last().is_none_or(|u| u.cmp_key(&data[j]) != Ordering::Equal) {
                uniq.push(data[j]);
                counts.push(0);
            }
            *counts.last_mut().unwrap_or(&mut 0) += 1;
            inverse[j] = uniq.len() as i64 - 1;
        }
        let n = uniq.len();
        Ok::<_, PyErr>((Tensor::from_vec(uniq, n, input.t.device()).py()?, inverse, counts))
    })?;
    let n = vals.elem_count();
    let out = Py::new(py, input.same(vals))?.into_any();
    if !return_inverse && !return_counts {
        return Ok(out);
    }
    let mut parts = vec![out];
    if return_inverse {
        parts.push(Py::new(py, i64_tensor(inverse, input.dims(), input.t.device())?)?.into_any());
    }
    if return_counts {
        parts.push(Py::new(py, i64_tensor(counts, &[n], input.t.device())?)?.into_any());
    }
    Ok(PyTuple::new(py, parts)?.into_any().unbind())
}

/// torch.searchsorted: insertion points of `input` in the last dim of `sorted_sequence`.
#[pyfunction]
#[pyo3(signature = (sorted_sequence, input, *, out_int32=false, right=false, side=None, sorter=None))]
pub fn searchsorted(
    sorted_sequence: &PyTensor,
    input: &Bound<'_, PyAny>,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&PyTensor>,
) -> PyResult<PyTensor> {
    let right = match side {
        Some("right") => true,
        Some("left") => {
            if right {
                return Err(runtime_err("torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"));
            }
            false
        }
        Some(s) => return Err(runtime_err(format!("torch.searchsorted(): side can only be 'left' or 'right' but got {s}"))),
        None => right,
    };
    let seq = match sorter {
        Some(s) => sorted_sequence.gather_impl(-1, s, true)?,
        None => sorted_sequence.same(sorted_sequence.t.clone()),
    };
    let holder;
    let inp: &PyTensor = match tensor_arg(input, "searchsorted(): input") {
        Ok(t) => {
            holder = PyTensor::new(t.t.clone(), t.dtype);
            &holder
        }
        Err(_) => {
            let s = Scalar::extract(input).ok_or_else(|| type_err("searchsorted(): input must be a Tensor or a number"))?;
            holder = PyTensor::new(s.tensor(DType::default_for(s.kind()), sorted_sequence.t.device())?, DType::default_for(s.kind()));
            &holder
        }
    };
    if seq.rank() == 0 {
        return Err(runtime_err("torch.searchsorted(): boundaries tensor should have positive dimension"));
    }
    if seq.rank() > 1 && (inp.rank() != seq.rank() || inp.dims()[..inp.rank() - 1] != seq.dims()[..seq.rank() - 1]) {
        return Err(runtime_err(format!(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {:?} and input value tensor {:?}",
            seq.dims(),
            inp.dims()
        )));
    }
    let b = super::host_vec::<f64>(&seq.t)?;
    let x = super::host_vec::<f64>(&inp.t)?;
    let m = seq.dims()[seq.rank() - 1];
    let per_row = if seq.rank() > 1 { inp.dims().last().copied().unwrap_or(1) } else { x.len().max(1) };
    let out: Vec<i64> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let row = if seq.rank() > 1 { &b[(i / per_row) * m..(i / per_row + 1) * m] } else { &b[..] };
            (if right { row.partition_point(|&e| e <= v) } else { row.partition_point(|&e| e < v) }) as i64
        })
        .collect();
    let t = i64_tensor(out, inp.dims(), seq.t.device())?;
    if out_int32 { Ok(PyTensor::new(cast(&t.t, DType::I64, DType::I32)?, DType::I32)) } else { Ok(t) }
}

/// torch.bucketize: searchsorted with the boundaries first (1-D) and the input's shape.
#[pyfunction]
#[pyo3(signature = (input, boundaries, *, out_int32=false, right=false))]
pub fn bucketize(input: &Bound<'_, PyAny>, boundaries: &PyTensor, out_int32: bool, right: bool) -> PyResult<PyTensor> {
    if boundaries.rank() != 1 {
        return Err(runtime_err(format!("boundaries tensor must be 1 dimension, but got dim({})", boundaries.rank())));
    }
    searchsorted(boundaries, input, out_int32, right, None, None)
}
