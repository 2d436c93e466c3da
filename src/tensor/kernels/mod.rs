//! CPU elementwise engine: strided/broadcast iteration with dims coalesced so the inner loop runs
//! over the longest contiguous (or constant) stretch, split across rayon threads for large outputs,
//! and compiled again for AVX2+FMA / AVX-512 so math written as plain Rust vectorises (the
//! version run is `isa::level()`).

use candle_core::Layout;

/// Below this many elements an op runs on the calling thread (torch splits at about the same size).
pub const PAR_THRESHOLD: usize = 32 * 1024;
/// Most elements per task of an elementwise op (1 MB of f32). Four tasks per thread below that: with
/// 64 KB tasks a 3 MB op was 48 tasks claimed in turn, so each thread's stream restarted every 64 KB
/// (x + bias over (4,128,1536) at 2 threads: 45 -> 42 µs).
const CHUNK: usize = 256 * 1024;

/// An operand as the engine sees it: its slice, offset and strides broadcast to the output dims.
#[derive(Clone)]
pub struct View<'a, T> {
    pub data: &'a [T],
    pub offset: usize,
    pub strides: Vec<usize>,
}

impl<'a, T> View<'a, T> {
    /// `layout` broadcast (right-aligned) to `dims`; callers have checked the shapes broadcast.
    pub fn new(data: &'a [T], layout: &Layout, dims: &[usize]) -> Self {
        let src = layout.dims();
        let st = layout.stride();
        let pad = dims.len() - src.len();
        let strides = (0..dims.len())
            .map(|i| if i < pad || src[i - pad] == 1 { 0 } else { st[i - pad] })
            .collect();
        View { data, offset: layout.start_offset(), strides }
    }
}

/// Merges adjacent dims that every operand walks as one, and drops size-1 dims.
fn coalesce(dims: &[usize], strides: &mut [Vec<usize>]) -> Vec<usize> {
    let mut out_dims: Vec<usize> = Vec::with_capacity(dims.len());
    let mut out_strides: Vec<Vec<usize>> = vec![Vec::with_capacity(dims.len()); strides.len()];
    for (i, &d) in dims.iter().enumerate() {
        if d == 1 {
            continue;
        }
        if let Some(&last) = out_dims.last() {
            let mergeable = strides
                .iter()
                .zip(out_strides.iter())
                .all(|(s, os)| os[os.len() - 1] == s[i] * d);
            if mergeable {
                let n = out_dims.len();
                out_dims[n - 1] = last * d;
                for (s, os) in strides.iter().zip(out_strides.iter_mut()) {
                    let k = os.len();
                    os[k - 1] = s[i];
                }
                continue;
            }
        }
        out_dims.push(d);
        for (s, os) in strides.iter().zip(out_strides.iter_mut()) {
            os.push(s[i]);
        }
    }
    if out_dims.is_empty() {
        out_dims.push(1);
        for os in out_strides.iter_mut() {
            os.push(0);
        }
    }
    for (s, os) in strides.iter_mut().zip(out_strides) {
        *s = os;
    }
    out_dims
}

/// Starting offsets of the row that holds flat position `pos` (all dims but the last).
#[inline]
fn row_offsets<const N: usize>(dims: &[usize], strides: &[&[usize]; N], base: [usize; N], outer: usize) -> [usize; N] {
    let mut offs = base;
    let mut rem = outer;
    for d in (0..dims.len() - 1).rev() {
        let idx = rem % dims[d];
        rem /= dims[d];
        for k in 0..N {
            offs[k] += idx * strides[k][d];
        }
    }
    offs
}

macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident<$($g:ident),*>($($arg:ident : $ty:ty),*) $(-> $ret:ty)? where [$($w:tt)*] $body:block) => {
        $(#[$m])*
        $vis fn $name<$($g),*>($($arg: $ty),*) $(-> $ret)? where $($w)* {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
                unsafe fn avx512<$($g),*>($($arg: $ty),*) $(-> $ret)? where $($w)* $body
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2<$($g),*>($($arg: $ty),*) $(-> $ret)? where $($w)* $body
                let level = $crate::isa::level();
                if level == $crate::isa::Level::Avx512 {
                    // SAFETY: the CPU has the features the function was compiled for.
                    return unsafe { avx512($($arg),*) };
                }
                if level == $crate::isa::Level::Avx2 {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body
        }
    };
}
pub(crate) use multiversion;

/// Values a strided row is gathered by before `f` runs over them.
const GATHER: usize = 64;

multiversion! {
    /// Fills `out` (flat positions `start..start+out.len()`) with `f(a)`.
    fn unary_chunk<T, U, F>(dims: &[usize], a: &View<'_, T>, start: usize, out: &mut [U], f: &F)
    where [T: Copy, F: Fn(T) -> U]
    {
        let inner = dims[dims.len() - 1];
        let sa = a.strides[dims.len() - 1];
        if sa != 1 && out.len() >= GATHER {
            // Strided input gathered (across row ends) into a buffer first, so that f runs over
            // contiguous values and vectorises: exp of a stride-2 slice was 5x torch's time with f
            // called per gathered element.
            let mut buf = [a.data[a.offset]; GATHER];
            for (k0, dc) in (start..).step_by(GATHER).zip(out.chunks_mut(GATHER)) {
                gather(dims, a, k0, &mut buf[..dc.len()]);
                for (d, b) in dc.iter_mut().zip(&buf) {
                    *d = f(*b);
                }
            }
            return;
        }
        let (mut o, mut pos) = (0usize, start);
        while o < out.len() {
            let (outer, j) = (pos / inner, pos % inner);
            let [ia] = row_offsets(dims, &[&a.strides], [a.offset], outer);
            let len = (inner - j).min(out.len() - o);
            let ia = ia + j * sa;
            let dst = &mut out[o..o + len];
            if sa == 1 {
                for (d, s) in dst.iter_mut().zip(&a.data[ia..ia + len]) {
                    *d = f(*s);
                }
            } else {
                for (k, d) in dst.iter_mut().enumerate() {
                    *d = f(a.data[ia + k * sa]);
                }
            }
            o += len;
            pos += len;
        }
    }
}

multiversion! {
    /// Fills `out` (flat positions `start..start+out.len()`) with `f(a, b)`.
    fn binary_chunk<T, U, F>(dims: &[usize], a: &View<'_, T>, b: &View<'_, T>, start: usize, out: &mut [U], f: &F)
    where [T: Copy, F: Fn(T, T) -> U]
    {
        let n = dims.len();
        let inner = dims[n - 1];
        let (sa, sb) = (a.strides[n - 1], b.strides[n - 1]);
        let (mut o, mut pos) = (0usize, start);
        while o < out.len() {
            let (outer, j) = (pos / inner, pos % inner);
            let [ia, ib] = row_offsets(dims, &[&a.strides, &b.strides], [a.offset, b.offset], outer);
            let len = (inner - j).min(out.len() - o);
            let (ia, ib) = (ia + j * sa, ib + j * sb);
            let dst = &mut out[o..o + len];
            match (sa, sb) {
                (1, 1) => {
                    let (xa, xb) = (&a.data[ia..ia + len], &b.data[ib..ib + len]);
                    for ((d, x), y) in dst.iter_mut().zip(xa).zip(xb) {
                        *d = f(*x, *y);
                    }
                }
                (1, 0) => {
                    let y = b.data[ib];
                    for (d, x) in dst.iter_mut().zip(&a.data[ia..ia + len]) {
                        *d = f(*x, y);
                    }
                }
                (0, 1) => {
                    let x = a.data[ia];
                    for (d, y) in dst.iter_mut().zip(&b.data[ib..ib + len]) {
                        *d = f(x, *y);
                    }
                }
                _ => {
                    for (k, d) in dst.iter_mut().enumerate() {
                        *d = f(a.data[ia + k * sa], b.data[ib + k * sb]);
                    }
                }
            }
            o += len;
            pos += len;
        }
    }
}

/// Copies the elements at flat positions `start..start + buf.len()` of `v` into `buf`.
#[inline(always)]
fn gather<T: Copy>(dims: &[usize], v: &View<'_, T>, start: usize, buf: &mut [T]) {
    let inner = dims[dims.len() - 1];
    let s = v.strides[dims.len() - 1];
    let (mut k, mut pos) = (0usize, start);
    while k < buf.len() {
        let (outer, j) = (pos / inner, pos % inner);
        let [i] = row_offsets(dims, &[&v.strides], [v.offset], outer);
        let len = (inner - j).min(buf.len() - k);
        let i = i + j * s;
        for (m, b) in buf[k..k + len].iter_mut().enumerate() {
            *b = v.data[i + m * s];
        }
        k += len;
        pos += len;
    }
}

multiversion! {
    /// Fills `out` with `f(c, a, b)` (a `where`-shaped ternary).
    fn ternary_chunk<C, T, U, F>(dims: &[usize], c: &View<'_, C>, a: &View<'_, T>, b: &View<'_, T>, start: usize, out: &mut [U], f: &F)
    where [C: Copy, T: Copy, F: Fn(C, T, T) -> U]
    {
        let n = dims.len();
        let inner = dims[n - 1];
        let (sc, sa, sb) = (c.strides[n - 1], a.strides[n - 1], b.strides[n - 1]);
        let (mut o, mut pos) = (0usize, start);
        while o < out.len() {
            let (outer, j) = (pos / inner, pos % inner);
            let [ic, ia, ib] = row_offsets(dims, &[&c.strides, &a.strides, &b.strides], [c.offset, a.offset, b.offset], outer);
            let len = (inner - j).min(out.len() - o);
            let (ic, ia, ib) = (ic + j * sc, ia + j * sa, ib + j * sb);
            let dst = &mut out[o..o + len];
            // Unit or zero strides (a contiguous operand, a scalar) as slices and constants: the
            // loop then vectorises into a branch-free select (a branch on a random mask mispredicts
            // half the time: 4.5 ms for 786K elements, this way a tenth of a millisecond).
            match (sc, sa, sb) {
                (1, 1, 1) => {
                    let (cs, xs, ys) = (&c.data[ic..ic + len], &a.data[ia..ia + len], &b.data[ib..ib + len]);
                    for (((d, &k), &x), &y) in dst.iter_mut().zip(cs).zip(xs).zip(ys) {
                        *d = f(k, x, y);
                    }
                }
                (1, 1, 0) => {
                    let (cs, xs, y) = (&c.data[ic..ic + len], &a.data[ia..ia + len], b.data[ib]);
                    for ((d, &k), &x) in dst.iter_mut().zip(cs).zip(xs) {
                        *d = f(k, x, y);
                    }
                }
                (1, 0, 1) => {
                    let (cs, x, ys) = (&c.data[ic..ic + len], a.data[ia], &b.data[ib..ib + len]);
                    for ((d, &k), &y) in dst.iter_mut().zip(cs).zip(ys) {
                        *d = f(k, x, y);
                    }
                }
                _ => {
                    for (k, d) in dst.iter_mut().enumerate() {
                        *d = f(c.data[ic + k * sc], a.data[ia + k * sa], b.data[ib + k * sb]);
                    }
                }
            }
            o += len;
            pos += len;
        }
    }
}

/// The mask of the first `n` of 16 lanes (all 16 for `n` ≥ 16), as AVX-512's `__mmask16`.
#[inline(always)]
pub(crate) fn lanes16(n: usize) -> u16 {
    ((1u32 << n.min(16)) - 1) as u16
}

/// A vector of `n` elements for a kernel to fill. Skipping the zeroing saves a pass over memory that
/// costs as much as a whole elementwise op.
pub fn uninit_vec<T: Copy>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    // SAFETY: `T: Copy` has no drop glue, and every caller writes all `n` elements before reading any.
    unsafe { v.set_len(n) };
    v
}

/// The slice as f32 when T is f32 (a generic kernel's f32 fast path).
pub fn as_f32<T: 'static>(v: &[T]) -> Option<&[f32]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        // SAFETY: T is f32.
        .then(|| unsafe { std::slice::from_raw_parts(v.as_ptr() as *const f32, v.len()) })
}

/// The slice as mutable f32 when T is f32.
pub fn as_f32_mut<T: 'static>(v: &mut [T]) -> Option<&mut [f32]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        // SAFETY: T is f32.
        .then(|| unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut f32, v.len()) })
}

