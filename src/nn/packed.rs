//! Weights transformed or repacked for a kernel, kept per weight content: inference weights do not
//! change between calls, so Winograd's filters and the recurrent layers' panels are made once. Keyed
//! by content, not address: a transposed conv's flipped weight is a new buffer per call, and keyed by
//! its address each call could add an entry (RSS grew 4 MB a call at 256 channels).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::tensor::kernels::multiversion;

/// What the kernel made, its shape arguments, and the source's content hash.
type Key = (&'static str, [usize; 4], u64);
type Cache = Mutex<HashMap<Key, Arc<Vec<f32>>>>;

/// Elements kept (~256 MB); past it the cache starts over.
const CAP: usize = 64 << 20;

/// `make(w)` for this kernel (`what`) and shape, from the cache when the same content came before.
pub(super) fn cached(what: &'static str, dims: [usize; 4], w: &[f32], make: impl FnOnce(&[f32]) -> Vec<f32>) -> Arc<Vec<f32>> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = (what, dims, fingerprint(w));
    let cache = CACHE.get_or_init(Default::default);
    if let Some(u) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return u;
    }
    let u = Arc::new(make(w));
    if let Ok(mut c) = cache.lock() {
        if c.values().map(|u| u.len()).sum::<usize>() + u.len() > CAP {
            c.clear();
        }
        c.insert(key, u.clone());
    }
    u
}

/// Elements hashed per pool task: a layer's weights (up to 2.4M elements in a ResNet) are hashed on
/// every call, and one thread alone took 4 ms of a 23 ms ResNet-18 forward.
const HASH_CHUNK: usize = 1 << 16;

/// A content hash of the weights: per chunk of `HASH_CHUNK` a 64-lane hash, folded in order; each step
/// of both is a bijection of the state, so a change to any one element always changes it.
fn fingerprint(w: &[f32]) -> u64 {
    let mut parts = vec![0u64; w.len().div_ceil(HASH_CHUNK)];
    // (One chunk runs inline: the pool does not wake for a single task.)
    crate::pool::chunks_mut(&mut parts, 1, |i, p| p[0] = hash_chunk(&w[i * HASH_CHUNK..((i + 1) * HASH_CHUNK).min(w.len())]));
    parts.iter().fold(w.len() as u64, |h, &c| (h.rotate_left(17) ^ c).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

multiversion! {
    /// 64 lanes of `s = (s ^ bits) · odd`: four vectors' chains apart, so the multiplies' latency
    /// overlaps and the hash runs near memory speed.
    fn hash_chunk<>(w: &[f32]) -> u64
    where []
    {
        let mut lanes = [0x243f_6a88u32; 64];
        let mut chunks = w.chunks_exact(64);
        for c in &mut chunks {
            for (s, v) in lanes.iter_mut().zip(c) {
                *s = (*s ^ v.to_bits()).wrapping_mul(0x9e37_79b1);
            }
        }
        for (s, v) in lanes.iter_mut().zip(chunks.remainder()) {
            *s = (*s ^ v.to_bits()).wrapping_mul(0x85eb_ca6b);
        }
        lanes.iter().fold(w.len() as u64, |h, &s| (h.rotate_left(17) ^ s as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}
