//! x86 repacked quantized kernels: weights tiled [n/16][k-blocks][16 rows] so one
//! vpdpbusd (AVX512-VNNI) produces 16 output columns for 4 k-values per instruction.
//! Activations are BlockQ8K rows; q4k/q6k quants are unsigned so vpdpbusd applies
//! directly with the min/offset terms corrected through the q8k bsums, and q8_0
//! weights are stored offset by +128 with the same correction.
//! candle-bind's patch: CPUs with AVX2 and no AVX512-VNNI run the same tiles 8 columns at a time on
//! `vpmaddubsw` (`kernels256`), the Q8_0-activation ones through `ActTile256`.

use super::k_quants::{
    BlockQ4K, BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ6K, BlockQ8K, BlockQ8_0, QK4_1, QK8_0, QK_K,
};
use super::{GgmlType, QuantizedType};
use half::f16;

pub(crate) const TILE_N: usize = 16;

// One k-superblock (256 values) for 16 output rows.
#[repr(C)]
pub(crate) struct TileQ4K {
    // per-subblock (8) per-row (16) effective scales/mins, pre-unpacked from the 6-bit fields
    pub(crate) scales: [[f32; TILE_N]; 8],
    pub(crate) mins: [[f32; TILE_N]; 8],
    // nibble-packed: [k8-group (32)][row (16)][4 bytes]; byte j = q[8g+j] | q[8g+j+4] << 4
    pub(crate) qs: [u8; QK_K / 8 * TILE_N * 4],
}

#[repr(C)]
pub(crate) struct TileQ6K {
    pub(crate) scales: [[f32; TILE_N]; 16],
    // raw 6-bit values as u8 (0..63; real value is v - 32): [k4-group (64)][row (16)][4 bytes]
    pub(crate) qs: [u8; QK_K / 4 * TILE_N * 4],
}

// One 32-value block group for 16 rows of q8_0 weights, stored offset by +128.
#[repr(C)]
pub(crate) struct TileQ8_0 {
    pub(crate) d: [f16; TILE_N],
    pub(crate) qs: [u8; QK8_0 * TILE_N],
}

/// candle-bind's patch: one 32-value block of 16 Q4_1 weight rows, nibbles laid out as the
/// tile kernel reads them: [group of 8 values (4)][row (16)][4 bytes], byte j = q[8g+j] | q[8g+j+4] << 4.
#[repr(C)]
pub(crate) struct TileQ4_1 {
    pub(crate) d: [f16; TILE_N],
    pub(crate) m: [f16; TILE_N],
    pub(crate) qs: [u8; QK4_1 / 2 * TILE_N],
}

/// candle-bind's patch: one 32-value block of 16 Q5_0/Q5_1 weight rows: the low nibbles as
/// `TileQ4_1` lays them out, the fifth bits as byte masks over those 64-byte vectors: `qh[2g]` bit
/// 4r+j is value 8g+j's of row r, `qh[2g + 1]` value 8g+j+4's (j < 4). Where the AVX2 kernel runs
/// (`wide()` false) the same 64 bytes are laid out for it instead: byte 32·(r/8) + 4·(r%8) + j
/// holds value v's fifth bit (j = v % 4) as its bit v/4, so one shift and mask give a vector's.
#[repr(C)]
pub(crate) struct TileQ5 {
    pub(crate) d: [f16; TILE_N],
    pub(crate) m: [f16; TILE_N],
    pub(crate) qh: [u64; 8],
    pub(crate) qs: [u8; QK4_1 / 2 * TILE_N],
}

pub(crate) enum PackedX86 {
    Q4K(Vec<TileQ4K>),
    Q6K(Vec<TileQ6K>),
    Q8_0(Vec<TileQ8_0>),
    Q4_1(Vec<TileQ4_1>),
    /// candle-bind's patch: Q4_0 (d·(q - 8)) on Q4_1's tiles, `m` unused.
    Q4_0(Vec<TileQ4_1>),
    /// candle-bind's patch: Q5_0 (d·(q - 16), `m` unused) and Q5_1 (d·q + m).
    Q5_0(Vec<TileQ5>),
    Q5_1(Vec<TileQ5>),
}

/// candle-bind's patch: a tile that the Q8_0-activation kernel (`kernels::rows`) runs: 32 values
/// of 16 weight rows as unsigned bytes in groups of four, each weight d·(q - offset) (Q8_0's +128,
/// Q4_0's 8, Q5_0's 16) or d·q + m (Q4_1, Q5_1).
pub(crate) trait ActTile {
    fn d(&self) -> &[f16; TILE_N];
    fn m(&self) -> &[f16; TILE_N];
    /// Values 8g..8g+4 and 8g+4..8g+8 of the 16 rows, each as [row][4 bytes].
    #[cfg(target_arch = "x86_64")]
    unsafe fn pair(&self, g: usize) -> (core::arch::x86_64::__m512i, core::arch::x86_64::__m512i);
}

impl ActTile for TileQ8_0 {
    fn d(&self) -> &[f16; TILE_N] {
        &self.d
    }
    /// Unused: Q8_0 weights have an offset, not a minimum.
    fn m(&self) -> &[f16; TILE_N] {
        &self.d
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pair(&self, g: usize) -> (core::arch::x86_64::__m512i, core::arch::x86_64::__m512i) {
        use core::arch::x86_64::*;
        let at = |j: usize| _mm512_loadu_si512(self.qs.as_ptr().add(j * TILE_N * 4) as *const _);
        (at(2 * g), at(2 * g + 1))
    }
}

/// Group g's low nibbles and high nibbles of a nibble tile's `qs` ([group of 8 values (4)][row
/// (16)][4 bytes], byte j = q[8g+j] | q[8g+j+4] << 4).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn nibbles(qs: &[u8; QK4_1 / 2 * TILE_N], g: usize) -> (core::arch::x86_64::__m512i, core::arch::x86_64::__m512i) {
    use core::arch::x86_64::*;
    let low = _mm512_set1_epi8(0xF);
    let w = _mm512_loadu_si512(qs.as_ptr().add(g * TILE_N * 4) as *const _);
    (_mm512_and_si512(w, low), _mm512_and_si512(_mm512_srli_epi16(w, 4), low))
}

impl ActTile for TileQ4_1 {
    fn d(&self) -> &[f16; TILE_N] {
        &self.d
    }
    fn m(&self) -> &[f16; TILE_N] {
        &self.m
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pair(&self, g: usize) -> (core::arch::x86_64::__m512i, core::arch::x86_64::__m512i) {
        nibbles(&self.qs, g)
    }
}

impl ActTile for TileQ5 {
    fn d(&self) -> &[f16; TILE_N] {
        &self.d
    }
    fn m(&self) -> &[f16; TILE_N] {
        &self.m
    }
    /// The nibbles with their fifth bits added under the byte masks `qh`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pair(&self, g: usize) -> (core::arch::x86_64::__m512i, core::arch::x86_64::__m512i) {
        use core::arch::x86_64::*;
        let ((l, h), fifth) = (nibbles(&self.qs, g), _mm512_set1_epi8(0x10));
        (_mm512_mask_add_epi8(l, self.qh[2 * g], l, fifth), _mm512_mask_add_epi8(h, self.qh[2 * g + 1], h, fifth))
    }
}

/// candle-bind's patch: an `ActTile` as the AVX2 kernel (`kernels256::rows`) reads it, 8 weight rows
/// (half `h` of the tile) at a time. AVX2 has no `vpdpbusd`: `vpmaddubsw` multiplies unsigned bytes
/// by signed ones into i16 pair sums, which `vpmaddwd` by ones widens to i32. Those i16 sums are
/// exact while they stay below 2^15, which bounds how many of them may be added before widening.
pub(crate) trait ActTile256: ActTile {
    /// Groups of 8 values (two `vpmaddubsw`) whose products may be summed in i16 before widening,
    /// a divisor of 4; 0: none (every pair widened at once). Activations are within ±127, so a lane
    /// of g groups holds 4g products: Q4 4 groups (16·15·127 = 30480), Q5 2 (8·31·127 = 31496).
    const I16_GROUPS: usize;
    /// The weights are signed bytes (Q8_0): `vpmaddubsw` gets their magnitudes, and the activation
    /// takes their signs (|w|·a·sign(w), pairs at most 2·128·127 = 32512).
    const SIGNED: bool;
    /// Values 8g..8g+4 and 8g+4..8g+8 of rows 8h..8h+8, each as [row][4 bytes].
    #[cfg(target_arch = "x86_64")]
    unsafe fn pair256(&self, g: usize, h: usize) -> (core::arch::x86_64::__m256i, core::arch::x86_64::__m256i);
    /// The same values as unsigned bytes, as `vpdpbusd` takes them (AVX-VNNI): Q8_0's stored +128
    /// bytes as they are.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn raw256(&self, g: usize, h: usize) -> (core::arch::x86_64::__m256i, core::arch::x86_64::__m256i) {
        self.pair256(g, h)
    }
}

/// Half h of group g's low and high nibbles of a nibble tile's `qs` (see `nibbles`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn nibbles256(qs: &[u8; QK4_1 / 2 * TILE_N], g: usize, h: usize) -> (core::arch::x86_64::__m256i, core::arch::x86_64::__m256i) {
    use core::arch::x86_64::*;
    let low = _mm256_set1_epi8(0xF);
    let w = _mm256_loadu_si256(qs.as_ptr().add(g * TILE_N * 4 + h * 32) as *const _);
    (_mm256_and_si256(w, low), _mm256_and_si256(_mm256_srli_epi16(w, 4), low))
}

impl ActTile256 for TileQ8_0 {
    const I16_GROUPS: usize = 0;
    const SIGNED: bool = true;
    /// The stored +128 bytes back to signed ones.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pair256(&self, g: usize, h: usize) -> (core::arch::x86_64::__m256i, core::arch::x86_64::__m256i) {
        use core::arch::x86_64::*;
        let flip = _mm256_set1_epi8(-128);
        let at = |j: usize| _mm256_xor_si256(_mm256_loadu_si256(self.qs.as_ptr().add(j * TILE_N * 4 + h * 32) as *const _), flip);
        (at(2 * g), at(2 * g + 1))
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn raw256(&self, g: usize, h: usize) -> (core::arch::x86_64::__m256i, core::arch::x86_64::__m256i) {
        use core::arch::x86_64::*;
        let at = |j: usize| _mm256_loadu_si256(self.qs.as_ptr().add(j * TILE_N * 4 + h * 32) as *const _);
        (at(2 * g), at(2 * g + 1))
    }
}

impl ActTile256 for TileQ4_1 {
    const I16_GROUPS: usize = 4;
    const SIGNED: bool = false;
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pair256(&self, g: usize, h: usize) -> (core::arch::x86_64::__m256i, core::arch::x86_64::__m256i) {
        nibbles256(&self.qs, g, h)
    }
}

