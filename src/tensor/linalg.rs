//! Matrix products for the shapes inference spends its time on that Candle's gemm path handles badly:
//! tiny matrices (gemm's thread dispatch costs ~35 µs) and few-row products (decode steps, `x @ W.T`
//! with one token). Big products stay on Candle's gemm.

use std::ops::{Add, Mul};

use candle_core::{Device, Layout, Storage, Tensor};

use crate::error::IntoPyResult;
use super::kernels::{multiversion, Half};

/// Products below this many multiply-adds run on the calling thread.
const SERIAL_MACS: usize = 1 << 16;
/// Work per thread below which splitting a product further costs more than it saves.
const PART_MACS: usize = 1 << 17;
/// From here on a column-major result and one transpose beat gemm's row-major output.
const COLUMN_MAJOR_MACS: usize = 1 << 24;
/// Up to this many rows, `x @ W.T` is done as dot products.
const DOT_ROWS: usize = 4;

pub trait Elem: Copy + Default + Send + Sync + Add<Output = Self> + Mul<Output = Self> + 'static {
    fn one() -> Self;
}
impl Elem for f32 {
    fn one() -> Self {
        1.0
    }
}
impl Elem for f64 {
    fn one() -> Self {
        1.0
    }
}

/// A batch of matrices inside a storage slice: element (b, i, j) at `off + b·bs + i·rs + j·cs`.
struct Mats<'a, T> {
    data: &'a [T],
    off: usize,
    batch: Vec<usize>,
    rs: usize,
    cs: usize,
}

impl<'a, T> Mats<'a, T> {
    /// `layout` has dims (..batch, r, c), already broadcast to `batch`.
    fn new(data: &'a [T], layout: &Layout) -> Self {
        let s = layout.stride();
        let n = s.len();
        Mats { data, off: layout.start_offset(), batch: s[..n - 2].to_vec(), rs: s[n - 2], cs: s[n - 1] }
    }
    fn base(&self, dims: &[usize], mut b: usize) -> usize {
        let mut off = self.off;
        for (d, s) in dims.iter().zip(&self.batch).rev() {
            off += (b % d) * s;
            b /= d;
        }
        off
    }
}

multiversion! {
    /// out[j] = Σ_k a[k] · b[j·ldb + k]: dot products with rows of Bᵀ (vectorised over k in lanes).
    pub(crate) fn dot_rows<T>(a: &[T], b: &[T], b0: usize, ldb: usize, out: &mut [T])
    where [T: Elem]
    {
        const L: usize = 32;
        let k = a.len();
        for (j, o) in out.iter_mut().enumerate() {
            let row = &b[b0 + j * ldb..b0 + j * ldb + k];
            let mut acc = [T::default(); L];
            let (ac, bc) = (a.chunks_exact(L), row.chunks_exact(L));
            let (ar, br) = (ac.remainder(), bc.remainder());
            for (x, y) in ac.zip(bc) {
                for l in 0..L {
                    acc[l] = acc[l] + x[l] * y[l];
                }
            }
            let mut s = T::default();
            for (x, y) in ar.iter().zip(br) {
                s = s + *x * *y;
            }
            for v in acc {
                s = s + v;
            }
            *o = s;
        }
    }
}

/// `ta @ tb` for CPU float operands already broadcast to `batch`; `None` hands other dtypes and
/// devices to Candle.
pub fn fast_matmul(ta: &Tensor, tb: &Tensor, batch: &[usize]) -> Option<pyo3::PyResult<Tensor>> {
    if !crate::device::cpu_kernels(ta) || !crate::device::cpu_kernels(tb) || ta.dtype() != tb.dtype() {
        return None;
    }
    match ta.dtype() {
        candle_core::DType::F32 if f32_tiles(ta, tb, batch) => Some(run_f32_tiles(ta, tb, batch)),
        candle_core::DType::F32 => Some(run::<f32>(ta, tb, batch)),
        candle_core::DType::F64 => Some(run::<f64>(ta, tb, batch)),
        candle_core::DType::BF16 => Some(run_half::<half::bf16>(ta, tb, batch)),
        candle_core::DType::F16 => Some(run_half::<half::f16>(ta, tb, batch)),
        _ => None,
    }
}

