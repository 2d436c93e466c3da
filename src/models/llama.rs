//! A llama-architecture forward over GGUF weights, laid out for decoding a token at a time: Candle's
//! quantized matmuls (`QMatMul`, the same kernels as `nn.QuantizedLinear`), rotary embeddings
//! applied while k is written into a growable per-layer KV cache, and grouped-query attention that
//! reads each key/value head straight from that cache (no copy of k/v per query head, no
//! concatenation per step). Follows candle-transformers' `quantized_llama` (and llama.cpp) in what
//! it computes: RMSNorm, interleaved RoPE, SwiGLU MLP, tied output when `output.weight` is absent.
//!
//! On a GPU the weights live there in the file's quantization (Candle's CUDA quantized matmuls:
//! mat-vec kernels for a decoded token, dequantize + cuBLAS for a prompt), the KV cache is a device
//! tensor per layer, and attention is two batched matmuls around candle-nn's fused softmax; only
//! the embedding rows of the new tokens are uploaded per step.

use candle_core::quantized::{gguf_file, QMatMul};
use candle_core::{DType, Device, Module, Result, Tensor};

use candle_core::quantized::QTensor;

use super::attention::{HostKv, Part, Shape, PAGE};
use super::moe::Moe;
use crate::io::gguf::qtensor_from_bytes;

pub struct Config {
    pub n_head: usize,
    pub n_kv_head: usize,
    pub head_dim: usize,
    pub rope_dim: usize,
    pub rope_base: f32,
    pub eps: f32,
    pub max_pos: usize,
    /// Rotate (i, i + rope_dim/2) pairs (GPT-NeoX's, qwen2's) instead of (2i, 2i + 1).
    pub neox: bool,
    /// cos/sin scale (LongRoPE's attention factor; 1 elsewhere).
    pub rope_mscale: f32,
    /// Gemma's family: embeddings times sqrt(width), GELU (tanh) gating instead of SiLU.
    pub embed_scale: f32,
    pub gelu: bool,
    /// Granite's multipliers: each block's output before its residual add, and the logits' divisor.
    pub residual_scale: f32,
    pub logit_scale: f32,
    /// Scores (and final logits) squashed as c·tanh(x / c) (gemma2).
    pub attn_softcap: Option<f32>,
    pub final_softcap: Option<f32>,
    /// Sliding-window layers: a query sees the last `window` keys; layer i slides unless
    /// (i + 1) % pattern == 0 (gemma2: every other layer, gemma3: five of six; 0: every layer).
    pub window: Option<(usize, usize)>,
    /// The sliding layers' own rotary base (gemma3's 10k beside 1M), and the global layers' linear
    /// position scaling (positions / factor).
    pub rope_base_local: Option<f32>,
    pub rope_linear: f32,
    /// The softmax scale: 1/sqrt(head_dim) unless the file says otherwise.
    pub q_scale: f32,
    /// Mixture-of-experts layers (`moe.rs`): experts per layer (0: a dense MLP), experts each row
    /// uses, and whether the picked weights are renormalised.
    pub experts: usize,
    pub experts_used: usize,
    pub expert_norm: bool,
}

/// cos/sin of position · θᵢ, [position][rope_dim / 2], on the host and (device path) the device.
struct RopeTable {
    cos: Vec<f32>,
    sin: Vec<f32>,
    dev: Option<(Tensor, Tensor)>,
}

struct Layer {
    /// q, k and v (or gate and up) stacked into one matrix: one parallel matmul instead of three,
    /// the activation quantized once.
    qkv: Stacked,
    /// q, k and v biases side by side (qwen2), added to `qkv`'s output.
    qkv_bias: Option<Tensor>,
    /// RMSNorm weights (head_dim) applied to each head of q and of k before the rotation (qwen3).
    qk_norm: Option<(Tensor, Tensor)>,
    /// RMSNorms of the attention's and the MLP's outputs before each residual add (gemma2/3).
    post_attn_norm: Option<Tensor>,
    post_ffn_norm: Option<Tensor>,
    /// A sliding-window layer (see `Config::window`).
    local: bool,
    wo: QMatMul,
    ffn: Ffn,
    attn_norm: Tensor,
    ffn_norm: Tensor,
}

/// One layer's keys and values of one sequence, after RoPE.
#[derive(Default)]
struct Kv {
    /// On the host: f16 pages (`attention.rs`).
    host: HostKv,
    /// On a GPU: (kv heads, cap, head_dim) f32 device tensors, `cap` positions allocated.
    dev: Option<(Tensor, Tensor)>,
    cap: usize,
}

/// One sequence's KV cache: a slot that a batched step reads and extends.
struct Cache {
    layers: Vec<Kv>,
    /// Positions held.
    len: usize,
}

/// One sequence's part of a batched step: `tokens` placed at positions `start..` of cache `slot`.
pub struct Seq<'a> {
    pub slot: u32,
    pub tokens: &'a [u32],
    pub start: usize,
}

