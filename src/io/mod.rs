//! Checkpoint formats: safetensors (mmap, parallel copies). The torch zip/pickle format is read in
//! Python (`serialization.py`) with an allow-list unpickler.

pub mod safetensors;
