//! Attention on the host over a paged f16 KV cache: each sequence's keys and values of a layer
//! live in pages of `PAGE` positions that are added as it grows and dropped as it rewinds or ends,
//! so a cache holds at most `PAGE - 1` positions it does not use and is never copied to grow. Half
//! precision (the default, as llama.cpp's) halves the cache; f32 (`kv_dtype=float32`) keeps keys
//! and values exact. Queries, scores and sums are f32 either way.
//!
//! A decoded token (a few query rows) is a matrix-vector product per head, where a general gemm
//! spends more time on packing and edges than on the products: there a kernel (AVX-512, or AVX2
//! with FMA and F16C) reads the pages directly, all query heads that share a key/value head at
//! once (each key read once for the group), keys stored transposed so that one vector holds 16 (8)
//! positions' values of one dimension (no horizontal sums). Prompts (many query rows) convert the
//! pages to f32 and go through gemm.

// The SIMD kernels index several arrays (accumulators, pointers, lanes) by one row or lane index.
#![allow(clippy::needless_range_loop)]

use std::cell::UnsafeCell;

use half::f16;
use half::slice::HalfFloatSliceExt;

use crate::tensor::kernels::uninit_vec;
use crate::tensor::reduce::softmax_row_f32;

/// Positions per page.
pub(super) const PAGE: usize = 64;

/// Query rows per sequence up to which the direct kernel runs (above: gemm).
const DIRECT_ROWS: usize = 8;

/// A cache element: f16 or f32.
pub(super) trait Elem: Copy + Send + Sync + 'static {
    const ZERO: Self;
    /// `dst` = `src` in this type (f16: clamped to its finite range rather than stored as
    /// infinities, which would turn a zero probability times a value into NaN).
    fn store(src: &[f32], dst: &mut [Self]);
    fn load(src: &[Self], dst: &mut [f32]);
    /// 16 values at `p` as f32 lanes.
    ///
    /// # Safety
    /// AVX-512F is available and `p` points at 16 readable values.
    #[cfg(target_arch = "x86_64")]
    unsafe fn lanes(p: *const Self) -> std::arch::x86_64::__m512;
    /// 8 values at `p` as f32 lanes.
    ///
    /// # Safety
    /// AVX2, FMA and F16C are available and `p` points at 8 readable values.
    #[cfg(target_arch = "x86_64")]
    unsafe fn lanes8(p: *const Self) -> std::arch::x86_64::__m256;
}

impl Elem for f16 {
    const ZERO: Self = f16::ZERO;
    fn store(src: &[f32], dst: &mut [Self]) {
        const MAX: f32 = 65504.0;
        #[cfg(target_arch = "x86_64")]
        if crate::isa::level() == crate::isa::Level::Avx512 {
            // SAFETY: the CPU runs AVX-512F, BW and VL (the level checked).
            unsafe { store_f16_512(src, dst, MAX) };
            return;
        }
        let mut clamped = [0f32; 64];
        for (s, d) in src.chunks(64).zip(dst.chunks_mut(64)) {
            clamped[..s.len()].iter_mut().zip(s).for_each(|(o, x)| *o = x.clamp(-MAX, MAX));
            d.convert_from_f32_slice(&clamped[..s.len()]);
        }
    }
    fn load(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn lanes(p: *const Self) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn lanes8(p: *const Self) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
    }
}

/// `f16::store` in 16-lane steps (clamp with NaN kept, the bound as the second operand, then
/// round-to-nearest-even, as `half` converts):
/// through `half`'s slice conversion a decoded row's keys and values cost 2% of a batch-8 step.
///
/// # Safety
/// AVX-512F, BW and VL (the AVX-512 level).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn store_f16_512(src: &[f32], dst: &mut [f16], max: f32) {
    use std::arch::x86_64::*;
    let n = src.len().min(dst.len());
    let (lo, hi) = (_mm512_set1_ps(-max), _mm512_set1_ps(max));
    let mut i = 0;
    while i < n {
        let m = crate::tensor::kernels::lanes16(n - i);
        let x = _mm512_maskz_loadu_ps(m, src.as_ptr().add(i));
        let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_min_ps(hi, _mm512_max_ps(lo, x)));
        _mm256_mask_storeu_epi16(dst.as_mut_ptr().add(i) as *mut i16, m, h);
        i += 16;
    }
}