multiversion! {
    /// `out.fill(v)` compiled for the CPU's widest stores (the baseline build stores 16 bytes at a time).
    pub fn fill_chunk<T>(out: &mut [T], v: T) where [T: Copy]
    {
        out.fill(v)
    }
}

/// A vector of `n` copies of `v`, filled over the pool when large.
pub fn filled_vec<T: Copy + Send + Sync>(n: usize, v: T) -> Vec<T> {
    let mut out = uninit_vec::<T>(n);
    if n >= PAR_THRESHOLD && crate::pool::threads() > 1 {
        let chunk = n.div_ceil(4 * crate::pool::threads()).max(16 * 1024);
        crate::pool::chunks_mut(&mut out, chunk, |_, c| fill_chunk(c, v));
    } else {
        fill_chunk(&mut out, v);
    }
    out
}

fn run<U: Send, G>(numel: usize, init: U, g: G) -> Vec<U>
where
    U: Copy + Sync,
    G: Fn(usize, &mut [U]) + Sync,
{
    let _ = init;
    let mut out = uninit_vec::<U>(numel);
    let threads = crate::pool::threads();
    if numel >= PAR_THRESHOLD && threads > 1 {
        let chunk = numel.div_ceil(4 * threads).clamp(4096, CHUNK).next_multiple_of(64);
        crate::pool::chunks_mut(&mut out, chunk, |i, c| g(i * chunk, c));
    } else if numel > 0 {
        g(0, &mut out);
    }
    out
}

