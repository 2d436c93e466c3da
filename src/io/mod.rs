//! Checkpoint formats: safetensors (mmap, tensors mapped in place or copied in parallel), GGUF
//! (quantized tensors), and the file regions both map (`mapped`, which also holds the process's
//! allocator). The torch zip/pickle format is read in Python (`serialization.py`) with an
//! allow-list unpickler; its storage records come through `mapped::read_storage`.

pub mod gguf;
pub mod mapped;
pub mod safetensors;
