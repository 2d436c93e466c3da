//! `torchvision::nms`: greedy non-maximum suppression, as torchvision's CPU kernel.

use pyo3::prelude::*;

use super::{cmax, cmin, finish, with_host, Real};
use crate::dtype::DType;
use crate::error::runtime_err;
use crate::tensor::PyTensor;

/// Indices (int64) of the boxes kept, by score descending. Boxes are visited in the order of a
/// stable descending sort of the scores (NaN first, as torch's sort); a box suppresses the later
/// ones whose IoU with it exceeds `iou_threshold` (compared in double, as torchvision does).
#[pyfunction]
pub fn vision_nms(py: Python<'_>, boxes: &PyTensor, scores: &PyTensor, iou_threshold: f64) -> PyResult<PyTensor> {
    if boxes.rank() != 2 {
        return Err(runtime_err(format!("boxes should be a 2d tensor, got {}D", boxes.rank())));
    }
    if boxes.dims()[1] != 4 {
        return Err(runtime_err(format!("boxes should have 4 elements in dimension 1, got {}", boxes.dims()[1])));
    }
    if scores.rank() != 1 {
        return Err(runtime_err(format!("scores should be a 1d tensor, got {}D", scores.rank())));
    }
    let n = boxes.dims()[0];
    if n != scores.dims()[0] {
        return Err(runtime_err(format!(
            "boxes and scores should have same number of elements in dimension 0, got {n} and {}",
            scores.dims()[0]
        )));
    }
    let compute = super::compute_dtype("nms_kernel", boxes.dtype, false)?;
    if boxes.dtype != scores.dtype {
        return Err(runtime_err("dets should have the same type as scores"));
    }
    fn run<T: Real>(py: Python<'_>, boxes: &PyTensor, scores: &PyTensor, threshold: f64) -> PyResult<Vec<i64>> {
        let n = scores.numel();
        let s = with_host::<T, _>(&scores.t, |s| s.to_vec())?;
        with_host::<T, _>(&boxes.t, |b| super::maybe_detach(py, n * n, || greedy(b, &s, threshold)))
    }
    let keep = if compute == candle_core::DType::F64 {
        run::<f64>(py, boxes, scores, iou_threshold)?
    } else {
        run::<f32>(py, boxes, scores, iou_threshold)?
    };
    let len = keep.len();
    finish(keep, &[len], boxes, Some(DType::I64))
}

fn greedy<T: Real>(boxes: &[T], scores: &[T], threshold: f64) -> Vec<i64> {
    let n = scores.len();
    let mut order: Vec<usize> = (0..n).collect();
    // Stable, descending, NaN largest.
    order.sort_by(|&a, &b| {
        let (x, y) = (scores[a], scores[b]);
        match (x.is_nan(), y.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            _ => y.partial_cmp(&x).unwrap_or(std::cmp::Ordering::Equal),
        }
    });
    // The boxes in visiting order, one array per coordinate: the inner loop walks them linearly.
    let coord = |k: usize| order.iter().map(|&i| boxes[i * 4 + k]).collect::<Vec<T>>();
    let (x1, y1, x2, y2) = (coord(0), coord(1), coord(2), coord(3));
    let area: Vec<T> = (0..n).map(|i| (x2[i] - x1[i]) * (y2[i] - y1[i])).collect();
    let mut suppressed = vec![false; n];
    let mut keep = Vec::new();
    let zero = T::from_f64(0.0);
    for i in 0..n {
        if suppressed[i] {
            continue;
        }
        keep.push(order[i] as i64);
        let (ix1, iy1, ix2, iy2, iarea) = (x1[i], y1[i], x2[i], y2[i], area[i]);
        for j in i + 1..n {
            if suppressed[j] {
                continue;
            }
            let w = cmax(zero, cmin(ix2, x2[j]) - cmax(ix1, x1[j]));
            let h = cmax(zero, cmin(iy2, y2[j]) - cmax(iy1, y1[j]));
            let inter = w * h;
            let ovr = inter / (iarea + area[j] - inter);
            if ovr.to_f64() > threshold {
                suppressed[j] = true;
            }
        }
    }
    keep
}
