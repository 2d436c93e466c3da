//! Tensors read from a region of a checkpoint file: mapped in place (no copy, no time up front: pages
//! come from the page cache on first use, as torch's `mmap=True` and safetensors' tensors) or copied.
//!
//! Why in place is sound although Candle's `CpuStorage` owns a `Vec<T>`: a mapped tensor's storage is a
//! `Vec<T>` whose buffer is a mapping, and every property a `Vec` needs holds:
//! - one MAP_PRIVATE, PROT_READ|PROT_WRITE mapping per tensor (its pages of the file), so no two Vecs
//!   ever share memory; writes through the tensor (`add_`, `copy_`, `x[0] = v`) are copy-on-write and
//!   the file never changes, as with torch's default MAP_PRIVATE mmap;
//! - the buffer is aligned for `T` (checked: a misaligned region is copied) and `len == capacity`;
//! - the global allocator below owns its release: `dealloc` and `realloc` of a block of at least
//!   `MAP_FROM` bytes while any mapping is live look the pointer up in a fixed table of live mappings
//!   first and `munmap` it (`realloc` moves it to the heap first), so it never reaches malloc's `free`.
//!   With no mapping live, or for smaller blocks, the check is one relaxed load; the table is only
//!   touched under its mutex, and nothing under that mutex allocates.
//!
//! Limits, as for torch's and safetensors' maps: a file truncated by another writer while mapped
//! raises SIGBUS on access; candle_bind's own writers replace a mapped file (a new file renamed over
//! it, see `is_mapped`) instead of truncating it. Regions under `MAP_FROM` bytes, misaligned ones,
//! and ones past the table's capacity or refused by `mmap` are copied instead.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use candle_core::{Device, Tensor, WithDType};
use pyo3::prelude::*;

use crate::dtype::DType;
use crate::error::{value_err, IntoPyResult};
use crate::tensor::{cast, PyTensor};

/// Smaller regions are copied: each mapping costs a syscall and an entry in the kernel's map table
/// (65530 per process by default), which tiny tensors (norms, biases) are not worth.
pub const MAP_FROM: usize = 64 << 10;
/// Slots of the table of live mappings; at most half are used, so probe runs stay short.
const SLOTS: usize = 1 << 14;

#[derive(Clone, Copy)]
struct Slot {
    /// The tensor's data pointer (the Vec's buffer); 0 marks an empty slot.
    data: usize,
    base: usize,
    len: usize,
    dev: u64,
    ino: u64,
}

const EMPTY: Slot = Slot { data: 0, base: 0, len: 0, dev: 0, ino: 0 };

struct Table {
    slots: [Slot; SLOTS],
    live: usize,
}

