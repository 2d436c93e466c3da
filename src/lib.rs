//! The native module `candle_bind._C`: wiring only; each area lives in its own file.

#[cfg(feature = "cuda")]
mod cuda;
mod device;
mod dtype;
mod error;
mod fft;
mod io;
mod isa;
mod memory;
mod models;
mod nn;
mod pool;
mod tensor;
mod vision;

use pyo3::prelude::*;

/// Large buffers (every op's output) come from glibc's heap and are reused, instead of fresh `mmap`s
/// whose first-touch page faults can cost more than the op itself on virtual machines (measured here:
/// bilinear upsampling of a 4 MB tensor 1.4 ms, or 8-10 ms when its output is a fresh mapping).
/// Freed memory up to 256 MB stays with the process. `CANDLE_BIND_MALLOC_TUNING=0` keeps glibc's
/// defaults.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var("CANDLE_BIND_MALLOC_TUNING").is_ok_and(|v| v == "0") {
            return;
        }
        MALLOC_TUNED.store(true, std::sync::atomic::Ordering::Relaxed);
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        const M_TRIM_THRESHOLD: i32 = -1;
        const M_MMAP_THRESHOLD: i32 = -3;
        // SAFETY: mallopt only changes glibc's allocation thresholds; called once, at import.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 32 << 20);
            mallopt(M_TRIM_THRESHOLD, 256 << 20);
        }
    }
}

static MALLOC_TUNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What this build is, for `python -m candle_bind info`: version, cargo features, target, whether
/// `tune_malloc` applied.
#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    d.set_item("version", env!("CARGO_PKG_VERSION"))?;
    d.set_item("cuda", cfg!(feature = "cuda"))?;
    d.set_item("target", format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS))?;
    d.set_item("debug_assertions", cfg!(debug_assertions))?;
    d.set_item("malloc_tuning", MALLOC_TUNED.load(std::sync::atomic::Ordering::Relaxed))?;
    Ok(d)
}

#[pyfunction]
fn get_num_threads() -> usize {
    pool::threads()
}

/// Sets the intra-op thread count: our kernels' pool, Candle's matmul split and its quantized-matmul
/// pool (Candle reads these variables).
#[pyfunction]
fn set_num_threads(n: usize) -> PyResult<()> {
    if n == 0 {
        return Err(error::value_err("set_num_threads expects a positive integer"));
    }
    // SAFETY: other threads may be computing (GIL released) and Candle reads RAYON_NUM_THREADS on
    // each matmul, but through std::env, which takes std's environment lock as set_var does. What
    // the lock cannot cover is C code calling getenv() at the same moment; none does so on a compute
    // path here (Python reads os.environ, its own copy of the environment).
    unsafe {
        std::env::set_var("RAYON_NUM_THREADS", n.to_string());
        std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
    }
    pool::set_threads(n);
    // Candle's rayon pool can be sized only before its first use; later calls still reach Candle's
    // matmul (it reads RAYON_NUM_THREADS per call) and all of our own kernels.
    let _ = rayon::ThreadPoolBuilder::new().num_threads(n).build_global();
    Ok(())
}

#[pymodule]
#[pyo3(name = "_C")]
mod candle_bind_c {
    #[pymodule_export]
    use crate::device::{
        cuda_device_count, cuda_device_info, cuda_is_available, cuda_synchronize, get_default_device, set_default_device,
        PyDevice,
    };
    #[pymodule_export]
    use crate::dtype::{get_default_dtype, set_default_dtype, PyDType};
    #[pymodule_export]
    use crate::error::{CandleError, DTypeError, DeviceError, OutOfMemoryError, ShapeError};
    #[pymodule_export]
    use crate::fft::{fft_c2c, fft_c2r, fft_r2c, stft_frames};
    #[pymodule_export]
    use crate::isa::cpu_capability;
    #[pymodule_export]
    use crate::memory::reserve;
    #[pymodule_export]
    use crate::tensor::arith::{promote_types, result_type, where_fn};
    #[pymodule_export]
    use crate::tensor::convert::from_numpy;
    #[pymodule_export]
    use crate::tensor::dlpack::from_dlpack;
    #[pymodule_export]
    use crate::tensor::creation::{
        arange, as_tensor, empty, empty_like, eye, full, full_like, manual_seed, ones, ones_like, rand, rand_like,
        randint, randn, randn_like, randperm, rng_state, seed, set_rng_state, tensor, zeros, zeros_like,
    };
    #[pymodule_export]
    use crate::nn::activation::{
        activation_, elu, gelu, hardshrink, hardsigmoid, hardswish, leaky_relu, logsigmoid, mish, silu, snake, softplus,
        softshrink, softsign, tanhshrink, threshold,
    };
    #[pymodule_export]
    use crate::io::gguf::{gguf_metadata, gguf_read, gguf_write, qmatmul, quantize, PyQTensor};
    #[pymodule_export]
    use crate::models::{PyBert, PyGgufLlama, PySampler};
    #[pymodule_export]
    use crate::io::safetensors::{safe_open_bytes, safe_open_file, safetensors_serialize, PySafeOpen};
    #[pymodule_export]
    use crate::io::mapped::{is_mapped, mapped_count, read_storage};
    #[pymodule_export]
    use crate::nn::attention::{flash_attention, sdpa};
    #[pymodule_export]
    use crate::nn::conv::{conv, conv_transpose};
    #[pymodule_export]
    use crate::nn::norm::{batch_norm_eval, channel_affine, norm_rows};
    #[pymodule_export]
    use crate::nn::pool::{pool, resample_axis, resample_nearest};
    #[pymodule_export]
    use crate::nn::qlinear::{qlinear_choose_qparams, qlinear_dynamic, qlinear_kernel, qlinear_prepack, quantize_affine, PackedLinear};
    #[pymodule_export]
    use crate::nn::rnn::rnn_scan;
    #[pymodule_export]
    use crate::tensor::order::{bucketize, searchsorted, unique};
    #[pymodule_export]
    use crate::tensor::special::{special_binary, special_unary};
    #[pymodule_export]
    use crate::tensor::join::{cat, stack};
    #[pymodule_export]
    use crate::tensor::PyTensor;
    #[pymodule_export]
    use crate::vision::{
        deform::vision_deform_conv2d, nms::vision_nms, roi::vision_ps_roi_align, roi::vision_ps_roi_pool,
        roi::vision_roi_align, roi::vision_roi_pool,
    };
    #[pymodule_export]
    use super::{build_info, get_num_threads, set_num_threads};
    #[pymodule_export]
    use crate::pool::{_pool_panic_check, _pool_task_counts};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        super::tune_malloc();
        crate::device::init_generic();
        // Fix the kernel level (and gemm's cap) before any kernel runs.
        crate::isa::level();
        let py = m.py();
        for d in crate::dtype::ALL {
            m.add(d.name(), crate::dtype::PyDType::object(py, d)?)?;
        }
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("cuda_compiled", cfg!(feature = "cuda"))?;
        Ok(())
    }
}