pub struct Llama {
    cfg: Config,
    embed: Embedding,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QMatMul,
    /// Rotary tables: the global layers' first, the sliding layers' own second (gemma3).
    rope: Vec<RopeTable>,
    /// KV caches by slot (sequences of a batch; slot 0 is the single-sequence `forward`'s).
    caches: std::collections::HashMap<u32, Cache>,
    dev: Device,
    /// Whether attention runs as device tensor ops (a GPU, or the generic test mode).
    on_device: bool,
    /// Host caches in f16 (else f32).
    kv_half: bool,
}

impl Llama {
    /// Reads the weights onto `device` (read on the host first: stacked projections are joined there).
    pub fn load<R: std::io::Read + std::io::Seek>(ct: &gguf_file::Content, r: &mut R, cfg: Config, n_layers: usize,
                                                  device: &Device) -> Result<Self> {
        let dev = Device::Cpu;
        let q = |r: &mut R, name: &str| ct.tensor(r, name, &dev);
        let mm = |r: &mut R, name: &str| -> Result<QMatMul> { QMatMul::from_qtensor(onto(q(r, name)?, device)?) };
        let vec = |r: &mut R, name: &str| -> Result<Tensor> { q(r, name)?.dequantize(&dev)?.to_device(device) };
        let tied = !ct.tensor_infos.contains_key("output.weight");
        let mut embed_q = q(r, "token_embd.weight")?;
        if tied && device.is_cpu() {
            // Also the output matmul's weight: kept as its tiles only, rows looked up there.
            embed_q = embed_q.into_packed_matmul_weight()?;
        }
        let embed_q = std::sync::Arc::new(embed_q);
        // Rows are looked up, not multiplied: kept in the file's quantization, dequantized per token.
        let embed = Embedding::new(embed_q.clone())?;
        let output = if !tied {
            mm(r, "output.weight")?
        } else if device.is_cpu() {
            // Tied: the output matmul reads the embedding's own blocks (one copy in memory).
            QMatMul::from_arc(embed_q)?
        } else {
            let dims = embed_q.shape().dims().to_vec();
            QMatMul::from_qtensor(crate::io::gguf::qtensor_from_bytes_on(embed_q.dtype(), &embed_q.data()?, dims, device)?)?
        };
        let norm = vec(r, "output_norm.weight")?;
        let mut layers = Vec::with_capacity(n_layers);
        for i in 0..n_layers {
            let p = |s: &str| format!("blk.{i}.{s}.weight");
            let (nq, nkv) = (cfg.n_head * cfg.head_dim, cfg.n_kv_head * cfg.head_dim);
            // q, k and v as three matrices, or already stacked into one (phi3's attn_qkv).
            let qkv = if ct.tensor_infos.contains_key(&p("attn_qkv")) {
                let t = q(r, &p("attn_qkv"))?;
                if t.shape().dims()[0] != nq + 2 * nkv {
                    candle_core::bail!("blk.{i}: attn_qkv of {:?} for {} + 2·{} rows", t.shape(), nq, nkv)
                }
                Stacked::new([t], device)?
            } else {
                let ts = [q(r, &p("attn_q"))?, q(r, &p("attn_k"))?, q(r, &p("attn_v"))?];
                if ts[0].shape().dims()[0] != nq || ts[1].shape().dims()[0] != nkv || ts[2].shape().dims()[0] != nkv {
                    candle_core::bail!("blk.{i}: attention weights of {:?}/{:?} for {} heads of {}", ts[0].shape(), ts[1].shape(), cfg.n_head, cfg.head_dim)
                }
                Stacked::new(ts, device)?
            };
            let ffn = if cfg.experts > 0 {
                Ffn::Moe(Moe::load(ct, r, i, &cfg, device)?)
            } else {
                Ffn::Dense(Self::load_mlp(ct, r, i, device)?)
            };
            let qkv_bias = if ct.tensor_infos.contains_key(&format!("blk.{i}.attn_q.bias")) {
                let mut b = |s: &str| -> Result<Tensor> { q(r, &format!("blk.{i}.{s}.bias"))?.dequantize(&dev)?.to_dtype(DType::F32) };
                let (bq, bk, bv) = (b("attn_q")?, b("attn_k")?, b("attn_v")?);
                if bq.elem_count() != nq || bk.elem_count() != nkv || bv.elem_count() != nkv {
                    candle_core::bail!("blk.{i}: attention biases of {}/{}/{} for {nq}/{nkv} rows", bq.elem_count(), bk.elem_count(), bv.elem_count())
                }
                Some(Tensor::cat(&[bq.flatten_all()?, bk.flatten_all()?, bv.flatten_all()?], 0)?.to_device(device)?)
            } else {
                None
            };
            let qk_norm = if ct.tensor_infos.contains_key(&p("attn_q_norm")) {
                let (qn, kn) = (vec(r, &p("attn_q_norm"))?, vec(r, &p("attn_k_norm"))?);
                if qn.elem_count() != cfg.head_dim || kn.elem_count() != cfg.head_dim {
                    candle_core::bail!("blk.{i}: q/k norms of {}/{} for a head dim of {}", qn.elem_count(), kn.elem_count(), cfg.head_dim)
                }
                Some((qn.to_dtype(DType::F32)?, kn.to_dtype(DType::F32)?))
            } else {
                None
            };
            let opt_norm = |r: &mut R, name: &str| -> Result<Option<Tensor>> {
                if ct.tensor_infos.contains_key(&p(name)) { Ok(Some(vec(r, &p(name))?)) } else { Ok(None) }
            };
            let (post_attn_norm, post_ffn_norm) = (opt_norm(r, "post_attention_norm")?, opt_norm(r, "post_ffw_norm")?);
            let local = cfg.window.is_some_and(|(_, pattern)| pattern == 0 || (i + 1) % pattern != 0);
            layers.push(Layer {
                qkv,
                qkv_bias,
                qk_norm,
                post_attn_norm,
                post_ffn_norm,
                local,
                wo: mm(r, &p("attn_output"))?,
                ffn,
                attn_norm: vec(r, &p("attn_norm"))?,
                ffn_norm: vec(r, &p("ffn_norm"))?,
            });
            // The layer's file blocks are freed now that its tiles exist: their pages go back at
            // once, so the peak stays near what the model keeps.
            crate::memory::release_free_pages();
        }
        // θᵢ = base^(-2i / rope_dim), in f32 as Candle's and llama.cpp's tables.
        let half = cfg.rope_dim / 2;
        let thetas = |base: f32| -> Vec<f32> { (0..half).map(|i| 1f32 / base.powf((2 * i) as f32 / cfg.rope_dim as f32)).collect() };
        let mut theta = thetas(cfg.rope_base);
        theta.iter_mut().for_each(|t| *t /= cfg.rope_linear);
        // Llama 3.x's frequency scaling, as llama.cpp's converter stores it: θᵢ / rope_freqs[i].
        if ct.tensor_infos.contains_key("rope_freqs.weight") {
            let f = q(r, "rope_freqs.weight")?.dequantize(&dev)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
            if f.len() != half || f.iter().any(|&x| !(x > 0.0 && x.is_finite())) {
                candle_core::bail!("rope_freqs.weight: {} positive factors expected, one per rotated pair", half)
            }
            theta.iter_mut().zip(&f).for_each(|(t, f)| *t /= f);
        }
        // Phi-3's LongRoPE: the short factors within the original context (positions are capped
        // there, see `Config::max_pos`), the rotation scaled by the file's attention factor.
        if ct.tensor_infos.contains_key("rope_factors_short.weight") {
            let f = q(r, "rope_factors_short.weight")?.dequantize(&dev)?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
            if f.len() != half || f.iter().any(|&x| !(x > 0.0 && x.is_finite())) {
                candle_core::bail!("rope_factors_short.weight: {} positive factors expected, one per rotated pair", half)
            }
            theta.iter_mut().zip(&f).for_each(|(t, f)| *t /= f);
        }
        let mscale = cfg.rope_mscale;
        // The device path also runs on the CPU in the generic test mode (CANDLE_BIND_GENERIC=1).
        let on_device = !device.is_cpu() || crate::device::generic();
        let table = |theta: &[f32]| -> Result<RopeTable> {
            let (mut cos, mut sin) = (Vec::with_capacity(cfg.max_pos * half), Vec::with_capacity(cfg.max_pos * half));
            for pos in 0..cfg.max_pos {
                for &t in theta {
                    let a = pos as f32 * t;
                    cos.push(a.cos() * mscale);
                    sin.push(a.sin() * mscale);
                }
            }
            let dev = if on_device {
                let up = |v: &Vec<f32>| Tensor::from_slice(v, (cfg.max_pos, half), device);
                Some((up(&cos)?, up(&sin)?))
            } else {
                None
            };
            Ok(RopeTable { cos, sin, dev })
        };
        let mut rope = vec![table(&theta)?];
        if let Some(base) = cfg.rope_base_local {
            rope.push(table(&thetas(base))?);
        }
        crate::memory::release_free_pages();
        Ok(Llama { cfg, embed, layers, norm, output, rope, caches: Default::default(), dev: device.clone(), on_device, kv_half: true })
    }

