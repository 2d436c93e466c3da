//! `x[key]` and `x[key] = value` with torch's rules.
//!
//! A key is parsed once into a plan over the tensor's memory: basic items (ints, slices, None, ...)
//! give a strided view; index tensors, lists and bool masks are "advanced" items whose broadcast
//! dims go where the first one stood when they are adjacent, else in front (ints do not break
//! adjacency: torch selects them first). Keys of ints, slices, None and `...` give Candle views
//! (writes through them reach the base); anything else gathers a copy. Assignment always
//! writes into the tensor's own memory.

use candle_core::{Device, Storage, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyList, PySlice, PySliceMethods, PyTuple};

use super::inplace::{check_writable, for_each_offset, values_for, write, Dest};
use super::{with_dtype, Operand, PyTensor, Scalar};
use crate::error::{index_err, value_err, IntoPyResult};

enum Item<'py> {
    Int(i64),
    Slice(Bound<'py, PySlice>),
    NewAxis,
    Ellipsis,
    /// An integer index array (values, dims).
    Index(Vec<i64>, Vec<usize>),
    /// A bool mask (values, dims).
    Mask(Vec<u8>, Vec<usize>),
}

impl Item<'_> {
    /// How many dims of the indexed tensor this item consumes.
    fn consumes(&self) -> usize {
        match self {
            Item::Int(_) | Item::Slice(_) | Item::Index(..) => 1,
            Item::Mask(_, d) => d.len(),
            Item::NewAxis | Item::Ellipsis => 0,
        }
    }
}

fn tensor_item<'py>(t: &PyTensor) -> PyResult<Item<'py>> {
    let cpu = t.t.to_device(&Device::Cpu).py()?.flatten_all().py()?;
    match t.dtype {
        crate::dtype::DType::Bool | crate::dtype::DType::U8 => {
            Ok(Item::Mask(cpu.to_dtype(candle_core::DType::U8).py()?.to_vec1::<u8>().py()?, t.dims().to_vec()))
        }
        crate::dtype::DType::I32 | crate::dtype::DType::I64 => {
            let v = cpu.to_dtype(candle_core::DType::I64).py()?.to_vec1::<i64>().py()?;
            Ok(if t.rank() == 0 { Item::Int(v[0]) } else { Item::Index(v, t.dims().to_vec()) })
        }
        _ => Err(index_err("tensors used as indices must be long, int, byte or bool tensors")),
    }
}

fn parse_item<'py>(ob: &Bound<'py, PyAny>) -> PyResult<Item<'py>> {
    if ob.is_none() {
        return Ok(Item::NewAxis);
    }
    if ob.is_instance_of::<PyEllipsis>() {
        return Ok(Item::Ellipsis);
    }
    if let Ok(s) = ob.cast::<PySlice>() {
        return Ok(Item::Slice(s.clone()));
    }
    if let Ok(b) = ob.cast::<PyBool>() {
        // x[True] adds a dim of size 1, x[False] one of size 0 (a 0-d mask).
        return Ok(Item::Mask(vec![b.is_true() as u8], vec![]));
    }
    if let Ok(t) = ob.cast::<PyTensor>() {
        return tensor_item(&t.borrow());
    }
    if let Ok(i) = super::shape::int_arg(ob) {
        return Ok(Item::Int(i));
    }
    if ob.is_instance_of::<PyList>() || ob.is_instance_of::<PyTuple>() || super::convert::is_ndarray(ob) {
        let t = super::creation::from_data(ob, None, &Device::Cpu)?;
        if t.numel() == 0 && t.dtype.is_float() {
            return Ok(Item::Index(vec![], t.dims().to_vec()));
        }
        return tensor_item(&t);
    }
    Err(index_err(format!(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
        ob.get_type().name()?
    )))
}

/// A slice with step 1 (or none): a view.
fn unit_step(s: &Bound<'_, PySlice>) -> bool {
    s.getattr("step").map(|st| st.is_none() || st.extract::<i64>().is_ok_and(|v| v == 1)).unwrap_or(false)
}