impl Elem for f32 {
    const ZERO: Self = 0.0;
    fn store(src: &[f32], dst: &mut [Self]) {
        dst.copy_from_slice(src);
    }
    fn load(src: &[Self], dst: &mut [f32]) {
        dst.copy_from_slice(src);
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn lanes(p: *const Self) -> std::arch::x86_64::__m512 {
        std::arch::x86_64::_mm512_loadu_ps(p)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn lanes8(p: *const Self) -> std::arch::x86_64::__m256 {
        std::arch::x86_64::_mm256_loadu_ps(p)
    }
}

/// One page: keys [kv head][head_dim][PAGE] (transposed), values [kv head][PAGE][head_dim]. In
/// cells: during a step each (sequence, kv head) task stores its head's new positions while other
/// tasks read other heads of the same page.
pub(super) struct Page<E> {
    k: Box<[UnsafeCell<E>]>,
    v: Box<[UnsafeCell<E>]>,
}

// SAFETY: a cell is written only through `store_rows`, whose callers give each (sequence, kv head)
// to one task, and no task reads another's head while the step writes it.
unsafe impl<E: Send + Sync> Sync for Page<E> {}

impl<E: Elem> Page<E> {
    fn zeroed(len: usize) -> Self {
        let zeros = || (0..len).map(|_| UnsafeCell::new(E::ZERO)).collect();
        Page { k: zeros(), v: zeros() }
    }

    /// Kv head g's keys, [d][PAGE].
    fn keys(&self, g: usize, d: usize) -> *mut E {
        UnsafeCell::raw_get(self.k.as_ptr().wrapping_add(g * d * PAGE))
    }

    /// Kv head g's values, [PAGE][d].
    fn values(&self, g: usize, d: usize) -> *mut E {
        UnsafeCell::raw_get(self.v.as_ptr().wrapping_add(g * PAGE * d))
    }
}

/// One layer's keys and values of one sequence, after RoPE, in its element type.
pub(super) enum HostKv {
    Half(Vec<Page<f16>>),
    Single(Vec<Page<f32>>),
}

impl Default for HostKv {
    fn default() -> Self {
        HostKv::Half(Vec::new())
    }
}

impl HostKv {
    pub(super) fn new(half: bool) -> Self {
        if half { HostKv::Half(Vec::new()) } else { HostKv::Single(Vec::new()) }
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        match self {
            HostKv::Half(p) => p.iter().map(|p| (p.k.len() + p.v.len()) * 2).sum(),
            HostKv::Single(p) => p.iter().map(|p| (p.k.len() + p.v.len()) * 4).sum(),
        }
    }

    /// Pages for positions `0..total` (`width` = kv heads · d values each): the pages past them
    /// are dropped (a rewound sequence), missing ones added zeroed; a step's keys and values are
    /// then stored by its attention tasks.
    pub(super) fn reserve(&mut self, total: usize, width: usize) {
        fn pages<E: Elem>(pages: &mut Vec<Page<E>>, total: usize, width: usize) {
            let n = total.div_ceil(PAGE);
            pages.truncate(n);
            while pages.len() < n {
                pages.push(Page::zeroed(width * PAGE));
            }
        }
        match self {
            HostKv::Half(p) => pages(p, total, width),
            HostKv::Single(p) => pages(p, total, width),
        }
    }
}

/// Kv head g's keys of the first `n` pages as f32 [d][n · PAGE] and values [n · PAGE][d] (gemm's
/// inputs).
fn to_f32<E: Elem>(pages: &[Page<E>], g: usize, d: usize, n: usize) -> (Vec<f32>, Vec<f32>) {
    let w = n * PAGE;
    let (mut kt, mut v) = (uninit_vec::<f32>(d * w), uninit_vec::<f32>(w * d));
    for (p, page) in pages[..n].iter().enumerate() {
        // SAFETY: the head's cells are not written while it is read (this step's stores ran first).
        let (keys, values) = unsafe {
            (std::slice::from_raw_parts(page.keys(g, d), d * PAGE), std::slice::from_raw_parts(page.values(g, d), PAGE * d))
        };
        for j in 0..d {
            E::load(&keys[j * PAGE..][..PAGE], &mut kt[j * w + p * PAGE..][..PAGE]);
        }
        E::load(values, &mut v[p * PAGE * d..][..PAGE * d]);
    }
    (kt, v)
}

/// The attention's shape and scoring rules.
pub(super) struct Shape {
    pub n_head: usize,
    pub n_kv: usize,
    pub d: usize,
    pub scale: f32,
    /// Scores squashed as c·tanh(x / c) (gemma2).
    pub softcap: Option<f32>,
    /// A query sees only the last `window` keys (sliding-window layers).
    pub window: Option<usize>,
}

/// Prepares one head's vector (d values) for the position it sits at before it is stored or
/// attends: the q/k norm (qwen3) and the rotary embedding; the flag says whether it is a key.
pub(super) type Prep<'a> = &'a (dyn Fn(&mut [f32], usize, bool) + Sync);

/// One sequence's part of a step: its `s` rows start at row `row` of the step's projections and
/// sit at positions `start..start + s`; `kv` holds the positions before them and has pages
/// reserved for them (`HostKv::reserve`).
pub(super) struct Part<'a> {
    pub kv: &'a HostKv,
    pub row: usize,
    pub s: usize,
    pub start: usize,
}

/// A raw pointer that worker threads write disjoint parts of.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: every work item writes its own (rows, heads) columns only.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// Stores part p's kv head g from `qkv` (the step's rows of queries, keys and values as projected):
/// its keys prepared, and its values, at their positions.
///
/// # Safety
/// No other thread touches head g of p's cache meanwhile.
unsafe fn store_rows(sh: &Shape, qkv: &[f32], p: &Part, g: usize, prep: Prep) {
    unsafe fn store<E: Elem>(sh: &Shape, qkv: &[f32], p: &Part, pages: &[Page<E>], g: usize, prep: Prep) {
        let d = sh.d;
        let (nq, nk) = (sh.n_head * d, sh.n_kv * d);
        let (mut key, mut row) = (vec![0f32; d], vec![E::ZERO; d]);
        for i in 0..p.s {
            let (pos, at) = (p.start + i, (p.row + i) * (nq + 2 * nk));
            let Some(page) = pages.get(pos / PAGE) else { return };
            let o = pos % PAGE;
            key.copy_from_slice(&qkv[at + nq + g * d..][..d]);
            prep(&mut key, pos, true);
            E::store(&key, &mut row);
            let keys = page.keys(g, d);
            for (j, x) in row.iter().enumerate() {
                *keys.add(j * PAGE + o) = *x;
            }
            E::store(&qkv[at + nq + nk + g * d..][..d], std::slice::from_raw_parts_mut(page.values(g, d).add(o * d), d));
        }
    }
    match p.kv {
        HostKv::Half(pages) => store(sh, qkv, p, pages, g, prep),
        HostKv::Single(pages) => store(sh, qkv, p, pages, g, prep),
    }
}

/// Query head h of part p's row i from `qkv` into `dst`, prepared.
fn query(sh: &Shape, qkv: &[f32], p: &Part, i: usize, h: usize, prep: Prep, dst: &mut [f32]) {
    let d = sh.d;
    dst.copy_from_slice(&qkv[(p.row + i) * (sh.n_head + 2 * sh.n_kv) * d + h * d..][..d]);
    prep(dst, p.start + i, false);
}

/// Part p's query heads of kv head g from `qkv`, prepared, into `q` ((rows, heads · d), gemm's input).
///
/// # Safety
/// `q` holds the step's rows, and no other thread writes these heads of p's rows.
unsafe fn prepare_queries(sh: &Shape, qkv: &[f32], p: &Part, g: usize, prep: Prep, q: *mut f32) {
    let (n_head, d) = (sh.n_head, sh.d);
    let group = n_head / sh.n_kv;
    for i in 0..p.s {
        for h in g * group..(g + 1) * group {
            query(sh, qkv, p, i, h, prep, std::slice::from_raw_parts_mut(q.add((p.row + i) * n_head * d + h * d), d));
        }
    }
}

/// Causal attention of each part's rows of `qkv` ((rows, (heads + 2 · kv heads) · d): queries, keys
/// and values as projected): each part's keys (prepared) and values are stored at their positions,
/// then its queries (prepared) attend over its cache. `out`: (rows, heads · d).
pub(super) fn attend(sh: &Shape, qkv: &[f32], parts: &[Part], prep: Prep, out: &mut [f32]) {
    let (n_head, n_kv, d) = (sh.n_head, sh.n_kv, sh.d);
    let group = n_head / n_kv;
    let kernels = direct_kernels();
    let direct = |p: &Part| kernels != Kernels::None && d % 16 == 0 && p.s <= DIRECT_ROWS;
    let flops: usize = parts.iter().map(|p| p.s * (p.start + p.s)).sum::<usize>() * d * n_head;
    // On the quantized matmuls' own pool, whose workers are spinning between those matmuls anyway
    // (another pool's would compete with them for the cores); a few hundred kFLOP (one sequence's
    // decoded token) costs less inline than a dispatch.
    let run = |n: usize, work: &(dyn Fn(usize) + Sync)| {
        if flops < 1 << 19 {
            (0..n).for_each(work);
        } else {
            candle_core::utils::barrier_pool().execute_chunked(n, |items| items.for_each(work));
        }
    };
    // The parts on gemm (prompts) store their keys and values and prepare their queries first,
    // a (part, kv head) per task; the direct kernel's tasks do both themselves, so that the page
    // lines a key's store brings in are the ones its attention reads next.
    let on_gemm: Vec<usize> = (0..parts.len()).filter(|&i| !direct(&parts[i])).collect();
    let mut q = Vec::new();
    if !on_gemm.is_empty() {
        q = uninit_vec::<f32>(parts.iter().map(|p| p.s).sum::<usize>() * n_head * d);
        let (qp, on_gemm) = (OutPtr(q.as_mut_ptr()), &on_gemm);
        run(on_gemm.len() * n_kv, &move |item| {
            let qp = qp;
            let (p, g) = (&parts[on_gemm[item / n_kv]], item % n_kv);
            // SAFETY: one task per (part, kv head); `q` holds every part's rows.
            unsafe {
                store_rows(sh, qkv, p, g, prep);
                prepare_queries(sh, qkv, p, g, prep, qp.0);
            }
        });
    }
    let q = &q;
    // Work items: (part, kv head) for the direct kernel (its query heads share each key read),
    // (part, query head) for gemm (more items for the cores; the conversion is cheap beside it).
    let per = |p: &Part| if direct(p) { n_kv } else { n_head };
    let items: Vec<(usize, usize)> = parts.iter().enumerate().flat_map(|(i, p)| (0..per(p)).map(move |h| (i, h))).collect();
    let items = &items;
    // The bytes of the first keys page that item `at` reads on the direct kernel (none otherwise),
    // which the item before it asks for while it reads its last values page.
    let keys_of = |at: usize| -> Ahead {
        let Some(&(i, h)) = items.get(at) else { return Ahead::NONE };
        let p = &parts[i];
        let first = seen(sh, p.start, 0).0 / PAGE;
        match p.kv {
            _ if !direct(p) => Ahead::NONE,
            HostKv::Half(pages) => pages.get(first).map_or(Ahead::NONE, |pg| Ahead::at(pg.keys(h, d), d * PAGE)),
            HostKv::Single(pages) => pages.get(first).map_or(Ahead::NONE, |pg| Ahead::at(pg.keys(h, d), d * PAGE)),
        }
    };
    let op = OutPtr(out.as_mut_ptr());
    let work = move |item: usize| {
        let op = op;
        let (i, h) = items[item];
        let p = &parts[i];
        if direct(p) {
            let then = keys_of(item + 1);
            // SAFETY: the CPU was checked (`direct_kernels`); the item is the only one on kv head h
            // of its part, and writes only the columns of h's query heads in its part's rows.
            unsafe {
                store_rows(sh, qkv, p, h, prep);
                match p.kv {
                    HostKv::Half(pages) => direct_group(kernels, sh, qkv, prep, p, pages, h, group, then, op.0),
                    HostKv::Single(pages) => direct_group(kernels, sh, qkv, prep, p, pages, h, group, then, op.0),
                }
            }
        } else {
            // SAFETY: the item writes only head h's columns of its part's rows.
            unsafe {
                match p.kv {
                    HostKv::Half(pages) => gemm_head(sh, q, p, pages, h, h / group, op.0),
                    HostKv::Single(pages) => gemm_head(sh, q, p, pages, h, h / group, op.0),
                }
            }
        }
    };
    run(items.len(), &work);
}

/// Which direct kernels this CPU runs (under `CANDLE_BIND_ISA`): AVX-512's take 4 query vectors
/// by 64 positions per pass, AVX2's (with FMA and F16C) 2 by 32 (16 registers).
#[derive(Clone, Copy, PartialEq)]
enum Kernels {
    None,
    Avx2,
    Avx512,
}

fn direct_kernels() -> Kernels {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::isa::{level, Level};
        static F16C: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        match level() {
            Level::Avx512 => return Kernels::Avx512,
            Level::Avx2 if *F16C.get_or_init(|| std::is_x86_feature_detected!("f16c")) => return Kernels::Avx2,
            _ => {}
        }
    }
    Kernels::None
}