impl ActTile256 for TileQ5 {
    const I16_GROUPS: usize = 2;
    const SIGNED: bool = false;
    /// The nibbles with their fifth bits, from `qh`'s AVX2 layout: vector 2g's are bit 2g of each
    /// byte of the half, vector 2g + 1's bit 2g + 1, moved to bit 4 (16-bit shifts carry no bit
    /// across a byte into bit 4 of the next).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn pair256(&self, g: usize, h: usize) -> (core::arch::x86_64::__m256i, core::arch::x86_64::__m256i) {
        use core::arch::x86_64::*;
        let qh = _mm256_loadu_si256((self.qh.as_ptr() as *const u8).add(32 * h) as *const _);
        let fifth = |k: usize| {
            let v = match k {
                0 => _mm256_slli_epi16(qh, 4),
                1 => _mm256_slli_epi16(qh, 3),
                2 => _mm256_slli_epi16(qh, 2),
                3 => _mm256_slli_epi16(qh, 1),
                4 => qh,
                5 => _mm256_srli_epi16(qh, 1),
                6 => _mm256_srli_epi16(qh, 2),
                _ => _mm256_srli_epi16(qh, 3),
            };
            _mm256_and_si256(v, _mm256_set1_epi8(0x10))
        };
        let (l, hi) = nibbles256(&self.qs, g, h);
        (_mm256_or_si256(l, fifth(2 * g)), _mm256_or_si256(hi, fifth(2 * g + 1)))
    }
}

pub(crate) fn select(dtype: super::GgmlDType, m: usize, n: usize, k: usize) -> bool {
    use super::GgmlDType as D;
    let Some(lv) = level() else {
        return false;
    };
    if k == 0 || !n.is_multiple_of(TILE_N) || !k.is_multiple_of(QK_K) {
        return false;
    }
    match dtype {
        D::Q4K => true,
        // candle-bind's patch: Q6K on the tiles for every row count (Candle kept a decoded row on
        // the compact weights, which sum in another order: a row's result then depended on how
        // many rows came with it, and batched generation could part from single-sequence output).
        D::Q6K => m > 0,
        // pure avx2 maddubs overflows on the +128 u8 range; q8_0 needs real dpbusd
        D::Q8_0 => lv != X86Level::Avx2,
        _ => false,
    }
}

/// candle-bind's patch: Q8_0, Q4_0/Q4_1 and Q5_0/Q5_1 weights on tiles (512-bit VNNI, or AVX2) against Q8_0
/// activations (a scale per 32 values, as ggml quantizes them for these weights) instead of Q8K
/// (one per 256): any `k` of whole blocks, and the activations' precision of llama.cpp's.
pub(crate) fn select_q8_act(dtype: super::GgmlDType, n: usize, k: usize) -> bool {
    use super::GgmlDType as D;
    matches!(dtype, D::Q8_0 | D::Q4_0 | D::Q4_1 | D::Q5_0 | D::Q5_1)
        && level().is_some()
        && simd_quantize()
        && k > 0
        && k.is_multiple_of(QK8_0)
        && n.is_multiple_of(TILE_N)
}

/// Whether the CPU has what `quantize_lhs_q8_0`'s SIMD routine needs (every AVX512-VNNI CPU does).
fn simd_quantize() -> bool {
    #[cfg(target_arch = "x86_64")]
    return is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c");
    #[allow(unreachable_code)]
    false
}

/// One Q8_0 activation block as the tile kernel reads it: its scale in f32 and the sum of its
/// values (the weights' +128 offset contributes 128·sum to every integer dot product).
#[repr(C)]
pub(crate) struct ActQ8_0 {
    pub(crate) d: f32,
    pub(crate) sum: i32,
    /// d·sum, the Q4_1/Q5_1 minimum's factor (once per block, not once per weight tile).
    pub(crate) dsum: f32,
    pub(crate) qs: [i8; QK8_0],
}

/// `lhs` rows (m × k) quantized as ggml quantizes activations for Q8_0 weights.
pub(crate) fn quantize_lhs_q8_0(lhs: &[f32], m: usize, k: usize) -> Vec<ActQ8_0> {
    let kb = k / QK8_0;
    // Every block is written below (each row's, by `quantize`): not zeroed first.
    let mut out: Vec<ActQ8_0> = Vec::with_capacity(m * kb);
    // SAFETY: ActQ8_0 is plain numbers (any bits are a value), and every element is written
    // before the vector is returned.
    unsafe { out.set_len(m * kb) };
    // ggml's SIMD quantization (a scalar loop's roundf took a tenth of a batched decode step),
    // written straight into the tile kernel's blocks.
    let quantize = |row: &[f32], dst: &mut [ActQ8_0]| {
        // SAFETY: select_q8_act checked AVX2, FMA and F16C; `row` holds 32 values per block.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            quantize_row_act(row, dst)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (row, dst);
    };
    if m == 1 {
        quantize(&lhs[..k], &mut out);
        return out;
    }
    let out_ptr = out.as_mut_ptr() as usize;
    crate::utils::barrier_pool().execute_chunked(m, |range| {
        for r in range {
            // SAFETY: row r's blocks are written by this item only.
            let dst = unsafe { std::slice::from_raw_parts_mut((out_ptr as *mut ActQ8_0).add(r * kb), kb) };
            quantize(&lhs[r * k..(r + 1) * k], dst);
        }
    });
    out
}

/// candle-bind's patch: `avx::quantize_row_q8_1`'s blocks (the same operations, so the same
/// values) written as `ActQ8_0`s: the scale rounded through f16 as ggml stores it, the integer sum
/// of the block, and their product. Going through Q8_1 blocks cost a buffer per row, a second
/// pass summing the values one by one and a copy (3% of a batch-8 decode step).
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn quantize_row_act(xs: &[f32], ys: &mut [ActQ8_0]) {
    for (y, x) in ys.iter_mut().zip(xs.chunks_exact(QK8_0)) {
        let (amax, sum) = unsafe { super::avx::quantize_block_q8(x, &mut y.qs) };
        y.d = f16::from_f32(amax / 127.0).to_f32();
        y.sum = sum;
        y.dsum = y.d * sum as f32;
    }
}

fn q4k_blocks(storage: &dyn QuantizedType) -> &[BlockQ4K] {
    let data = storage.storage_size_in_bytes();
    let ptr = storage.as_ptr() as *const BlockQ4K;
    unsafe { std::slice::from_raw_parts(ptr, data / std::mem::size_of::<BlockQ4K>()) }
}
fn q6k_blocks(storage: &dyn QuantizedType) -> &[BlockQ6K] {
    let data = storage.storage_size_in_bytes();
    let ptr = storage.as_ptr() as *const BlockQ6K;
    unsafe { std::slice::from_raw_parts(ptr, data / std::mem::size_of::<BlockQ6K>()) }
}
fn q8_0_blocks(storage: &dyn QuantizedType) -> &[BlockQ8_0] {
    let data = storage.storage_size_in_bytes();
    let ptr = storage.as_ptr() as *const BlockQ8_0;
    unsafe { std::slice::from_raw_parts(ptr, data / std::mem::size_of::<BlockQ8_0>()) }
}

// ggml's 6-bit scale/min unpack for q4k/q5k superblocks.
fn get_scale_min_k4(j: usize, scales: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (scales[j] & 63, scales[j + 4] & 63)
    } else {
        (
            (scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4),
            (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4),
        )
    }
}

pub(crate) fn pack_q4k(storage: &dyn QuantizedType, n: usize, k: usize) -> PackedX86 {
    let blocks = q4k_blocks(storage);
    let kb = k / QK_K;
    let n_tiles = n / TILE_N;
    let mut out: Vec<TileQ4K> = Vec::with_capacity(n_tiles * kb);
    huge_pages(&out);
    for t in 0..n_tiles {
        for b in 0..kb {
            let mut tile = TileQ4K {
                scales: [[0.0; TILE_N]; 8],
                mins: [[0.0; TILE_N]; 8],
                qs: [0; QK_K / 8 * TILE_N * 4],
            };
            for r in 0..TILE_N {
                let blk = &blocks[(t * TILE_N + r) * kb + b];
                let d = blk.d.to_f32();
                let dmin = blk.dmin.to_f32();
                for sub in 0..8 {
                    let (sc, mn) = get_scale_min_k4(sub, &blk.scales);
                    tile.scales[sub][r] = d * sc as f32;
                    tile.mins[sub][r] = dmin * mn as f32;
                }
                // q4k qs: 32-byte chunks c hold values [c*64, c*64+32) in the low nibbles
                // and [c*64+32, c*64+64) in the high nibbles
                let mut vals = [0u8; QK_K];
                for c in 0..4 {
                    for j in 0..32 {
                        let byte = blk.qs[c * 32 + j];
                        vals[c * 64 + j] = byte & 0x0F;
                        vals[c * 64 + 32 + j] = byte >> 4;
                    }
                }
                for g in 0..QK_K / 8 {
                    for j in 0..4 {
                        tile.qs[(g * TILE_N + r) * 4 + j] =
                            vals[g * 8 + j] | (vals[g * 8 + j + 4] << 4);
                    }
                }
            }
            out.push(tile);
        }
    }
    PackedX86::Q4K(out)
}

pub(crate) fn pack_q6k(storage: &dyn QuantizedType, n: usize, k: usize) -> PackedX86 {
    let blocks = q6k_blocks(storage);
    let kb = k / QK_K;
    let n_tiles = n / TILE_N;
    let mut out: Vec<TileQ6K> = Vec::with_capacity(n_tiles * kb);
    huge_pages(&out);
    for t in 0..n_tiles {
        for b in 0..kb {
            let mut tile = TileQ6K {
                scales: [[0.0; TILE_N]; 16],
                qs: [0; QK_K / 4 * TILE_N * 4],
            };
            for r in 0..TILE_N {
                let blk = &blocks[(t * TILE_N + r) * kb + b];
                let d = blk.d.to_f32();
                for sub in 0..16 {
                    tile.scales[sub][r] = d * blk.scales[sub] as f32;
                }
                // q6k: ql 128 bytes (low 4 bits), qh 64 bytes (high 2 bits), in 128-value halves
                let mut vals = [0u8; QK_K];
                for h in 0..2 {
                    let ql = &blk.ql[h * 64..];
                    let qh = &blk.qh[h * 32..];
                    for j in 0..32 {
                        vals[h * 128 + j] = (ql[j] & 0x0F) | ((qh[j] & 3) << 4);
                        vals[h * 128 + j + 32] = (ql[j + 32] & 0x0F) | (((qh[j] >> 2) & 3) << 4);
                        vals[h * 128 + j + 64] = (ql[j] >> 4) | (((qh[j] >> 4) & 3) << 4);
                        vals[h * 128 + j + 96] = (ql[j + 32] >> 4) | (((qh[j] >> 6) & 3) << 4);
                    }
                }
                for g in 0..QK_K / 4 {
                    for j in 0..4 {
                        tile.qs[(g * TILE_N + r) * 4 + j] = vals[g * 4 + j];
                    }
                }
            }
            out.push(tile);
        }
    }
    PackedX86::Q6K(out)
}