fn parse_key<'py>(key: &Bound<'py, PyAny>) -> PyResult<Vec<Item<'py>>> {
    match key.cast::<PyTuple>() {
        Ok(t) => t.iter().map(|k| parse_item(&k)).collect(),
        Err(_) => Ok(vec![parse_item(key)?]),
    }
}

/// One advanced item over one dim: an index array read against that dim's size and stride.
struct Adv {
    dim: usize,
    size: usize,
    stride: usize,
    idx: Vec<i64>,
    dims: Vec<usize>,
    /// Basic output dims before it (adjacency test).
    at: usize,
}

/// Replayable view steps for keys that Candle can express as a view.
enum Step {
    Narrow(usize, usize, usize),
    /// (dim, start, len, step): a slice with a step.
    Stride(usize, usize, usize, usize),
    Squeeze(usize),
    Unsqueeze(usize),
}

struct Plan {
    base: usize,
    dims: Vec<usize>,
    strides: Vec<usize>,
    steps: Vec<Step>,
    view: bool,
    adv: Vec<Adv>,
}

fn plan(t: &Tensor, items: Vec<Item<'_>>) -> PyResult<Plan> {
    let rank = t.rank();
    let (src_dims, src_strides) = (t.dims(), t.layout().stride());
    let consumed: usize = items.iter().map(Item::consumes).sum();
    if consumed > rank {
        return Err(index_err(format!("too many indices for tensor of dimension {rank}")));
    }
    if items.iter().filter(|i| matches!(i, Item::Ellipsis)).count() > 1 {
        return Err(index_err("an index can only have a single ellipsis ('...')"));
    }
    let mut p = Plan { base: t.layout().start_offset(), dims: vec![], strides: vec![], steps: vec![], view: true, adv: vec![] };
    let mut d = 0usize;
    let keep = |p: &mut Plan, d: usize| {
        p.dims.push(src_dims[d]);
        p.strides.push(src_strides[d]);
    };
    for item in items {
        match item {
            Item::NewAxis => {
                p.steps.push(Step::Unsqueeze(p.dims.len()));
                p.dims.push(1);
                p.strides.push(0);
            }
            Item::Ellipsis => {
                for _ in 0..rank - consumed {
                    keep(&mut p, d);
                    d += 1;
                }
            }
            Item::Int(i) => {
                let n = src_dims[d] as i64;
                if i < -n || i >= n {
                    return Err(index_err(format!("index {i} is out of bounds for dimension {d} with size {n}")));
                }
                let i = if i < 0 { i + n } else { i } as usize;
                p.base += i * src_strides[d];
                p.steps.push(Step::Narrow(p.dims.len(), i, 1));
                p.steps.push(Step::Squeeze(p.dims.len()));
                d += 1;
            }
            Item::Slice(s) => {
                let n = src_dims[d];
                let ind = s.indices(n as isize)?;
                if ind.step <= 0 {
                    return Err(value_err("step must be greater than zero"));
                }
                let (start, len, step) = (ind.start.max(0) as usize, ind.slicelength, ind.step as usize);
                if len > 0 {
                    p.base += start * src_strides[d];
                }
                p.steps.push(if step == 1 { Step::Narrow(p.dims.len(), start.min(n), len) } else { Step::Stride(p.dims.len(), start.min(n), len, step) });
                p.dims.push(len);
                p.strides.push(src_strides[d] * step);
                d += 1;
            }
            Item::Index(idx, dims) => {
                let (size, stride, at) = (src_dims[d], src_strides[d], p.dims.len());
                p.adv.push(Adv { dim: d, size, stride, idx, dims, at });
                d += 1;
            }
            Item::Mask(m, mdims) => {
                for (j, &md) in mdims.iter().enumerate() {
                    if md != src_dims[d + j] {
                        return Err(index_err(format!(
                            "The shape of the mask {:?} at index {j} does not match the shape of the indexed tensor {:?} at index {}",
                            mdims,
                            src_dims,
                            d + j
                        )));
                    }
                }
                let at = p.dims.len();
                let hits: Vec<usize> = m.iter().enumerate().filter(|(_, &v)| v != 0).map(|(i, _)| i).collect();
                if mdims.is_empty() {
                    // A 0-d mask adds a dim of size 1 (true) or 0 (false) and reads nothing.
                    p.adv.push(Adv { dim: d, size: 1, stride: 0, idx: vec![0; hits.len()], dims: vec![hits.len()], at });
                }
                // The mask's true positions, as one index array per masked dim.
                for (j, &md) in mdims.iter().enumerate() {
                    let inner: usize = mdims[j + 1..].iter().product();
                    let idx = hits.iter().map(|&h| ((h / inner) % md) as i64).collect();
                    p.adv.push(Adv { dim: d + j, size: md, stride: src_strides[d + j], idx, dims: vec![hits.len()], at });
                }
                d += mdims.len();
            }
        }
    }
    while d < rank {
        keep(&mut p, d);
        d += 1;
    }
    if !p.adv.is_empty() {
        p.view = false;
    }
    Ok(p)
}