multiversion! {
    /// `dot_rows` against 16-bit rows of Bᵀ, widened in registers (f32 accumulation, as torch).
    fn dot_rows_half<H>(a: &[f32], b: &[H], b0: usize, ldb: usize, out: &mut [H])
    where [H: Half]
    {
        const L: usize = 16;
        let k = a.len();
        for (j, o) in out.iter_mut().enumerate() {
            let row = &b[b0 + j * ldb..b0 + j * ldb + k];
            let mut acc = [0f32; L];
            let (ac, bc) = (a.chunks_exact(L), row.chunks_exact(L));
            let (ar, br) = (ac.remainder(), bc.remainder());
            for (x, y) in ac.zip(bc) {
                for l in 0..L {
                    acc[l] += x[l] * y[l].widen();
                }
            }
            let s = ar.iter().zip(br).fold(acc.iter().sum::<f32>(), |s, (x, y)| s + x * y.widen());
            *o = H::narrow(s);
        }
    }
}

/// bfloat16/float16 products: decode-shaped ones read the 16-bit weights directly; the others
/// run in f32 (widened operands) and round once at the end, as torch accumulates in f32.
fn run_half<H: Half>(ta: &Tensor, tb: &Tensor, batch: &[usize]) -> pyo3::PyResult<Tensor> {
    let (m, k) = (ta.dims()[ta.rank() - 2], ta.dims()[ta.rank() - 1]);
    let n = tb.dims()[tb.rank() - 1];
    let nb: usize = batch.iter().product();
    let rows = nb * m;
    if ta.dtype() == candle_core::DType::BF16 && super::gemm16::available() {
        return run_bf16(ta, tb, batch, (m, k, n));
    }
    let (sb, lb) = tb.storage_and_layout();
    let b_rows_contiguous = lb.stride()[lb.stride().len() - 2] == 1;
    if rows <= DOT_ROWS && k >= 64 && b_rows_contiguous && nb * m * n > 0 {
        let Storage::Cpu(cb) = &*sb else { return Err(crate::error::runtime_err("expected CPU tensors")) };
        let b = Mats::new(cb.as_slice::<H>().py()?, lb);
        let a32 = super::convert(ta, candle_core::DType::F32)?;
        let a = a32.flatten_all().py()?.to_vec1::<f32>().py()?;
        let threads = crate::pool::threads();
        let cols = if rows * k * n < SERIAL_MACS { n } else { n.div_ceil(4 * threads).max(64) };
        let mut out = super::kernels::uninit_vec::<H>(rows * n);
        for r in 0..rows {
            let (bi, i) = (r / m, r % m);
            let b0 = b.base(batch, bi);
            let arow = &a[(bi * m + i) * k..(bi * m + i + 1) * k];
            crate::pool::chunks_mut(&mut out[r * n..(r + 1) * n], cols, |c, d| {
                dot_rows_half(arow, b.data, b0 + c * cols * b.cs, b.cs, d)
            });
        }
        drop(sb);
        let mut dims = batch.to_vec();
        dims.extend([m, n]);
        return Tensor::from_vec(out, dims, &Device::Cpu).py();
    }
    drop(sb);
    run_half_blocked::<H>(ta, tb, batch, (m, k, n))
}

