//! Basic indexing: ints, slices, None and Ellipsis (views where Candle can express them).

use candle_core::Tensor;
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PySlice, PySliceMethods, PyTuple};

use super::PyTensor;
use crate::error::{index_err, runtime_err, IntoPyResult};

fn items<'py>(key: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    Ok(match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    })
}

#[pymethods]
impl PyTensor {
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let keys = items(key)?;
        let consumed = keys.iter().filter(|k| !k.is_none() && !k.is_instance_of::<PyEllipsis>()).count();
        if consumed > self.rank() {
            return Err(index_err(format!(
                "too many indices for tensor of dimension {}",
                self.rank()
            )));
        }
        if keys.iter().filter(|k| k.is_instance_of::<PyEllipsis>()).count() > 1 {
            return Err(index_err("an index can only have a single ellipsis ('...')"));
        }
        let mut t: Tensor = self.t.clone();
        let mut dim = 0usize; // the dim of `t` the next key applies to
        for k in keys.iter() {
            if k.is_none() {
                t = t.unsqueeze(dim).py()?;
                dim += 1;
            } else if k.is_instance_of::<PyEllipsis>() {
                let remaining = keys.iter().skip_while(|x| !x.is(k)).skip(1).filter(|x| !x.is_none()).count();
                dim = t.rank() - remaining;
            } else if let Ok(s) = k.cast::<PySlice>() {
                let n = t.dims()[dim];
                let ind = s.indices(n as isize)?;
                if ind.step <= 0 {
                    return Err(crate::error::value_err("step must be greater than zero"));
                }
                let (start, len) = (ind.start as usize, ind.slicelength);
                t = if ind.step == 1 {
                    t.narrow(dim, start.min(n), len).py()?
                } else {
                    let idx: Vec<u32> = (0..len).map(|i| (start + i * ind.step as usize) as u32).collect();
                    let idx = Tensor::from_vec(idx, len, t.device()).py()?;
                    t.contiguous().py()?.index_select(&idx, dim).py()?
                };
                dim += 1;
            } else if let Ok(i) = super::shape::int_arg(k) {
                let n = t.dims()[dim] as i64;
                if i < -n || i >= n {
                    return Err(index_err(format!(
                        "index {i} is out of bounds for dimension {dim} with size {n}"
                    )));
                }
                let i = if i < 0 { i + n } else { i } as usize;
                t = t.narrow(dim, i, 1).py()?.squeeze(dim).py()?;
            } else {
                return Err(runtime_err(format!(
                    "indexing with {} is not supported yet",
                    k.get_type().name()?
                )));
            }
        }
        Ok(self.same(t))
    }
}
