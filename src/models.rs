//! Candle's own model implementations (candle-transformers) behind `candle_bind.models`: quantized
//! GGUF LLMs with their KV cache, and the token sampler their generation loop uses.
//!
//! The GGUF header is parsed and checked by our reader first (`io::gguf::parse`), so the metadata
//! Candle's loader sizes things by (layer and expert counts, head and rope dims) is known sane and
//! every tensor lies inside the file before Candle reads a byte.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use candle_core::quantized::gguf_file;
use candle_core::{DType as CDType, Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use candle_transformers::models::quantized_llama::{ModelWeights, MAX_SEQ_LEN};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::dtype::DType;
use crate::error::{shape_err, value_err, IntoPyResult};
use crate::io::gguf::{parse, TensorSpan};
use crate::tensor::PyTensor;

/// Architectures whose GGUF layout `quantized_llama` reads (llama's tensor names and `llama.*` keys).
const LLAMA_ARCHS: [&str; 1] = ["llama"];

fn meta_u64(meta: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<u64>> {
    match meta.get_item(key)? {
        None => Ok(None),
        Some(v) => v.extract::<u64>().map(Some).map_err(|_| value_err(format!("invalid GGUF model: {key} is not a non-negative integer"))),
    }
}

/// The hyper-parameters Candle's llama loader allocates by, checked against the tensors present.
fn check_llama(meta: &Bound<'_, PyDict>, spans: &[TensorSpan]) -> PyResult<usize> {
    let need = |key: &str| -> PyResult<u64> {
        meta_u64(meta, key)?.ok_or_else(|| value_err(format!("invalid GGUF model: metadata key {key} is missing")))
    };
    let bad = |msg: String| value_err(format!("invalid GGUF model: {msg}"));
    let (heads, kv_heads, blocks) = (need("llama.attention.head_count")?, need("llama.attention.head_count_kv")?, need("llama.block_count")?);
    let (emb, rope) = (need("llama.embedding_length")?, need("llama.rope.dimension_count")?);
    if heads == 0 || kv_heads == 0 || heads % kv_heads != 0 || emb == 0 || emb % heads != 0 {
        return Err(bad(format!("{heads} heads, {kv_heads} key/value heads and embedding length {emb} do not fit together")));
    }
    if rope == 0 || rope % 2 != 0 || rope > emb / heads {
        return Err(bad(format!("rope dimension {rope} for a head dimension of {}", emb / heads)));
    }
    let experts = meta_u64(meta, "llama.expert_count")?.unwrap_or(0);
    if blocks == 0 || blocks > spans.len() as u64 || experts > spans.len() as u64 {
        return Err(bad(format!("{blocks} blocks and {experts} experts for {} tensors", spans.len())));
    }
    if let Some(a) = meta.get_item("general.alignment")? {
        if a.extract::<u32>().map_or(true, |a| a == 0) {
            return Err(bad("general.alignment must be a positive u32".into()));
        }
    }
    let embd = spans.iter().find(|t| t.name == "token_embd.weight").ok_or_else(|| bad("no token_embd.weight tensor".into()))?;
    match embd.dims[..] {
        [vocab, e] if e as u64 == emb && vocab > 0 => Ok(vocab),
        _ => Err(bad(format!("token_embd.weight has shape {:?}, expected (vocab, {emb})", embd.dims))),
    }
}

/// Runs Candle code that may panic on odd weights and turns a panic into a Python exception.
fn guarded<T>(what: &str, f: impl FnOnce() -> candle_core::Result<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.py(),
        Err(_) => Err(value_err(format!("{what} failed: the model's weights do not fit its metadata"))),
    }
}

/// A quantized llama-architecture GGUF model (Candle's `quantized_llama`) with its KV cache.
#[pyclass(name = "GgufLlama", module = "candle_bind")]
pub struct PyGgufLlama {
    model: Mutex<ModelWeights>,
    metadata: Py<PyDict>,
    vocab_size: usize,
}

impl PyGgufLlama {
    /// Runs `f` on the model with the GIL released (another thread's step is waited for there). A
    /// panic mid-step leaves a cache the next start_pos=0 call overwrites, so a poisoned lock is usable.
    fn with_model<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut ModelWeights) -> T + Send) -> T {
        py.detach(|| f(&mut self.model.lock().unwrap_or_else(|e| e.into_inner())))
    }

    fn run(&self, py: Python<'_>, ids: Tensor, start_pos: usize) -> PyResult<PyTensor> {
        let (batch, seq) = ids.dims2().py()?;
        if batch != 1 {
            // One KV cache per model, and Candle's quantized_llama reads one row's last position.
            return Err(value_err(format!("GgufLlama: one sequence at a time (batch size 1), got a batch of {batch}")));
        }
        if seq == 0 {
            return Err(value_err("GgufLlama: input_ids has no tokens"));
        }
        if start_pos + seq > MAX_SEQ_LEN {
            return Err(value_err(format!(
                "GgufLlama: positions up to {} asked, the rotary tables hold {MAX_SEQ_LEN}",
                start_pos + seq
            )));
        }
        let logits = self.with_model(py, |m| guarded("forward", || m.forward(&ids, start_pos)))?;
        Ok(PyTensor::new(logits.to_dtype(CDType::F32).py()?, DType::F32))
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
    fn new(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
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
        let vocab_size = check_llama(&meta, &spans)?;
        let model = py.detach(|| {
            guarded("loading the GGUF model", || {
                let mut cursor = std::io::Cursor::new(&map[..]);
                let content = gguf_file::Content::read(&mut cursor)?;
                ModelWeights::from_gguf(content, &mut cursor, &Device::Cpu)
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

    /// Logits (1, vocab) of the last position for `input_ids` (seq,) or (1, seq) placed at `start_pos`;
    /// the KV cache keeps positions `0..start_pos+seq`, and `start_pos=0` starts it afresh.
    fn forward(&self, py: Python<'_>, input_ids: &PyTensor, start_pos: usize) -> PyResult<PyTensor> {
        if input_ids.dtype.is_float() || input_ids.dtype == DType::Bool {
            return Err(value_err(format!("GgufLlama: input_ids must be integer token ids, got {}", input_ids.dtype.name())));
        }
        let ids = match input_ids.dims().len() {
            1 => input_ids.t.unsqueeze(0).py()?,
            2 => input_ids.t.clone(),
            n => return Err(shape_err(format!("GgufLlama: input_ids must be (seq,) or (batch, seq), got {n} dims"))),
        };
        let flat: Vec<i64> = ids.flatten_all().py()?.to_dtype(CDType::I64).py()?.to_vec1().py()?;
        if let Some(&i) = flat.iter().find(|&&i| i < 0 || i as u64 >= self.vocab_size as u64) {
            return Err(PyIndexError::new_err(format!("token id {i} is out of range for a vocabulary of {}", self.vocab_size)));
        }
        let ids = ids.to_dtype(CDType::U32).py()?;
        self.run(py, ids, start_pos)
    }

    /// Logits (vocab,) after feeding `tokens` at `start_pos`: the generation loop's step.
    fn step(&self, py: Python<'_>, tokens: Vec<u32>, start_pos: usize) -> PyResult<PyTensor> {
        self.check_ids(&tokens)?;
        let n = tokens.len();
        let ids = Tensor::from_vec(tokens, (1, n), &Device::Cpu).py()?;
        let logits = self.run(py, ids, start_pos)?;
        Ok(PyTensor::new(logits.t.squeeze(0).py()?, DType::F32))
    }

    /// Drops the KV cache.
    fn clear_kv_cache(&self, py: Python<'_>) {
        self.with_model(py, |m| m.clear_kv_cache());
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