/// 16-bit products without 16-bit dot-product instructions: f32 gemm over blocks of B's columns
/// widened one block at a time (a block stays in L2), A widened once, each result block rounded
/// once. No f32 copy of a whole weight is ever made.
fn run_half_blocked<H: Half>(ta: &Tensor, tb: &Tensor, batch: &[usize], (m, k, n): (usize, usize, usize)) -> pyo3::PyResult<Tensor> {
    let nb: usize = batch.iter().product();
    let mut out = vec![H::narrow(0.0); nb * m * n];
    let (sa, la) = ta.storage_and_layout();
    let (sb, lb) = tb.storage_and_layout();
    let (Storage::Cpu(ca), Storage::Cpu(cb)) = (&*sa, &*sb) else {
        return Err(crate::error::runtime_err("expected CPU tensors"));
    };
    let a = Mats::new(ca.as_slice::<H>().py()?, la);
    let b = Mats::new(cb.as_slice::<H>().py()?, lb);
    if nb * m * n == 0 || k == 0 {
        drop((sa, sb));
        let mut dims = batch.to_vec();
        dims.extend([m, n]);
        return Tensor::from_vec(out, dims, &Device::Cpu).py();
    }
    let threads = crate::pool::threads();
    // Columns per block: about 256 KB of widened B.
    let cols = ((1usize << 16) / k).clamp(16, 512).next_multiple_of(16).min(n);
    let blocks = n.div_ceil(cols);
    let dst = Dst(out.as_mut_ptr());
    let product = |bi: usize, serial: bool| {
        let (a0, b0) = (a.base(batch, bi), b.base(batch, bi));
        let a32: Vec<f32> = (0..m * k).map(|e| a.data[a0 + (e / k) * a.rs + (e % k) * a.cs].widen()).collect();
        let block = |c: usize| {
            let (j0, w) = (c * cols, cols.min(n - c * cols));
            let mut b32 = super::kernels::uninit_vec::<f32>(k * w);
            for j in 0..w {
                for p in 0..k {
                    b32[p * w + j] = b.data[b0 + p * b.rs + (j0 + j) * b.cs].widen();
                }
            }
            let mut o32 = super::kernels::uninit_vec::<f32>(m * w);
            // SAFETY: a32 is m×k, b32 k×w and o32 m×w, all row-major and owned here.
            unsafe { gemm_serial(m, k, w, a32.as_ptr(), k, b32.as_ptr(), w, o32.as_mut_ptr(), w, false) };
            for i in 0..m {
                // SAFETY: row i, columns j0..j0 + w of product bi: this block's own.
                let row = unsafe { std::slice::from_raw_parts_mut(dst.get().add((bi * m + i) * n + j0), w) };
                row.iter_mut().zip(&o32[i * w..(i + 1) * w]).for_each(|(o, v)| *o = H::narrow(*v));
            }
        };
        if serial || blocks == 1 || m * k * n < SERIAL_MACS {
            (0..blocks).for_each(block);
        } else {
            crate::pool::for_each(blocks, &block);
        }
    };
    if nb >= threads && nb > 1 {
        crate::pool::for_each(nb, &|bi| product(bi, true));
    } else {
        (0..nb).for_each(|bi| product(bi, false));
    }
    drop((sa, sb));
    let mut dims = batch.to_vec();
    dims.extend([m, n]);
    Tensor::from_vec(out, dims, &Device::Cpu).py()
}

/// bfloat16 products on the CPU's bf16 dot-product instructions (`gemm16`): each batch's product
/// threaded inside, or whole products split over the threads when there are many small ones
/// (attention's heads).
fn run_bf16(ta: &Tensor, tb: &Tensor, batch: &[usize], (m, k, n): (usize, usize, usize)) -> pyo3::PyResult<Tensor> {
    use super::gemm16::{gemm, Operand};
    let nb: usize = batch.iter().product();
    let mut out = if k == 0 { vec![half::bf16::ZERO; nb * m * n] } else { super::kernels::uninit_vec::<half::bf16>(nb * m * n) };
    let (sa, la) = ta.storage_and_layout();
    let (sb, lb) = tb.storage_and_layout();
    let (Storage::Cpu(ca), Storage::Cpu(cb)) = (&*sa, &*sb) else {
        return Err(crate::error::runtime_err("expected CPU tensors"));
    };
    let a = Mats::new(ca.as_slice::<half::bf16>().py()?, la);
    let b = Mats::new(cb.as_slice::<half::bf16>().py()?, lb);
    if nb * m * n > 0 && k > 0 {
        let (ap, bp) = (Operand { ptr: a.data.as_ptr() as *const u16, rs: a.rs, cs: a.cs }, Operand { ptr: b.data.as_ptr() as *const u16, rs: b.rs, cs: b.cs });
        let dst = Dst(out.as_mut_ptr() as *mut u16);
        let serial = nb >= crate::pool::threads() && m * n * k < (1 << 22);
        let one = |bi: usize| {
            let (oa, ob) = (ap.offset(a.base(batch, bi)), bp.offset(b.base(batch, bi)));
            // SAFETY: available() was checked; the offsets and strides come from the operands' Candle
            // layouts (in bounds for every (i, p, j)), and product bi writes its own m×n block.
            unsafe { gemm(m, n, k, oa, ob, dst.get().add(bi * m * n), n, serial) }
        };
        if serial {
            crate::pool::for_each(nb, &one);
        } else {
            (0..nb).for_each(one);
        }
    }
    drop((sa, sb));
    let mut dims = batch.to_vec();
    dims.extend([m, n]);
    Tensor::from_vec(out, dims, &Device::Cpu).py()
}