pub(crate) fn pack_q8_0(storage: &dyn QuantizedType, n: usize, k: usize) -> PackedX86 {
    let blocks = q8_0_blocks(storage);
    let kb = k / QK8_0;
    let n_tiles = n / TILE_N;
    let mut out: Vec<TileQ8_0> = Vec::with_capacity(n_tiles * kb);
    huge_pages(&out);
    for t in 0..n_tiles {
        for b in 0..kb {
            let mut tile = TileQ8_0 {
                d: [f16::ZERO; TILE_N],
                qs: [0; QK8_0 * TILE_N],
            };
            for r in 0..TILE_N {
                let blk = &blocks[(t * TILE_N + r) * kb + b];
                tile.d[r] = blk.d;
                for g in 0..QK8_0 / 4 {
                    for j in 0..4 {
                        tile.qs[(g * TILE_N + r) * 4 + j] = (blk.qs[g * 4 + j] as i16 + 128) as u8;
                    }
                }
            }
            out.push(tile);
        }
    }
    PackedX86::Q8_0(out)
}

/// candle-bind's patch: row `r` (of `k` values) of packed tiles dequantized into `out`, the same
/// values as the blocks' own dequantization (d·q, d·q + m; Q4K/Q6K: (d·sc)·q - dmin·m, (d·sc)·q).
pub(crate) fn dequantize_row(packed: &PackedX86, r: usize, k: usize, out: &mut [f32]) -> bool {
    let (kb, lane, t) = (k / QK8_0, r % TILE_N, r / TILE_N);
    match packed {
        PackedX86::Q8_0(tiles) => {
            for (b, ys) in out.chunks_exact_mut(QK8_0).enumerate().take(kb) {
                let tile = &tiles[t * kb + b];
                let d = tile.d[lane].to_f32();
                for (v, y) in ys.iter_mut().enumerate() {
                    *y = d * (tile.qs[((v / 4) * TILE_N + lane) * 4 + v % 4] as i16 - 128) as f32;
                }
            }
            true
        }
        PackedX86::Q4_1(tiles) => {
            for (b, ys) in out.chunks_exact_mut(QK4_1).enumerate().take(kb) {
                let tile = &tiles[t * kb + b];
                let (d, m) = (tile.d[lane].to_f32(), tile.m[lane].to_f32());
                for (v, y) in ys.iter_mut().enumerate() {
                    *y = nibble(&tile.qs, lane, v) as f32 * d + m;
                }
            }
            true
        }
        PackedX86::Q4K(tiles) => {
            for (b, ys) in out.chunks_exact_mut(QK_K).enumerate().take(k / QK_K) {
                let tile = &tiles[t * (k / QK_K) + b];
                for (v, y) in ys.iter_mut().enumerate() {
                    *y = tile.scales[v / 32][lane] * nibble(&tile.qs, lane, v) as f32 - tile.mins[v / 32][lane];
                }
            }
            true
        }
        PackedX86::Q6K(tiles) => {
            for (b, ys) in out.chunks_exact_mut(QK_K).enumerate().take(k / QK_K) {
                let tile = &tiles[t * (k / QK_K) + b];
                for (v, y) in ys.iter_mut().enumerate() {
                    let q = tile.qs[((v / 4) * TILE_N + lane) * 4 + v % 4] as i32 - 32;
                    *y = tile.scales[v / 16][lane] * q as f32;
                }
            }
            true
        }
        PackedX86::Q4_0(tiles) => {
            for (b, ys) in out.chunks_exact_mut(QK4_1).enumerate().take(kb) {
                let tile = &tiles[t * kb + b];
                let d = tile.d[lane].to_f32();
                for (v, y) in ys.iter_mut().enumerate() {
                    *y = (nibble(&tile.qs, lane, v) as i32 - 8) as f32 * d;
                }
            }
            true
        }
        PackedX86::Q5_0(tiles) | PackedX86::Q5_1(tiles) => {
            let (signed, wide) = (matches!(packed, PackedX86::Q5_0(_)), wide());
            for (b, ys) in out.chunks_exact_mut(QK4_1).enumerate().take(kb) {
                let tile = &tiles[t * kb + b];
                let (d, m) = (tile.d[lane].to_f32(), tile.m[lane].to_f32());
                for (v, y) in ys.iter_mut().enumerate() {
                    let (word, bit) = fifth_bit_at(wide, lane, v);
                    let high = (tile.qh[word] >> bit) & 1;
                    let q = (nibble(&tile.qs, lane, v) | (high as u8) << 4) as i32;
                    *y = if signed { (q - 16) as f32 * d } else { q as f32 * d + m };
                }
            }
            true
        }
    }
}

/// Value `v`'s low nibble in row `lane` of a nibble tile's `qs`.
fn nibble(qs: &[u8], lane: usize, v: usize) -> u8 {
    let byte = qs[((v / 8) * TILE_N + lane) * 4 + v % 4];
    if v % 8 < 4 {
        byte & 0xF
    } else {
        byte >> 4
    }
}

/// candle-bind's patch: 16 rows of nibbles (value v of a 32-value block given by `q(row, v)`) in
/// the tile layout: [group of 8 values (4)][row (16)][4 bytes], byte j = q[8g+j] | q[8g+j+4] << 4.
fn pack_nibbles(q: impl Fn(usize, usize) -> u8) -> [u8; QK4_1 / 2 * TILE_N] {
    let mut qs = [0; QK4_1 / 2 * TILE_N];
    for r in 0..TILE_N {
        for g in 0..4 {
            for j in 0..4 {
                qs[(g * TILE_N + r) * 4 + j] = q(r, 8 * g + j) & 0xF | (q(r, 8 * g + j + 4) & 0xF) << 4;
            }
        }
    }
    qs
}

/// candle-bind's patch: asks for 2 MiB pages under a tile buffer before it is written (the kernel
/// gives them where transparent huge pages are "madvise", the common default): decoding streams
/// every weight once per token, and 4 KiB pages cost a TLB miss per 4 KiB read.
fn huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + v.capacity() * std::mem::size_of::<T>()) & !(HUGE - 1);
        if end > start {
            // SAFETY: advice only, on whole pages inside the vector's own allocation.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
}

/// candle-bind's patch: the blocks of `storage` as `B` (the caller knows its dtype).
fn blocks_as<B>(storage: &dyn QuantizedType) -> &[B] {
    let data = storage.storage_size_in_bytes();
    // SAFETY: the storage is a Vec<B>: whole blocks, aligned as B.
    unsafe { std::slice::from_raw_parts(storage.as_ptr() as *const B, data / std::mem::size_of::<B>()) }
}

/// candle-bind's patch: Q4_1 / Q4_0 blocks, given as (d, m, qs) by block index (Q4_0: m unused, the
/// kernel takes the 8 off), as `TileQ4_1`s. Both keep value v in qs[v] (v < 16, low nibble) or
/// qs[v - 16] (high nibble).
fn pack_q4(n: usize, k: usize, blk: impl Fn(usize) -> (f16, f16, [u8; QK4_1 / 2])) -> Vec<TileQ4_1> {
    let kb = k / QK4_1;
    let mut out = Vec::with_capacity(n / TILE_N * kb);
    huge_pages(&out);
    for t in 0..n / TILE_N {
        for b in 0..kb {
            let rows: [_; TILE_N] = std::array::from_fn(|r| blk((t * TILE_N + r) * kb + b));
            let qs = pack_nibbles(|r, v| if v < 16 { rows[r].2[v] & 0xF } else { rows[r].2[v - 16] >> 4 });
            out.push(TileQ4_1 { d: std::array::from_fn(|r| rows[r].0), m: std::array::from_fn(|r| rows[r].1), qs });
        }
    }
    out
}

/// Whether the Q8_0-activation tiles run the 512-bit VNNI kernel (else the AVX2 one).
fn wide() -> bool {
    level() == Some(X86Level::Avx512Vnni)
}

/// Where `TileQ5::qh` keeps value v's fifth bit of row r: (u64 index, bit), in the VNNI layout
/// (`wide`) or the AVX2 one.
fn fifth_bit_at(wide: bool, r: usize, v: usize) -> (usize, usize) {
    if wide {
        (2 * (v / 8) + (v % 8) / 4, 4 * r + v % 4)
    } else {
        let byte = 32 * (r / 8) + 4 * (r % 8) + v % 4;
        (byte / 8, 8 * (byte % 8) + v / 4)
    }
}