    /// Layer `i`'s dense MLP: gate and up as two matrices, or stacked into ffn_up (phi3: gate rows first).
    fn load_mlp<R: std::io::Read + std::io::Seek>(ct: &gguf_file::Content, r: &mut R, i: usize, device: &Device) -> Result<Mlp> {
        let p = |s: &str| format!("blk.{i}.{s}.weight");
        let q = |r: &mut R, name: &str| ct.tensor(r, name, &Device::Cpu);
        let down = q(r, &p("ffn_down"))?;
        let ff = down.shape().dims2()?.1;
        let gate_up = if ct.tensor_infos.contains_key(&p("ffn_gate")) {
            let ts = [q(r, &p("ffn_gate"))?, q(r, &p("ffn_up"))?];
            if ts.iter().any(|t| t.shape().dims()[0] != ff) {
                candle_core::bail!("blk.{i}: ffn_gate/ffn_up of {:?}/{:?} for ffn_down of {:?}", ts[0].shape(), ts[1].shape(), down.shape())
            }
            Stacked::new(ts, device)?
        } else {
            let t = q(r, &p("ffn_up"))?;
            if t.shape().dims()[0] != 2 * ff {
                candle_core::bail!("blk.{i}: a fused ffn_up of {:?} for ffn_down of {:?}", t.shape(), down.shape())
            }
            Stacked::new([t], device)?
        };
        Ok(Mlp::new(gate_up, QMatMul::from_qtensor(onto(down, device)?)?))
    }