/// f32 products with enough rows for the register tiles (a transformer's prefill, batches): there
/// they match gemm's speed on one thread and scale over ours (gemm's threading does not, here).
fn f32_tiles(ta: &Tensor, tb: &Tensor, batch: &[usize]) -> bool {
    let (m, k) = (ta.dims()[ta.rank() - 2], ta.dims()[ta.rank() - 1]);
    let n = tb.dims()[tb.rank() - 1];
    let nb: usize = batch.iter().product();
    // B's columns must be rows of W contiguous in k (`x @ W.T`, read in place): those pack by 16×16
    // transposes; a row-major B packs element by element, slower than gemm's own packing.
    let w_rows = tb.layout().stride()[tb.rank() - 2] == 1;
    // On Intel gemm's own kernels and cache blocking lead the tiles from 1024 rows, at long inner
    // dims and into few outputs (measured on a Sapphire Rapids-class Xeon, 1 and 2 threads: 1024
    // rows of 768 into 3072 1.01-1.03 of torch against 1.10-1.35; of 3072 into 768, 1.06-1.23
    // against 1.40; on an Emerald Rapids Xeon 784 rows of 768 into 192 0.99-1.04 against 1.38-1.46).
    let gemm_leads = crate::isa::intel() && (m >= 1024 || (k > 2048 && m >= 256) || (n <= 256 && m >= 256));
    super::gemm16::f32_tiles_available() && w_rows && !gemm_leads && m > DOT_ROWS && k >= 16 && n >= 16 && nb * m * k * n >= SERIAL_MACS
}

fn run_f32_tiles(ta: &Tensor, tb: &Tensor, batch: &[usize]) -> pyo3::PyResult<Tensor> {
    use super::gemm16::{gemm_f32, Operand};
    let (m, k) = (ta.dims()[ta.rank() - 2], ta.dims()[ta.rank() - 1]);
    let n = tb.dims()[tb.rank() - 1];
    let nb: usize = batch.iter().product();
    let mut out = super::kernels::uninit_vec::<f32>(nb * m * n);
    let (sa, la) = ta.storage_and_layout();
    let (sb, lb) = tb.storage_and_layout();
    let (Storage::Cpu(ca), Storage::Cpu(cb)) = (&*sa, &*sb) else {
        return Err(crate::error::runtime_err("expected CPU tensors"));
    };
    let a = Mats::new(ca.as_slice::<f32>().py()?, la);
    let b = Mats::new(cb.as_slice::<f32>().py()?, lb);
    let (ap, bp) = (Operand { ptr: a.data.as_ptr(), rs: a.rs, cs: a.cs }, Operand { ptr: b.data.as_ptr(), rs: b.rs, cs: b.cs });
    let dst = Dst(out.as_mut_ptr());
    let serial = nb >= crate::pool::threads() && m * n * k < (1 << 22);
    let one = |bi: usize| {
        let (oa, ob) = (ap.offset(a.base(batch, bi)), bp.offset(b.base(batch, bi)));
        // SAFETY: f32_tiles_available() was checked; the offsets and strides come from the operands'
        // Candle layouts, and product bi writes its own m×n block.
        unsafe { gemm_f32(m, n, k, oa, ob, dst.get().add(bi * m * n), n, serial) }
    };
    if serial {
        crate::pool::for_each(nb, &one);
    } else {
        (0..nb).for_each(one);
    }
    drop((sa, sb));
    let mut dims = batch.to_vec();
    dims.extend([m, n]);
    Tensor::from_vec(out, dims, &Device::Cpu).py()
}

use crate::pool::SendPtr as Dst;