/// candle-bind's patch: Q5_0 / Q5_1 blocks, given as (d, m, qh, qs) by block index, as `TileQ5`s.
fn pack_q5(n: usize, k: usize, blk: impl Fn(usize) -> (f16, f16, [u8; 4], [u8; QK4_1 / 2])) -> Vec<TileQ5> {
    let kb = k / QK4_1;
    let mut out = Vec::with_capacity(n / TILE_N * kb);
    huge_pages(&out);
    for t in 0..n / TILE_N {
        for b in 0..kb {
            let rows: [_; TILE_N] = std::array::from_fn(|r| blk((t * TILE_N + r) * kb + b));
            // Value v: the low nibble of qs[v] (v < 16) or qs[v - 16] >> 4; its fifth bit is qh's bit v.
            let qs = pack_nibbles(|r, v| if v < 16 { rows[r].3[v] & 0xF } else { rows[r].3[v - 16] >> 4 });
            let (mut qh, wide) = ([0u64; 8], wide());
            for (r, row) in rows.iter().enumerate() {
                let bits = u32::from_le_bytes(row.2);
                for v in 0..32 {
                    if bits >> v & 1 == 1 {
                        let (word, bit) = fifth_bit_at(wide, r, v);
                        qh[word] |= 1 << bit;
                    }
                }
            }
            out.push(TileQ5 { d: std::array::from_fn(|r| rows[r].0), m: std::array::from_fn(|r| rows[r].1), qh, qs });
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
mod kernels {
    use super::*;
    use core::arch::x86_64::*;

    // acc[m][16] f32 for up to MT activation rows against one 16-row weight tile
    pub(crate) const MAX_MT: usize = 4;
    // candle-bind's patch: rows per unit of the Q8_0-activation kernel (`rows`).
    pub(crate) const ROWS_MT: usize = 8;
    // candle-bind's patch: how far ahead of the tile in use the multi-row kernels fetch weights.
    pub(crate) const PREFETCH_BYTES: usize = 8192;

    #[inline(always)]
    unsafe fn bcast4(act: &[i8], off: usize) -> __m512i {
        _mm512_set1_epi32(std::ptr::read_unaligned(act.as_ptr().add(off) as *const i32))
    }

    // q4k: one superblock tile against `mt` q8k activation blocks. Subblocks are
    // processed in pairs with independent integer accumulators to break the dpbusd
    // latency chain when mt is small (decode gemv).
    #[target_feature(enable = "avx512f,avx512vnni,avx512bw")]
    pub(crate) unsafe fn q4k_tile(tile: &TileQ4K, acts: &[&BlockQ8K], acc: &mut [[__m512; 1]]) {
        let mask = _mm512_set1_epi8(0x0F_u8 as i8);
        for sub2 in 0..4 {
            let sa = sub2 * 2;
            let sb = sa + 1;
            let mut isum_a = [_mm512_setzero_si512(); MAX_MT];
            let mut isum_b = [_mm512_setzero_si512(); MAX_MT];
            for g4 in 0..4 {
                let ga = sa * 4 + g4;
                let gb = sb * 4 + g4;
                let wa = _mm512_loadu_si512(tile.qs.as_ptr().add(ga * TILE_N * 4) as *const _);
                let wb = _mm512_loadu_si512(tile.qs.as_ptr().add(gb * TILE_N * 4) as *const _);
                let lo_a = _mm512_and_si512(wa, mask);
                let hi_a = _mm512_and_si512(_mm512_srli_epi16(wa, 4), mask);
                let lo_b = _mm512_and_si512(wb, mask);
                let hi_b = _mm512_and_si512(_mm512_srli_epi16(wb, 4), mask);
                for (m, act) in acts.iter().enumerate() {
                    isum_a[m] =
                        _mm512_dpbusd_epi32(isum_a[m], lo_a, bcast4(&act.qs, sa * 32 + g4 * 8));
                    isum_a[m] =
                        _mm512_dpbusd_epi32(isum_a[m], hi_a, bcast4(&act.qs, sa * 32 + g4 * 8 + 4));
                    isum_b[m] =
                        _mm512_dpbusd_epi32(isum_b[m], lo_b, bcast4(&act.qs, sb * 32 + g4 * 8));
                    isum_b[m] =
                        _mm512_dpbusd_epi32(isum_b[m], hi_b, bcast4(&act.qs, sb * 32 + g4 * 8 + 4));
                }
            }
            for (sub, isum) in [(sa, &isum_a), (sb, &isum_b)] {
                let scale = _mm512_loadu_ps(tile.scales[sub].as_ptr());
                let min = _mm512_loadu_ps(tile.mins[sub].as_ptr());
                for (m, act) in acts.iter().enumerate() {
                    let dall = act.d;
                    let f = _mm512_cvtepi32_ps(isum[m]);
                    acc[m][0] =
                        _mm512_fmadd_ps(f, _mm512_mul_ps(scale, _mm512_set1_ps(dall)), acc[m][0]);
                    let bsum = (act.bsums[sub * 2] as i32 + act.bsums[sub * 2 + 1] as i32) as f32;
                    acc[m][0] = _mm512_fnmadd_ps(min, _mm512_set1_ps(dall * bsum), acc[m][0]);
                }
            }
        }
    }

    // q6k: values are v-32; vpdpbusd on raw u6 then subtract 32 * bsum per 16-value subblock.
    #[target_feature(enable = "avx512f,avx512vnni,avx512bw")]
    pub(crate) unsafe fn q6k_tile(tile: &TileQ6K, acts: &[&BlockQ8K], acc: &mut [[__m512; 1]]) {
        for sub in 0..16 {
            let mut isum = [_mm512_setzero_si512(); MAX_MT];
            // subblock = 16 k-values = 4 k4-groups
            for g4 in 0..4 {
                let g = sub * 4 + g4;
                let w = _mm512_loadu_si512(tile.qs.as_ptr().add(g * TILE_N * 4) as *const _);
                for (m, act) in acts.iter().enumerate() {
                    let a = bcast4(&act.qs, sub * 16 + g4 * 4);
                    isum[m] = _mm512_dpbusd_epi32(isum[m], w, a);
                }
            }
            let scale = _mm512_loadu_ps(tile.scales[sub].as_ptr());
            for (m, act) in acts.iter().enumerate() {
                let dall = act.d;
                let bsum = act.bsums[sub] as f32;
                let f = _mm512_sub_ps(_mm512_cvtepi32_ps(isum[m]), _mm512_set1_ps(32.0 * bsum));
                acc[m][0] =
                    _mm512_fmadd_ps(f, _mm512_mul_ps(scale, _mm512_set1_ps(dall)), acc[m][0]);
            }
        }
    }

    /// candle-bind's patch: the tile `PREFETCH_BYTES` past `tile` (rounded up to whole tiles) into L2.
    #[inline(always)]
    pub(crate) unsafe fn prefetch_ahead<T>(tile: *const T) {
        let size = std::mem::size_of::<T>();
        let ahead = tile.wrapping_add(PREFETCH_BYTES.div_ceil(size)) as *const i8;
        for line in (0..size).step_by(64) {
            _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(line));
        }
    }

    // candle-bind's patch: MT (1-8) activation rows (Q8_0) against one 16-row column of tiles
    // (`kb` blocks from `t`; each tile unpacked once for all MT rows), weights d·(q - OFF), or with
    // OFF 0 d·q + m: per block and row, the integer dot product (one row alone: the even and odd
    // groups of four values on their own accumulators; exact, so the split only shortens its
    // dependency chain), then d_w·d_a·(Σ - OFF·Σq_a), or d_w·d_a·Σ +
    // m_w·d_a·Σq_a, added into the row's f32 sum block after block. A row goes through the same
    // operations whatever MT is (a sequence decodes the same in a batch as alone). Straight-line
    // code over a const MT keeps every accumulator in a register: a decoded row streams its
    // weights from memory, and how far ahead the core reads is set by how few instructions each
    // cache line takes.
    #[target_feature(enable = "avx512f,avx512vnni,avx512bw")]
    pub(crate) unsafe fn rows<T: ActTile, const OFF: i32, const MT: usize>(
        t: *const T,
        a: [*const ActQ8_0; MT],
        kb: usize,
        out: [*mut f32; MT],
    ) {
        let mut acc = [_mm512_setzero_ps(); MT];
        for b in 0..kb {
            let tile = &*t.add(b);
            // Fetch the tiles `PREFETCH_BYTES` ahead into L2, whose miss queue is deeper than L1's.
            // Several rows take longer over each tile than the hardware prefetcher is tuned for,
            // and a weight read from memory then stalls the products (Zen 4, Q8_0 weights from
            // DRAM at 8 rows: 96 → 146 GMAC/s; four tiles ahead into L1 did not keep up). One row
            // needs it too where memory is slow to answer: on a shared Xeon (Granite Rapids class)
            // a decoded SmolLM2 Q4_1 token went 1.32x faster at 1 thread, 1.13x at 2.
            prefetch_ahead(t.wrapping_add(b));
            let acts: [&ActQ8_0; MT] = std::array::from_fn(|m| &*a[m].add(b));
            // One row alone: the even and odd groups on their own accumulators (two dependency
            // chains); several rows: one each (the rows are the independent chains, and registers
            // hold 8 of them).
            let split = MT == 1;
            let (mut e, mut o) = ([_mm512_setzero_si512(); MT], [_mm512_setzero_si512(); MT]);
            for g in 0..4 {
                let (we, wo) = tile.pair(g);
                for m in 0..MT {
                    e[m] = _mm512_dpbusd_epi32(e[m], we, bcast4(&acts[m].qs, 8 * g));
                    if split {
                        o[m] = _mm512_dpbusd_epi32(o[m], wo, bcast4(&acts[m].qs, 8 * g + 4));
                    } else {
                        e[m] = _mm512_dpbusd_epi32(e[m], wo, bcast4(&acts[m].qs, 8 * g + 4));
                    }
                }
            }
            let dw = _mm512_cvtph_ps(_mm256_loadu_si256(tile.d().as_ptr() as *const _));
            for m in 0..MT {
                let (da, q) = (acts[m].d, if split { _mm512_add_epi32(e[m], o[m]) } else { e[m] });
                if OFF != 0 {
                    let q = _mm512_sub_epi32(q, _mm512_set1_epi32(OFF * acts[m].sum));
                    acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), _mm512_mul_ps(dw, _mm512_set1_ps(da)), acc[m]);
                } else {
                    let mw = _mm512_cvtph_ps(_mm256_loadu_si256(tile.m().as_ptr() as *const _));
                    let r = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), _mm512_mul_ps(dw, _mm512_set1_ps(da)), acc[m]);
                    acc[m] = _mm512_fmadd_ps(mw, _mm512_set1_ps(acts[m].dsum), r);
                }
            }
        }
        for m in 0..MT {
            _mm512_storeu_ps(out[m], acc[m]);
        }
    }

    // q8_0 (+128 offset weights), two 32-value block groups per call with independent
    // integer accumulators so the dpbusd latency chain never serializes at small m.
    #[target_feature(enable = "avx512f,avx512vnni,avx512bw")]
    pub(crate) unsafe fn q8_0_tile2(
        t0: &TileQ8_0,
        t1: &TileQ8_0,
        acts: &[&BlockQ8K],
        sub32: usize,
        acc: &mut [[__m512; 1]],
    ) {
        let mut isum_a = [_mm512_setzero_si512(); MAX_MT];
        let mut isum_b = [_mm512_setzero_si512(); MAX_MT];
        for g4 in 0..8 {
            let wa = _mm512_loadu_si512(t0.qs.as_ptr().add(g4 * TILE_N * 4) as *const _);
            let wb = _mm512_loadu_si512(t1.qs.as_ptr().add(g4 * TILE_N * 4) as *const _);
            for (m, act) in acts.iter().enumerate() {
                isum_a[m] =
                    _mm512_dpbusd_epi32(isum_a[m], wa, bcast4(&act.qs, sub32 * 32 + g4 * 4));
                isum_b[m] =
                    _mm512_dpbusd_epi32(isum_b[m], wb, bcast4(&act.qs, (sub32 + 1) * 32 + g4 * 4));
            }
        }
        for (blk, isum, tile) in [(sub32, &isum_a, t0), (sub32 + 1, &isum_b, t1)] {
            let dw = _mm512_cvtph_ps(_mm256_loadu_si256(tile.d.as_ptr() as *const _));
            for (m, act) in acts.iter().enumerate() {
                let bsum = (act.bsums[blk * 2] as i32 + act.bsums[blk * 2 + 1] as i32) as f32;
                let f = _mm512_sub_ps(_mm512_cvtepi32_ps(isum[m]), _mm512_set1_ps(128.0 * bsum));
                acc[m][0] = _mm512_fmadd_ps(f, _mm512_mul_ps(dw, _mm512_set1_ps(act.d)), acc[m][0]);
            }
        }
    }
}