    /// The rotary table of `layer` (gemma3's sliding layers have their own) and its key window.
    fn layer_rope(&self, layer: usize) -> (&RopeTable, Option<usize>) {
        let local = self.layers[layer].local;
        let table = if local && self.rope.len() > 1 { &self.rope[1] } else { &self.rope[0] };
        (table, if local { self.cfg.window.map(|(w, _)| w) } else { None })
    }

    pub fn max_positions(&self) -> usize {
        self.cfg.max_pos
    }

    /// Positions held in slot `slot`'s KV cache (0 when it has none).
    pub fn cached(&self, slot: u32) -> usize {
        self.caches.get(&slot).map_or(0, |c| c.len)
    }

    /// Keeps host KV caches in f16 (`true`, the default) or f32; drops the caches held.
    pub fn set_kv_half(&mut self, half: bool) {
        self.caches.clear();
        self.kv_half = half;
    }

    /// Drops every slot's cache.
    pub fn clear(&mut self) {
        self.caches.clear();
    }

    /// Drops one slot's cache (a finished sequence's memory comes back at once).
    pub fn release(&mut self, slot: u32) {
        self.caches.remove(&slot);
    }

    /// Bytes the KV caches hold now (host and device).
    pub fn kv_bytes(&self) -> usize {
        let per_pos = self.kv_bytes_per_position() / self.layers.len().max(1);
        self.caches.values().flat_map(|c| &c.layers).map(|l| l.host.bytes() + l.cap * per_pos).sum()
    }

    /// Bytes one cached position takes over all layers (keys and values: f16 or f32 on the host,
    /// f32 on a GPU).
    pub fn kv_bytes_per_position(&self) -> usize {
        let elem = if self.kv_half && !self.on_device { std::mem::size_of::<half::f16>() } else { std::mem::size_of::<f32>() };
        self.layers.len() * self.cfg.n_kv_head * self.cfg.head_dim * 2 * elem
    }

    /// Bytes a sequence's cache holds once it has grown to `positions` (whole pages on the host,
    /// the doubling steps on a GPU).
    pub fn kv_bytes_for(&self, positions: usize) -> usize {
        let positions = positions.max(1);
        let held = if self.on_device { cache_cap(positions, self.cfg.max_pos) } else { positions.div_ceil(PAGE) * PAGE };
        held * self.kv_bytes_per_position()
    }

    /// Logits (vocab,) of the last of `tokens` placed at positions `start..` of slot 0's cache,
    /// which keeps `0..start` from earlier calls (`start` may rewind, never skip ahead).
    pub fn forward(&mut self, tokens: &[u32], start: usize) -> Result<Tensor> {
        self.forward_batch(&[Seq { slot: 0, tokens, start }])?.squeeze(0)
    }