/// `f` over a contiguous slice, in the chunks the elementwise engine splits over the pool.
pub fn map_slice<T: Copy + Sync, U: Copy + Send + Sync>(src: &[T], init: U, f: impl Fn(&[T], &mut [U]) + Sync) -> Vec<U> {
    run(src.len(), init, |start, out| f(&src[start..start + out.len()], out))
}

pub fn unary<T, U, F>(dims: &[usize], a: View<'_, T>, init: U, f: F) -> Vec<U>
where
    T: Copy + Sync,
    U: Copy + Send + Sync,
    F: Fn(T) -> U + Sync,
{
    let numel = dims.iter().product();
    let mut st = [a.strides.clone()];
    let cd = coalesce(dims, &mut st);
    let [s] = st;
    let a = View { strides: s, ..a };
    if is_transposed(&cd, &a.strides) {
        return transposed(&cd, &a, &f);
    }
    run(numel, init, |start, out| unary_chunk(&cd, &a, start, out, &f))
}

/// Whether a view of coalesced `dims` walks dim n-2 at unit stride and dim n-1 strided (a
/// `permute(0, 2, 3, 1)` or `.T` of contiguous data), with both long enough for `transposed`'s tiles.
fn is_transposed(dims: &[usize], strides: &[usize]) -> bool {
    let n = dims.len();
    n >= 2 && strides[n - 2] == 1 && strides[n - 1] > 1 && dims[n - 2] >= 8 && dims[n - 1] >= 8
}

/// Output rows and columns of one tile of `transposed`.
const TILE: usize = 32;

/// Output elements per task of `transposed` at most (but TILE rows at least): 64K, 256 KiB of f32.
const TASK_ELEMS: usize = 1 << 16;

/// `unary` where the output's last two dims are the input's swapped (the input walks dim n-2 at
/// unit stride and dim n-1 strided: `permute(0, 2, 3, 1)`, `.T`): a batch of 2-D transposes, by
/// tiles of TILE x TILE elements that stay in L1, read along the input's rows and written across
/// the output's; a task per block of TILE to 8·TILE output rows (up to TASK_ELEMS), over the pool. Element by element along the
/// strided dim, every read was another cache line: a `permute(0, 2, 3, 1).contiguous()` of
/// (8,64,56,56) took 1.3x torch's time.
fn transposed<T, U, F>(cd: &[usize], a: &View<'_, T>, f: &F) -> Vec<U>
where
    T: Copy + Sync,
    U: Copy + Send + Sync,
    F: Fn(T) -> U + Sync,
{
    let n = cd.len();
    let (rows, cols, cs) = (cd[n - 2], cd[n - 1], a.strides[n - 1]);
    let outer: usize = cd[..n - 2].iter().product();
    let mut out = uninit_vec::<U>(outer * rows * cols);
    // Tall tasks: each column's run is then task_rows elements read in sequence (the prefetchers
    // follow it), not TILE, while the output block stays within L2.
    let task_rows = (TASK_ELEMS / cols.max(1)).clamp(TILE, 8 * TILE) / TILE * TILE;
    let blocks = rows.div_ceil(task_rows);
    let op = crate::pool::SendPtr(out.as_mut_ptr());
    let task = |t: usize| {
        let (o, r0) = (t / blocks, (t % blocks) * task_rows);
        let nr = (rows - r0).min(task_rows);
        let mut base = a.offset + r0;
        let mut rem = o;
        for d in (0..n - 2).rev() {
            base += (rem % cd[d]) * a.strides[d];
            rem /= cd[d];
        }
        // SAFETY: task t alone writes output rows r0..r0+nr of batch o.
        let dst = unsafe { std::slice::from_raw_parts_mut(op.get().add((o * rows + r0) * cols), nr * cols) };
        #[cfg(target_arch = "x86_64")]
        if matches!(std::mem::size_of::<U>(), 2 | 4) && crate::isa::level() == crate::isa::Level::Avx512 {
            // SAFETY: the CPU has AVX-512 (the level says so); U is 2 or 4 bytes.
            unsafe { transpose_block16(&a.data[base..], cs, nr, cols, dst, f) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if matches!(std::mem::size_of::<U>(), 2 | 4) && crate::isa::level() == crate::isa::Level::Avx2 {
            // SAFETY: the CPU has AVX2 (the level says so); U is 2 or 4 bytes.
            unsafe { transpose_block8(&a.data[base..], cs, nr, cols, dst, f) };
            return;
        }
        transpose_block(&a.data[base..], cs, nr, cols, dst, f);
    };
    if outer * rows * cols >= PAR_THRESHOLD {
        crate::pool::for_each(outer * blocks, &task);
    } else {
        (0..outer * blocks).for_each(task);
    }
    out
}

multiversion! {
    /// dst[r·cols + c] = f(src[r + c·cs]) for r < nr, c < cols, a tile of columns at a time.
    fn transpose_block<T, U, F>(src: &[T], cs: usize, nr: usize, cols: usize, dst: &mut [U], f: &F)
    where [T: Copy, F: Fn(T) -> U]
    {
        for c0 in (0..cols).step_by(TILE) {
            for c in c0..(c0 + TILE).min(cols) {
                let col = &src[c * cs..c * cs + nr];
                for (r, &v) in col.iter().enumerate() {
                    dst[r * cols + c] = f(v);
                }
            }
        }
    }
}

/// `transpose_block` for 2- and 4-byte outputs: 16×16 blocks of f(src) gathered in input order (16
/// contiguous runs of a column, 16-bit values widened to 32-bit lanes), transposed in registers and
/// stored as 16 output row pieces (narrowed back for 16-bit values); the edges element by element.
/// One scalar store per element made the copy store-bound: a `permute(0, 2, 3, 1).contiguous()` of
/// (8,64,56,56) took 1.34x torch's time at 1 thread, 1.5x at 2.
///
/// # Safety
/// AVX-512 (F, BW, VL) is available and `size_of::<U>()` is 2 or 4.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn transpose_block16<T: Copy, U: Copy, F: Fn(T) -> U>(src: &[T], cs: usize, nr: usize, cols: usize, dst: &mut [U], f: &F) {
    use crate::tensor::gemm16::{transpose16, TRANSPOSE_ORDER};
    use std::arch::x86_64::*;
    let (rf, cf) = (nr / 16 * 16, cols / 16 * 16);
    let two = std::mem::size_of::<U>() == 2;
    for c0 in (0..cf).step_by(16) {
        for r0 in (0..rf).step_by(16) {
            // SAFETY: U is 2 or 4 bytes (the caller's contract).
            let buf = unsafe { gather_tile::<16, T, U, F>(src, cs, r0, c0, f) };
            // SAFETY: AVX-512 (the caller's contract); each output piece is 16 elements of row
            // r0 + TRANSPOSE_ORDER[k] from column c0, inside dst (rows < nr, c0 + 16 ≤ cols).
            unsafe {
                let r = transpose16(std::array::from_fn(|i| _mm512_loadu_si512(buf[i].as_ptr() as *const __m512i)));
                for (k, v) in r.iter().enumerate() {
                    let at = (r0 + TRANSPOSE_ORDER[k]) * cols + c0;
                    let piece = dst[at..at + 16].as_mut_ptr();
                    if two {
                        _mm256_storeu_si256(piece as *mut __m256i, _mm512_cvtepi32_epi16(*v));
                    } else {
                        _mm512_storeu_si512(piece as *mut __m512i, *v);
                    }
                }
            }
        }
    }
    edges(src, cs, nr, cols, dst, f, (rf, cf));
}

/// What the N×N blocks of `transpose_block16`/`8` leave (rows rf.. of columns below cf, all rows
/// of columns cf..), element by element.
#[inline(always)]
fn edges<T: Copy, U: Copy, F: Fn(T) -> U>(src: &[T], cs: usize, nr: usize, cols: usize, dst: &mut [U], f: &F, (rf, cf): (usize, usize)) {
    for c in 0..cols {
        for r in if c < cf { rf } else { 0 }..nr {
            dst[r * cols + c] = f(src[r + c * cs]);
        }
    }
}

/// The N×N tile of `transpose_block16`/`8` in input order: row i is f of the N elements of column
/// c0 + i from row r0, as 32-bit lanes (16-bit values widened).
///
/// # Safety
/// `size_of::<U>()` is 2 or 4.
#[inline(always)]
unsafe fn gather_tile<const N: usize, T: Copy, U: Copy, F: Fn(T) -> U>(src: &[T], cs: usize, r0: usize, c0: usize, f: &F) -> [[u32; N]; N] {
    let two = std::mem::size_of::<U>() == 2;
    std::array::from_fn(|i| {
        let run = &src[(c0 + i) * cs + r0..][..N];
        std::array::from_fn(|j| {
            let u = f(run[j]);
            // SAFETY: U is 2 or 4 bytes (the caller's contract), read as such.
            unsafe { if two { std::mem::transmute_copy::<U, u16>(&u) as u32 } else { std::mem::transmute_copy::<U, u32>(&u) } }
        })
    })
}

/// `transpose_block16` on AVX2: 8×8 blocks transposed in ymm registers. The scalar tile loop
/// stored one element per column step and took 4.7x torch's time for a `permute(0, 2, 3,
/// 1).contiguous()` of (8,64,56,56) (AMD EPYC Zen 3).
///
/// # Safety
/// AVX2 is available and `size_of::<U>()` is 2 or 4.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn transpose_block8<T: Copy, U: Copy, F: Fn(T) -> U>(src: &[T], cs: usize, nr: usize, cols: usize, dst: &mut [U], f: &F) {
    use std::arch::x86_64::*;
    let (rf, cf) = (nr / 8 * 8, cols / 8 * 8);
    let two = std::mem::size_of::<U>() == 2;
    for c0 in (0..cf).step_by(8) {
        for r0 in (0..rf).step_by(8) {
            // SAFETY: U is 2 or 4 bytes (the caller's contract).
            let buf = unsafe { gather_tile::<8, T, U, F>(src, cs, r0, c0, f) };
            // SAFETY: AVX2 (the caller's contract); output piece k is 8 elements of row r0 + k
            // from column c0, inside dst (rows < nr, c0 + 8 ≤ cols).
            unsafe {
                let r = transpose8(std::array::from_fn(|i| _mm256_loadu_ps(buf[i].as_ptr() as *const f32)));
                for (k, v) in r.iter().enumerate() {
                    let piece = dst[(r0 + k) * cols + c0..][..8].as_mut_ptr();
                    let v = _mm256_castps_si256(*v);
                    if two {
                        // packus keeps 0..=65535 as is; it packs within 128-bit halves, so
                        // gather the two 64-bit results into the low half.
                        let p = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(v, v));
                        _mm_storeu_si128(piece as *mut __m128i, _mm256_castsi256_si128(p));
                    } else {
                        _mm256_storeu_si256(piece as *mut __m256i, v);
                    }
                }
            }
        }
    }
    edges(src, cs, nr, cols, dst, f, (rf, cf));
}

/// The 8×8 transpose of 32-bit lanes: register i of the result holds lane i of every input.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn transpose8(r: [std::arch::x86_64::__m256; 8]) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::*;
    // 32-bit pairs, then 64-bit pairs within each 128-bit half, then the halves across rows.
    let t: [__m256; 8] = std::array::from_fn(|i| {
        let (a, b) = (r[i & !1], r[i | 1]);
        if i % 2 == 0 { _mm256_unpacklo_ps(a, b) } else { _mm256_unpackhi_ps(a, b) }
    });
    // u[4q + j] holds lane j (low half) and lane j + 4 (high half) of rows 4q..4q+4.
    let u: [__m256; 8] = std::array::from_fn(|i| {
        let (q, j) = (i / 4, i % 4);
        let (a, b) = (t[4 * q + j / 2], t[4 * q + 2 + j / 2]);
        if j % 2 == 0 { _mm256_shuffle_ps::<0x44>(a, b) } else { _mm256_shuffle_ps::<0xee>(a, b) }
    });
    std::array::from_fn(|i| {
        let (a, b) = (u[i % 4], u[4 + i % 4]);
        if i < 4 { _mm256_permute2f128_ps::<0x20>(a, b) } else { _mm256_permute2f128_ps::<0x31>(a, b) }
    })
}

