//! Launches of candle_bind's own CUDA kernels (`kernels.cu`, compiled to PTX by build.rs): writes
//! into a CUDA tensor's memory, the primitive of in-place ops and indexed assignment on the GPU.
//! They run inside a Candle in-place op, which holds the storage's write lock.

use candle_core::backend::BackendStorage;
use candle_core::cuda::cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use candle_core::cuda::CudaStorage;
use candle_core::{DType, Layout, Storage, Tensor};
use pyo3::prelude::*;

use crate::error::{runtime_err, IntoPyResult};

mod attention;
pub use attention::flash;

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// Candle's kernels for int32/int16 storage, which candle-kernels lacks (scripts/gen_int_kernels.py).
pub const INT_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/int_kernels.ptx"));

/// Where the values go: explicit storage offsets, or a strided view.
pub enum Target<'a> {
    At(&'a [usize]),
    Strided { dims: &'a [usize], strides: &'a [usize], base: usize },
}

fn driver_err(e: impl std::fmt::Display) -> candle_core::Error {
    candle_core::Error::Msg(format!("CUDA error: {e}"))
}

/// Writes `values` (contiguous, the destination's dtype, one value or one per element) into
/// `dst`'s storage at `target`.
pub fn write(dst: &Tensor, target: Target<'_>, values: &Tensor) -> PyResult<()> {
    let n = match &target {
        Target::At(o) => o.len(),
        Target::Strided { dims, .. } => dims.iter().product(),
    };
    if n == 0 {
        return Ok(());
    }
    if values.dtype() != dst.dtype() || !values.device().same_device(dst.device()) {
        return Err(runtime_err("internal error: write values of another dtype or device"));
    }
    let values = values.flatten_all().py()?.contiguous().py()?;
    let one = values.elem_count() == 1;
    if !one && values.elem_count() != n {
        return Err(runtime_err("internal error: write of a wrong number of values"));
    }
    // The offsets (or the view's dims and strides) travel as one small upload.
    let table: Vec<i64> = match &target {
        Target::At(o) => o.iter().map(|&x| x as i64).collect(),
        Target::Strided { dims, strides, .. } => dims.iter().chain(strides.iter()).map(|&x| x as i64).collect(),
    };
    let table_len = table.len();
    let table = Tensor::from_vec(table, table_len, dst.device()).py()?;
    let (kind, rank, base) = match &target {
        Target::At(_) => ("at", 0u32, 0u64),
        Target::Strided { dims, base, .. } => ("strided", dims.len() as u32, *base as u64),
    };
    struct Op {
        values: Tensor,
        table: Tensor,
        kind: &'static str,
        rank: u32,
        base: u64,
        n: u64,
        one: bool,
    }
    impl candle_core::InplaceOp1 for Op {
        fn name(&self) -> &'static str {
            "candle_bind-write"
        }
        fn cpu_fwd(&self, _: &mut candle_core::CpuStorage, _: &Layout) -> candle_core::Result<()> {
            candle_core::bail!("candle_bind-write is a CUDA kernel")
        }
        fn cuda_fwd(&self, dst: &mut CudaStorage, _: &Layout) -> candle_core::Result<()> {
            let (vs, vl) = self.values.storage_and_layout();
            let (ts, tl) = self.table.storage_and_layout();
            let (Storage::Cuda(vs), Storage::Cuda(ts)) = (&*vs, &*ts) else {
                candle_core::bail!("candle_bind-write: values and table must be CUDA tensors")
            };
            let table = ts.as_cuda_slice::<i64>()?.slice(tl.start_offset()..);
            let size = dst.dtype().size_in_bytes();
            let name = format!("{}_{size}", if self.kind == "at" { "write_at" } else { "write_strided" });
            let dev = dst.device().clone();
            let func = dev.get_or_load_custom_func(&name, "candle_bind", PTX)?;
            let cfg = LaunchConfig::for_num_elems(self.n.min(u32::MAX as u64) as u32);
            macro_rules! launch {
                ($t:ty) => {{
                    let d: &mut CudaSlice<$t> = dst.as_cuda_slice_mut::<$t>()?;
                    let v = vs.as_cuda_slice::<$t>()?.slice(vl.start_offset()..);
                    let mut b = func.builder();
                    b.arg(d);
                    if self.kind == "at" {
                        b.arg(&table);
                    } else {
                        b.arg(&self.base);
                        b.arg(&table);
                        b.arg(&self.rank);
                    }
                    b.arg(&v);
                    b.arg(&self.n);
                    let one = self.one as u32;
                    b.arg(&one);
                    // SAFETY: every offset lies inside dst's storage (checked on the host before the
                    // launch), the table holds what the kernel reads, and v holds n values (or one).
                    unsafe { b.launch(cfg) }.map_err(driver_err)?;
                }};
            }
            // Every dtype moves as the unsigned integer of its size; the slices are reinterpreted
            // only through the kernel's pointer types.
            match dst.dtype() {
                DType::U8 => launch!(u8),
                DType::F16 => launch!(half::f16),
                DType::BF16 => launch!(half::bf16),
                DType::U32 => launch!(u32),
                DType::F32 => launch!(f32),
                DType::I16 => launch!(i16),
                DType::I32 => launch!(i32),
                DType::I64 => launch!(i64),
                DType::F64 => launch!(f64),
                d => candle_core::bail!("in-place writes into {d:?} CUDA tensors are not supported"),
            }
            Ok(())
        }
    }
    let op = Op { values, table, kind, rank, base, n: n as u64, one };
    crate::tensor::inplace::retrying(|| Ok(dst.try_inplace_op1(&op).py()?.then_some(())))
}

