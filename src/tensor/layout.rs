//! The memory order of elementwise results, picked as torch's TensorIterator picks it: dims sorted
//! by the operands' strides (the first operand whose strides tell two dims apart decides; broadcast
//! dims pass), so a transposed, permuted or channels-last input is computed in one pass along
//! memory and its result has the input's strides, as torch's has. Computed in row-major order,
//! every element of such an input was a strided gather: exp of a permuted (8,64,56,56) took 18x
//! torch's time, `x.T + 1` 10x.

use candle_core::Tensor;
use pyo3::PyResult;

use super::PyTensor;
use crate::error::IntoPyResult;

/// The order (slowest dim first) torch's iterator gives an output of `dims` over operands with
/// `strides` (each of len(dims), 0 on broadcast dims), or None where that is row-major order for
/// every dim longer than 1 (the result is then contiguous, as before).
pub(crate) fn memory_order(dims: &[usize], strides: &[&[usize]]) -> Option<Vec<usize>> {
    let n = dims.len();
    // An empty result is contiguous (torch's too).
    if n < 2 || dims.contains(&0) {
        return None;
    }
    // torch's comparison: > 0 when dim d0 goes outside d1, < 0 inside, 0 when no operand says.
    let should_swap = |d0: usize, d1: usize| -> i32 {
        if dims[d0] == 1 || dims[d1] == 1 {
            return 0;
        }
        for s in strides {
            let (s0, s1) = (s[d0], s[d1]);
            if s0 == 0 || s1 == 0 {
                continue;
            }
            if s0 != s1 {
                return if s0 < s1 { -1 } else { 1 };
            }
        }
        0
    };
    // torch's insertion sort over fastest-first dims, which stops at the first decided comparison.
    let mut perm: Vec<usize> = (0..n).rev().collect();
    for i in 1..n {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match should_swap(perm[d0], perm[d1]) {
                c if c > 0 => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    perm.reverse();
    let mut long = perm.iter().filter(|&&d| dims[d] > 1);
    let mut last = long.next()?;
    for d in long {
        if d < last {
            return Some(perm);
        }
        last = d;
    }
    None
}

/// `t`'s strides broadcast to `dims` (0 on the dims it is broadcast over).
pub(crate) fn broadcast_strides(t: &Tensor, dims: &[usize]) -> Vec<usize> {
    let (src, st) = (t.dims(), t.stride());
    let pad = dims.len().saturating_sub(src.len());
    (0..dims.len()).map(|i| if i < pad || src[i - pad] == 1 { 0 } else { st[i - pad] }).collect()
}

/// The inverse permutation: `t.permute(perm).permute(inverse(perm)) == t`.
fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}

/// A result computed over operands permuted by `perm`, given back in the original dim order.
pub(crate) fn restore(out: PyTensor, perm: &[usize]) -> PyResult<PyTensor> {
    Ok(PyTensor::new(unpermute(&out.t, perm)?, out.dtype))
}

/// `restore` of a Candle tensor.
pub(crate) fn unpermute(t: &Tensor, perm: &[usize]) -> PyResult<Tensor> {
    t.permute(inverse(perm)).py()
}

/// An elementwise op of one CPU tensor computed in the tensor's memory order: `f` gets the tensor
/// permuted so that its strides fall from first dim to last (contiguous when the tensor is dense)
/// and its result is permuted back, keeping the input's strides as torch does.
pub(crate) fn unary_in_order(x: &PyTensor, f: impl FnOnce(&PyTensor) -> PyResult<PyTensor>) -> PyResult<PyTensor> {
    if x.t.is_contiguous() || x.is_meta() || !super::is_cpu(&x.t) {
        return f(x);
    }
    let Some(perm) = memory_order(x.dims(), &[&broadcast_strides(&x.t, x.dims())]) else { return f(x) };
    let out = f(&x.same(x.t.permute(perm.clone()).py()?))?;
    restore(out, &perm)
}

/// A CPU reduction of `t` over `dims` computed in `t`'s memory order: `f(t', dims', true)` gets `t`
/// permuted so that its strides fall (contiguous when dense: a reduction over a permuted tensor
/// then reads memory in order instead of transposing it first, 12x torch's time for
/// `x.permute(0, 2, 3, 1).sum(-1)`) and the dims mapped; the result comes back in `t`'s dim order,
/// contiguous, as torch's.
pub(crate) fn reduce_in_order(
    t: &Tensor,
    dims: &[usize],
    keepdim: bool,
    f: impl FnOnce(&Tensor, &[usize], bool) -> PyResult<Tensor>,
) -> PyResult<Tensor> {
    if t.is_contiguous() || !super::is_cpu(t) {
        return f(t, dims, keepdim);
    }
    let Some(perm) = memory_order(t.dims(), &[&broadcast_strides(t, t.dims())]) else { return f(t, dims, keepdim) };
    let inv = inverse(&perm);
    let mut pdims: Vec<usize> = dims.iter().map(|&d| inv[d]).collect();
    pdims.sort_unstable();
    let r = f(&t.permute(perm).py()?, &pdims, true)?.permute(inv).py()?;
    let mut r = r;
    if !keepdim {
        // The reduced dims have size 1 here: squeezing them (last first) is a view.
        let mut gone = dims.to_vec();
        gone.sort_unstable();
        for &d in gone.iter().rev() {
            r = r.squeeze(d).py()?;
        }
    }
    if r.is_contiguous() { Ok(r) } else { super::copy_contiguous(&r) }
}

