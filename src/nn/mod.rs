//! Kernels behind `candle_bind.nn`: activations, pooling, convolution. The Python layer
//! (`nn/functional.py`) checks arguments the way torch does and calls these.

pub mod activation;
pub mod attention;
pub mod conv;
mod depthwise;
#[cfg(target_arch = "x86_64")]
mod direct;
pub mod norm;
mod packed;
pub mod pool;
pub mod qlinear;
pub mod rnn;
mod transposed;
mod window;
mod winograd;
#[cfg(target_arch = "x86_64")]
mod winograd_rows;


pub(crate) use crate::pool::SendPtr as Ptr;