/// a ** b for two float tensors of one shape: C's pow, elementwise (f32 and f64; 16-bit floats
/// through f32).
pub fn pow(a: &Tensor, b: &Tensor) -> PyResult<Tensor> {
    let dt = a.dtype();
    if matches!(dt, DType::F16 | DType::BF16) {
        let r = pow(&a.to_dtype(DType::F32).py()?, &b.to_dtype(DType::F32).py()?)?;
        return r.to_dtype(dt).py();
    }
    struct Pow;
    impl candle_core::CustomOp2 for Pow {
        fn name(&self) -> &'static str {
            "candle_bind-pow"
        }
        fn cpu_fwd(
            &self, _: &candle_core::CpuStorage, _: &Layout, _: &candle_core::CpuStorage, _: &Layout,
        ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
            candle_core::bail!("candle_bind-pow is a CUDA kernel")
        }
        fn cuda_fwd(&self, a: &CudaStorage, la: &Layout, b: &CudaStorage, lb: &Layout) -> candle_core::Result<(CudaStorage, candle_core::Shape)> {
            let n = la.shape().elem_count();
            let dev = a.device().clone();
            let cfg = LaunchConfig::for_num_elems(n as u32);
            macro_rules! run {
                ($t:ty, $name:expr) => {{
                    let x = a.as_cuda_slice::<$t>()?.slice(la.start_offset()..);
                    let y = b.as_cuda_slice::<$t>()?.slice(lb.start_offset()..);
                    // SAFETY: written in full by the kernel below.
                    let out = unsafe { dev.alloc::<$t>(n)? };
                    let func = dev.get_or_load_custom_func($name, "candle_bind", PTX)?;
                    let mut bld = func.builder();
                    bld.arg(&x);
                    bld.arg(&y);
                    bld.arg(&out);
                    let n64 = n as u64;
                    bld.arg(&n64);
                    // SAFETY: x, y and out hold n elements each.
                    unsafe { bld.launch(cfg) }.map_err(driver_err)?;
                    CudaStorage::wrap_cuda_slice(out, dev.clone())
                }};
            }
            let out = match a.dtype() {
                DType::F32 => run!(f32, "pow_f32"),
                DType::F64 => run!(f64, "pow_f64"),
                d => candle_core::bail!("candle_bind-pow: {d:?}"),
            };
            Ok((out, la.shape().clone()))
        }
    }
    let (a, b) = (a.contiguous().py()?, b.contiguous().py()?);
    if a.elem_count() == 0 {
        return Ok(a);
    }
    a.apply_op2_no_bwd(&b, &Pow).py()
}