    /// One step over several sequences, each in its own cache slot: logits (sequences, vocab) of
    /// each one's last token. The projections run once over all their rows (the weights are read
    /// once per step, not once per sequence); attention reads each sequence's own cache. A row's
    /// numbers do not depend on the rows beside it (the quantized kernels compute each row alone),
    /// so a sequence decodes the same in a batch as alone.
    pub fn forward_batch(&mut self, seqs: &[Seq]) -> Result<Tensor> {
        if seqs.is_empty() {
            candle_core::bail!("a step needs at least one sequence")
        }
        for (i, q) in seqs.iter().enumerate() {
            let held = self.cached(q.slot);
            if q.start > held {
                candle_core::bail!("start_pos {} is past the {held} positions in the cache", q.start)
            }
            if q.tokens.is_empty() || q.start + q.tokens.len() > self.cfg.max_pos {
                candle_core::bail!("positions {}..{} are outside 0..{}", q.start, q.start + q.tokens.len(), self.cfg.max_pos)
            }
            if seqs[..i].iter().any(|p| p.slot == q.slot) {
                candle_core::bail!("cache slot {} appears twice in one step", q.slot)
            }
        }
        let n_layers = self.layers.len();
        for q in seqs {
            let half = self.kv_half;
            self.caches.entry(q.slot).or_insert_with(|| Cache {
                layers: (0..n_layers).map(|_| Kv { host: HostKv::new(half), ..Default::default() }).collect(),
                len: 0,
            });
        }
        let tokens: Vec<u32> = seqs.iter().flat_map(|q| q.tokens.iter().copied()).collect();
        let mut x = self.embed.rows(&tokens)?.to_device(&self.dev)?;
        if self.cfg.embed_scale != 1.0 {
            x = (x * self.cfg.embed_scale as f64)?;
        }
        let eps = self.cfg.eps;
        // Each residual add comes with the next norm (the next layer's, the last one's the final
        // norm): `h` is the normed stream a block reads.
        let mut h = crate::nn::norm::rms_norm(&x, self.layers.first().map_or(&self.norm, |l| &l.attn_norm), eps)?;
        for i in 0..self.layers.len() {
            let mut qkv = self.layers[i].qkv.forward(&h)?;
            if let Some(b) = &self.layers[i].qkv_bias {
                qkv = qkv.broadcast_add(b)?;
            }
            let a = if self.on_device { self.attend_device(i, &qkv, seqs)? } else { self.attend(i, &qkv, seqs)? };
            let l = &self.layers[i];
            let mut a = l.wo.forward(&a)?;
            if let Some(n) = &l.post_attn_norm {
                a = crate::nn::norm::rms_norm(&a, n, eps)?;
            }
            let (x_attn, h_attn) = crate::nn::norm::add_rms_norm(&x, &self.scaled(a)?, &l.ffn_norm, eps)?;
            x = x_attn;
            let mut f = match &l.ffn {
                Ffn::Dense(m) => m.forward(&h_attn, self.cfg.gelu)?,
                Ffn::Moe(m) => m.forward(&h_attn, self.cfg.gelu)?,
            };
            if let Some(n) = &l.post_ffn_norm {
                f = crate::nn::norm::rms_norm(&f, n, eps)?;
            }
            let next = self.layers.get(i + 1).map_or(&self.norm, |l| &l.attn_norm);
            (x, h) = crate::nn::norm::add_rms_norm(&x, &self.scaled(f)?, next, eps)?;
        }
        // Each sequence's last row.
        let mut last = Vec::with_capacity(seqs.len());
        let mut row = 0u32;
        for q in seqs {
            row += q.tokens.len() as u32;
            last.push(row - 1);
            if let Some(c) = self.caches.get_mut(&q.slot) {
                c.len = q.start + q.tokens.len();
            }
        }
        let h = if seqs.len() == 1 {
            h.narrow(0, tokens.len() - 1, 1)?
        } else {
            h.index_select(&Tensor::new(last.as_slice(), h.device())?, 0)?
        };
        let mut logits = self.output.forward(&h)?;
        if self.cfg.logit_scale != 1.0 {
            logits = (logits / self.cfg.logit_scale as f64)?;
        }
        match self.cfg.final_softcap {
            Some(c) => (logits / c as f64)?.tanh()? * c as f64,
            None => Ok(logits),
        }
    }

    /// A block's output as its residual add takes it (granite's multiplier).
    fn scaled(&self, t: Tensor) -> Result<Tensor> {
        if self.cfg.residual_scale == 1.0 { Ok(t) } else { t * self.cfg.residual_scale as f64 }
    }

    /// Rotates pairs (2i, 2i+1) of a head's first rope_dim values by position · θᵢ (NEOX: pairs
    /// (i, i + rope_dim/2)).
    fn rope(&self, table: &RopeTable, head: &mut [f32], pos: usize) {
        let half = self.cfg.rope_dim / 2;
        let (step, other) = if self.cfg.neox { (1, half) } else { (2, 1) };
        let (c, s) = (&table.cos[pos * half..][..half], &table.sin[pos * half..][..half]);
        for i in 0..half {
            let (ia, ib) = (step * i, step * i + other);
            let (a, b) = (head[ia], head[ib]);
            head[ia] = a * c[i] - b * s[i];
            head[ib] = a * s[i] + b * c[i];
        }
    }

    /// Causal attention of each sequence's queries over its cached keys/values 0..start+s after
    /// appending its k and v, from `qkv` (rows of all sequences, (heads + 2·kv_heads)·d each); the
    /// result (rows, heads·d) is laid out for the output projection.
    fn attend(&mut self, layer: usize, qkv: &Tensor, seqs: &[Seq]) -> Result<Tensor> {
        let Config { n_head, n_kv_head: n_kv, head_dim: d, .. } = self.cfg;
        let rows = qkv.dim(0)?;
        for q in seqs {
            let l = self.caches.get_mut(&q.slot).map(|c| &mut c.layers[layer])
                .ok_or_else(|| candle_core::Error::Msg(format!("no cache in slot {}", q.slot)))?;
            l.host.reserve(q.start + q.tokens.len(), n_kv * d);
        }
        let mut parts = Vec::with_capacity(seqs.len());
        let mut off = 0;
        for q in seqs {
            let l = self.caches.get(&q.slot).map(|c| &c.layers[layer])
                .ok_or_else(|| candle_core::Error::Msg(format!("no cache in slot {}", q.slot)))?;
            parts.push(Part { kv: &l.host, row: off, s: q.tokens.len(), start: q.start });
            off += q.tokens.len();
        }
        let norms = match &self.layers[layer].qk_norm {
            Some((qn, kn)) => Some((qn.to_vec1::<f32>()?, kn.to_vec1::<f32>()?)),
            None => None,
        };
        let (table, window) = self.layer_rope(layer);
        let eps = self.cfg.eps;
        let prep = |head: &mut [f32], pos: usize, key: bool| {
            if let Some((qn, kn)) = &norms {
                head_rms_norm(head, if key { kn } else { qn }, eps);
            }
            self.rope(table, head, pos);
        };
        let shape = Shape { n_head, n_kv, d, scale: self.cfg.q_scale, softcap: self.cfg.attn_softcap, window };
        let mut out = crate::tensor::kernels::uninit_vec::<f32>(rows * n_head * d);
        let all = qkv.flatten_all()?.to_vec1::<f32>()?;
        if all.len() != rows * (n_head + 2 * n_kv) * d {
            candle_core::bail!("q/k/v rows of {} values, not {}", all.len() / rows.max(1), (n_head + 2 * n_kv) * d)
        }
        super::attention::attend(&shape, &all, &parts, &prep, &mut out);
        Tensor::from_vec(out, (rows, n_head * d), &Device::Cpu)
    }

