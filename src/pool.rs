//! Our intra-op thread pool for the elementwise, reduction and small-matmul kernels.
//!
//! Rayon parks idle workers, and waking them costs ~10 µs here: more than a 100k-element op takes.
//! Like OpenMP (what torch uses), these workers spin for a while after a job before they sleep, and the
//! calling thread takes its share of the tasks, so a parallel op costs well under a microsecond more
//! than a serial one. Candle's own ops keep using its rayon pool.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long an idle worker spins before it sleeps.
const SPIN: Duration = Duration::from_micros(300);

/// One parallel loop: tasks `0..n` of `f`. Each thread first runs its own contiguous share (the
/// caller the first, worker `id` share `id + 1`), as OpenMP's static schedule does: an op called again
/// and again then gives each thread the same part of its data, which stays in that core's caches. On
/// a host whose two cores sit on different L3s, a schedule that dealt tasks out in turn sent most of
/// a memory-bound op's data across them and 2 threads ran at 1 thread's speed. A thread with its share
/// done takes tasks from the back of another's, so a late or preempted thread does not hold up the op.
struct Job {
    // Points at the caller's closure, which outlives the job: the caller returns only once every
    // task is done, and a task can be claimed only while some task is not done.
    f: *const (dyn Fn(usize) + Sync),
    /// Per share, the tasks not yet claimed: `lo | hi << 32`.
    shares: Box<[Share]>,
    done: AtomicUsize,
    /// The first panic of a task, re-raised on the caller once every task is done.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}
// SAFETY: `f` is `Sync` and is only called while the caller waits (see above).
unsafe impl Send for Job {}
unsafe impl Sync for Job {}

/// One thread's share of a job's tasks, on a cache line of its own (its owner updates it per task).
#[repr(align(64))]
struct Share(AtomicU64);

impl Share {
    /// Claims the first unclaimed task (`front`) or the last.
    fn claim(&self, front: bool) -> Option<usize> {
        let mut v = self.0.load(Ordering::Relaxed);
        loop {
            let (lo, hi) = (v & 0xffff_ffff, v >> 32);
            if lo >= hi {
                return None;
            }
            let (next, task) = if front { (v + 1, lo) } else { (v - (1 << 32), hi - 1) };
            match self.0.compare_exchange_weak(v, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(task as usize),
                Err(now) => v = now,
            }
        }
    }
}

impl Job {
    fn new(f: *const (dyn Fn(usize) + Sync), n: usize, threads: usize) -> Job {
        let shares = (0..threads).map(|i| Share(AtomicU64::new((n * i / threads) as u64 | (((n * (i + 1) / threads) as u64) << 32)))).collect();
        Job { f, shares, done: AtomicUsize::new(0), panic: Mutex::new(None) }
    }

    /// Runs share `me`'s tasks, then the others' from their backs, until none are left to claim (a
    /// worker past the job's thread count has no share and only takes from the others).
    fn work(&self, me: usize) {
        let k = self.shares.len();
        for s in 0..k {
            let (share, front) = ((me + s) % k, s == 0 && me < k);
            while let Some(i) = self.shares[share].claim(front) {
                self.run(i);
            }
        }
    }

    fn run(&self, i: usize) {
        // SAFETY: task `i` is claimed and not done, so the caller is still waiting and `f` lives.
        let f = unsafe { &*self.f };
        // A panicking task must not take the worker down or leave the caller waiting: it counts
        // as done, and the caller re-raises the panic (PyO3 turns it into a Python exception).
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(i))) {
            self.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(p);
        }
        self.done.fetch_add(1, Ordering::Release);
    }
}

struct Pool {
    epoch: AtomicU64,
    job: Mutex<Option<Arc<Job>>>,
    wake: Condvar,
    /// Workers asleep on `wake` (counted under `job`'s lock): a job is announced to the condvar only
    /// when some are, as its notify is a system call even with no one waiting (once per parallel op,
    /// 70 times in a 2-layer recurrent scan of 35 steps).
    sleepers: AtomicUsize,
    /// Serialises callers: a loop started inside a task, or from a second Python thread, runs serially.
    busy: Mutex<()>,
    workers: AtomicUsize,
}

static POOL: OnceLock<Pool> = OnceLock::new();
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Threads used by our kernels (the caller included).
pub fn threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => {
            // Default: what Candle's rayon pool uses (RAYON_NUM_THREADS, else the cores), read once.
            let n = rayon::current_num_threads().max(1);
            let _ = THREADS.compare_exchange(0, n, Ordering::Relaxed, Ordering::Relaxed);
            THREADS.load(Ordering::Relaxed)
        }
        n => n,
    }
}

pub fn set_threads(n: usize) {
    THREADS.store(n.max(1), Ordering::Relaxed);
}

fn pool() -> &'static Pool {
    POOL.get_or_init(|| Pool {
        epoch: AtomicU64::new(0),
        job: Mutex::new(None),
        wake: Condvar::new(),
        sleepers: AtomicUsize::new(0),
        busy: Mutex::new(()),
        workers: AtomicUsize::new(0),
    })
}