pub fn binary<T, U, F>(dims: &[usize], a: View<'_, T>, b: View<'_, T>, init: U, f: F) -> Vec<U>
where
    T: Copy + Send + Sync,
    U: Copy + Send + Sync,
    F: Fn(T, T) -> U + Sync,
{
    let numel = dims.iter().product();
    let mut st = [a.strides.clone(), b.strides.clone()];
    let cd = coalesce(dims, &mut st);
    let [s1, s2] = st;
    let (a, b) = (View { strides: s1, ..a }, View { strides: s2, ..b });
    let n = cd.len();
    // One operand along memory, the other transposed to it (`x + y.permute(0, 3, 1, 2)`, a residual
    // over a channels-last branch): the transposed one copied in order by `transposed`'s tiles first,
    // then one pass at unit strides. Read element by element across its rows it took 1.5x torch's time.
    let (ac, bc);
    let dense = |v: &View<'_, T>| v.strides[n - 1] == 1;
    let (a, b) = if numel < PAR_THRESHOLD || n < 2 {
        (a, b)
    } else if dense(&a) && is_transposed(&cd, &b.strides) {
        bc = transposed(&cd, &b, &|x: T| x);
        (a, View { data: &bc[..], offset: 0, strides: super::scatter::contiguous_strides(&cd) })
    } else if dense(&b) && is_transposed(&cd, &a.strides) {
        ac = transposed(&cd, &a, &|x: T| x);
        (View { data: &ac[..], offset: 0, strides: super::scatter::contiguous_strides(&cd) }, b)
    } else {
        (a, b)
    };
    run(numel, init, |start, out| binary_chunk(&cd, &a, &b, start, out, &f))
}