/// Positions query row i (at start + i) sees: lo..=start + i.
fn seen(sh: &Shape, start: usize, i: usize) -> (usize, usize) {
    let hi = start + i;
    (sh.window.map_or(0, |w| (hi + 1).saturating_sub(w)), hi)
}

/// Masks `row` (scores of keys 0..row.len()) outside lo..=hi, squashes it, softmax into `probs`.
fn scores_to_probs(sh: &Shape, row: &mut [f32], probs: &mut [f32], lo: usize, hi: usize) {
    // Only the seen keys' scores are read: the direct kernel leaves a last page's tail unwritten.
    if let Some(c) = sh.softcap {
        row[lo..=hi].iter_mut().for_each(|x| *x = c * (*x / c).tanh());
    }
    row[hi + 1..].fill(f32::NEG_INFINITY);
    row[..lo].fill(f32::NEG_INFINITY);
    softmax_row_f32(&*row, probs, false);
}

/// Query head `h` of part `p` (kv head `g`) by gemm over the pages converted to f32.
///
/// # Safety
/// `out` points at the step's (rows, heads · d) output, and no other thread writes head h's
/// columns of p's rows.
unsafe fn gemm_head<E: Elem>(sh: &Shape, q: &[f32], p: &Part, pages_: &[Page<E>], h: usize, g: usize, out: *mut f32) {
    let (n_head, d, s) = (sh.n_head, sh.d, p.s);
    let total = p.start + s;
    let pages = total.div_ceil(PAGE);
    let (kt, v) = to_f32(pages_, g, d, pages);
    let w = pages * PAGE;
    let mut scores = uninit_vec::<f32>(s * total);
    let mut probs = uninit_vec::<f32>(s * total);
    // q rows of head h are (s, d) at row stride heads·d; keys (d, total) at row stride w.
    gemm::gemm(s, total, d, scores.as_mut_ptr(), 1, total as isize, false, q[(p.row * n_head + h) * d..].as_ptr(), 1,
               (n_head * d) as isize, kt.as_ptr(), 1, w as isize, 0.0, sh.scale, false, false, false,
               gemm::Parallelism::None);
    for (i, (row, pr)) in scores.chunks_exact_mut(total).zip(probs.chunks_exact_mut(total)).enumerate() {
        let (lo, hi) = seen(sh, p.start, i);
        scores_to_probs(sh, row, pr, lo, hi);
    }
    gemm::gemm(s, d, total, out.add((p.row * n_head + h) * d), 1, (n_head * d) as isize, false, probs.as_ptr(), 1,
               total as isize, v.as_ptr(), 1, d as isize, 0.0, 1.0, false, false, false, gemm::Parallelism::None);
}