/// The broadcast shape of the advanced items and each element's storage offset (before the base).
fn adv_offsets(adv: &[Adv]) -> PyResult<(Vec<usize>, Vec<usize>)> {
    let mut shape: Vec<usize> = vec![];
    for a in adv {
        shape = super::broadcast_dims(&shape, &a.dims).map_err(|_| {
            let shapes: Vec<String> = adv.iter().map(|a| format!("{:?}", a.dims)).collect();
            index_err(format!("shape mismatch: indexing tensors could not be broadcast together with shapes {}", shapes.join(", ")))
        })?;
    }
    let n: usize = shape.iter().product();
    let mut offs = vec![0usize; n];
    for a in adv {
        // The index array's strides broadcast (right-aligned) to `shape`.
        let pad = shape.len() - a.dims.len();
        let mut st = vec![0usize; shape.len()];
        let mut acc = 1;
        for i in (0..a.dims.len()).rev() {
            st[pad + i] = if a.dims[i] == 1 { 0 } else { acc };
            acc *= a.dims[i];
        }
        let (size, mut k, mut bad) = (a.size as i64, 0usize, None);
        for_each_offset(&shape, &st, 0, |pos| {
            let v = a.idx[pos];
            if v < -size || v >= size {
                bad.get_or_insert(v);
            } else {
                offs[k] += (if v < 0 { v + size } else { v }) as usize * a.stride;
            }
            k += 1;
        });
        if let Some(v) = bad {
            return Err(index_err(format!("index {v} is out of bounds for dimension {} with size {}", a.dim, a.size)));
        }
    }
    Ok((shape, offs))
}