multiversion! {
    /// `out[i] = f(out[i], b[i])` over flat positions `start..start+out.len()` (in-place ops).
    fn update_chunk<T, F>(dims: &[usize], b: &View<'_, T>, start: usize, out: &mut [T], f: &F)
    where [T: Copy, F: Fn(T, T) -> T]
    {
        let n = dims.len();
        let inner = dims[n - 1];
        let sb = b.strides[n - 1];
        let (mut o, mut pos) = (0usize, start);
        while o < out.len() {
            let (outer, j) = (pos / inner, pos % inner);
            let [ib] = row_offsets(dims, &[&b.strides], [b.offset], outer);
            let len = (inner - j).min(out.len() - o);
            let ib = ib + j * sb;
            let dst = &mut out[o..o + len];
            match sb {
                1 => dst.iter_mut().zip(&b.data[ib..ib + len]).for_each(|(d, y)| *d = f(*d, *y)),
                0 => {
                    let y = b.data[ib];
                    dst.iter_mut().for_each(|d| *d = f(*d, y));
                }
                _ => dst.iter_mut().enumerate().for_each(|(k, d)| *d = f(*d, b.data[ib + k * sb])),
            }
            o += len;
            pos += len;
        }
    }
}

/// `out = f(out, b)` elementwise for a contiguous `out` of `dims` and `b` broadcast to them.
pub fn update<T, F>(dims: &[usize], out: &mut [T], b: View<'_, T>, f: F)
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let numel = out.len();
    let mut st = [b.strides.clone()];
    let cd = coalesce(dims, &mut st);
    let [s1] = st;
    let b = View { strides: s1, ..b };
    // An operand transposed to out's order (`y += x.permute(0, 3, 1, 2)` into a channels-last y, a
    // ConvNeXt residual) is copied in out's order by the tiled transpose first, as in `binary`.
    let copied;
    let b = if numel >= PAR_THRESHOLD && is_transposed(&cd, &b.strides) {
        copied = transposed(&cd, &b, &|x: T| x);
        View { data: &copied[..], offset: 0, strides: super::scatter::contiguous_strides(&cd) }
    } else {
        b
    };
    let threads = crate::pool::threads();
    if numel >= PAR_THRESHOLD && threads > 1 {
        let chunk = numel.div_ceil(4 * threads).clamp(4096, CHUNK).next_multiple_of(64);
        crate::pool::chunks_mut(out, chunk, |i, c| update_chunk(&cd, &b, i * chunk, c, &f));
    } else if numel > 0 {
        update_chunk(&cd, &b, 0, out, &f);
    }
}

pub fn ternary<C, T, U, F>(dims: &[usize], c: View<'_, C>, a: View<'_, T>, b: View<'_, T>, init: U, f: F) -> Vec<U>
where
    C: Copy + Sync,
    T: Copy + Sync,
    U: Copy + Send + Sync,
    F: Fn(C, T, T) -> U + Sync,
{
    let numel = dims.iter().product();
    let mut st = [c.strides.clone(), a.strides.clone(), b.strides.clone()];
    let cd = coalesce(dims, &mut st);
    let [s0, s1, s2] = st;
    let (c, a, b) = (View { strides: s0, ..c }, View { strides: s1, ..a }, View { strides: s2, ..b });
    run(numel, init, |start, out| ternary_chunk(&cd, &c, &a, &b, start, out, &f))
}

mod math;
pub use math::*;