// Full matmul over the packed tiles: lhs is m rows already quantized to BlockQ8K,
// parallelized over (m-tiles x n-tiles) on the barrier pool by the caller's chunker.
// Per-unit bodies live in #[target_feature] fns so intrinsics inline under portable
// (target-cpu=generic) release builds; closures cannot carry the attribute.
/// candle-bind's patch: `kernels::prefetch_ahead` from Q4K/Q6K tile `i` (other tiles: nothing).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn prefetch_k_tile(packed: &PackedX86, i: usize) {
    match packed {
        PackedX86::Q4K(tiles) => kernels::prefetch_ahead(tiles.as_ptr().wrapping_add(i)),
        PackedX86::Q6K(tiles) => kernels::prefetch_ahead(tiles.as_ptr().wrapping_add(i)),
        _ => {}
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vnni,avx512bw")]
#[allow(clippy::too_many_arguments)]
unsafe fn matmul_unit_512(
    packed: &PackedX86,
    lhs_q: &[BlockQ8K],
    kb: usize,
    nt: usize,
    m0: usize,
    mt: usize,
    dst_ptr: *mut f32,
    n: usize,
) {
    use core::arch::x86_64::*;
    let mut act_refs: [&BlockQ8K; kernels::MAX_MT] = [&lhs_q[m0 * kb]; kernels::MAX_MT];
    let mut acc = [[_mm512_setzero_ps(); 1]; kernels::MAX_MT];
    for b in 0..kb {
        for (i, a) in act_refs.iter_mut().enumerate().take(mt) {
            *a = &lhs_q[(m0 + i) * kb + b];
        }
        if mt > 1 {
            // candle-bind's patch: several rows fetch their weights ahead into L2, as `kernels::rows`.
            prefetch_k_tile(packed, nt * kb + b);
        }
        match packed {
            PackedX86::Q4K(tiles) => {
                kernels::q4k_tile(&tiles[nt * kb + b], &act_refs[..mt], &mut acc)
            }
            PackedX86::Q6K(tiles) => {
                kernels::q6k_tile(&tiles[nt * kb + b], &act_refs[..mt], &mut acc)
            }
            PackedX86::Q4_1(_) | PackedX86::Q4_0(_) | PackedX86::Q5_0(_) | PackedX86::Q5_1(_) => {
                unreachable!("nibble tiles take the Q8_0-activation path")
            }
            PackedX86::Q8_0(tiles) => {
                // q8_0 tiles cover 32 k-values each; 8 tiles per q8k superblock
                for s in (0..8).step_by(2) {
                    kernels::q8_0_tile2(
                        &tiles[nt * (kb * 8) + b * 8 + s],
                        &tiles[nt * (kb * 8) + b * 8 + s + 1],
                        &act_refs[..mt],
                        s,
                        &mut acc,
                    );
                }
            }
        }
    }
    for (i, row) in acc[..mt].iter().enumerate() {
        _mm512_storeu_ps(dst_ptr.add((m0 + i) * n + nt * TILE_N), row[0]);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn matmul_unit_256(
    packed: &PackedX86,
    lhs_q: &[BlockQ8K],
    kb: usize,
    nt: usize,
    m0: usize,
    mt: usize,
    dst_ptr: *mut f32,
    n: usize,
    vnni: bool,
) {
    use core::arch::x86_64::*;
    let mut act_refs: [&BlockQ8K; kernels::MAX_MT] = [&lhs_q[m0 * kb]; kernels::MAX_MT];
    let mut acc = [[_mm256_setzero_ps(); 2]; kernels::MAX_MT];
    for b in 0..kb {
        for (i, a) in act_refs.iter_mut().enumerate().take(mt) {
            *a = &lhs_q[(m0 + i) * kb + b];
        }
        if mt > 1 {
            // candle-bind's patch: several rows fetch their weights ahead into L2, as `kernels::rows`.
            prefetch_k_tile(packed, nt * kb + b);
        }
        match packed {
            PackedX86::Q4K(tiles) => {
                let t = &tiles[nt * kb + b];
                if vnni {
                    kernels256::q4k_tile_avxvnni(t, &act_refs[..mt], &mut acc)
                } else {
                    kernels256::q4k_tile_avx2(t, &act_refs[..mt], &mut acc)
                }
            }
            PackedX86::Q6K(tiles) => {
                let t = &tiles[nt * kb + b];
                if vnni {
                    kernels256::q6k_tile_avxvnni(t, &act_refs[..mt], &mut acc)
                } else {
                    kernels256::q6k_tile_avx2(t, &act_refs[..mt], &mut acc)
                }
            }
            PackedX86::Q4_1(_) | PackedX86::Q4_0(_) | PackedX86::Q5_0(_) | PackedX86::Q5_1(_) => {
                unreachable!("nibble tiles take the Q8_0-activation path")
            }
            PackedX86::Q8_0(tiles) => {
                for s in (0..8).step_by(2) {
                    kernels256::q8_0_tile2_avxvnni(
                        &tiles[nt * (kb * 8) + b * 8 + s],
                        &tiles[nt * (kb * 8) + b * 8 + s + 1],
                        &act_refs[..mt],
                        s,
                        &mut acc,
                    );
                }
            }
        }
    }
    for (i, row) in acc[..mt].iter().enumerate() {
        _mm256_storeu_ps(dst_ptr.add((m0 + i) * n + nt * TILE_N), row[0]);
        _mm256_storeu_ps(dst_ptr.add((m0 + i) * n + nt * TILE_N + 8), row[1]);
    }
}

// candle-bind's patch: one (16-column tile, up to `kernels::ROWS_MT` rows, or `kernels256::ROWS_MT`
// on AVX2) unit of the Q8_0-activation paths: the tile type and offset picked once, then the
// kernel of the level (`wide`) for the unit's row count.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
unsafe fn matmul_unit_q8(
    packed: &PackedX86,
    acts: &[ActQ8_0],
    kb: usize,
    nt: usize,
    m0: usize,
    mt: usize,
    dst_ptr: *mut f32,
    n: usize,
    lv: X86Level,
) {
    unsafe fn run<T: ActTile256, const OFF: i32>(tiles: &[T], acts: *const ActQ8_0, kb: usize, out: *mut f32, n: usize, mt: usize, lv: X86Level) {
        let a = |m: usize| acts.add(m * kb);
        let o = |m: usize| out.add(m * n);
        let t = tiles.as_ptr();
        macro_rules! rows {
            ($kernels:ident::$f:ident, $($k:literal)*; $last:literal) => {
                match mt {
                    $($k => $kernels::$f::<T, OFF, $k>(t, std::array::from_fn(a), kb, std::array::from_fn(o)),)*
                    _ => $kernels::$f::<T, OFF, $last>(t, std::array::from_fn(a), kb, std::array::from_fn(o)),
                }
            };
        }
        match lv {
            X86Level::Avx512Vnni => rows!(kernels::rows, 1 2 3 4 5 6 7; 8),
            X86Level::AvxVnni => rows!(kernels256::rows_vnni, 1 2 3; 4),
            X86Level::Avx2 => rows!(kernels256::rows, 1 2 3; 4),
        }
    }
    let (a, out) = (acts.as_ptr().add(m0 * kb), dst_ptr.add(m0 * n + nt * TILE_N));
    match packed {
        PackedX86::Q8_0(t) => run::<_, 128>(&t[nt * kb..][..kb], a, kb, out, n, mt, lv),
        PackedX86::Q4_0(t) => run::<_, 8>(&t[nt * kb..][..kb], a, kb, out, n, mt, lv),
        PackedX86::Q4_1(t) => run::<_, 0>(&t[nt * kb..][..kb], a, kb, out, n, mt, lv),
        PackedX86::Q5_0(t) => run::<_, 16>(&t[nt * kb..][..kb], a, kb, out, n, mt, lv),
        PackedX86::Q5_1(t) => run::<_, 0>(&t[nt * kb..][..kb], a, kb, out, n, mt, lv),
        _ => unreachable!("select_q8_act() gates the dtype"),
    }
}

/// candle-bind's patch: the matmul over the tiles that take Q8_0 activations (`select_q8_act`).
/// A row's result goes through the same operations whichever rows come with it.
pub(crate) fn matmul_tiles_q8(packed: &PackedX86, acts: &[ActQ8_0], m: usize, k: usize, n: usize, dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        let kb = k / QK8_0;
        let Some(lv) = level() else { unreachable!("select_q8_act() checked the CPU") };
        let mt = if lv == X86Level::Avx512Vnni { kernels::ROWS_MT } else { kernels256::ROWS_MT };
        let m_units = m.div_ceil(mt);
        let dst_ptr = dst.as_mut_ptr() as usize;
        crate::utils::barrier_pool().execute_chunked((n / TILE_N) * m_units, |range| {
            for unit in range {
                let (nt, m0) = (unit / m_units, (unit % m_units) * mt);
                let (mt, dst_ptr) = ((m - m0).min(mt), dst_ptr as *mut f32);
                // SAFETY: select_q8_act checked the CPU; each unit writes its own tile of dst.
                unsafe { matmul_unit_q8(packed, acts, kb, nt, m0, mt, dst_ptr, n, lv) };
            }
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (packed, acts, m, k, n, dst);
        unreachable!("x86 repack kernels on non-x86 arch");
    }
}

pub(crate) fn matmul_tiles(
    packed: &PackedX86,
    lhs_q: &[BlockQ8K],
    m: usize,
    k: usize,
    n: usize,
    dst: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    {
        let lv = level().expect("select() gated");
        let kb = k / QK_K;
        let n_tiles = n / TILE_N;
        let mt_step = kernels::MAX_MT;
        let dst_ptr = dst.as_mut_ptr() as usize;
        let total_units = n_tiles * m.div_ceil(mt_step);
        let m_units = m.div_ceil(mt_step);
        crate::utils::barrier_pool().execute_chunked(total_units, |range| {
            let dst_ptr = dst_ptr as *mut f32;
            for unit in range {
                let nt = unit / m_units;
                let m0 = (unit % m_units) * mt_step;
                let mt = (m - m0).min(mt_step);
                unsafe {
                    if lv == X86Level::Avx512Vnni {
                        matmul_unit_512(packed, lhs_q, kb, nt, m0, mt, dst_ptr, n);
                    } else {
                        matmul_unit_256(
                            packed,
                            lhs_q,
                            kb,
                            nt,
                            m0,
                            mt,
                            dst_ptr,
                            n,
                            lv == X86Level::AvxVnni,
                        );
                    }
                }
            }
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (packed, lhs_q, m, k, n, dst);
        unreachable!("x86 repack kernels on non-x86 arch");
    }
}

pub(crate) fn pack(
    dtype: super::GgmlDType,
    storage: &dyn QuantizedType,
    n: usize,
    k: usize,
) -> PackedX86 {
    use super::GgmlDType as D;
    match dtype {
        D::Q4K => pack_q4k(storage, n, k),
        D::Q6K => pack_q6k(storage, n, k),
        D::Q8_0 => pack_q8_0(storage, n, k),
        D::Q4_1 => {
            let blocks: &[BlockQ4_1] = blocks_as(storage);
            PackedX86::Q4_1(pack_q4(n, k, |i| (blocks[i].d, blocks[i].m, blocks[i].qs)))
        }
        D::Q4_0 => {
            let blocks: &[BlockQ4_0] = blocks_as(storage);
            PackedX86::Q4_0(pack_q4(n, k, |i| (blocks[i].d, f16::ZERO, blocks[i].qs)))
        }
        D::Q5_0 => {
            let blocks: &[BlockQ5_0] = blocks_as(storage);
            PackedX86::Q5_0(pack_q5(n, k, |i| (blocks[i].d, f16::ZERO, blocks[i].qh, blocks[i].qs)))
        }
        D::Q5_1 => {
            let blocks: &[BlockQ5_1] = blocks_as(storage);
            PackedX86::Q5_1(pack_q5(n, k, |i| (blocks[i].d, blocks[i].m, blocks[i].qh, blocks[i].qs)))
        }
        _ => unreachable!("select() gates dtypes"),
    }
}

// Quantize lhs rows to BlockQ8K, parallelizing only when there are multiple rows.
pub(crate) fn quantize_lhs(lhs: &[f32], m: usize, k: usize) -> Vec<BlockQ8K> {
    let kb = k / QK_K;
    let mut out = vec![BlockQ8K::zeros(); m * kb];
    if m == 1 {
        BlockQ8K::from_float(&lhs[..k], &mut out);
        return out;
    }
    let out_ptr = out.as_mut_ptr() as usize;
    crate::utils::barrier_pool().execute_chunked(m, |range| {
        let out_ptr = out_ptr as *mut BlockQ8K;
        for r in range {
            let row = &lhs[r * k..(r + 1) * k];
            let dst = unsafe { std::slice::from_raw_parts_mut(out_ptr.add(r * kb), kb) };
            BlockQ8K::from_float(row, dst);
        }
    });
    out
}

// Fused multi-projection gemv: one lhs quantization and one barrier region across
// all projections sharing the same activations (qkv, gate/up). 512-bit only; the
// per-unit body reuses matmul_unit_512 so intrinsics inline in portable builds.
pub(crate) fn gemv_fused(
    parts: &[(&PackedX86, usize)],
    lhs_q: &[BlockQ8K],
    m: usize,
    k: usize,
    dsts: &mut [Vec<f32>],
) {
    #[cfg(target_arch = "x86_64")]
    {
        let kb = k / QK_K;
        let mt_step = kernels::MAX_MT;
        let m_units = m.div_ceil(mt_step);
        // (n, dst ptr, unit offset)
        let mut metas: Vec<(usize, usize, usize)> = Vec::with_capacity(parts.len());
        let mut total = 0usize;
        for (i, (_p, n)) in parts.iter().enumerate() {
            metas.push((*n, dsts[i].as_mut_ptr() as usize, total));
            total += (n / TILE_N) * m_units;
        }
        let parts_ref = parts;
        crate::utils::barrier_pool().execute_chunked(total, |range| {
            for unit in range {
                let pi = metas
                    .iter()
                    .rposition(|(_n, _d, off)| unit >= *off)
                    .unwrap();
                let (n, dst_ptr, off) = metas[pi];
                let local = unit - off;
                let nt = local / m_units;
                let m0 = (local % m_units) * mt_step;
                let mt = (m - m0).min(mt_step);
                unsafe {
                    matmul_unit_512(
                        parts_ref[pi].0,
                        lhs_q,
                        kb,
                        nt,
                        m0,
                        mt,
                        dst_ptr as *mut f32,
                        n,
                    );
                }
            }
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (parts, lhs_q, m, k, dsts);
        unreachable!("x86 repack kernels on non-x86 arch");
    }
}

// AMX-int8 path for large-m (prefill) q4k matmuls over the same TileQ4K tiles as the
// VNNI kernels (no second copy of the weights): per 32-k subblock a tile's nibbles are
// split into a B tile (8 rows x 64 bytes = 32k x 16n VNNI-paired) in a scratch buffer,
// activations repacked per 16-row block, tdpbssd accumulating 16x16 i32 per subblock
// so the q4k per-subblock scales apply exactly.
pub(crate) fn amx_available() -> bool {
    use std::sync::OnceLock;
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        // forced downlevel testing must exercise the 256-bit paths end to end
        if level() != Some(X86Level::Avx512Vnni) {
            return false;
        }
        // is_x86_feature_detected!("amx-int8") is unstable; read CPUID leaf 7 directly
        #[cfg(target_arch = "x86_64")]
        let has_amx = {
            let info = core::arch::x86_64::__cpuid_count(7, 0);
            info.edx & (1 << 25) != 0 && info.edx & (1 << 24) != 0
        };
        #[cfg(not(target_arch = "x86_64"))]
        let has_amx = false;
        if !has_amx {
            return false;
        }
        // Linux gates AMX tile state behind a per-process permission request; other
        // OSes would need their own enablement, so AMX stays off there.
        #[cfg(target_os = "linux")]
        {
            const ARCH_REQ_XCOMP_PERM: i32 = 0x1023;
            const XFEATURE_XTILEDATA: u64 = 18;
            let r = unsafe {
                libc::syscall(
                    libc::SYS_arch_prctl,
                    ARCH_REQ_XCOMP_PERM,
                    XFEATURE_XTILEDATA,
                )
            };
            r == 0
        }
        #[cfg(not(target_os = "linux"))]
        false
    })
}

#[cfg(target_arch = "x86_64")]
mod amx {
    use super::*;
    use core::arch::x86_64::*;

    #[repr(C, align(64))]
    struct TileCfg {
        palette: u8,
        start_row: u8,
        _rsvd: [u8; 14],
        colsb: [u16; 16],
        rows: [u8; 16],
    }

    // tmm0 = C (16x16 i32), tmm1 = A (16 x 32 i8), tmm2 = B (8 x 64 i8)
    unsafe fn configure() {
        let mut cfg = TileCfg {
            palette: 1,
            start_row: 0,
            _rsvd: [0; 14],
            colsb: [0; 16],
            rows: [0; 16],
        };
        const _: () = assert!(std::mem::size_of::<TileCfg>() == 64);
        // tmm0-3: C (16x16 i32); tmm4-5: A (16x32 i8); tmm6-7: B (8x64 i8)
        for t in 0..4 {
            cfg.colsb[t] = 64;
            cfg.rows[t] = 16;
        }
        for t in 4..6 {
            cfg.colsb[t] = 32;
            cfg.rows[t] = 16;
        }
        for t in 6..8 {
            cfg.colsb[t] = 64;
            cfg.rows[t] = 8;
        }
        core::arch::asm!(
            "ldtilecfg [{cfg}]",
            cfg = in(reg) &cfg,
            options(nostack)
        );
    }

    thread_local! {
        static AMX_READY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    fn ensure_configured() {
        AMX_READY.with(|f| {
            if !f.get() {
                unsafe { configure() };
                f.set(true);
            }
        });
    }

    #[repr(C, align(64))]
    struct BTiles([u8; 2 * 8 * 64]);

    /// Subblock `sub` (32 k) of a TileQ4K's nibbles as an AMX B tile: its k8-group g holds
    /// k4-group 2g in the low nibbles and 2g + 1 in the high ones, each 16 columns x 4 bytes,
    /// which is one B row.
    #[inline(always)]
    unsafe fn unpack_sub(qs: *const u8, sub: usize, dst: *mut u8) {
        let lo = _mm512_set1_epi8(0x0F);
        for i in 0..4 {
            let v = _mm512_loadu_si512(qs.add((sub * 4 + i) * 64) as *const _);
            _mm512_store_si512(dst.add(2 * i * 64) as *mut _, _mm512_and_si512(v, lo));
            _mm512_store_si512(
                dst.add((2 * i + 1) * 64) as *mut _,
                _mm512_and_si512(_mm512_srli_epi16(v, 4), lo),
            );
        }
    }

    // One (m16-block, n-tile) product over the full k range.
    // a_pack: [kb][8 subs][16 rows * 32 bytes]; returns via dst rows of n floats.
    // 32m x 32n macro-tile: 4 C tiles per (2 A, 2 B) loads so tdp throughput is not
    // gated on tile loads. a_pack holds 32 m-rows (two 16-row halves interleaved by sub).
    #[target_feature(enable = "avx512f,avx512bw")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn q4k_m32(
        tiles: &[TileQ4K],
        nt0: usize,
        n_tiles: usize,
        kb: usize,
        a_pack: &[i8],
        acts: &[&[BlockQ8K]],
        mt: usize,
        dst: *mut f32,
        n: usize,
    ) {
        ensure_configured();
        let two_n = nt0 + 1 < n_tiles;
        let mut c_scratch = [0i32; 4 * 16 * 16];
        let mut b_scratch = BTiles([0; 2 * 8 * 64]);
        let mut facc = [0f32; 32 * 32];
        let a_half = kb * 8 * 16 * 32;
        unsafe {
            for b in 0..kb {
                let t0 = &tiles[nt0 * kb + b];
                let t1 = &tiles[(nt0 + two_n as usize) * kb + b];
                for sub in 0..8 {
                    let a0 = a_pack.as_ptr().add((b * 8 + sub) * 16 * 32);
                    let a1 = a_pack.as_ptr().add(a_half + (b * 8 + sub) * 16 * 32);
                    let b0 = b_scratch.0.as_mut_ptr();
                    let b1 = b0.add(8 * 64);
                    unpack_sub(t0.qs.as_ptr(), sub, b0);
                    unpack_sub(t1.qs.as_ptr(), sub, b1);
                    core::arch::asm!(
                        "tilezero tmm0",
                        "tilezero tmm1",
                        "tilezero tmm2",
                        "tilezero tmm3",
                        "tileloadd tmm4, [{a0} + {sa}*1]",
                        "tileloadd tmm6, [{b0} + {sb}*1]",
                        "tdpbssd tmm0, tmm4, tmm6",
                        "tileloadd tmm7, [{b1} + {sb}*1]",
                        "tdpbssd tmm1, tmm4, tmm7",
                        "tileloadd tmm5, [{a1} + {sa}*1]",
                        "tdpbssd tmm2, tmm5, tmm6",
                        "tdpbssd tmm3, tmm5, tmm7",
                        "tilestored [{c} + {sc}*1], tmm0",
                        "tilestored [{c} + {sc}*1 + 1024], tmm1",
                        "tilestored [{c} + {sc}*1 + 2048], tmm2",
                        "tilestored [{c} + {sc}*1 + 3072], tmm3",
                        a0 = in(reg) a0,
                        a1 = in(reg) a1,
                        b0 = in(reg) b0,
                        b1 = in(reg) b1,
                        c = in(reg) c_scratch.as_mut_ptr(),
                        sa = in(reg) 32usize,
                        sb = in(reg) 64usize,
                        sc = in(reg) 64usize,
                        options(nostack)
                    );
                    for half in 0..2 {
                        let rows = if half == 0 {
                            mt.min(16)
                        } else {
                            mt.saturating_sub(16)
                        };
                        if rows == 0 {
                            continue;
                        }
                        for ntl in 0..1 + two_n as usize {
                            let tile = if ntl == 0 { t0 } else { t1 };
                            let scale = _mm512_loadu_ps(tile.scales[sub].as_ptr());
                            let min = _mm512_loadu_ps(tile.mins[sub].as_ptr());
                            let cbase = (half * 2 + ntl) * 256;
                            for mi in 0..rows {
                                let act = &acts[half * 16 + mi][b];
                                let dall = act.d;
                                let ci = _mm512_loadu_si512(
                                    c_scratch.as_ptr().add(cbase + mi * 16) as *const _,
                                );
                                let cf = _mm512_cvtepi32_ps(ci);
                                let fo = (half * 16 + mi) * 32 + ntl * 16;
                                let f = _mm512_loadu_ps(facc.as_ptr().add(fo));
                                let bsum = (act.bsums[sub * 2] as i32
                                    + act.bsums[sub * 2 + 1] as i32)
                                    as f32;
                                let f = _mm512_fmadd_ps(
                                    cf,
                                    _mm512_mul_ps(scale, _mm512_set1_ps(dall)),
                                    f,
                                );
                                let f = _mm512_fnmadd_ps(min, _mm512_set1_ps(dall * bsum), f);
                                _mm512_storeu_ps(facc.as_mut_ptr().add(fo), f);
                            }
                        }
                    }
                }
            }
            let n_cols = 16 * (1 + two_n as usize);
            for mi in 0..mt {
                std::ptr::copy_nonoverlapping(
                    facc.as_ptr().add(mi * 32),
                    dst.add(mi * n + nt0 * TILE_N),
                    n_cols,
                );
            }
        }
    }
}

// AMX matmul: m >= 32, q4k only. acts are per-row BlockQ8K slices.
pub(crate) fn matmul_amx_q4k(
    tiles: &[TileQ4K],
    lhs_q: &[BlockQ8K],
    m: usize,
    k: usize,
    n: usize,
    dst: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    {
        let kb = k / QK_K;
        let n_tiles = n / TILE_N;
        let m_blocks = m.div_ceil(32);
        let dst_ptr = dst.as_mut_ptr() as usize;
        let lhs_ref = lhs_q;
        crate::utils::barrier_pool().execute_chunked(m_blocks, |range| {
            let dst_ptr = dst_ptr as *mut f32;
            // per-thread activation repack buffer (two 16-row halves), reused across n
            let a_half = kb * 8 * 16 * 32;
            let mut a_pack = vec![0i8; 2 * a_half];
            let mut act_rows: Vec<&[BlockQ8K]> = Vec::with_capacity(32);
            for mb in range {
                let m0 = mb * 32;
                let mt = (m - m0).min(32);
                act_rows.clear();
                for i in 0..mt {
                    act_rows.push(&lhs_ref[(m0 + i) * kb..(m0 + i + 1) * kb]);
                }
                a_pack.fill(0);
                for (i, row) in act_rows.iter().enumerate() {
                    let base = (i / 16) * a_half;
                    let r = i % 16;
                    for b in 0..kb {
                        let qs = &row[b].qs;
                        for sub in 0..8 {
                            let dst_off = base + ((b * 8 + sub) * 16 + r) * 32;
                            a_pack[dst_off..dst_off + 32]
                                .copy_from_slice(&qs[sub * 32..sub * 32 + 32]);
                        }
                    }
                }
                let mut nt = 0;
                while nt < n_tiles {
                    unsafe {
                        amx::q4k_m32(
                            tiles,
                            nt,
                            n_tiles,
                            kb,
                            &a_pack,
                            &act_rows,
                            mt,
                            dst_ptr.add(m0 * n),
                            n,
                        )
                    };
                    nt += 2;
                }
            }
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (tiles, lhs_q, m, k, n, dst);
        unreachable!()
    }
}

// 256-bit kernel tier for CPUs without AVX512: AVX-VNNI (vpdpbusd ymm) or pure AVX2
// (maddubs+madd, safe for the u4/u6 x i8 operand ranges). Same tile layout, each
// 16-column group processed as two ymm halves.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum X86Level {
    Avx512Vnni,
    AvxVnni,
    Avx2,
}

pub(crate) fn level() -> Option<X86Level> {
    use std::sync::OnceLock;
    static LEVEL: OnceLock<Option<X86Level>> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        // candle-bind's patch: capped by CANDLE_BIND_ISA as the other quantized kernels.
        match std::env::var("CANDLE_BIND_ISA").map(|s| s.trim().to_ascii_lowercase()).as_deref() {
            Ok("portable") | Ok("default") => return None,
            Ok("avx2") if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") => {
                return Some(X86Level::Avx2)
            }
            Ok("avx2") => return None,
            _ => {}
        }
        let force_avx2 = std::env::var("MISTRALRS_FORCE_AVX2").as_deref() == Ok("1");
        let force_vnni = std::env::var("MISTRALRS_FORCE_AVXVNNI").as_deref() == Ok("1");
        if !force_avx2
            && !force_vnni
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vnni")
        {
            return Some(X86Level::Avx512Vnni);
        }
        if !force_avx2
            && (force_vnni || is_x86_feature_detected!("avxvnni"))
            && is_x86_feature_detected!("avx2")
        {
            return Some(X86Level::AvxVnni);
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Some(X86Level::Avx2);
        }
        None
    })
}

#[cfg(target_arch = "x86_64")]
mod kernels256 {
    use super::kernels::MAX_MT;
    use super::*;
    use core::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    unsafe fn bcast4_256(act: &[i8], off: usize) -> __m256i {
        _mm256_set1_epi32(std::ptr::read_unaligned(act.as_ptr().add(off) as *const i32))
    }

    #[target_feature(enable = "avx2,avxvnni")]
    unsafe fn dp_vnni(acc: __m256i, w_u8: __m256i, a_i8: __m256i) -> __m256i {
        _mm256_dpbusd_avx_epi32(acc, w_u8, a_i8)
    }

    macro_rules! q4k_tile_256 {
        ($fname:ident, $dp:path, $feat:literal) => {
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn $fname(
                tile: &TileQ4K,
                acts: &[&BlockQ8K],
                acc: &mut [[__m256; 2]],
            ) {
                let mask = _mm256_set1_epi8(0x0F_u8 as i8);
                for sub in 0..8 {
                    let mut isum = [[_mm256_setzero_si256(); 2]; MAX_MT];
                    for g4 in 0..4 {
                        let g = sub * 4 + g4;
                        for h in 0..2 {
                            let w = _mm256_loadu_si256(
                                tile.qs.as_ptr().add(g * TILE_N * 4 + h * 32) as *const _,
                            );
                            let lo = _mm256_and_si256(w, mask);
                            let hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), mask);
                            for (m, act) in acts.iter().enumerate() {
                                let a_lo = bcast4_256(&act.qs, sub * 32 + g4 * 8);
                                let a_hi = bcast4_256(&act.qs, sub * 32 + g4 * 8 + 4);
                                isum[m][h] = $dp(isum[m][h], lo, a_lo);
                                isum[m][h] = $dp(isum[m][h], hi, a_hi);
                            }
                        }
                    }
                    for h in 0..2 {
                        let scale = _mm256_loadu_ps(tile.scales[sub].as_ptr().add(h * 8));
                        let min = _mm256_loadu_ps(tile.mins[sub].as_ptr().add(h * 8));
                        for (m, act) in acts.iter().enumerate() {
                            let dall = act.d;
                            let f = _mm256_cvtepi32_ps(isum[m][h]);
                            acc[m][h] = _mm256_fmadd_ps(
                                f,
                                _mm256_mul_ps(scale, _mm256_set1_ps(dall)),
                                acc[m][h],
                            );
                            let bsum =
                                (act.bsums[sub * 2] as i32 + act.bsums[sub * 2 + 1] as i32) as f32;
                            acc[m][h] =
                                _mm256_fnmadd_ps(min, _mm256_set1_ps(dall * bsum), acc[m][h]);
                        }
                    }
                }
            }
        };
    }
    q4k_tile_256!(q4k_tile_avxvnni, dp_vnni, "avx2,avxvnni,fma");

    // candle-bind's patch: q4k on pure AVX2 with a subblock's `vpmaddubsw` pairs summed in i16 and
    // widened once (16 products of 15·128 a lane: exact), instead of a `vpmaddwd` and an add after
    // each; the same integer sums, so the same results.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn q4k_tile_avx2(tile: &TileQ4K, acts: &[&BlockQ8K], acc: &mut [[__m256; 2]]) {
        let (mask, ones) = (_mm256_set1_epi8(0x0F_u8 as i8), _mm256_set1_epi16(1));
        for sub in 0..8 {
            let mut isum = [[_mm256_setzero_si256(); 2]; MAX_MT];
            for g4 in 0..4 {
                let g = sub * 4 + g4;
                for h in 0..2 {
                    let w = _mm256_loadu_si256(tile.qs.as_ptr().add(g * TILE_N * 4 + h * 32) as *const _);
                    let lo = _mm256_and_si256(w, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), mask);
                    for (m, act) in acts.iter().enumerate() {
                        let a_lo = bcast4_256(&act.qs, sub * 32 + g4 * 8);
                        let a_hi = bcast4_256(&act.qs, sub * 32 + g4 * 8 + 4);
                        let p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, a_lo), _mm256_maddubs_epi16(hi, a_hi));
                        isum[m][h] = _mm256_add_epi16(isum[m][h], p);
                    }
                }
            }
            for h in 0..2 {
                let scale = _mm256_loadu_ps(tile.scales[sub].as_ptr().add(h * 8));
                let min = _mm256_loadu_ps(tile.mins[sub].as_ptr().add(h * 8));
                for (m, act) in acts.iter().enumerate() {
                    let dall = act.d;
                    let f = _mm256_cvtepi32_ps(_mm256_madd_epi16(isum[m][h], ones));
                    acc[m][h] = _mm256_fmadd_ps(f, _mm256_mul_ps(scale, _mm256_set1_ps(dall)), acc[m][h]);
                    let bsum = (act.bsums[sub * 2] as i32 + act.bsums[sub * 2 + 1] as i32) as f32;
                    acc[m][h] = _mm256_fnmadd_ps(min, _mm256_set1_ps(dall * bsum), acc[m][h]);
                }
            }
        }
    }

    macro_rules! q6k_tile_256 {
        ($fname:ident, $dp:path, $feat:literal) => {
            #[target_feature(enable = $feat)]
            pub(crate) unsafe fn $fname(
                tile: &TileQ6K,
                acts: &[&BlockQ8K],
                acc: &mut [[__m256; 2]],
            ) {
                for sub in 0..16 {
                    let mut isum = [[_mm256_setzero_si256(); 2]; MAX_MT];
                    for g4 in 0..4 {
                        let g = sub * 4 + g4;
                        for h in 0..2 {
                            let w = _mm256_loadu_si256(
                                tile.qs.as_ptr().add(g * TILE_N * 4 + h * 32) as *const _,
                            );
                            for (m, act) in acts.iter().enumerate() {
                                let a = bcast4_256(&act.qs, sub * 16 + g4 * 4);
                                isum[m][h] = $dp(isum[m][h], w, a);
                            }
                        }
                    }
                    for h in 0..2 {
                        let scale = _mm256_loadu_ps(tile.scales[sub].as_ptr().add(h * 8));
                        for (m, act) in acts.iter().enumerate() {
                            let dall = act.d;
                            let bsum = act.bsums[sub] as f32;
                            let f = _mm256_sub_ps(
                                _mm256_cvtepi32_ps(isum[m][h]),
                                _mm256_set1_ps(32.0 * bsum),
                            );
                            acc[m][h] = _mm256_fmadd_ps(
                                f,
                                _mm256_mul_ps(scale, _mm256_set1_ps(dall)),
                                acc[m][h],
                            );
                        }
                    }
                }
            }
        };
    }
    q6k_tile_256!(q6k_tile_avxvnni, dp_vnni, "avx2,avxvnni,fma");

    // candle-bind's patch: q6k on pure AVX2 with two `vpmaddubsw` results summed in i16 before
    // each widening (4 products of 63·128 a lane: exact); the same integer sums as before.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn q6k_tile_avx2(tile: &TileQ6K, acts: &[&BlockQ8K], acc: &mut [[__m256; 2]]) {
        let ones = _mm256_set1_epi16(1);
        for sub in 0..16 {
            let mut isum = [[_mm256_setzero_si256(); 2]; MAX_MT];
            for g2 in 0..2 {
                for h in 0..2 {
                    let at = |g4: usize| {
                        _mm256_loadu_si256(tile.qs.as_ptr().add((sub * 4 + g4) * TILE_N * 4 + h * 32) as *const _)
                    };
                    let (w0, w1) = (at(2 * g2), at(2 * g2 + 1));
                    for (m, act) in acts.iter().enumerate() {
                        let a0 = bcast4_256(&act.qs, sub * 16 + g2 * 8);
                        let a1 = bcast4_256(&act.qs, sub * 16 + g2 * 8 + 4);
                        let p = _mm256_add_epi16(_mm256_maddubs_epi16(w0, a0), _mm256_maddubs_epi16(w1, a1));
                        isum[m][h] = _mm256_add_epi32(isum[m][h], _mm256_madd_epi16(p, ones));
                    }
                }
            }
            for h in 0..2 {
                let scale = _mm256_loadu_ps(tile.scales[sub].as_ptr().add(h * 8));
                for (m, act) in acts.iter().enumerate() {
                    let dall = act.d;
                    let bsum = act.bsums[sub] as f32;
                    let f = _mm256_sub_ps(_mm256_cvtepi32_ps(isum[m][h]), _mm256_set1_ps(32.0 * bsum));
                    acc[m][h] = _mm256_fmadd_ps(f, _mm256_mul_ps(scale, _mm256_set1_ps(dall)), acc[m][h]);
                }
            }
        }
    }

    /// candle-bind's patch: rows per unit of the AVX2 Q8_0-activation kernel (`rows`): 16 ymm
    /// registers hold 4 rows' two halves of f32 sums beside the weights and products.
    pub(crate) const ROWS_MT: usize = 4;

    // candle-bind's patch: `kernels::rows` for AVX2 (`ActTile256`): MT (1-4) activation rows
    // against one 16-row column of tiles, each tile's half unpacked once for all MT rows. Per
    // block, half and row, the integer dot product (`vpmaddubsw`, summed in i16 as far as
    // `T::I16_GROUPS` allows, widened by `vpmaddwd`) equals the VNNI kernel's, and the float steps
    // are the same: d_w·d_a·(Σ - OFF·Σq_a) (Q8_0's signed weights: d_w·d_a·Σ), or with OFF 0
    // d_w·d_a·Σ + m_w·d_a·Σq_a, added into the row's sums block after block. A row goes through
    // the same operations whatever MT is.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn rows<T: ActTile256, const OFF: i32, const MT: usize>(
        t: *const T,
        a: [*const ActQ8_0; MT],
        kb: usize,
        out: [*mut f32; MT],
    ) {
        let ones = _mm256_set1_epi16(1);
        // Both halves of a tile per block (one pass over the weights: going over k once per half
        // read them twice and made a decoded row 15% slower).
        let mut acc = [[_mm256_setzero_ps(); 2]; MT];
        for b in 0..kb {
            let tile = &*t.add(b);
            super::kernels::prefetch_ahead(t.wrapping_add(b));
            let acts: [&ActQ8_0; MT] = std::array::from_fn(|m| &*a[m].add(b));
            for h in 0..2 {
                let mut q = [_mm256_setzero_si256(); MT];
                let mut q16 = [_mm256_setzero_si256(); MT];
                for g in 0..4 {
                    let (we, wo) = tile.pair256(g, h);
                    let (ue, uo) = if T::SIGNED { (_mm256_abs_epi8(we), _mm256_abs_epi8(wo)) } else { (we, wo) };
                    for m in 0..MT {
                        let (mut ae, mut ao) = (bcast4_256(&acts[m].qs, 8 * g), bcast4_256(&acts[m].qs, 8 * g + 4));
                        if T::SIGNED {
                            (ae, ao) = (_mm256_sign_epi8(ae, we), _mm256_sign_epi8(ao, wo));
                        }
                        let (pe, po) = (_mm256_maddubs_epi16(ue, ae), _mm256_maddubs_epi16(uo, ao));
                        if T::I16_GROUPS == 0 {
                            let pair = _mm256_add_epi32(_mm256_madd_epi16(pe, ones), _mm256_madd_epi16(po, ones));
                            q[m] = _mm256_add_epi32(q[m], pair);
                        } else {
                            q16[m] = _mm256_add_epi16(q16[m], _mm256_add_epi16(pe, po));
                            if (g + 1) % T::I16_GROUPS == 0 {
                                q[m] = _mm256_add_epi32(q[m], _mm256_madd_epi16(q16[m], ones));
                                q16[m] = _mm256_setzero_si256();
                            }
                        }
                    }
                }
                let dw = _mm256_cvtph_ps(_mm_loadu_si128(tile.d().as_ptr().add(8 * h) as *const _));
                for m in 0..MT {
                    let da = _mm256_set1_ps(acts[m].d);
                    if OFF != 0 {
                        let q = if T::SIGNED { q[m] } else { _mm256_sub_epi32(q[m], _mm256_set1_epi32(OFF * acts[m].sum)) };
                        acc[m][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), _mm256_mul_ps(dw, da), acc[m][h]);
                    } else {
                        let mw = _mm256_cvtph_ps(_mm_loadu_si128(tile.m().as_ptr().add(8 * h) as *const _));
                        let r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q[m]), _mm256_mul_ps(dw, da), acc[m][h]);
                        acc[m][h] = _mm256_fmadd_ps(mw, _mm256_set1_ps(acts[m].dsum), r);
                    }
                }
            }
        }
        for m in 0..MT {
            _mm256_storeu_ps(out[m], acc[m][0]);
            _mm256_storeu_ps(out[m].add(8), acc[m][1]);
        }
    }

    // candle-bind's patch: `rows` on AVX-VNNI CPUs (Intel's from Alder Lake, the E-core Xeons: no
    // AVX-512) by `vpdpbusd ymm`, unsigned weight bytes by signed activations summed into i32 in one
    // instruction where `vpmaddubsw` took a widening step (and Q8_0 a sign step) besides. The
    // 512-bit kernel's arithmetic, 256 bits wide: Σ(w + OFF)·a - OFF·Σa, the same integer sums as
    // `rows`, so the same results.
    #[target_feature(enable = "avx2,avxvnni,fma,f16c")]
    pub(crate) unsafe fn rows_vnni<T: ActTile256, const OFF: i32, const MT: usize>(
        t: *const T,
        a: [*const ActQ8_0; MT],
        kb: usize,
        out: [*mut f32; MT],
    ) {
        let mut acc = [[_mm256_setzero_ps(); 2]; MT];
        for b in 0..kb {
            let tile = &*t.add(b);
            super::kernels::prefetch_ahead(t.wrapping_add(b));
            let acts: [&ActQ8_0; MT] = std::array::from_fn(|m| &*a[m].add(b));
            for h in 0..2 {
                let mut q = [_mm256_setzero_si256(); MT];
                for g in 0..4 {
                    let (we, wo) = tile.raw256(g, h);
                    for m in 0..MT {
                        q[m] = _mm256_dpbusd_avx_epi32(q[m], we, bcast4_256(&acts[m].qs, 8 * g));
                        q[m] = _mm256_dpbusd_avx_epi32(q[m], wo, bcast4_256(&acts[m].qs, 8 * g + 4));
                    }
                }
                let dw = _mm256_cvtph_ps(_mm_loadu_si128(tile.d().as_ptr().add(8 * h) as *const _));
                for m in 0..MT {
                    let da = _mm256_set1_ps(acts[m].d);
                    if OFF != 0 {
                        let q = _mm256_sub_epi32(q[m], _mm256_set1_epi32(OFF * acts[m].sum));
                        acc[m][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), _mm256_mul_ps(dw, da), acc[m][h]);
                    } else {
                        let mw = _mm256_cvtph_ps(_mm_loadu_si128(tile.m().as_ptr().add(8 * h) as *const _));
                        let r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q[m]), _mm256_mul_ps(dw, da), acc[m][h]);
                        acc[m][h] = _mm256_fmadd_ps(mw, _mm256_set1_ps(acts[m].dsum), r);
                    }
                }
            }
        }
        for m in 0..MT {
            _mm256_storeu_ps(out[m], acc[m][0]);
            _mm256_storeu_ps(out[m].add(8), acc[m][1]);
        }
    }

    // q8_0 needs true dpbusd (u8 range overflows maddubs' i16 pairs), so vnni only.
    #[target_feature(enable = "avx2,avxvnni,fma")]
    pub(crate) unsafe fn q8_0_tile2_avxvnni(
        t0: &TileQ8_0,
        t1: &TileQ8_0,
        acts: &[&BlockQ8K],
        sub32: usize,
        acc: &mut [[__m256; 2]],
    ) {
        let mut isum_a = [[_mm256_setzero_si256(); 2]; MAX_MT];
        let mut isum_b = [[_mm256_setzero_si256(); 2]; MAX_MT];
        for g4 in 0..8 {
            for h in 0..2 {
                let wa =
                    _mm256_loadu_si256(t0.qs.as_ptr().add(g4 * TILE_N * 4 + h * 32) as *const _);
                let wb =
                    _mm256_loadu_si256(t1.qs.as_ptr().add(g4 * TILE_N * 4 + h * 32) as *const _);
                for (m, act) in acts.iter().enumerate() {
                    isum_a[m][h] = _mm256_dpbusd_avx_epi32(
                        isum_a[m][h],
                        wa,
                        bcast4_256(&act.qs, sub32 * 32 + g4 * 4),
                    );
                    isum_b[m][h] = _mm256_dpbusd_avx_epi32(
                        isum_b[m][h],
                        wb,
                        bcast4_256(&act.qs, (sub32 + 1) * 32 + g4 * 4),
                    );
                }
            }
        }
        for (blk, isum, tile) in [(sub32, &isum_a, t0), (sub32 + 1, &isum_b, t1)] {
            for h in 0..2 {
                let dw = _mm256_cvtph_ps(_mm_loadu_si128(tile.d.as_ptr().add(h * 8) as *const _));
                for (m, act) in acts.iter().enumerate() {
                    let bsum = (act.bsums[blk * 2] as i32 + act.bsums[blk * 2 + 1] as i32) as f32;
                    let f =
                        _mm256_sub_ps(_mm256_cvtepi32_ps(isum[m][h]), _mm256_set1_ps(128.0 * bsum));
                    acc[m][h] =
                        _mm256_fmadd_ps(f, _mm256_mul_ps(dw, _mm256_set1_ps(act.d)), acc[m][h]);
                }
            }
        }
    }
}