fn run<T: Elem + candle_core::WithDType>(ta: &Tensor, tb: &Tensor, batch: &[usize]) -> pyo3::PyResult<Tensor> {
    let (m, k) = (ta.dims()[ta.rank() - 2], ta.dims()[ta.rank() - 1]);
    let n = tb.dims()[tb.rank() - 1];
    let nb: usize = batch.iter().product();
    let macs = nb * m * k * n;
    // gemm overwrites its output (it is not read); only an empty inner dim leaves zeros to keep.
    let mut out = if k == 0 { vec![T::default(); nb * m * n] } else { super::kernels::uninit_vec(nb * m * n) };
    let (sa, la) = ta.storage_and_layout();
    let (sb, lb) = tb.storage_and_layout();
    let (Storage::Cpu(ca), Storage::Cpu(cb)) = (&*sa, &*sb) else {
        return Err(crate::error::runtime_err("expected CPU tensors"));
    };
    let a = Mats::new(ca.as_slice::<T>().py()?, la);
    let b = Mats::new(cb.as_slice::<T>().py()?, lb);
    let threads = crate::pool::threads();
    let rows = nb * m;
    if macs == 0 {
    } else if rows <= DOT_ROWS && k >= 64 && b.rs == 1 && a.cs == 1 {
        // A few rows against Bᵀ stored row-major (`x @ W.T` in a decode step): dot products.
        let cols = if macs < SERIAL_MACS { n } else { n.div_ceil(4 * threads).max(64) };
        for r in 0..rows {
            let (bi, i) = (r / m, r % m);
            let a0 = a.base(batch, bi) + i * a.rs;
            let b0 = b.base(batch, bi);
            let arow = &a.data[a0..a0 + k];
            crate::pool::chunks_mut(&mut out[r * n..(r + 1) * n], cols, |c, d| {
                dot_rows(arow, b.data, b0 + c * cols * b.cs, b.cs, d)
            });
        }
    } else if macs >= COLUMN_MAJOR_MACS && rows >= 64 && b.rs == 1 && b.cs != 1 && m < n && n <= k {
        // `x @ W.T` with W read in place (B column-major), fewer rows than outputs, a long inner dim
        // (an MLP's down projection): gemm writes a row-major result about 1.5x slower than a
        // column-major one. Compute that, W's rows split over our threads, and transpose it once
        // (it is small next to W): 197x3072 @ 3072x768 from 15 to ~10 ms on one thread.
        let mut tmp = super::kernels::uninit_vec::<T>(m * n);
        let step = n.div_ceil(threads).next_multiple_of(16);
        for bi in 0..nb {
            let (a0, b0) = (a.base(batch, bi), b.base(batch, bi));
            let t = Dst(tmp.as_mut_ptr());
            crate::pool::for_each(n.div_ceil(step), &|c| {
                let (j0, w) = (c * step, step.min(n - c * step));
                // SAFETY: the offsets come from the operands' Candle layouts; tmp holds m·n elements
                // written column-major (element (i, j) at j·m + i), and task c writes its own
                // columns j0..j0 + w.
                unsafe {
                    gemm::gemm(
                        m, w, k,
                        t.get().add(j0 * m), m as isize, 1, false,
                        a.data.as_ptr().add(a0), a.cs as isize, a.rs as isize,
                        b.data.as_ptr().add(b0 + j0 * b.cs), b.cs as isize, b.rs as isize,
                        T::default(), <T as Elem>::one(), false, false, false, gemm::Parallelism::None,
                    )
                }
            });
            let rows_per_task = (1 << 14) / n.max(1) + 1;
            crate::pool::chunks_mut(&mut out[bi * m * n..(bi + 1) * m * n], rows_per_task * n, |c, d| {
                for (r, row) in d.chunks_exact_mut(n).enumerate() {
                    let i = c * rows_per_task + r;
                    row.iter_mut().enumerate().for_each(|(j, o)| *o = tmp[j * m + i]);
                }
            });
        }
    } else {
        // One single-threaded gemm per block, the blocks split over our threads: gemm's Rayon
        // dispatch costs ~40 µs, more than small products take, and on big ones its workers and
        // ours spun against each other (a (3136,96)·(96,384) product on 2 threads took a thread's
        // time). Each product is cut for the threads the batch leaves idle: into rows when it has
        // more rows than columns (each share then packs all of B), else into columns (all of A):
        // the smaller operand is the one packed twice (1024x768 into 3072 on 2 threads, Emerald
        // Rapids Xeon: 1.04-1.19 of torch by rows, 1.00-1.07 by columns). Smaller products split
        // by rows wherever they can: gemm's blocking follows n, so a share of the columns changes
        // the bits from one thread count to the next, and a share of the rows does not.
        let parts = (macs / PART_MACS).clamp(1, threads);
        let pieces = parts.div_ceil(nb);
        let dst = Dst(out.as_mut_ptr());
        let tasks: Vec<(usize, std::ops::Range<usize>, std::ops::Range<usize>)> = if pieces == 1 {
            (0..nb).map(|bi| (bi, 0..m, 0..n)).collect()
        } else if m >= 8 * pieces && (m >= n || n < 16 * pieces || macs < COLUMN_MAJOR_MACS) {
            let step = m.div_ceil(pieces);
            (0..nb).flat_map(|bi| (0..m).step_by(step).map(move |i| (bi, i..(i + step).min(m), 0..n))).collect()
        } else {
            let step = n.div_ceil(pieces).next_multiple_of(16);
            (0..nb).flat_map(|bi| (0..n).step_by(step).map(move |j| (bi, 0..m, j..(j + step).min(n)))).collect()
        };
        let task = |(bi, r, c): &(usize, std::ops::Range<usize>, std::ops::Range<usize>)| {
            gemm_block(&a, &b, batch, *bi, r.clone(), c.clone(), k, dst, (m, n), gemm::Parallelism::None)
        };
        if parts == 1 {
            tasks.iter().for_each(task);
        } else {
            crate::pool::for_each(tasks.len(), &|i| task(&tasks[i]));
        }
    }
    drop((sa, sb));
    let mut dims = batch.to_vec();
    dims.extend([m, n]);
    Tensor::from_vec(out, dims, &Device::Cpu).py()
}