/// `direct_group_x86` where it exists (`direct_kernels` is false elsewhere).
///
/// # Safety
/// As `direct_group_x86`.
#[allow(clippy::too_many_arguments)]
unsafe fn direct_group<E: Elem>(k: Kernels, sh: &Shape, qkv: &[f32], prep: Prep, p: &Part, pages: &[Page<E>], g: usize, group: usize, then: Ahead, out: *mut f32) {
    #[cfg(target_arch = "x86_64")]
    match k {
        Kernels::Avx512 => direct_group_512(sh, qkv, prep, p, pages, g, group, then, out),
        Kernels::Avx2 => direct_group_256(sh, qkv, prep, p, pages, g, group, then, out),
        Kernels::None => {}
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (k, sh, qkv, prep, p, pages, g, group, then, out);
}

/// `direct_group_x86` in 512-bit vectors.
///
/// # Safety
/// As `direct_group_x86`, on a CPU with AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn direct_group_512<E: Elem>(sh: &Shape, qkv: &[f32], prep: Prep, p: &Part, kv: &[Page<E>], g: usize, group: usize, then: Ahead, out: *mut f32) {
    direct_group_x86::<std::arch::x86_64::__m512, E>(sh, qkv, prep, p, kv, g, group, then, out)
}

/// `direct_group_x86` in 256-bit vectors.
///
/// # Safety
/// As `direct_group_x86`, on a CPU with AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
#[allow(clippy::too_many_arguments)]
unsafe fn direct_group_256<E: Elem>(sh: &Shape, qkv: &[f32], prep: Prep, p: &Part, kv: &[Page<E>], g: usize, group: usize, then: Ahead, out: *mut f32) {
    direct_group_x86::<std::arch::x86_64::__m256, E>(sh, qkv, prep, p, kv, g, group, then, out)
}