/// A key that is one bool mask over all of `t`'s dims: the storage offsets of its true elements.
fn full_mask_offsets(t: &Tensor, items: &[Item<'_>]) -> Option<Vec<usize>> {
    let [Item::Mask(m, mdims)] = items else { return None };
    if mdims.as_slice() != t.dims() || mdims.is_empty() {
        return None;
    }
    let l = t.layout();
    // Branch-free: every offset is stored, and the count advances only where the mask is set.
    if l.is_contiguous() {
        let (mut out, mut n, base) = (super::kernels::uninit_vec::<usize>(m.len() + 1), 0usize, l.start_offset());
        for (i, &b) in m.iter().enumerate() {
            out[n] = base + i;
            n += (b != 0) as usize;
        }
        out.truncate(n);
        return Some(out);
    }
    let (mut out, mut k, mut n) = (vec![0usize; m.len() + 1], 0, 0);
    for_each_offset(l.dims(), l.stride(), l.start_offset(), |o| {
        out[n] = o;
        n += (m[k] != 0) as usize;
        k += 1;
    });
    out.truncate(n);
    Some(out)
}

impl Plan {
    /// The result's dims and the storage offset of each of its elements, in row-major order.
    fn offsets(&self) -> PyResult<(Vec<usize>, Vec<usize>)> {
        if self.adv.is_empty() {
            let mut out = Vec::with_capacity(self.dims.iter().product());
            for_each_offset(&self.dims, &self.strides, self.base, |o| out.push(o));
            return Ok((self.dims.clone(), out));
        }
        let (ashape, aoffs) = adv_offsets(&self.adv)?;
        let first = self.adv[0].at;
        let pos = if self.adv.iter().all(|a| a.at == first) { first } else { 0 };
        let (pre_d, post_d) = (&self.dims[..pos], &self.dims[pos..]);
        let (pre_s, post_s) = (&self.strides[..pos], &self.strides[pos..]);
        let mut post = vec![];
        for_each_offset(post_d, post_s, 0, |o| post.push(o));
        let mut out = Vec::with_capacity(self.dims.iter().product::<usize>() * aoffs.len());
        for_each_offset(pre_d, pre_s, self.base, |pre| {
            for &a in &aoffs {
                out.extend(post.iter().map(|&q| pre + a + q));
            }
        });
        let dims = [pre_d, &ashape, post_d].concat();
        Ok((dims, out))
    }
}

/// Reads the elements at `offsets` of `t`'s storage into a new tensor of `dims`. On other devices
/// `t` is contiguous (see `getitem`) and the offsets become positions in its flattened elements,
/// read with one `index_select`.
fn gather_offsets(t: &Tensor, offsets: &[usize], dims: &[usize]) -> PyResult<Tensor> {
    if !crate::device::cpu_kernels(t) {
        let base = t.layout().start_offset();
        let n = offsets.len();
        let idx = if t.elem_count() <= u32::MAX as usize {
            Tensor::from_vec(offsets.iter().map(|&o| (o - base) as u32).collect::<Vec<_>>(), n, t.device())
        } else {
            Tensor::from_vec(offsets.iter().map(|&o| (o - base) as i64).collect::<Vec<_>>(), n, t.device())
        }
        .py()?;
        return t.flatten_all().py()?.index_select(&idx, 0).py()?.reshape(dims).py();
    }
    let (storage, _) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return Err(crate::error::runtime_err("advanced indexing is implemented for CPU tensors only so far"));
    };
    let out = with_dtype!(t.dtype(), T => {
        let data = cpu.as_slice::<T>().py()?;
        let v: Vec<T> = offsets.iter().map(|&o| data[o]).collect();
        Tensor::from_vec(v, dims, &Device::Cpu).py()
    })?;
    drop(storage);
    Ok(out)
}

impl PyTensor {
    pub fn getitem(&self, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let items = parse_key(key)?;
        // Off the CPU a copying key reads a contiguous tensor, whose storage offsets are positions.
        let basic = items.iter().all(|i| matches!(i, Item::Int(_) | Item::NewAxis | Item::Ellipsis) || matches!(i, Item::Slice(s) if unit_step(s)));
        let src = if crate::device::cpu_kernels(&self.t) || basic { self.t.clone() } else { self.t.contiguous().py()? };
        if let Some(offs) = full_mask_offsets(&src, &items) {
            let n = offs.len();
            return Ok(self.same(gather_offsets(&src, &offs, &[n])?));
        }
        let p = plan(&src, items)?;
        if p.view {
            let mut t = self.t.clone();
            for s in &p.steps {
                t = match *s {
                    Step::Narrow(d, start, len) => t.narrow(d, start, len),
                    Step::Stride(d, start, len, step) => t.step_narrow(d, start, len, step),
                    Step::Squeeze(d) => t.squeeze(d),
                    Step::Unsqueeze(d) => t.unsqueeze(d),
                }
                .py()?;
            }
            return Ok(self.same(t));
        }
        let (dims, offs) = p.offsets()?;
        Ok(self.same(gather_offsets(&src, &offs, &dims)?))
    }