/// relu keeping NaN and -0.0 (torch's), in one pass over a float tensor.
pub fn relu(x: &Tensor) -> PyResult<Tensor> {
    struct Relu;
    impl candle_core::CustomOp1 for Relu {
        fn name(&self) -> &'static str {
            "candle_bind-relu"
        }
        fn cpu_fwd(&self, _: &candle_core::CpuStorage, _: &Layout) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
            candle_core::bail!("candle_bind-relu is a CUDA kernel")
        }
        fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> candle_core::Result<(CudaStorage, candle_core::Shape)> {
            let n = l.shape().elem_count();
            let dev = s.device().clone();
            let cfg = LaunchConfig::for_num_elems((n as u32).max(1));
            macro_rules! run {
                ($t:ty, $name:expr) => {{
                    let x = s.as_cuda_slice::<$t>()?.slice(l.start_offset()..);
                    // SAFETY: written in full by the kernel below.
                    let out = unsafe { dev.alloc::<$t>(n)? };
                    let func = dev.get_or_load_custom_func($name, "candle_bind", PTX)?;
                    let mut b = func.builder();
                    b.arg(&x);
                    b.arg(&out);
                    let n64 = n as u64;
                    b.arg(&n64);
                    // SAFETY: x and out hold n elements.
                    unsafe { b.launch(cfg) }.map_err(driver_err)?;
                    CudaStorage::wrap_cuda_slice(out, dev.clone())
                }};
            }
            let out = match s.dtype() {
                DType::F32 => run!(f32, "relu_f32"),
                DType::F64 => run!(f64, "relu_f64"),
                DType::F16 => run!(half::f16, "relu_f16"),
                DType::BF16 => run!(half::bf16, "relu_bf16"),
                d => candle_core::bail!("candle_bind-relu: {d:?}"),
            };
            Ok((out, l.shape().clone()))
        }
    }
    let x = x.contiguous().py()?;
    x.apply_op1_no_bwd(&Relu).py()
}

/// BatchNorm in eval mode over x (N, C, *), one kernel: (x − mean)·rsqrt(var + eps)·w + b, the
/// statistics and affine parameters (C,) in x's dtype.
pub fn batch_norm_eval(x: &Tensor, mean: &Tensor, var: &Tensor, w: Option<&Tensor>, b: Option<&Tensor>, eps: f64) -> PyResult<Tensor> {
    let x = x.contiguous().py()?;
    let (n, c) = (x.elem_count(), x.dims()[1]);
    let inner: usize = x.dims()[2..].iter().product();
    let dev = x.device().as_cuda_device().py()?.clone();
    let prep = |t: &Tensor| -> PyResult<Tensor> { t.to_dtype(x.dtype()).py()?.contiguous().py() };
    let (mean, var) = (prep(mean)?, prep(var)?);
    let (w, b) = (w.map(prep).transpose()?, b.map(prep).transpose()?);
    let out = {
        let (xs, xl) = x.storage_and_layout();
        let Storage::Cuda(xs) = &*xs else { return Err(runtime_err("batch_norm_eval: expected a CUDA tensor")) };
        let guards = [&mean, &var].into_iter().chain(w.iter()).chain(b.iter()).map(|t| t.storage_and_layout()).collect::<Vec<_>>();
        macro_rules! run {
            ($t:ty, $name:expr) => {{
                let slice = |i: usize| -> candle_core::Result<candle_core::cuda::cudarc::driver::CudaView<'_, $t>> {
                    let (s, l) = &guards[i];
                    let Storage::Cuda(s) = &**s else { candle_core::bail!("batch_norm_eval: expected CUDA tensors") };
                    Ok(s.as_cuda_slice::<$t>()?.slice(l.start_offset()..))
                };
                let xv = xs.as_cuda_slice::<$t>().py()?.slice(xl.start_offset()..);
                let (m, v) = (slice(0).py()?, slice(1).py()?);
                let wv = if w.is_some() { Some(slice(2).py()?) } else { None };
                let bv = if b.is_some() { Some(slice(2 + w.is_some() as usize).py()?) } else { None };
                // SAFETY: written in full by the kernel below.
                let out = unsafe { dev.alloc::<$t>(n) }.py()?;
                let func = dev.get_or_load_custom_func($name, "candle_bind", PTX).py()?;
                let mut bld = func.builder();
                let null = 0u64;
                bld.arg(&xv);
                bld.arg(&m);
                bld.arg(&v);
                match &wv { Some(wv) => { bld.arg(wv); } None => { bld.arg(&null); } }
                match &bv { Some(bv) => { bld.arg(bv); } None => { bld.arg(&null); } }
                let (c64, inner64, n64) = (c as u64, inner as u64, n as u64);
                bld.arg(&eps);
                bld.arg(&c64);
                bld.arg(&inner64);
                bld.arg(&n64);
                bld.arg(&out);
                // SAFETY: x and out hold n elements, mean/var/w/b hold c.
                unsafe { bld.launch(LaunchConfig::for_num_elems((n as u32).max(1))) }.map_err(driver_err).py()?;
                CudaStorage::wrap_cuda_slice(out, dev.clone())
            }};
        }
        match x.dtype() {
            DType::F32 => run!(f32, "bn_eval_f32"),
            DType::F64 => run!(f64, "bn_eval_f64"),
            DType::F16 => run!(half::f16, "bn_eval_f16"),
            DType::BF16 => run!(half::bf16, "bn_eval_bf16"),
            d => return Err(runtime_err(format!("batch_norm: {d:?} input"))),
        }
    };
    Ok(Tensor::from_storage(Storage::Cuda(out), x.dims(), candle_core::op::BackpropOp::none(), false))
}

