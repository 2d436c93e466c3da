//! Launch of the fused attention kernel (`attention.cu`): scaled-dot-product attention of 16-bit
//! float (B, H, L, D) tensors on tensor cores, with GQA, a causal or an additive mask, in memory
//! linear in the sequence length.

use candle_core::backend::BackendStorage;
use candle_core::cuda::cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};
use candle_core::cuda::CudaStorage;
use candle_core::{DType, Layout, Storage, Tensor};
use pyo3::prelude::*;

use crate::error::IntoPyResult;

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/attention.ptx"));

/// Head dims with a compiled kernel.
const HEAD_DIMS: [usize; 4] = [64, 80, 96, 128];
/// Query rows per block (the kernel's BM), threads per block, keys per tile (BN).
const ROWS_PER_BLOCK: usize = 128;
const THREADS: u32 = 256;
const KEYS_PER_TILE: usize = 64;
/// Blocks that keep every multiprocessor busy: fewer (decoding: one row tile per head) and the keys
/// are split over more blocks.
const BUSY_BLOCKS: usize = 256;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Strides {
    b: i64,
    h: i64,
    l: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Params {
    lq: i32,
    lk: i32,
    hq: i32,
    group: i32,
    q: Strides,
    k: Strides,
    v: Strides,
    o: Strides,
    m: Strides,
    scale_log2: f32,
    causal: i32,
    splits: i32,
    tiles_per_split: i32,
    hkv: i32,
}
// SAFETY: plain #[repr(C)] data, laid out as the kernel's `Params`.
unsafe impl DeviceRepr for Params {}

/// (b, h, l) strides of a (B, H, L, D) layout whose rows the kernel can read with 16-byte loads
/// (last dim contiguous, every stride and the offset whole groups of 8 elements); None otherwise.
fn strides(l: &Layout) -> Option<Strides> {
    let s = l.stride();
    let ok = s.len() == 4 && s[3] == 1 && s[..3].iter().all(|x| x % 8 == 0) && l.start_offset() % 8 == 0;
    ok.then(|| Strides { b: s[0] as i64, h: s[1] as i64, l: s[2] as i64 })
}

/// Fused attention, or None where the kernel does not apply (then the caller computes it the
/// unfused way): q (B, Hq, Lq, D), k and v (B, Hkv, Lk, D) with Hq a multiple of Hkv, bf16 or f16 on
/// CUDA, D in HEAD_DIMS; `mask` (bool: true = attend, or additive float) broadcastable to
/// (B, Hq, Lq, Lk).
pub fn flash(q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<(&Tensor, bool)>, causal: bool, scale: f64) -> PyResult<Option<Tensor>> {
    let (qd, kd, vd) = (q.dims(), k.dims(), v.dims());
    let dt = q.dtype();
    let usable = q.device().is_cuda()
        && matches!(dt, DType::BF16 | DType::F16)
        && k.dtype() == dt
        && v.dtype() == dt
        && qd.len() == 4
        && kd.len() == 4
        && kd == vd
        && qd[0] == kd[0]
        && qd[3] == kd[3]
        && HEAD_DIMS.contains(&qd[3])
        && kd[1] > 0
        && qd[1] % kd[1] == 0
        && qd[2] > 0
        && kd[2] > 0
        && std::env::var_os("CANDLE_BIND_FLASH").is_none_or(|v| v != "0");
    if !usable {
        return Ok(None);
    }
    let (b, hq, lq, d) = (qd[0], qd[1], qd[2], qd[3]);
    let (hkv, lk) = (kd[1], kd[2]);
    // Sizes past the kernel's int32 lengths or CUDA's 65535 grid rows take the unfused path.
    if hq * lq > i32::MAX as usize || lk > i32::MAX as usize || hkv > 65535 || b > 65535 {
        return Ok(None);
    }
    // The additive mask in f32, in its own shape (size-1 dims are broadcast by stride 0).
    let mask = match mask {
        None => None,
        Some((m, boolean)) => {
            let md = m.dims();
            if md.len() > 4 || md.is_empty() {
                return Ok(None);
            }
            let full = [b, hq, lq, lk];
            let pad = 4 - md.len();
            let dims: Vec<usize> = (0..4).map(|i| if i < pad { 1 } else { md[i - pad] }).collect();
            if dims.iter().zip(full).any(|(&m, f)| m != 1 && m != f) {
                return Ok(None);
            }
            let m = m.reshape(dims.as_slice()).py()?;
            // The kernel reads keys at stride 1: a mask broadcast over keys is expanded first.
            let m = if dims[3] == 1 && lk > 1 { m.broadcast_as((dims[0], dims[1], dims[2], lk)).py()? } else { m };
            let m = if boolean {
                let zero = Tensor::zeros(m.dims(), DType::F32, m.device()).py()?;
                let ninf = Tensor::full(f32::NEG_INFINITY, m.dims(), m.device()).py()?;
                m.where_cond(&zero, &ninf).py()?
            } else {
                m.to_dtype(DType::F32).py()?.contiguous().py()?
            };
            let md = m.dims().to_vec();
            let row = md[3] as i64;
            let st = Strides {
                b: if md[0] == 1 { 0 } else { (md[1] * md[2] * md[3]) as i64 },
                h: if md[1] == 1 { 0 } else { (md[2] * md[3]) as i64 },
                l: if md[2] == 1 { 0 } else { row },
            };
            Some((m, st))
        }
    };
    // Each operand as it is when the kernel can read its layout, else a contiguous copy.
    let fit = |t: &Tensor| -> PyResult<Option<(Tensor, Strides)>> {
        if let Some(st) = strides(t.layout()) {
            return Ok(Some((t.clone(), st)));
        }
        let c = t.contiguous().py()?;
        Ok(strides(c.layout()).map(|st| (c, st)))
    };
    let ((q, qs), (k, ks), (v, vs)) = match (fit(q)?, fit(k)?, fit(v)?) {
        (Some(a), Some(b), Some(c)) => (a, b, c),
        _ => return Ok(None),
    };
    // Split-KV when the row tiles alone leave the GPU idle (decoding against a long cache).
    let rows = hq / hkv * lq;
    let row_tiles = rows.div_ceil(ROWS_PER_BLOCK);
    let ntiles = lk.div_ceil(KEYS_PER_TILE);
    let blocks = row_tiles * hkv * b;
    let (splits, per_split) = if blocks < BUSY_BLOCKS / 2 && ntiles >= 4 {
        let want = (BUSY_BLOCKS / blocks).clamp(1, ntiles / 2);
        let per = ntiles.div_ceil(want);
        (ntiles.div_ceil(per), per)
    } else {
        (1, ntiles)
    };
    let params = Params {
        lq: lq as i32,
        lk: lk as i32,
        hq: hq as i32,
        group: (hq / hkv) as i32,
        q: qs,
        k: ks,
        v: vs,
        o: Strides { b: (hq * lq * d) as i64, h: (lq * d) as i64, l: d as i64 },
        m: mask.as_ref().map(|(_, s)| *s).unwrap_or_default(),
        scale_log2: (scale * std::f64::consts::LOG2_E) as f32,
        causal: causal as i32,
        splits: splits as i32,
        tiles_per_split: per_split as i32,
        hkv: hkv as i32,
    };
    let suffix = format!("{}_{d}", if dt == DType::BF16 { "bf16" } else { "f16" });
    let grid = ((row_tiles * splits) as u32, hkv as u32, b as u32);
    // K and V tiles, double-buffered, rows padded by 8 elements.
    let smem = (4 * KEYS_PER_TILE * (d + 8) * 2) as u32;
    let workspace = if splits > 1 { b * hkv * splits * rows * (d + 2) } else { 0 };
    let op = Flash { suffix, params, grid, smem, workspace, batch: b, mask: mask.map(|(m, _)| m), out_dims: vec![b, hq, lq, d] };
    Ok(Some(q.apply_op3_no_bwd(&k, &v, &op).py()?))
}

struct Flash {
    suffix: String,
    params: Params,
    grid: (u32, u32, u32),
    smem: u32,
    /// f32 values of the split-KV partial results (0: no split).
    workspace: usize,
    batch: usize,
    mask: Option<Tensor>,
    out_dims: Vec<usize>,
}

impl candle_core::CustomOp3 for Flash {
    fn name(&self) -> &'static str {
        "candle_bind-flash-attention"
    }
    fn cpu_fwd(
        &self, _: &candle_core::CpuStorage, _: &Layout, _: &candle_core::CpuStorage, _: &Layout, _: &candle_core::CpuStorage,
        _: &Layout,
    ) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        candle_core::bail!("candle_bind-flash-attention is a CUDA kernel")
    }
    fn cuda_fwd(
        &self, q: &CudaStorage, lq: &Layout, k: &CudaStorage, lk: &Layout, v: &CudaStorage, lv: &Layout,
    ) -> candle_core::Result<(CudaStorage, candle_core::Shape)> {
        use candle_core::cuda::cudarc::driver::sys::CUfunction_attribute_enum as Attr;
        let dev = q.device().clone();
        let n: usize = self.out_dims.iter().product();
        let func = dev.get_or_load_custom_func(&format!("flash_fwd_{}", self.suffix), "candle_bind_attention", PTX)?;
        let err = |e: candle_core::cuda::cudarc::driver::DriverError| candle_core::Error::Msg(format!("CUDA error: {e}"));
        // More than the default 48 KiB of dynamic shared memory is asked for explicitly.
        func.set_attribute(Attr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.smem as i32).map_err(err)?;
        let mask_guard = self.mask.as_ref().map(|m| m.storage_and_layout());
        let cfg = LaunchConfig { grid_dim: self.grid, block_dim: (THREADS, 1, 1), shared_mem_bytes: self.smem };
        // SAFETY: written in full by the kernel before flash_combine reads it.
        let ws = if self.workspace > 0 { Some(unsafe { dev.alloc::<f32>(self.workspace)? }) } else { None };
        macro_rules! launch {
            ($t:ty) => {{
                let qv = q.as_cuda_slice::<$t>()?.slice(lq.start_offset()..);
                let kv = k.as_cuda_slice::<$t>()?.slice(lk.start_offset()..);
                let vv = v.as_cuda_slice::<$t>()?.slice(lv.start_offset()..);
                // SAFETY: every element is written (each valid row's D values), by the kernel or by
                // flash_combine.
                let out = unsafe { dev.alloc::<$t>(n)? };
                let mut b = func.builder();
                b.arg(&qv);
                b.arg(&kv);
                b.arg(&vv);
                b.arg(&out);
                let null = 0u64;
                let mv;
                match &mask_guard {
                    Some((ms, ml)) => {
                        let Storage::Cuda(ms) = &**ms else { candle_core::bail!("flash attention: the mask is not on the GPU") };
                        mv = ms.as_cuda_slice::<f32>()?.slice(ml.start_offset()..);
                        b.arg(&mv);
                    }
                    None => {
                        b.arg(&null);
                    }
                }
                match &ws {
                    Some(w) => b.arg(w),
                    None => b.arg(&null),
                };
                b.arg(&self.params);
                // SAFETY: q/k/v hold (B, H, L, D) at the strides in params (checked on the host, 16-byte
                // groups), the mask (when given) covers the broadcast (B, Hq, Lq, Lk) at its strides,
                // out holds B·Hq·Lq·D values, the workspace every split's partial rows.
                unsafe { b.launch(cfg) }.map_err(err)?;
                if let Some(w) = &ws {
                    let combine = dev.get_or_load_custom_func(&format!("flash_combine_{}", self.suffix), "candle_bind_attention", PTX)?;
                    let mut c = combine.builder();
                    c.arg(w);
                    c.arg(&out);
                    c.arg(&self.params);
                    let batch = self.batch as i32;
                    c.arg(&batch);
                    let blocks = n.div_ceil(256).min(65535) as u32;
                    let cc = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
                    // SAFETY: reads the workspace the launch above wrote, writes the n outputs.
                    unsafe { c.launch(cc) }.map_err(err)?;
                }
                CudaStorage::wrap_cuda_slice(out, dev.clone())
            }};
        }
        let out = match q.dtype() {
            DType::BF16 => launch!(half::bf16),
            DType::F16 => launch!(half::f16),
            d => candle_core::bail!("flash attention: {d:?} inputs"),
        };
        Ok((out, self.out_dims.as_slice().into()))
    }
}