    pub fn setitem(&self, key: &Bound<'_, PyAny>, value: Operand<'_>) -> PyResult<()> {
        if self.is_meta() {
            return Ok(()); // torch: writes into meta tensors are no-ops
        }
        // Candle writes only into tensors without repeated (zero-stride) elements.
        check_writable(self.dims(), self.t.layout().stride())?;
        if !crate::device::cpu_kernels(&self.t) && self.masked_assign(key, value)? {
            return Ok(());
        }
        let items = parse_key(key)?;
        // `x[mask] = v` with a mask over all of a contiguous x and one value: a single masked pass.
        if let ([Item::Mask(m, mdims)], Operand::S(_) | Operand::T(PyTensor { .. })) = (items.as_slice(), value) {
            let one = match value {
                Operand::S(_) => true,
                Operand::T(v) => v.numel() == 1 && v.rank() <= 1,
            };
            if one && mdims.as_slice() == self.dims() && !mdims.is_empty() && self.t.is_contiguous() {
                let v = match value {
                    Operand::S(s) => s.tensor(self.dtype, &Device::Cpu)?,
                    Operand::T(v) => super::cast(&v.t, v.dtype, self.dtype)?.to_device(&Device::Cpu).py()?,
                };
                return write(&self.t, Dest::Masked(self.t.layout().start_offset(), m), &v);
            }
        }
        let (dims, offs, p) = match full_mask_offsets(&self.t, &items) {
            Some(offs) => (vec![offs.len()], offs, None),
            None => {
                let p = plan(&self.t, items)?;
                if p.adv.is_empty() {
                    (p.dims.clone(), vec![], Some(p))
                } else {
                    let (dims, offs) = p.offsets()?;
                    (dims, offs, None)
                }
            }
        };
        let values = match value {
            Operand::S(s) => s.tensor(self.dtype, &Device::Cpu)?,
            Operand::T(v) => {
                // torch drops the value's leading size-1 dims before broadcasting it.
                let lead = v.dims().iter().take_while(|&&d| d == 1).count().min(v.rank().saturating_sub(dims.len()));
                let v = v.same(v.t.reshape(&v.dims()[lead..]).py()?);
                values_for(Operand::T(&v), &dims, self.dtype)?
            }
        };
        match &p {
            Some(p) => write(&self.t, Dest::Strided(&p.dims, &p.strides, p.base), &values),
            None => write(&self.t, Dest::At(&offs), &values),
        }
    }
}

impl PyTensor {
    /// `x[mask] = v` off the CPU, for a bool mask of x's shape and one value: where(mask, v, x)
    /// written back over x, with no read of the mask to the host. False when it does not apply.
    fn masked_assign(&self, key: &Bound<'_, PyAny>, value: Operand<'_>) -> PyResult<bool> {
        let Ok(m) = key.cast::<PyTensor>() else { return Ok(false) };
        let m = m.borrow();
        let one = match value {
            Operand::S(_) => true,
            Operand::T(v) => v.numel() == 1 && v.rank() <= 1,
        };
        if m.dtype != crate::dtype::DType::Bool || m.dims() != self.dims() || !one || m.rank() == 0 {
            return Ok(false);
        }
        crate::device::common(&[&self.t, &m.t])?;
        let v = match value {
            Operand::S(s) => s.tensor(self.dtype, self.t.device())?,
            Operand::T(v) => super::scalar_to(super::cast(&v.t, v.dtype, self.dtype)?.reshape(()).py()?, self.t.device())?,
        };
        let v = PyTensor::new(v, self.dtype);
        let new = super::arith::where_(&m, Operand::T(&v), Operand::T(self))?;
        let new = super::cast(&new.t, new.dtype, self.dtype)?;
        let l = self.t.layout();
        write(&self.t, Dest::Strided(l.dims(), l.stride(), l.start_offset()), &new)?;
        Ok(true)
    }
}

#[pymethods]
impl PyTensor {
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.getitem(key)
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(v) = value.cast::<PyTensor>() {
            return self.setitem(key, Operand::T(&v.borrow()));
        }
        let s = Scalar::extract(value).ok_or_else(|| {
            crate::error::type_err(format!(
                "can't assign a {} to a {} tensor",
                value.get_type().name().map(|n| n.to_string()).unwrap_or_default(),
                self.dtype.name()
            ))
        })?;
        self.setitem(key, Operand::S(s))
    }
}