/// out (m×n) = a (m×k, row stride `lda`, column stride `cda`) · b (k×n row-major), threaded by size.
/// For the kernels that build their own operands (convolution's im2col). `serial`: the caller
/// already runs one of these per thread.
#[allow(clippy::too_many_arguments)]
pub fn gemm_slices<T: Elem>(m: usize, k: usize, n: usize, a: &[T], lda: usize, cda: usize, b: &[T], out: &mut [T], serial: bool) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.iter_mut().for_each(|o| *o = T::default());
        return;
    }
    let macs = m * k * n;
    let threads = crate::pool::threads();
    // Single-threaded gemm calls on column blocks split over our pool beat gemm's own rayon
    // threading at every size convolution produces (measured: 1.1-1.3x faster).
    let par = gemm::Parallelism::None;
    let parts = if serial { 1 } else { (macs / PART_MACS).clamp(1, threads) };
    let dst = Dst(out.as_mut_ptr());
    // Split the columns of the output over the threads (one gemm per block).
    let step = n.div_ceil(parts).next_multiple_of(16).min(n);
    let blocks: Vec<usize> = (0..n).step_by(step).collect();
    let block = |&j: &usize| {
        let w = step.min(n - j);
        // SAFETY: a and b hold m×k and k×n elements at the given strides; each block writes its own
        // columns j..j+w of every row of out.
        unsafe {
            gemm::gemm(
                m, w, k,
                dst.get().add(j), 1, n as isize, false,
                a.as_ptr(), cda as isize, lda as isize,
                b.as_ptr().add(j), 1, n as isize,
                T::default(), <T as Elem>::one(), false, false, false, par,
            )
        }
    };
    if blocks.len() == 1 {
        block(&blocks[0]);
    } else {
        crate::pool::for_each(blocks.len(), &|i| block(&blocks[i]));
    }
}

/// dst (m×n, row stride `ldd`) = a (m×k, row stride `lda`) · b (k×n, row stride `ldb`), on the calling
/// thread; with `accumulate` the product is added to what dst holds (a bias written there first
/// comes out in the same pass).
///
/// # Safety
/// The three matrices must be in bounds at the given strides, and nothing else may touch dst's
/// elements meanwhile.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_serial<T: Elem>(m: usize, k: usize, n: usize, a: *const T, lda: usize, b: *const T, ldb: usize, dst: *mut T, ldd: usize, accumulate: bool) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let keep = if accumulate { <T as Elem>::one() } else { T::default() };
    // SAFETY: the caller's contract.
    unsafe {
        gemm::gemm(
            m, n, k,
            dst, 1, ldd as isize, accumulate,
            a, 1, lda as isize,
            b, 1, ldb as isize,
            keep, <T as Elem>::one(), false, false, false, gemm::Parallelism::None,
        )
    }
}

/// dst[bi][rows, cols] = A[bi][rows, :] · B[bi][:, cols] through gemm (row-major dst of width `n`).
#[allow(clippy::too_many_arguments)]
fn gemm_block<T: Elem>(
    a: &Mats<'_, T>,
    b: &Mats<'_, T>,
    batch: &[usize],
    bi: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    k: usize,
    dst: Dst<T>,
    (m_all, n): (usize, usize),
    par: gemm::Parallelism,
) {
    let m = rows.len();
    let a0 = a.base(batch, bi) + rows.start * a.rs;
    let b0 = b.base(batch, bi) + cols.start * b.cs;
    let d0 = (bi * m_all + rows.start) * n + cols.start;
    // SAFETY: the offsets come from the operands' Candle layouts (in bounds for every (i, j, k) of
    // the block), and each block writes its own rectangle of the (nb·m, n) output.
    unsafe {
        gemm::gemm(
            m, cols.len(), k,
            dst.0.add(d0), 1, n as isize, false,
            a.data.as_ptr().add(a0), a.cs as isize, a.rs as isize,
            b.data.as_ptr().add(b0), b.cs as isize, b.rs as isize,
            T::default(), <T as Elem>::one(), false, false, false, par,
        )
    }
}
