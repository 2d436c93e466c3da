//! Mixture-of-experts feed-forward blocks (Mixtral-style llama files, qwen3moe): a router picks the
//! `used` highest of softmax(h · routerᵀ) per row, the picked weights renormalised to sum to one
//! (llama.cpp's rule for both families; transformers' Mixtral and Qwen3-MoE with norm_topk_prob),
//! and each row's output is Σ weight · expert(h) over its picked experts.
//!
//! Experts run over the rows routed to them only: one matmul pair per expert that any row picked,
//! so a decoded token reads `used` experts' weights, not all of them. Each row's sum is taken in
//! expert order, whatever rows share the step, so a sequence decodes the same in a batch as alone.

use candle_core::quantized::{gguf_file, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Result, Tensor};

use super::llama::{onto, Config, Mlp, Stacked};
use crate::io::gguf::qtensor_from_bytes;

pub struct Moe {
    /// (experts, width): the router's logits per row.
    router: QMatMul,
    experts: Vec<Mlp>,
    used: usize,
    /// Renormalise the picked weights to sum to one.
    norm: bool,
}

impl Moe {
    /// Layer `i`'s experts: stacked `ffn_{gate,up,down}_exps` tensors (expert-major, as llama.cpp's
    /// converter writes them), or one `ffn_{gate,up,down}.{e}` matrix per expert (older Mixtral files).
    pub fn load<R: std::io::Read + std::io::Seek>(ct: &gguf_file::Content, r: &mut R, i: usize, cfg: &Config,
                                                  device: &Device) -> Result<Self> {
        let n_experts = cfg.experts;
        let q = |r: &mut R, name: &str| ct.tensor(r, name, &Device::Cpu);
        let router = q(r, &format!("blk.{i}.ffn_gate_inp.weight"))?;
        let width = match router.shape().dims() {
            &[e, w] if e == n_experts => w,
            d => candle_core::bail!("blk.{i}.ffn_gate_inp: shape {d:?} for {n_experts} experts"),
        };
        let router = QMatMul::from_qtensor(onto(router, device)?)?;
        let stacked = ct.tensor_infos.contains_key(&format!("blk.{i}.ffn_gate_exps.weight"));
        let per_expert = |name: &str, r: &mut R| -> Result<Vec<QTensor>> {
            if !stacked {
                return (0..n_experts).map(|e| q(r, &format!("blk.{i}.{name}.{e}.weight"))).collect();
            }
            let t = q(r, &format!("blk.{i}.{name}_exps.weight"))?;
            let (e, rows, cols) = t.shape().dims3()?;
            if e != n_experts {
                candle_core::bail!("blk.{i}.{name}_exps: {e} experts stacked, the file says {n_experts}")
            }
            let data = t.data()?;
            let each = data.len() / e;
            (0..e).map(|x| qtensor_from_bytes(t.dtype(), &data[x * each..][..each], vec![rows, cols])).collect()
        };
        let (gates, ups, downs) = (per_expert("ffn_gate", r)?, per_expert("ffn_up", r)?, per_expert("ffn_down", r)?);
        let mut experts = Vec::with_capacity(n_experts);
        for (e, ((g, u), d)) in gates.into_iter().zip(ups).zip(downs).enumerate() {
            let ff = g.shape().dims2()?.0;
            if g.shape().dims2()? != (ff, width) || u.shape().dims2()? != (ff, width) || d.shape().dims2()? != (width, ff) {
                candle_core::bail!("blk.{i} expert {e}: gate/up/down of {:?}/{:?}/{:?} for a width of {width}",
                                   g.shape(), u.shape(), d.shape())
            }
            experts.push(Mlp::new(Stacked::new([g, u], device)?, QMatMul::from_qtensor(onto(d, device)?)?));
        }
        Ok(Moe { router, experts, used: cfg.experts_used, norm: cfg.expert_norm })
    }

    /// The block's output (rows, width) for normalised inputs `h` (rows, width).
    pub fn forward(&self, h: &Tensor, gelu: bool) -> Result<Tensor> {
        let rows = h.dim(0)?;
        let n = self.experts.len();
        let logits = self.router.forward(h)?.to_dtype(DType::F32)?.to_device(&Device::Cpu)?.flatten_all()?.to_vec1::<f32>()?;
        // Per expert: the rows it serves and their weights.
        let mut routed: Vec<(Vec<u32>, Vec<f32>)> = vec![(Vec::new(), Vec::new()); n];
        let mut order: Vec<usize> = (0..n).collect();
        for (row, l) in logits.chunks_exact(n).enumerate() {
            let top = l.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let p: Vec<f32> = l.iter().map(|x| (x - top).exp()).collect();
            let total: f32 = p.iter().sum();
            // Highest first; ties to the lower expert (torch.topk's and llama.cpp's argsort order).
            order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
            let picked = &order[..self.used];
            let sum: f32 = if self.norm { picked.iter().map(|&e| p[e]).sum() } else { total };
            for &e in picked {
                routed[e].0.push(row as u32);
                routed[e].1.push(p[e] / sum);
            }
        }
        let dev = h.device();
        if rows == 1 {
            // A decoded token: the picked experts' outputs summed in expert order.
            let mut out: Option<Tensor> = None;
            for (e, (_, w)) in routed.iter().enumerate().filter(|(_, (r, _))| !r.is_empty()) {
                let y = (self.experts[e].forward(h, gelu)? * w[0] as f64)?;
                out = Some(match out { None => y, Some(o) => (o + y)? });
            }
            return out.ok_or_else(|| candle_core::Error::Msg("no expert picked".into()));
        }
        let mut out = Tensor::zeros(h.shape(), DType::F32, dev)?;
        for (e, (ids, w)) in routed.iter().enumerate().filter(|(_, (r, _))| !r.is_empty()) {
            let ids = Tensor::new(ids.as_slice(), dev)?;
            let w = Tensor::from_slice(w, (w.len(), 1), dev)?;
            let y = self.experts[e].forward(&h.index_select(&ids, 0)?, gelu)?.broadcast_mul(&w)?;
            out = out.index_add(&ids, &y, 0)?;
        }
        Ok(out)
    }
}