/// One recurrent step's cell arithmetic, fused (f32): "lstm_cell" gives (h', c') stacked as (2, n, h)
/// from gates xg + hg (n, 4h) and c (n, h); "gru_cell" gives h' (n, h) from xg, hg (n, 3h) and the
/// previous h.
pub fn rnn_cell(kind: &'static str, xg: &Tensor, hg: &Tensor, state: &Tensor) -> PyResult<Tensor> {
    struct Cell(&'static str);
    impl candle_core::CustomOp3 for Cell {
        fn name(&self) -> &'static str {
            "candle_bind-rnn-cell"
        }
        fn cpu_fwd(
            &self, _: &candle_core::CpuStorage, _: &Layout, _: &candle_core::CpuStorage, _: &Layout, _: &candle_core::CpuStorage,
            _: &Layout,
        ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
            candle_core::bail!("candle_bind-rnn-cell is a CUDA kernel")
        }
        fn cuda_fwd(
            &self, x: &CudaStorage, lx: &Layout, g: &CudaStorage, lg: &Layout, st: &CudaStorage, ls: &Layout,
        ) -> candle_core::Result<(CudaStorage, candle_core::Shape)> {
            let (n, h) = ls.shape().dims2()?;
            let dev = x.device().clone();
            let outs = if self.0 == "lstm_cell_f32" { 2 } else { 1 };
            let xv = x.as_cuda_slice::<f32>()?.slice(lx.start_offset()..);
            let gv = g.as_cuda_slice::<f32>()?.slice(lg.start_offset()..);
            let sv = st.as_cuda_slice::<f32>()?.slice(ls.start_offset()..);
            // SAFETY: written in full by the kernel below.
            let out = unsafe { dev.alloc::<f32>(outs * n * h)? };
            let func = dev.get_or_load_custom_func(self.0, "candle_bind", PTX)?;
            let mut b = func.builder();
            b.arg(&xv);
            b.arg(&gv);
            b.arg(&sv);
            b.arg(&out);
            let (n64, h64) = (n as u64, h as u64);
            b.arg(&n64);
            b.arg(&h64);
            // SAFETY: xg and hg hold n rows of their gates, the state n × h, out outs × n × h.
            unsafe { b.launch(LaunchConfig::for_num_elems(((n * h) as u32).max(1))) }.map_err(driver_err)?;
            let shape: candle_core::Shape = if outs == 2 { (2, n, h).into() } else { (n, h).into() };
            Ok((CudaStorage::wrap_cuda_slice(out, dev), shape))
        }
    }
    let c = |t: &Tensor| t.contiguous().py();
    let name = if kind == "lstm_cell" { "lstm_cell_f32" } else { "gru_cell_f32" };
    c(xg)?.apply_op3_no_bwd(&c(hg)?, &c(state)?, &Cell(name)).py()
}