/// A vector of f32 lanes the page kernels run in (their accumulators stay in registers: 4 vectors
/// by `QUERIES` query vectors, 16 of AVX-512's 32 registers or 8 of AVX2's 16).
///
/// # Safety
/// Every method needs the vector's instruction set (and valid pointers).
#[cfg(target_arch = "x86_64")]
trait Vector: Copy {
    const LANES: usize;
    const QUERIES: usize;
    unsafe fn zero() -> Self;
    unsafe fn splat(x: f32) -> Self;
    /// a·b + c
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn load_elem<E: Elem>(p: *const E) -> Self;
    unsafe fn store(self, p: *mut f32);
}

#[cfg(target_arch = "x86_64")]
impl Vector for std::arch::x86_64::__m512 {
    const LANES: usize = 16;
    const QUERIES: usize = 4;
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn zero() -> Self {
        std::arch::x86_64::_mm512_setzero_ps()
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn splat(x: f32) -> Self {
        std::arch::x86_64::_mm512_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
        std::arch::x86_64::_mm512_fmadd_ps(a, b, c)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load(p: *const f32) -> Self {
        std::arch::x86_64::_mm512_loadu_ps(p)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load_elem<E: Elem>(p: *const E) -> Self {
        E::lanes(p)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(self, p: *mut f32) {
        std::arch::x86_64::_mm512_storeu_ps(p, self)
    }
}

#[cfg(target_arch = "x86_64")]
impl Vector for std::arch::x86_64::__m256 {
    const LANES: usize = 8;
    const QUERIES: usize = 2;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn zero() -> Self {
        std::arch::x86_64::_mm256_setzero_ps()
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn splat(x: f32) -> Self {
        std::arch::x86_64::_mm256_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
        std::arch::x86_64::_mm256_fmadd_ps(a, b, c)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load(p: *const f32) -> Self {
        std::arch::x86_64::_mm256_loadu_ps(p)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load_elem<E: Elem>(p: *const E) -> Self {
        E::lanes8(p)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn store(self, p: *mut f32) {
        std::arch::x86_64::_mm256_storeu_ps(p, self)
    }
}

/// The query heads g·group.. of part `p` (all its rows) against kv head `g`, read from the pages
/// in vectors `V`; `then` (the next item's first keys page) is asked for during the last values page.
///
/// # Safety
/// The CPU runs `V`'s instructions (the caller is compiled for them: everything here inlines into
/// it), `sh.d % 16 == 0`, and no other thread writes these heads' columns of p's rows in `out`
/// ((rows, heads · d)).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn direct_group_x86<V: Vector, E: Elem>(sh: &Shape, qkv: &[f32], prep: Prep, p: &Part, kv: &[Page<E>], g: usize, group: usize, then: Ahead, out: *mut f32) {
    let (n_head, d, s) = (sh.n_head, sh.d, p.s);
    let total = p.start + s;
    let pages = total.div_ceil(PAGE);
    // Query vectors (row i, head g·group + j), prepared and scaled, and where each one's output goes.
    let nq = s * group;
    let mut qs = uninit_vec::<f32>(nq * d);
    let mut dst = Vec::with_capacity(nq);
    let mut seen_by = Vec::with_capacity(nq);
    for i in 0..s {
        for j in 0..group {
            let h = g * group + j;
            let vector = &mut qs[dst.len() * d..][..d];
            query(sh, qkv, p, i, h, prep, vector);
            vector.iter_mut().for_each(|x| *x *= sh.scale);
            dst.push(out.add((p.row + i) * n_head * d + h * d));
            seen_by.push(seen(sh, p.start, i));
        }
    }
    // Pages no query sees (below the window) are skipped.
    let first = seen_by.iter().map(|x| x.0).min().unwrap_or(0) / PAGE;
    let w = (pages - first) * PAGE;
    let base = first * PAGE;
    let mut scores = uninit_vec::<f32>(nq * w);
    let mut probs = uninit_vec::<f32>(nq * w);
    let sbase = scores.as_mut_ptr();
    let chunk = V::QUERIES;
    for c in (0..nq).step_by(chunk) {
        let qn = (nq - c).min(chunk);
        for pi in first..pages {
            let kt = kv[pi].keys(g, d);
            // The last page asks for the first values page (read next, as long as a keys page).
            let ahead = if pi + 1 < pages { kv[pi + 1].keys(g, d) } else { kv[first].values(g, d) };
            let o = (pi - first) * PAGE;
            let n = (total - pi * PAGE).min(PAGE);
            let qp = |j: usize| qs.as_ptr().add((c + j) * d);
            let sp = |j: usize| sbase.add((c + j) * w + o);
            match qn {
                1 => scores_page::<V, E, 1>([qp(0)], kt, ahead, n, d, [sp(0)]),
                2 => scores_page::<V, E, 2>(std::array::from_fn(qp), kt, ahead, n, d, std::array::from_fn(sp)),
                3 => scores_page::<V, E, 3>(std::array::from_fn(qp), kt, ahead, n, d, std::array::from_fn(sp)),
                _ => scores_page::<V, E, 4>(std::array::from_fn(qp), kt, ahead, n, d, std::array::from_fn(sp)),
            }
        }
    }
    for (j, (row, pr)) in scores.chunks_exact_mut(w).zip(probs.chunks_exact_mut(w)).enumerate() {
        let (lo, hi) = seen_by[j];
        scores_to_probs(sh, row, pr, lo - base, hi - base);
    }
    for &o in &dst {
        std::ptr::write_bytes(o, 0, d);
    }
    // Positions past the last query's are zero-weighted for every query: not read.
    let end = p.start + s;
    for c in (0..nq).step_by(chunk) {
        let qn = (nq - c).min(chunk);
        for pi in first..pages {
            let n = (end - pi * PAGE).min(PAGE);
            let v = kv[pi].values(g, d);
            let ahead = match kv.get(pi + 1).filter(|_| pi + 1 < pages) {
                Some(next) => Ahead::at(next.values(g, d), (end - (pi + 1) * PAGE).min(PAGE) * d),
                None if c + chunk >= nq => then,
                None => Ahead::NONE,
            };
            let o = (pi - first) * PAGE;
            let pp = |j: usize| probs.as_ptr().add((c + j) * w + o);
            let o = |j: usize| dst[c + j];
            match qn {
                1 => pv_page::<V, E, 1>([pp(0)], v, ahead, n, d, [o(0)]),
                2 => pv_page::<V, E, 2>(std::array::from_fn(pp), v, ahead, n, d, std::array::from_fn(o)),
                3 => pv_page::<V, E, 3>(std::array::from_fn(pp), v, ahead, n, d, std::array::from_fn(o)),
                _ => pv_page::<V, E, 4>(std::array::from_fn(pp), v, ahead, n, d, std::array::from_fn(o)),
            }
        }
    }
}

/// Memory a page kernel asks for while it reads its own page: the next page, or the next item's
/// first (`then`).
#[derive(Clone, Copy)]
struct Ahead {
    at: *const u8,
    bytes: usize,
}

impl Ahead {
    const NONE: Ahead = Ahead { at: std::ptr::null(), bytes: 0 };
    fn at<E>(p: *const E, n: usize) -> Ahead {
        Ahead { at: p as *const u8, bytes: n * std::mem::size_of::<E>() }
    }
}

/// Asks for the `n` elements at `p` in the cache. The page kernels ask for the next page of a head
/// while they read this one, a row of it per row they read (paced, so that the requests never
/// outnumber the core's miss buffers): at batch 8 a step streams tens of MB of pages, and a page (one
/// head's keys or values) is too short a stream for the hardware prefetcher to ramp up on.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn prefetch<E>(p: *const E, n: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
    let p = p as *const i8;
    for line in (0..n * std::mem::size_of::<E>()).step_by(64) {
        _mm_prefetch::<_MM_HINT_T1>(p.wrapping_add(line));
    }
}

/// Scores of `Q` query vectors (d each) against the first `n` keys of one page (kt: [d][PAGE]), in
/// passes of up to 4 vectors of positions (the last page's keys past `n` are not read: their
/// scores are masked anyway).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn scores_page<V: Vector, E: Elem, const Q: usize>(qs: [*const f32; Q], kt: *const E, ahead: *const E, n: usize, d: usize, out: [*mut f32; Q]) {
    let width = 4 * V::LANES;
    for at in (0..n).step_by(width) {
        // The first pass asks for the whole of what comes next, a row of it per key row.
        let ahead = if at == 0 { ahead } else { std::ptr::null() };
        match (n - at).div_ceil(V::LANES) {
            1 => scores_pass::<V, E, Q, 1>(qs, kt.add(at), ahead, d, out.map(|o| o.add(at))),
            2 => scores_pass::<V, E, Q, 2>(qs, kt.add(at), ahead, d, out.map(|o| o.add(at))),
            3 => scores_pass::<V, E, Q, 3>(qs, kt.add(at), ahead, d, out.map(|o| o.add(at))),
            _ => scores_pass::<V, E, Q, 4>(qs, kt.add(at), ahead, d, out.map(|o| o.add(at))),
        }
    }
}


/// One pass of `scores_page` over C vectors of positions (`kt` and `out` at its first), asking for
/// the page at `ahead` (unless null) a row per key row.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn scores_pass<V: Vector, E: Elem, const Q: usize, const C: usize>(qs: [*const f32; Q], kt: *const E, ahead: *const E, d: usize, out: [*mut f32; Q]) {
    let mut acc = [[V::zero(); C]; Q];
    for k in 0..d {
        let row = kt.add(k * PAGE);
        if !ahead.is_null() {
            prefetch(ahead.wrapping_add(k * PAGE), PAGE);
        }
        let keys: [V; C] = std::array::from_fn(|c| V::load_elem(row.add(c * V::LANES)));
        rank1(&mut acc, qs, k, keys);
    }
    store_acc(acc, out);
}

/// acc[j][c] += s[j][i] · x[c]: the page kernels' step, one broadcast per query vector.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn rank1<V: Vector, const Q: usize, const C: usize>(acc: &mut [[V; C]; Q], s: [*const f32; Q], i: usize, x: [V; C]) {
    for j in 0..Q {
        let b = V::splat(*s[j].add(i));
        for c in 0..C {
            acc[j][c] = V::fma(b, x[c], acc[j][c]);
        }
    }
}

/// The accumulators to out[j] (C vectors each).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn store_acc<V: Vector, const Q: usize, const C: usize>(acc: [[V; C]; Q], out: [*mut f32; Q]) {
    for j in 0..Q {
        for c in 0..C {
            acc[j][c].store(out[j].add(c * V::LANES));
        }
    }
}

/// `out[j] += probs[j][t] · v[t]` for the first `n` positions of one page (v: [PAGE][d]), in
/// stripes of up to 4 vectors of dimensions (the accumulators stay in registers).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn pv_page<V: Vector, E: Elem, const Q: usize>(probs: [*const f32; Q], v: *const E, ahead: Ahead, n: usize, d: usize, out: [*mut f32; Q]) {
    let mut at = 0;
    while at < d {
        // The first stripe's pass asks for what comes next, an equal share per row it reads.
        let ahead = if at == 0 { ahead } else { Ahead::NONE };
        match (d - at) / V::LANES {
            1 => pv_stripe::<V, E, Q, 1>(probs, v.add(at), ahead, n, d, out.map(|o| o.add(at))),
            2 => pv_stripe::<V, E, Q, 2>(probs, v.add(at), ahead, n, d, out.map(|o| o.add(at))),
            3 => pv_stripe::<V, E, Q, 3>(probs, v.add(at), ahead, n, d, out.map(|o| o.add(at))),
            _ => pv_stripe::<V, E, Q, 4>(probs, v.add(at), ahead, n, d, out.map(|o| o.add(at))),
        }
        at += 4 * V::LANES;
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn pv_stripe<V: Vector, E: Elem, const Q: usize, const C: usize>(
    probs: [*const f32; Q], v: *const E, ahead: Ahead, n: usize, d: usize, out: [*mut f32; Q],
) {
    let share = ahead.bytes.div_ceil(n.max(1)).next_multiple_of(64);
    let mut acc = [[V::zero(); C]; Q];
    for j in 0..Q {
        for c in 0..C {
            acc[j][c] = V::load(out[j].add(c * V::LANES));
        }
    }
    for t in 0..n {
        if t * share < ahead.bytes {
            prefetch(ahead.at.wrapping_add(t * share), share.min(ahead.bytes - t * share));
        }
        let row = v.add(t * d);
        let vals: [V; C] = std::array::from_fn(|c| V::load_elem(row.add(c * V::LANES)));
        rank1(&mut acc, probs, t, vals);
    }
    store_acc(acc, out);
}