static TABLE: Mutex<Table> = Mutex::new(Table { slots: [EMPTY; SLOTS], live: 0 });
/// `Table::live`, readable without the lock: the allocator's fast path.
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn table() -> std::sync::MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn home(data: usize) -> usize {
    ((data as u64 >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

impl Table {
    fn find(&self, data: usize) -> Option<usize> {
        let mut i = home(data);
        loop {
            match self.slots[i].data {
                0 => return None,
                d if d == data => return Some(i),
                _ => i = (i + 1) % SLOTS,
            }
        }
    }

    fn insert(&mut self, s: Slot) -> bool {
        if self.live >= SLOTS / 2 {
            return false;
        }
        let mut i = home(s.data);
        while self.slots[i].data != 0 {
            i = (i + 1) % SLOTS;
        }
        self.slots[i] = s;
        self.live += 1;
        LIVE.store(self.live, Ordering::Relaxed);
        true
    }

    /// Removes slot `i` by shifting later members of its probe run back (linear probing without
    /// tombstones, so lookups never slow down with churn).
    fn remove(&mut self, mut i: usize) -> Slot {
        let gone = self.slots[i];
        let mut j = i;
        loop {
            j = (j + 1) % SLOTS;
            if self.slots[j].data == 0 {
                break;
            }
            let h = home(self.slots[j].data);
            // Slot j may move to i unless its home lies cyclically in (i, j].
            let stays = if i <= j { i < h && h <= j } else { i < h || h <= j };
            if !stays {
                self.slots[i] = self.slots[j];
                i = j;
            }
        }
        self.slots[i] = EMPTY;
        self.live -= 1;
        LIVE.store(self.live, Ordering::Relaxed);
        gone
    }
}

/// Unmaps `data` if it is a mapped tensor's buffer; false if it is not one of ours.
fn unmap(data: *mut u8) -> bool {
    let mut t = table();
    let Some(i) = t.find(data as usize) else { return false };
    let s = t.remove(i);
    drop(t);
    // SAFETY: (base, len) is a mapping made by `map_region` whose only user, the Vec, is being freed.
    #[cfg(unix)]
    unsafe {
        libc::munmap(s.base as *mut libc::c_void, s.len)
    };
    true
}

fn maybe_mapped(size: usize) -> bool {
    // A Vec is freed on a thread that saw it built, so a registration before its build is visible here.
    size >= MAP_FROM && LIVE.load(Ordering::Relaxed) != 0
}

/// The process's allocator: the system's, except that blocks of 4 KiB and more start on a cache line
/// (glibc's heap gives 16 bytes: every 64-byte vector load of a tensor would straddle two lines) and
/// blocks that are mapped tensors are unmapped.
pub struct Allocator;

/// Blocks from this size on are aligned to `LINE`.
const ALIGN_FROM: usize = 4096;
const LINE: usize = 64;

/// Whether a block of `layout` is one of our line-aligned ones (a function of the layout alone, so
/// that alloc, realloc and dealloc of one block agree).
fn lined(layout: Layout) -> bool {
    layout.size() >= ALIGN_FROM && layout.align() <= LINE
}

/// A line-aligned block of `size` bytes: malloc's (or calloc's, which leaves fresh pages untouched:
/// a zeroed vector's RSS grows only as it is written) block of `size + LINE`, moved up to the next
/// line by 16..=64 bytes, the shift kept in the byte before the block.
unsafe fn alloc_lined(size: usize, zeroed: bool) -> *mut u8 {
    let Some(total) = size.checked_add(LINE) else { return std::ptr::null_mut() };
    // SAFETY: plain libc allocation calls.
    let raw = unsafe { if zeroed { libc::calloc(1, total) } else { libc::malloc(total) } } as *mut u8;
    if raw.is_null() {
        return raw;
    }
    let shift = LINE - (raw as usize % LINE); // 16..=64: malloc aligns to 16
    // SAFETY: shift ≤ LINE, so the block and the byte before it lie within the total bytes.
    unsafe {
        let p = raw.add(shift);
        *p.sub(1) = shift as u8;
        p
    }
}

/// Blocks from this size on are mappings of their own on 2 MiB huge pages (Linux). glibc maps every
/// block past its largest mmap threshold (32 MiB) afresh and unmaps it when freed, so each such
/// tensor (a ConvNeXt stage's (8,56,56,384) activations) faulted in 4 KiB pages on every write:
/// about 2 µs a page in a virtual machine, half the time of the matmul that filled it.
#[cfg(target_os = "linux")]
const HUGE_FROM: usize = 32 << 20;
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// Whether a block of `layout` is a huge-page mapping (a function of the layout alone, as `lined`).
#[cfg(target_os = "linux")]
fn huge(layout: Layout) -> bool {
    layout.size() >= HUGE_FROM && layout.align() <= LINE
}
#[cfg(not(target_os = "linux"))]
fn huge(_: Layout) -> bool {
    false
}

/// Bytes a huge block of `size` maps: whole pages.
#[cfg(target_os = "linux")]
fn huge_len(size: usize) -> usize {
    size.next_multiple_of(4096)
}

/// A block of `size` bytes on a fresh anonymous mapping that starts on a 2 MiB boundary (mapped
/// with 2 MiB to spare, the ends cut off), advised to use transparent huge pages (where the kernel
/// runs them only on request, as is the default). Its pages are zero, so it serves zeroed requests too.
/// Blocks come and go through `take_huge` and `free_huge`.
#[cfg(target_os = "linux")]
unsafe fn alloc_huge(size: usize) -> *mut u8 {
    let len = huge_len(size);
    let Some(total) = len.checked_add(HUGE_PAGE) else { return std::ptr::null_mut() };
    // SAFETY: a fresh private anonymous mapping at an address of the kernel's choosing.
    let raw = unsafe { libc::mmap(std::ptr::null_mut(), total, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    if raw == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    let (r, p) = (raw as usize, (raw as usize).next_multiple_of(HUGE_PAGE));
    // SAFETY: the head r..p and the tail p+len..r+total lie in the mapping made above and are not
    // handed out; the advice only changes how the kernel backs p..p+len (an error leaves 4 KiB pages).
    unsafe {
        if p > r {
            libc::munmap(raw, p - r);
        }
        if r + total > p + len {
            libc::munmap((p + len) as *mut libc::c_void, r + total - (p + len));
        }
        libc::madvise(p as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    p as *mut u8
}

/// Freed huge blocks kept for the next request of the same size: a forward pass frees and asks again
/// for the same activation sizes every call, and a fresh mapping's pages were faulted and cleared by
/// the kernel each time (`clear_page_erms`, 7% of a ConvNeXt-T batch-8 forward at 2 threads). A
/// request that no kept block fits unmaps them all before it maps, so mapped memory peaks where it
/// would without them; at most `KEPT_MAX` bytes are kept, and `release_free_pages` unmaps them.
#[cfg(target_os = "linux")]
static KEPT: Mutex<[(usize, usize); KEPT_SLOTS]> = Mutex::new([(0, 0); KEPT_SLOTS]);
#[cfg(target_os = "linux")]
const KEPT_SLOTS: usize = 8;
#[cfg(target_os = "linux")]
const KEPT_MAX: usize = 512 << 20;

/// The kept blocks (ptr, mapped length); nothing under the lock allocates or panics.
#[cfg(target_os = "linux")]
fn kept() -> std::sync::MutexGuard<'static, [(usize, usize); KEPT_SLOTS]> {
    KEPT.lock().unwrap_or_else(|p| p.into_inner())
}

/// A huge block of `size` bytes: a kept one of its length (zeroed if asked), else a fresh mapping
/// once the kept ones are unmapped.
#[cfg(target_os = "linux")]
unsafe fn take_huge(size: usize, zeroed: bool) -> *mut u8 {
    let len = huge_len(size);
    let mut k = kept();
    if let Some(slot) = k.iter_mut().find(|s| s.0 != 0 && s.1 == len) {
        let p = std::mem::replace(slot, (0, 0)).0 as *mut u8;
        drop(k);
        if zeroed {
            // SAFETY: p is a kept mapping of len ≥ size bytes, now this block's alone.
            unsafe { std::ptr::write_bytes(p, 0, size) };
        }
        return p;
    }
    unmap_kept(&mut k);
    drop(k);
    unsafe { alloc_huge(size) }
}

/// Keeps a freed huge block for `take_huge`, or unmaps it past `KEPT_MAX` bytes kept.
#[cfg(target_os = "linux")]
unsafe fn free_huge(p: *mut u8, size: usize) {
    let len = huge_len(size);
    let mut k = kept();
    let total: usize = k.iter().map(|s| s.1).sum();
    if total + len <= KEPT_MAX {
        if let Some(slot) = k.iter_mut().find(|s| s.0 == 0) {
            *slot = (p as usize, len);
            return;
        }
    }
    drop(k);
    // SAFETY: the block's own mapping (alloc_huge), freed once.
    unsafe { libc::munmap(p as *mut libc::c_void, len) };
}

/// Unmaps the kept huge blocks (`take_huge`).
pub fn drop_kept() {
    #[cfg(target_os = "linux")]
    unmap_kept(&mut kept());
}

#[cfg(target_os = "linux")]
fn unmap_kept(k: &mut [(usize, usize); KEPT_SLOTS]) {
    for slot in k.iter_mut().filter(|s| s.0 != 0) {
        // SAFETY: a kept block is a mapping of its length that no one else holds.
        unsafe { libc::munmap(slot.0 as *mut libc::c_void, slot.1) };
        *slot = (0, 0);
    }
}

/// Frees a block from `alloc_lined`.
unsafe fn free_lined(p: *mut u8) {
    // SAFETY: p came from alloc_lined, which wrote its shift in the byte before it.
    unsafe { libc::free(p.sub(*p.sub(1) as usize) as *mut libc::c_void) }
}

// SAFETY: blocks under ALIGN_FROM (or over-aligned) are the system allocator's; from HUGE_FROM on
// (Linux) they are `alloc_huge`'s own mappings, kept (`free_huge`) or unmapped with the length their layout gives; the
// rest are `alloc_lined`'s, at least as aligned as asked and freed by `free_lined`, whichever call made them
// (`lined` depends on the layout alone); blocks registered in the table are mappings that
// `map_region` handed to exactly one Vec, released once, here.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if huge(layout) {
            return unsafe { take_huge(layout.size(), false) };
        }
        if lined(layout) { unsafe { alloc_lined(layout.size(), false) } } else { unsafe { System.alloc(layout) } }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if huge(layout) {
            return unsafe { take_huge(layout.size(), true) };
        }
        if lined(layout) { unsafe { alloc_lined(layout.size(), true) } } else { unsafe { System.alloc_zeroed(layout) } }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if maybe_mapped(layout.size()) && unmap(ptr) {
            return;
        }
        #[cfg(target_os = "linux")]
        if huge(layout) {
            unsafe { free_huge(ptr, layout.size()) };
            return;
        }
        if lined(layout) { unsafe { free_lined(ptr) } } else { unsafe { System.dealloc(ptr, layout) } }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees new_size rounded up to the alignment fits an isize.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if !lined(layout) && !lined(new) && !huge(layout) && !huge(new) && !(maybe_mapped(layout.size()) && table().find(ptr as usize).is_some()) {
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // A lined block, or a mapped buffer (which moves to the heap): a new block and a copy (the
        // old block stays valid on failure).
        let q = unsafe { self.alloc(new) };
        if !q.is_null() {
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Allocator = Allocator;

/// A private writable mapping of `len` bytes of `file` at `offset`, registered as a block of the
/// allocator; its data pointer, or None when it cannot be had (the caller copies).
#[cfg(unix)]
fn map_region(file: &File, offset: u64, len: usize) -> Option<*mut u8> {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::AsRawFd;
    let meta = file.metadata().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok().filter(|&p| p > 0)?;
    let skip = (offset % page) as usize;
    let map_len = len.checked_add(skip)?;
    let at = libc::off_t::try_from(offset - skip as u64).ok()?;
    // SAFETY: a fresh mapping at an address of the kernel's choosing; nothing else refers to it.
    let base = unsafe {
        libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE, file.as_raw_fd(), at)
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let data = base as usize + skip;
    if !table().insert(Slot { data, base: base as usize, len: map_len, dev: meta.dev(), ino: meta.ino() }) {
        // SAFETY: the mapping made above, never handed out.
        unsafe { libc::munmap(base, map_len) };
        return None;
    }
    Some(data as *mut u8)
}

/// Elsewhere tensors are copied.
#[cfg(not(unix))]
fn map_region(_file: &File, _offset: u64, _len: usize) -> Option<*mut u8> {
    None
}

/// Copies little-endian element bytes into a new buffer of `T`, calling `done(offset, len)` after each
/// run of a few MiB so the caller can drop the pages it came from.
pub fn copied<T: WithDType>(bytes: &[u8], shape: &[usize], done: &dyn Fn(usize, usize)) -> PyResult<Tensor> {
    const RUN: usize = 4 << 20;
    let size = std::mem::size_of::<T>();
    let n = bytes.len() / size;
    crate::memory::ensure_bytes(n * size)?;
    let mut v: Vec<T> = Vec::with_capacity(n);
    // SAFETY: n·size bytes are written before set_len; every bit pattern is a valid T for these plain
    // numeric types; the source may be unaligned, hence a byte copy.
    unsafe {
        let dst = v.as_mut_ptr() as *mut u8;
        for start in (0..n * size).step_by(RUN) {
            let len = RUN.min(n * size - start);
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(start), dst.add(start), len);
            done(start, len);
        }
        v.set_len(n);
    }
    Tensor::from_vec(v, shape, &Device::Cpu).py()
}

/// A tensor of `shape` whose storage is `len` bytes of `file` at `offset`, mapped in place; None when
/// the region is small, misaligned for `T`, or cannot be mapped (the caller copies). The caller has
/// checked that the region lies inside the file and that `len` is `shape`'s byte size.
pub fn mapped<T: WithDType>(file: &File, offset: u64, len: usize, shape: &[usize]) -> Option<Tensor> {
    let size = std::mem::size_of::<T>();
    if !cfg!(target_endian = "little") || len < MAP_FROM || !len.is_multiple_of(size) || !offset.is_multiple_of(std::mem::align_of::<T>() as u64) {
        return None;
    }
    let data = map_region(file, offset, len)?;
    let n = len / size;
    // SAFETY: `data` is a private writable mapping of n·size bytes aligned for T, owned by nothing else;
    // any bit pattern is a valid T; the allocator unmaps it when the Vec is freed (see the module doc).
    let v = unsafe { Vec::from_raw_parts(data as *mut T, n, n) };
    Tensor::from_vec(v, shape, &Device::Cpu).ok()
}

/// Whether any live tensor maps the file at `path` (its writers then replace the file, not truncate it).
#[pyfunction]
pub fn is_mapped(path: std::path::PathBuf) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(&path) else { return false };
        let t = table();
        t.live != 0 && t.slots.iter().any(|s| s.data != 0 && s.dev == meta.dev() && s.ino == meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// How many tensors are mapped in place now (for tests).
#[pyfunction]
pub fn mapped_count() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// One storage record of a checkpoint file: `nbytes` bytes at `offset` read as a 1-D tensor of `dtype`,
/// mapped in place when `mmap` (and the region allows it), else copied.
#[pyfunction]
#[pyo3(signature = (path, offset, nbytes, dtype, mmap))]
pub fn read_storage(
    py: Python<'_>,
    path: std::path::PathBuf,
    offset: u64,
    nbytes: usize,
    dtype: &Bound<'_, PyAny>,
    mmap: bool,
) -> PyResult<PyTensor> {
    let dt = crate::dtype::extract_dtype(dtype)?;
    if dt.candle() == candle_core::DType::U8 && !matches!(dt, DType::U8 | DType::Bool) {
        return Err(dt.unsupported());
    }
    let file = File::open(&path)?;
    let file_len = file.metadata()?.len();
    if offset.checked_add(nbytes as u64).is_none_or(|e| e > file_len) {
        return Err(value_err(format!("storage of {nbytes} bytes at byte {offset} lies past the end of {}", path.display())));
    }
    let size = dt.itemsize();
    if !nbytes.is_multiple_of(size) {
        return Err(value_err(format!("storage of {nbytes} bytes is not a whole number of {dt:?} elements")));
    }
    py.detach(|| region(&file, offset, nbytes, &[nbytes / size], dt, mmap))
}

/// `len` bytes of `file` at `offset` (inside the file, `shape`'s size) as a tensor of dtype `dt`
/// mapped in place, or None where `mapped` declines (int8, whose storage is wider, always does).
pub fn mapped_as(file: &File, offset: u64, len: usize, shape: &[usize], dt: DType) -> PyResult<Option<PyTensor>> {
    let stored = if dt == DType::Bool { DType::U8 } else { dt };
    if dt == DType::I8 || (stored.candle() == candle_core::DType::U8 && stored != DType::U8) {
        return Ok(None);
    }
    let t = crate::with_dtype!(stored.candle(), T => Ok::<_, PyErr>(mapped::<T>(file, offset, len, shape)))?;
    t.map(|t| Ok(PyTensor::new(cast(&t, stored, dt)?, dt))).transpose()
}

/// `len` bytes of `file` at `offset` (inside the file) as a tensor of `shape` and dtype `dt`.
pub fn region(file: &File, offset: u64, len: usize, shape: &[usize], dt: DType, mmap: bool) -> PyResult<PyTensor> {
    if mmap {
        if let Some(t) = mapped_as(file, offset, len, shape, dt)? {
            return Ok(t);
        }
    }
    if len == 0 {
        return Ok(PyTensor::new(Tensor::zeros(shape, dt.candle(), &Device::Cpu).py()?, dt));
    }
    // A read-only view of the region for the copy; its pages leave this process with it.
    // SAFETY: read-only; like every mmap-based reader we rely on the file not being truncated meanwhile.
    let map = unsafe { memmap2::MmapOptions::new().offset(offset).len(len).map(file)? };
    copy_as(&map, shape, dt, &|_, _| {})
}

/// Little-endian bytes of dtype `dt` copied into a new tensor of `shape` (see `copied` for `done`).
pub fn copy_as(bytes: &[u8], shape: &[usize], dt: DType, done: &dyn Fn(usize, usize)) -> PyResult<PyTensor> {
    let t = if dt == DType::I8 {
        // int8 lives in int16 storage: each byte sign-extended.
        let v: Vec<i16> = bytes.iter().map(|&b| b as i8 as i16).collect();
        done(0, bytes.len());
        Tensor::from_vec(v, shape, &Device::Cpu).py()?
    } else {
        crate::with_dtype!(dt.candle(), T => copied::<T>(bytes, shape, done))?
    };
    let stored = if dt == DType::Bool { DType::U8 } else { dt };
    Ok(PyTensor::new(cast(&t, stored, dt)?, dt))
}
