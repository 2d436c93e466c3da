//! Kernels behind `candle_bind.nn`: activations, pooling, convolution. The Python layer
//! (`nn/functional.py`) checks arguments the way torch does and calls these.

pub mod activation;
pub mod attention;
pub mod conv;
pub mod norm;
pub mod pool;
pub mod rnn;

/// An output buffer that parallel tasks fill block by block.
#[derive(Clone, Copy)]
pub(crate) struct Ptr<T>(pub *mut T);
// SAFETY: tasks write disjoint blocks of the buffer, which outlives them.
unsafe impl<T> Send for Ptr<T> {}
unsafe impl<T> Sync for Ptr<T> {}
impl<T> Ptr<T> {
    /// The block `i` of `len` elements.
    ///
    /// # Safety
    /// The block must be in bounds and no other task may use it at the same time.
    pub(crate) unsafe fn block<'a>(&self, i: usize, len: usize) -> &'a mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.0.add(i * len), len) }
    }
}