    /// `attend` on a GPU, one sequence after another.
    fn attend_device(&mut self, layer: usize, qkv: &Tensor, seqs: &[Seq]) -> Result<Tensor> {
        let mut outs = Vec::with_capacity(seqs.len());
        let mut off = 0;
        for q in seqs {
            let s = q.tokens.len();
            outs.push(self.attend_device_one(layer, &qkv.narrow(0, off, s)?, q.slot, q.start)?);
            off += s;
        }
        if outs.len() == 1 {
            return Ok(outs.swap_remove(0));
        }
        Tensor::cat(&outs, 0)
    }

    /// `attend` on a GPU: the same computation as device tensor ops (q and k rotated by candle-nn's
    /// interleaved RoPE kernel, k and v written into the layer's device cache, each key/value head's
    /// query heads batched into one matmul against it).
    fn attend_device_one(&mut self, layer: usize, qkv: &Tensor, slot: u32, start: usize) -> Result<Tensor> {
        let Config { n_head, n_kv_head: n_kv, head_dim: d, rope_dim, .. } = self.cfg;
        let s = qkv.dim(0)?;
        let (nq, nk) = (n_head * d, n_kv * d);
        // (heads, s, d) each
        let split = |at: usize, heads: usize| -> Result<Tensor> {
            qkv.narrow(1, at, heads * d)?.reshape((s, heads, d))?.transpose(0, 1)?.contiguous()
        };
        let (mut q, mut k, v) = (split(0, n_head)?, split(nq, n_kv)?, split(nq + nk, n_kv)?);
        if let Some((qn, kn)) = &self.layers[layer].qk_norm {
            q = crate::nn::norm::rms_norm(&q, qn, self.cfg.eps)?;
            k = crate::nn::norm::rms_norm(&k, kn, self.cfg.eps)?;
        }
        let (table, window) = self.layer_rope(layer);
        let (cos, sin) = table.dev.as_ref().ok_or_else(|| candle_core::Error::Msg("no rotary tables".into()))?;
        let (cos, sin) = (cos.narrow(0, start, s)?, sin.narrow(0, start, s)?);
        let neox = self.cfg.neox;
        let rope = |x: &Tensor| if neox { candle_nn::rotary_emb::rope(x, &cos, &sin) } else { candle_nn::rotary_emb::rope_i(x, &cos, &sin) };
        let rotate = |x: Tensor| -> Result<Tensor> {
            let x = x.unsqueeze(0)?;
            let r = if rope_dim == d {
                rope(&x)?
            } else {
                let head = rope(&x.narrow(3, 0, rope_dim)?.contiguous()?)?;
                Tensor::cat(&[head, x.narrow(3, rope_dim, d - rope_dim)?], 3)?
            };
            r.squeeze(0)
        };
        let (q, k) = (rotate(q)?, rotate(k)?.contiguous()?);
        let total = start + s;
        let max_pos = self.cfg.max_pos;
        let l = self.caches.get_mut(&slot).map(|c| &mut c.layers[layer])
            .ok_or_else(|| candle_core::Error::Msg(format!("no cache in slot {slot}")))?;
        if total > l.cap {
            let cap = cache_cap(total, max_pos);
            let (nk_, nv_) = (Tensor::zeros((n_kv, cap, d), DType::F32, &self.dev)?, Tensor::zeros((n_kv, cap, d), DType::F32, &self.dev)?);
            if let Some((ok, ov)) = &l.dev {
                if start > 0 {
                    nk_.slice_set(&ok.narrow(1, 0, start)?.contiguous()?, 1, 0)?;
                    nv_.slice_set(&ov.narrow(1, 0, start)?.contiguous()?, 1, 0)?;
                }
            }
            (l.dev, l.cap) = (Some((nk_, nv_)), cap);
        }
        let (kc, vc) = l.dev.as_ref().ok_or_else(|| candle_core::Error::Msg("no KV cache".into()))?;
        kc.slice_set(&k, 1, start)?;
        vc.slice_set(&v.contiguous()?, 1, start)?;
        let (kk, vv) = (kc.narrow(1, 0, total)?, vc.narrow(1, 0, total)?);
        let group = n_head / n_kv;
        // Query head h = g·group + j reads key/value head g: (kv heads, group·s, d) against (kv heads, total, d).
        let qg = q.reshape((n_kv, group * s, d))?;
        let mut scores = (qg.matmul(&kk.t()?)? * self.cfg.q_scale as f64)?;
        if let Some(c) = self.cfg.attn_softcap {
            scores = ((scores / c as f64)?.tanh()? * c as f64)?;
        }
        if s > 1 || window.is_some_and(|w| total > w) {
            // query start+i sees keys 0..=start+i (the last w of them on a sliding layer)
            let lo = |i: usize| window.map_or(0, |w| (start + i + 1).saturating_sub(w));
            let mask: Vec<f32> = (0..s)
                .flat_map(|i| (0..total).map(move |j| if j <= start + i && j >= lo(i) { 0.0 } else { f32::NEG_INFINITY }))
                .collect();
            let mask = Tensor::from_vec(mask, (s, total), &self.dev)?;
            scores = scores.reshape((n_kv, group, s, total))?.broadcast_add(&mask)?.reshape((n_kv, group * s, total))?;
        }
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let out = probs.matmul(&vv)?; // (kv heads, group·s, d) = (heads, s, d)
        out.reshape((n_head, s, d))?.transpose(0, 1)?.reshape((s, n_head * d))
    }
}

