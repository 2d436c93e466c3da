//! Checkpoint formats: safetensors (mmap, parallel copies), GGUF (quantized tensors). The torch zip/pickle format is read in
//! Python (`serialization.py`) with an allow-list unpickler.

pub mod gguf;
pub mod safetensors;
