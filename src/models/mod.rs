//! Native models behind `candle_bind.models`: quantized GGUF LLMs (`llama.rs`) with their KV cache,
//! the token sampler their generation loop uses, and candle-transformers' BERT.
//!
//! The GGUF header is parsed and checked by our reader first (`io::gguf::parse`), so the metadata
//! Candle's loader sizes things by (layer and expert counts, head and rope dims) is known sane and
//! every tensor lies inside the file before Candle reads a byte.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use candle_core::quantized::gguf_file;
use candle_core::{DType as CDType, Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::dtype::DType;
use crate::error::{shape_err, value_err, IntoPyResult};
use crate::io::gguf::{parse, TensorSpan};
use crate::tensor::PyTensor;

mod attention;
mod llama;
mod moe;
use llama::{Config, Llama, Seq};

/// Architectures `llama.rs` runs: llama's tensor names under their own metadata prefix. qwen2 adds
/// q/k/v biases and rotates NEOX-style (halves, not pairs), as llama.cpp runs it; qwen3 has no
/// biases but RMS-normalises each head of q and k, with a head dim of its own (`key_length`); phi3
/// stacks q/k/v and gate/up into one matrix each and may carry LongRoPE factors; gemma scales the
/// embeddings by sqrt(width) and gates with GELU, gemma2 adds post-norms, soft-capping and
/// sliding-window layers, gemma3 q/k norms and its sliding layers' own rotary base. A file with
/// `expert_count` > 1 (Mixtral-style llama, qwen3moe: qwen3 with routed experts) has
/// mixture-of-experts MLPs (`moe.rs`); a llama file with a sliding window (Mistral v0.1) slides on
/// every layer.
const LLAMA_ARCHS: [&str; 9] = ["llama", "qwen2", "qwen3", "qwen3moe", "phi3", "gemma", "gemma2", "gemma3", "granite"];

fn meta_u64(meta: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<u64>> {
    match meta.get_item(key)? {
        None => Ok(None),
        Some(v) => v.extract::<u64>().map(Some).map_err(|_| value_err(format!("invalid GGUF model: {key} is not a non-negative integer"))),
    }
}

/// The hyper-parameters the loader allocates by, checked against the tensors present: the model's
/// config, its layer count and its vocabulary size.
fn check_llama(meta: &Bound<'_, PyDict>, spans: &[TensorSpan], arch: &str) -> PyResult<(Config, usize, usize)> {
    let need = |key: &str| -> PyResult<u64> {
        let key = format!("{arch}.{key}");
        meta_u64(meta, &key)?.ok_or_else(|| value_err(format!("invalid GGUF model: metadata key {key} is missing")))
    };
    let opt = |key: &str| meta_u64(meta, &format!("{arch}.{key}"));
    let float = |key: &str, default: f32| -> PyResult<f32> {
        let key = format!("{arch}.{key}");
        match meta.get_item(&key)? {
            None => Ok(default),
            Some(v) => v.extract::<f32>().map_err(|_| value_err(format!("invalid GGUF model: {key} is not a number"))),
        }
    };
    let bad = |msg: String| value_err(format!("invalid GGUF model: {msg}"));
    let (heads, blocks, emb) = (need("attention.head_count")?, need("block_count")?, need("embedding_length")?);
    let kv_heads = opt("attention.head_count_kv")?.unwrap_or(heads);
    // The head dim: the file's key_length (qwen3: not the width over the heads), else width / heads.
    let head_dim = match opt("attention.key_length")? {
        Some(k) => k,
        None if heads > 0 && emb % heads == 0 => emb / heads,
        None => 0,
    };
    let value_dim = opt("attention.value_length")?.unwrap_or(head_dim);
    if heads == 0 || kv_heads == 0 || heads % kv_heads != 0 || emb == 0 || head_dim == 0 || head_dim % 2 != 0
        || value_dim != head_dim || heads * head_dim > 1 << 20 {
        return Err(bad(format!("{heads} heads of {head_dim} ({kv_heads} key/value heads) and embedding length {emb} do not fit together")));
    }
    // The rotated dims default to the whole head (qwen2 files leave the key out).
    let rope = opt("rope.dimension_count")?.unwrap_or(head_dim);
    if rope == 0 || rope % 2 != 0 || rope > head_dim {
        return Err(bad(format!("rope dimension {rope} for a head dimension of {head_dim}")));
    }
    let experts = opt("expert_count")?.unwrap_or(0);
    if blocks == 0 || blocks > spans.len() as u64 || experts > spans.len() as u64 {
        return Err(bad(format!("{blocks} blocks and {experts} experts for {} tensors", spans.len())));
    }
    let experts_used = opt("expert_used_count")?.unwrap_or(0);
    if experts > 1 && !(1..=experts).contains(&experts_used) {
        return Err(bad(format!("{arch}.expert_used_count is {experts_used} for {experts} experts")));
    }
    if arch == "qwen3moe" && experts < 2 {
        return Err(bad(format!("qwen3moe with {experts} experts")));
    }
    let expert_norm = match meta.get_item(format!("{arch}.expert_weights_norm"))? {
        Some(v) => v.extract::<bool>().map_err(|_| bad(format!("{arch}.expert_weights_norm is not a bool")))?,
        None => true,
    };
    if let Some(a) = meta.get_item("general.alignment")? {
        if a.extract::<u32>().map_or(true, |a| a == 0) {
            return Err(bad("general.alignment must be a positive u32".into()));
        }
    }
    let (eps, rope_base) = (float("attention.layer_norm_rms_epsilon", 1e-5)?, float("rope.freq_base", 10000.0)?);
    if !(eps > 0.0 && eps < 1.0) || !(rope_base > 1.0 && rope_base.is_finite()) {
        return Err(bad(format!("rms epsilon {eps} or rope base {rope_base} out of range")));
    }
    // Rotary tables cover the trained context, up to 32k positions; with LongRoPE factors (phi3's
    // long-context files) the original context, where the short factors hold.
    let mut max_pos = opt("context_length")?.unwrap_or(4096).clamp(1, 32768) as usize;
    if spans.iter().any(|t| t.name == "rope_factors_short.weight") {
        if let Some(orig) = opt("rope.scaling.original_context_length")? {
            max_pos = max_pos.min(orig.max(1) as usize);
        }
    }
    // The rotary tables (two for gemma3) hold max_pos · rope/2 cos and sin values: at most 1 GiB.
    if max_pos as u64 * rope > 1 << 27 {
        return Err(bad(format!("rotary tables of {max_pos} positions x {rope} dims")));
    }
    let rope_mscale = float("rope.scaling.attn_factor", 1.0)?;
    if !(rope_mscale > 0.0 && rope_mscale < 16.0) {
        return Err(bad(format!("rope attention factor {rope_mscale} out of range")));
    }
    let embd = spans.iter().find(|t| t.name == "token_embd.weight").ok_or_else(|| bad("no token_embd.weight tensor".into()))?;
    let vocab = match embd.dims[..] {
        [vocab, e] if e as u64 == emb && vocab > 0 => vocab,
        _ => return Err(bad(format!("token_embd.weight has shape {:?}, expected (vocab, {emb})", embd.dims))),
    };
    let (n_head, head_dim) = (heads as usize, head_dim as usize);
    let gemma = arch.starts_with("gemma");
    let neox = matches!(arch, "qwen2" | "qwen3" | "qwen3moe" | "phi3") || gemma;
    let positive = |key: &str| -> PyResult<Option<f32>> {
        match meta.get_item(format!("{arch}.{key}"))? {
            None => Ok(None),
            Some(v) => match v.extract::<f32>() {
                Ok(x) if x > 0.0 && x.is_finite() => Ok(Some(x)),
                _ => Err(bad(format!("{arch}.{key} must be a positive number"))),
            },
        }
    };
    // Sliding-window layers (llama.cpp's patterns: gemma2 every other layer, gemma3 five of six).
    let window = match (opt("attention.sliding_window")?, arch) {
        (Some(w), "gemma2" | "gemma3") if w > 0 => {
            let pattern = opt("attention.sliding_window_pattern")?.unwrap_or(if arch == "gemma2" { 2 } else { 6 });
            Some((w as usize, pattern as usize))
        }
        // Mistral v0.1's window, on every layer (pattern 0).
        (Some(w), "llama") if w > 0 => Some((w as usize, 0)),
        _ => None,
    };
    let linear = match meta.get_item(format!("{arch}.rope.scaling.type"))? {
        Some(t) if t.extract::<String>().is_ok_and(|t| t == "linear") => positive("rope.scaling.factor")?.unwrap_or(1.0),
        _ => 1.0,
    };
    // Granite's multipliers (llama.cpp's keys; 1, or 1/sqrt(head_dim) for the scores, where absent).
    let granite = |key: &str| -> PyResult<Option<f32>> { if arch == "granite" { positive(key) } else { Ok(None) } };
    let cfg = Config {
        n_head,
        n_kv_head: kv_heads as usize,
        head_dim,
        rope_dim: rope as usize,
        rope_base,
        eps,
        max_pos,
        neox,
        rope_mscale,
        embed_scale: if gemma { (emb as f32).sqrt() } else { granite("embedding_scale")?.unwrap_or(1.0) },
        residual_scale: granite("residual_scale")?.unwrap_or(1.0),
        logit_scale: granite("logit_scale")?.unwrap_or(1.0),
        gelu: gemma,
        attn_softcap: if arch == "gemma2" { positive("attn_logit_softcapping")? } else { None },
        final_softcap: if arch == "gemma2" { positive("final_logit_softcapping")? } else { None },
        window,
        rope_base_local: (arch == "gemma3").then_some(10000.0),
        rope_linear: linear,
        q_scale: granite("attention.scale")?.unwrap_or(1.0 / (head_dim as f32).sqrt()),
        experts: if experts > 1 { experts as usize } else { 0 },
        experts_used: experts_used as usize,
        expert_norm,
    };
    Ok((cfg, blocks as usize, vocab))
}

/// Runs Candle code that may panic on odd weights and turns a panic into a Python exception.
fn guarded<T>(what: &str, f: impl FnOnce() -> candle_core::Result<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.py(),
        Err(_) => Err(value_err(format!("{what} failed: the model's weights do not fit its metadata"))),
    }
}

/// A quantized llama-architecture (or qwen2) GGUF model (`llama.rs`) with its KV cache.
#[pyclass(name = "GgufLlama", module = "candle_bind")]
pub struct PyGgufLlama {
    model: Mutex<Llama>,
    metadata: Py<PyDict>,
    vocab_size: usize,
}

impl PyGgufLlama {
    /// Runs `f` on the model with the GIL released (another thread's step is waited for there). A
    /// panic mid-step leaves a cache the next start_pos=0 call overwrites, so a poisoned lock is usable.
    fn with_model<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Llama) -> T + Send) -> T {
        py.detach(|| f(&mut self.model.lock().unwrap_or_else(|e| e.into_inner())))
    }

    /// Logits (vocab,) after feeding `tokens` at `start_pos`.
    fn run(&self, py: Python<'_>, tokens: Vec<u32>, start_pos: usize) -> PyResult<PyTensor> {
        if tokens.is_empty() {
            return Err(value_err("GgufLlama: input_ids has no tokens"));
        }
        self.check_ids(&tokens)?;
        let logits = self.with_model(py, |m| {
            if start_pos > m.cached(0) {
                return Err(value_err(format!("GgufLlama: start_pos {start_pos} is past the {} positions in the cache",
                                             m.cached(0))));
            }
            if start_pos + tokens.len() > m.max_positions() {
                return Err(value_err(format!("GgufLlama: positions up to {} asked, the model holds {}",
                                             start_pos + tokens.len(), m.max_positions())));
            }
            guarded("forward", || m.forward(&tokens, start_pos))
        })?;
        Ok(PyTensor::new(logits, DType::F32))
    }

    fn check_ids(&self, ids: &[u32]) -> PyResult<()> {
        match ids.iter().find(|&&i| i as usize >= self.vocab_size) {
            Some(i) => Err(PyIndexError::new_err(format!("token id {i} is out of range for a vocabulary of {}", self.vocab_size))),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl PyGgufLlama {
    #[new]
    #[pyo3(signature = (path, device=None, kv_dtype=None))]
    fn new(py: Python<'_>, path: std::path::PathBuf, device: Option<&Bound<'_, PyAny>>, kv_dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let device = crate::device::opt_device(device)?;
        // The host KV caches' element type: float16 (llama.cpp's default) or float32.
        let kv_half = match crate::dtype::opt_dtype(kv_dtype)? {
            None | Some(DType::F16) => true,
            Some(DType::F32) => false,
            Some(d) => return Err(value_err(format!("kv_dtype must be float16 or float32, not {}", d.name()))),
        };
        let f = std::fs::File::open(&path)?;
        // SAFETY: read-only map; the file must not be truncated while we read it.
        let map = unsafe { memmap2::Mmap::map(&f)? };
        let (meta, spans) = parse(py, &map)?;
        let arch: String = match meta.get_item("general.architecture")? {
            Some(a) => a.extract().unwrap_or_default(),
            None => String::new(),
        };
        if !LLAMA_ARCHS.contains(&arch.as_str()) {
            return Err(PyNotImplementedError::new_err(format!(
                "GGUF architecture {arch:?} is not supported by candle_bind.models.from_gguf yet (supported: {})",
                LLAMA_ARCHS.join(", ")
            )));
        }
        let (cfg, n_layers, vocab_size) = check_llama(&meta, &spans, &arch)?;
        // Weights are read (not mapped) into their own buffers: a map would count the whole file in
        // the process's memory on top of them until dropped.
        drop(map);
        let model = py.detach(|| {
            guarded("loading the GGUF model", || {
                let mut file = std::io::BufReader::new(f);
                let content = gguf_file::Content::read(&mut file)?;
                let mut m = Llama::load(&content, &mut file, cfg, n_layers, &device)?;
                m.set_kv_half(kv_half);
                Ok(m)
            })
        })?;
        Ok(PyGgufLlama { model: Mutex::new(model), metadata: meta.unbind(), vocab_size })
    }

    /// The GGUF metadata (hyper-parameters, tokenizer, chat template).
    #[getter]
    fn metadata(&self, py: Python<'_>) -> Py<PyDict> {
        self.metadata.clone_ref(py)
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Positions the model takes (its trained context, at most the rotary tables' 32k).
    #[getter]
    fn max_positions(&self, py: Python<'_>) -> usize {
        self.with_model(py, |m| m.max_positions())
    }

    /// Logits (1, vocab) of the last position for `input_ids` (seq,) or (1, seq) placed at `start_pos`;
    /// the KV cache keeps positions `0..start_pos+seq`, and `start_pos=0` starts it afresh.
    fn forward(&self, py: Python<'_>, input_ids: &PyTensor, start_pos: usize) -> PyResult<PyTensor> {
        if input_ids.dtype.is_float() || input_ids.dtype == DType::Bool {
            return Err(value_err(format!("GgufLlama: input_ids must be integer token ids, got {}", input_ids.dtype.name())));
        }
        let flat: Vec<i64> = match input_ids.dims() {
            [_] | [1, _] => input_ids.t.flatten_all().py()?.to_dtype(CDType::I64).py()?.to_vec1().py()?,
            [b, _] => return Err(value_err(format!("GgufLlama: one sequence at a time (batch size 1), got a batch of {b}"))),
            d => return Err(shape_err(format!("GgufLlama: input_ids must be (seq,) or (1, seq), got shape {d:?}"))),
        };
        if let Some(&i) = flat.iter().find(|&&i| i < 0 || i as u64 >= self.vocab_size as u64) {
            return Err(PyIndexError::new_err(format!("token id {i} is out of range for a vocabulary of {}", self.vocab_size)));
        }
        let logits = self.run(py, flat.into_iter().map(|i| i as u32).collect(), start_pos)?;
        Ok(PyTensor::new(logits.t.unsqueeze(0).py()?, DType::F32))
    }

    /// Logits (vocab,) after feeding `tokens` at `start_pos`: the generation loop's step.
    fn step(&self, py: Python<'_>, tokens: Vec<u32>, start_pos: usize) -> PyResult<PyTensor> {
        self.run(py, tokens, start_pos)
    }

    /// One step over several sequences: `seqs` holds (cache slot, new tokens, start position) per
    /// sequence; the logits (sequences, vocab) of each one's last token.
    fn step_batch(&self, py: Python<'_>, seqs: Vec<(u32, Vec<u32>, usize)>) -> PyResult<PyTensor> {
        if seqs.is_empty() {
            return Err(value_err("GgufLlama.step_batch: no sequences"));
        }
        for (i, (slot, tokens, _)) in seqs.iter().enumerate() {
            if tokens.is_empty() {
                return Err(value_err(format!("GgufLlama.step_batch: sequence {i} has no tokens")));
            }
            if seqs[..i].iter().any(|(s, _, _)| s == slot) {
                return Err(value_err(format!("GgufLlama.step_batch: cache slot {slot} appears twice")));
            }
            self.check_ids(tokens)?;
        }
        let logits = self.with_model(py, |m| {
            for (slot, tokens, start) in &seqs {
                if *start > m.cached(*slot) {
                    return Err(value_err(format!("GgufLlama.step_batch: start_pos {start} is past the {} positions in slot {slot}'s cache",
                                                 m.cached(*slot))));
                }
                if start + tokens.len() > m.max_positions() {
                    return Err(value_err(format!("GgufLlama.step_batch: positions up to {} asked, the model holds {}",
                                                 start + tokens.len(), m.max_positions())));
                }
            }
            let batch: Vec<Seq> = seqs.iter().map(|(slot, tokens, start)| Seq { slot: *slot, tokens, start: *start }).collect();
            guarded("forward", || m.forward_batch(&batch))
        })?;
        Ok(PyTensor::new(logits, DType::F32))
    }

    /// Positions held in cache slot `slot` (0 if it holds none).
    #[pyo3(signature = (slot=0))]
    fn cached(&self, py: Python<'_>, slot: u32) -> usize {
        self.with_model(py, |m| m.cached(slot))
    }

    /// Frees cache slot `slot` (a finished sequence's).
    fn release(&self, py: Python<'_>, slot: u32) {
        self.with_model(py, |m| m.release(slot));
    }

    /// Bytes held by the KV caches of every slot.
    #[getter]
    fn kv_cache_bytes(&self, py: Python<'_>) -> usize {
        self.with_model(py, |m| m.kv_bytes())
    }

    /// Bytes one cached position takes (all layers, keys and values).
    #[getter]
    fn kv_bytes_per_position(&self, py: Python<'_>) -> usize {
        self.with_model(py, |m| m.kv_bytes_per_position())
    }

    /// Bytes a sequence's cache holds once it has grown to `positions`.
    fn kv_bytes_for(&self, py: Python<'_>, positions: usize) -> usize {
        self.with_model(py, |m| m.kv_bytes_for(positions))
    }

    /// Drops every KV cache.
    fn clear_kv_cache(&self, py: Python<'_>) {
        self.with_model(py, |m| m.clear());
    }
}

/// Picks the next token from logits: greedy, or temperature with top-k / top-p, after a
/// repetition penalty over the tokens so far (as transformers' `generate` does).
#[pyclass(name = "Sampler", module = "candle_bind")]
pub struct PySampler {
    processor: Mutex<LogitsProcessor>,
    repetition_penalty: f32,
}

#[pymethods]
impl PySampler {
    #[new]
    #[pyo3(signature = (temperature=0.0, top_k=None, top_p=None, repetition_penalty=1.0, seed=None))]
    fn new(temperature: f64, top_k: Option<usize>, top_p: Option<f64>, repetition_penalty: f32, seed: Option<u64>) -> PyResult<Self> {
        if !(temperature >= 0.0) || !temperature.is_finite() {
            return Err(value_err(format!("temperature must be a finite number >= 0, got {temperature}")));
        }
        if top_k == Some(0) {
            return Err(value_err("top_k must be a positive integer"));
        }
        if let Some(p) = top_p {
            if !(p > 0.0 && p <= 1.0) {
                return Err(value_err(format!("top_p must be in (0, 1], got {p}")));
            }
        }
        if !(repetition_penalty > 0.0) || !repetition_penalty.is_finite() {
            return Err(value_err(format!("repetition_penalty must be a positive number, got {repetition_penalty}")));
        }
        let top_p = top_p.filter(|&p| p < 1.0);
        let sampling = match (temperature, top_k, top_p) {
            (t, _, _) if t == 0.0 => Sampling::ArgMax,
            (t, None, None) => Sampling::All { temperature: t },
            (t, Some(k), None) => Sampling::TopK { k, temperature: t },
            (t, None, Some(p)) => Sampling::TopP { p, temperature: t },
            (t, Some(k), Some(p)) => Sampling::TopKThenTopP { k, p, temperature: t },
        };
        let seed = seed.unwrap_or_else(rand::random);
        Ok(PySampler { processor: Mutex::new(LogitsProcessor::from_sampling(seed, sampling)), repetition_penalty })
    }

    /// The next token for `logits` (vocab,), penalising the tokens in `context`.
    #[pyo3(signature = (logits, context=Vec::new()))]
    fn sample(&self, py: Python<'_>, logits: &PyTensor, context: Vec<u32>) -> PyResult<u32> {
        if logits.dims().len() != 1 || logits.dims()[0] == 0 {
            return Err(shape_err(format!("Sampler.sample: logits must be a non-empty 1-D tensor, got shape {:?}", logits.dims())));
        }
        let mut l = logits.t.to_dtype(CDType::F32).py()?;
        if self.repetition_penalty != 1.0 && !context.is_empty() {
            l = candle_transformers::utils::apply_repeat_penalty(&l, self.repetition_penalty, &context).py()?;
        }
        py.detach(|| guarded("sampling", || self.processor.lock().unwrap_or_else(|e| e.into_inner()).sample(&l)))
    }
}

/// A full-precision BERT encoder (candle-transformers' `bert::BertModel`) from a Hugging Face
/// config.json and safetensors weights: the whole forward runs in Rust with the GIL released.
#[pyclass(name = "Bert", module = "candle_bind")]
pub struct PyBert {
    model: candle_transformers::models::bert::BertModel,
    hidden_size: usize,
}

impl PyBert {
    fn ids(t: &PyTensor, what: &str, shape: Option<&[usize]>) -> PyResult<Tensor> {
        if t.dtype.is_float() || t.dtype == DType::Bool {
            return Err(value_err(format!("Bert: {what} must be an integer tensor, got {}", t.dtype.name())));
        }
        if t.dims().len() != 2 || shape.is_some_and(|s| s != t.dims()) {
            return Err(shape_err(format!("Bert: {what} must be (batch, seq){}, got {:?}",
                shape.map_or(String::new(), |s| format!(" = {s:?}")), t.dims())));
        }
        t.t.to_dtype(CDType::I64).py()
    }
}

#[pymethods]
impl PyBert {
    #[new]
    fn new(py: Python<'_>, weights: std::path::PathBuf, config_json: &str) -> PyResult<Self> {
        use candle_transformers::models::bert::{BertModel, Config};
        let config: Config = serde_json::from_str(config_json).map_err(|e| value_err(format!("Bert: config.json: {e}")))?;
        let hidden_size = config.hidden_size;
        let model = py.detach(|| {
            guarded("loading the BERT weights", || {
                let tensors = candle_core::safetensors::load(&weights, &Device::Cpu)?;
                let vb = candle_nn::VarBuilder::from_tensors(tensors, CDType::F32, &Device::Cpu);
                BertModel::load(vb, &config)
            })
        })?;
        Ok(PyBert { model, hidden_size })
    }

    #[getter]
    fn hidden_size(&self) -> usize {
        self.hidden_size
    }

    /// Last hidden state (batch, seq, hidden) for `input_ids` (batch, seq); the attention mask
    /// (1 = token, 0 = padding) and token types default to all ones and all zeros.
    #[pyo3(signature = (input_ids, attention_mask=None, token_type_ids=None))]
    fn forward(&self, py: Python<'_>, input_ids: &PyTensor, attention_mask: Option<&PyTensor>,
               token_type_ids: Option<&PyTensor>) -> PyResult<PyTensor> {
        let ids = Self::ids(input_ids, "input_ids", None)?;
        let dims = input_ids.dims().to_vec();
        let types = match token_type_ids {
            Some(t) => Self::ids(t, "token_type_ids", Some(&dims))?,
            None => ids.zeros_like().py()?,
        };
        let mask = attention_mask.map(|m| Self::ids(m, "attention_mask", Some(&dims))).transpose()?;
        let out = py.detach(|| guarded("Bert forward", || self.model.forward(&ids, &types, mask.as_ref())))?;
        Ok(PyTensor::new(out, DType::F32))
    }
}