/// Positions a sequence's cache allocates to hold `total`: doubling from 256, up to the rotary
/// table's length (never below `total`).
fn cache_cap(total: usize, max_pos: usize) -> usize {
    total.next_power_of_two().max(256).min(max_pos).max(total)
}

/// `t` (read on the host) placed on `device` in its quantization. On the CPU a weight that the
/// packed Q8_0 tiles serve keeps only them (the weight held once, not once per layout).
pub(super) fn onto(t: QTensor, device: &Device) -> Result<QTensor> {
    if device.is_cpu() {
        return t.into_packed_matmul_weight();
    }
    crate::io::gguf::qtensor_from_bytes_on(t.dtype(), &t.data()?, t.shape().dims().to_vec(), device)
}

/// Projections of one input whose outputs are used side by side: one matrix when the weights share
/// a dtype (rows are whole blocks, so the bytes simply follow each other), else one matmul each and
/// the outputs concatenated (files mixing quantizations, e.g. Q4_K_M's Q6_K value rows).
pub(super) enum Stacked {
    One(QMatMul),
    Each(Vec<QMatMul>),
}

impl Stacked {
    pub(super) fn new<const N: usize>(ts: [QTensor; N], device: &Device) -> Result<Self> {
        let cols = ts[0].shape().dims2()?.1;
        for t in &ts {
            if t.shape().dims2()?.1 != cols {
                candle_core::bail!("projections of one input with {cols} and {:?} columns", t.shape())
            }
        }
        if ts.iter().all(|t| t.dtype() == ts[0].dtype()) {
            return Ok(Stacked::One(QMatMul::from_qtensor(onto(stack_rows(&ts)?, device)?)?));
        }
        Ok(Stacked::Each(ts.into_iter().map(|t| QMatMul::from_qtensor(onto(t, device)?)).collect::<Result<_>>()?))
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Stacked::One(m) => m.forward(x),
            Stacked::Each(ms) => Tensor::cat(&ms.iter().map(|m| m.forward(x)).collect::<Result<Vec<_>>>()?, 1),
        }
    }
}

/// A gated MLP: down(act(gate(h)) · up(h)), SiLU or (gemma) GELU-tanh.
pub(super) struct Mlp {
    gate_up: Stacked,
    down: QMatMul,
}

impl Mlp {
    pub(super) fn new(gate_up: Stacked, down: QMatMul) -> Self {
        Mlp { gate_up, down }
    }

    pub(super) fn forward(&self, h: &Tensor, gelu: bool) -> Result<Tensor> {
        // Long prompts (or several at once) in slices of rows: the [gate | up] products and the gated
        // rows of 1024 tokens of a 4864-wide MLP were 60 MB at once; rows do not depend on their
        // neighbours, so the result is the same.
        const ROWS: usize = 256;
        let rows = h.dim(0)?;
        if rows > ROWS {
            let parts = (0..rows).step_by(ROWS).map(|r| self.forward_rows(&h.narrow(0, r, ROWS.min(rows - r))?, gelu));
            return Tensor::cat(&parts.collect::<Result<Vec<_>>>()?, 0);
        }
        self.forward_rows(h, gelu)
    }

    fn forward_rows(&self, h: &Tensor, gelu: bool) -> Result<Tensor> {
        let gu = self.gate_up.forward(h)?;
        let (rows, ff) = (gu.dim(0)?, gu.dim(1)? / 2);
        if let Some(gated) = gated_on_host(&gu, ff, gelu) {
            return self.down.forward(&Tensor::from_vec(gated, (rows, ff), &Device::Cpu)?);
        }
        let gate = gu.narrow(1, 0, ff)?;
        let gate = if gelu { gate.gelu()? } else { candle_nn::ops::silu(&gate)? };
        self.down.forward(&(gate * gu.narrow(1, ff, ff)?)?)
    }
}