fn worker(id: usize) {
    let p = pool();
    let mut seen = p.epoch.load(Ordering::Acquire);
    loop {
        // Spin for new work (only workers that the current thread count uses), then sleep.
        let start = Instant::now();
        let mut spins = 0u32;
        while p.epoch.load(Ordering::Acquire) == seen && id + 1 < threads() {
            std::hint::spin_loop();
            spins += 1;
            if spins % 1024 == 0 {
                if start.elapsed() > SPIN {
                    break;
                }
                std::thread::yield_now();
            }
        }
        let job = {
            let mut guard = p.job.lock().unwrap_or_else(|e| e.into_inner());
            while p.epoch.load(Ordering::Acquire) == seen {
                p.sleepers.fetch_add(1, Ordering::Relaxed);
                guard = p.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
                p.sleepers.fetch_sub(1, Ordering::Relaxed);
            }
            seen = p.epoch.load(Ordering::Acquire);
            guard.clone()
        };
        if let Some(job) = job {
            job.work(id + 1);
        }
    }
}

/// Runs `f(0..n)` over the pool's threads and the caller; returns when all are done.
pub fn for_each(n: usize, f: &(dyn Fn(usize) + Sync)) {
    let t = threads();
    // (Shares hold task indices in 32 bits; no op has 4 billion tasks.)
    if n <= 1 || t <= 1 || n > u32::MAX as usize {
        return (0..n).for_each(f);
    }
    let p = pool();
    let Ok(_busy) = p.busy.try_lock() else {
        return (0..n).for_each(f);
    };
    while p.workers.load(Ordering::Relaxed) < t - 1 {
        let id = p.workers.fetch_add(1, Ordering::Relaxed);
        if std::thread::Builder::new().name(format!("candle-bind-{id}")).spawn(move || worker(id)).is_err() {
            p.workers.fetch_sub(1, Ordering::Relaxed);
            return (0..n).for_each(f);
        }
    }
    // SAFETY (lifetime erasure): the job is finished before this function returns, see `Job::f`.
    let f: *const (dyn Fn(usize) + Sync + '_) = f;
    let f: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(f) };
    let job = Arc::new(Job::new(f, n, t));
    {
        let mut guard = p.job.lock().unwrap_or_else(|e| e.into_inner());
        *guard = Some(job.clone());
        p.epoch.fetch_add(1, Ordering::Release);
        // Under the lock: a worker that counted itself asleep did so before this section (and is
        // woken), one that takes the lock after it sees the new epoch and does not sleep.
        if p.sleepers.load(Ordering::Relaxed) > 0 {
            p.wake.notify_all();
        }
    }
    job.work(0);
    // Wait for the tasks the workers still run: spin briefly (they finish within microseconds on
    // free cores), then yield, so that on a busy machine a worker the OS preempted gets this core
    // back instead of the caller spinning out its time slice (a 2-thread op then took 10x longer).
    let mut spins = 0u32;
    while job.done.load(Ordering::Acquire) < n {
        if spins < 4096 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    *p.job.lock().unwrap_or_else(|e| e.into_inner()) = None;
    drop(_busy);
    let payload = job.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(payload) = payload {
        std::panic::resume_unwind(payload);
    }
}

/// Runs `f` over `0..n` in runs of consecutive indices, about four runs per thread: for items too
/// small to be a task each (a row, a plane, a block of columns).
pub fn for_each_run(n: usize, f: &(dyn Fn(std::ops::Range<usize>) + Sync)) {
    let per = n.div_ceil(4 * threads()).max(1);
    for_each(n.div_ceil(per), &|t| f(t * per..((t + 1) * per).min(n)));
}

/// Splits `out` into chunks of `chunk` elements and runs `f(chunk_index, chunk)` over the pool.
pub fn chunks_mut<T: Send>(out: &mut [T], chunk: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let chunk = chunk.max(1);
    let len = out.len();
    let ptr = SendPtr(out.as_mut_ptr());
    for_each(len.div_ceil(chunk), &|i| {
        let start = i * chunk;
        let end = (start + chunk).min(len);
        // SAFETY: chunks are disjoint sub-slices of `out`, which the caller borrows mutably throughout.
        let c = unsafe { std::slice::from_raw_parts_mut(ptr.get().add(start), end - start) };
        f(i, c)
    });
}

/// A buffer that parallel tasks fill at disjoint places (each task owns its block).
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub *mut T);
impl<T> SendPtr<T> {
    pub(crate) fn get(&self) -> *mut T {
        self.0
    }
    /// The block `i` of `len` elements.
    ///
    /// # Safety
    /// The block must be in bounds and no other task may use it at the same time.
    pub(crate) unsafe fn block<'a>(&self, i: usize, len: usize) -> &'a mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.0.add(i * len), len) }
    }
}
// SAFETY: only ever used to hand disjoint blocks of a buffer that outlives the tasks to the threads.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

/// `_C._pool_panic_check(n)`: runs `n` pool tasks of which one panics, so tests can see that the panic
/// reaches Python as an exception and that the pool keeps working afterwards.
#[pyo3::pyfunction]
pub fn _pool_panic_check(n: usize) {
    for_each(n, &|i| {
        if i == n / 2 {
            panic!("task {i} panicked on purpose");
        }
    });
}

/// `_C._pool_task_counts(n)`: how many times each of `n` pool tasks ran (each once, whatever the
/// thread count and whichever thread claimed it), so tests can check the shares and the stealing.
#[pyo3::pyfunction]
pub fn _pool_task_counts(n: usize) -> Vec<usize> {
    let counts: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    for_each(n, &|i| {
        // Uneven tasks, so that some threads finish their shares early and take from the others.
        std::hint::black_box((0..(i % 7) * 2000).sum::<usize>());
        counts[i].fetch_add(1, Ordering::Relaxed);
    });
    counts.into_iter().map(AtomicUsize::into_inner).collect()
}