/// act(gate) · up of host f32 rows [gate | up] in one pass (None elsewhere): two elementwise ops and
/// their temporaries were a tenth of a batched decode step.
fn gated_on_host(gu: &Tensor, ff: usize, gelu: bool) -> Option<Vec<f32>> {
    let (storage, layout) = gu.storage_and_layout();
    let (candle_core::Storage::Cpu(candle_core::CpuStorage::F32(v)), Some((start, end))) = (&*storage, layout.contiguous_offsets()) else {
        return None;
    };
    if ff == 0 {
        return None;
    }
    let mut out = crate::tensor::kernels::uninit_vec::<f32>(gu.elem_count() / 2);
    let gu = &v[start..end];
    let run = |r0: usize, out: &mut [f32]| {
        let gu = &gu[r0 * 2 * ff..][..out.len() * 2];
        if gelu {
            gate_rows(gu, ff, out, crate::nn::activation::gelu_tanh32);
        } else {
            gate_rows(gu, ff, out, crate::nn::activation::silu32);
        }
    };
    // Rows split over the quantized matmuls' pool (its workers spin between the projections
    // anyway) once there are several and enough work: a batched step's 8 rows of 1536 ran on one
    // thread while the other cores waited for the down projection.
    let rows = out.len() / ff;
    if rows > 1 && out.len() >= 8 * 1024 {
        let dst = out.as_mut_ptr() as usize;
        candle_core::utils::barrier_pool().execute_chunked(rows, |range| {
            // SAFETY: each range of rows is this task's alone, inside `out` (rows · ff elements).
            let part = unsafe { std::slice::from_raw_parts_mut((dst as *mut f32).add(range.start * ff), range.len() * ff) };
            run(range.start, part);
        });
    } else {
        run(0, &mut out);
    }
    Some(out)
}

crate::tensor::kernels::multiversion! {
    fn gate_rows<F>(gu: &[f32], ff: usize, out: &mut [f32], act: F) where [F: Fn(f32) -> f32] {
        for (o, row) in out.chunks_exact_mut(ff).zip(gu.chunks_exact(2 * ff)) {
            let (g, u) = row.split_at(ff);
            for ((o, &g), &u) in o.iter_mut().zip(g).zip(u) {
                *o = act(g) * u;
            }
        }
    }
}

/// A layer's feed-forward block.
enum Ffn {
    Dense(Mlp),
    Moe(Moe),
}

fn stack_rows(ts: &[QTensor]) -> Result<QTensor> {
    let (dtype, cols) = (ts[0].dtype(), ts[0].shape().dims2()?.1);
    let mut rows = 0;
    let mut bytes = Vec::new();
    for t in ts {
        rows += t.shape().dims2()?.0;
        bytes.extend_from_slice(&t.data()?);
    }
    qtensor_from_bytes(dtype, &bytes, vec![rows, cols])
}

/// The token embedding table in its GGUF quantization (Q8_0 is half the size of f16), rows
/// dequantized as they are looked up.
struct Embedding {
    /// The table as read (host memory), shared with a tied output matmul.
    table: std::sync::Arc<QTensor>,
    row_bytes: usize,
    cols: usize,
}

impl Embedding {
    fn new(table: std::sync::Arc<QTensor>) -> Result<Self> {
        let (rows, cols) = table.shape().dims2()?;
        let dtype = table.dtype();
        if table.packed_rows(&[]).is_some() {
            return Ok(Embedding { row_bytes: 0, table, cols });
        }
        let len = table.data()?.len();
        if rows == 0 || cols % dtype.block_size() != 0 || len % rows != 0 {
            candle_core::bail!("token_embd.weight {:?} is not whole {dtype:?} rows", table.shape())
        }
        Ok(Embedding { row_bytes: len / rows, table, cols })
    }

    /// Rows `ids` as f32 (ids.len(), cols); ids are checked by the caller.
    fn rows(&self, ids: &[u32]) -> Result<Tensor> {
        if let Some(rows) = self.table.packed_rows(ids) {
            return Tensor::from_vec(rows?, (ids.len(), self.cols), &Device::Cpu);
        }
        let bytes = self.table.data()?;
        let mut picked = Vec::with_capacity(ids.len() * self.row_bytes);
        for &i in ids {
            picked.extend_from_slice(&bytes[i as usize * self.row_bytes..][..self.row_bytes]);
        }
        qtensor_from_bytes(self.table.dtype(), &picked, vec![ids.len(), self.cols])?.dequantize(&Device::Cpu)?.to_dtype(DType::F32)
    }
}

/// RMSNorm of every `w.len()`-wide head in `x` (rows of heads laid end to end), times `w`.
fn head_rms_norm(x: &mut [f32], w: &[f32], eps: f32) {
    for head in x.chunks_exact_mut(w.len()) {
        let ms = head.iter().map(|v| v * v).sum::<f32>() / w.len() as f32;
        let inv = 1.0 / (ms + eps).sqrt();
        head.iter_mut().zip(w).for_each(|(v, w)| *v *= inv * w);
    }
}
