//! Which SIMD level the CPU kernels run: one build carries an AVX-512, an AVX2+FMA and a portable
//! version of every hot loop (`kernels::multiversion!`, gemm), and picks at run time the best the
//! CPU has. `CANDLE_BIND_ISA=avx2|portable` caps it lower, so every path can be tested and
//! benchmarked on one machine; a level above the CPU's is never used (it would fault).

use std::sync::atomic::{AtomicU8, Ordering};

use pyo3::prelude::*;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[repr(u8)]
pub enum Level {
    Portable = 0,
    Avx2 = 1,
    Avx512 = 2,
}

impl Level {
    fn from_u8(v: u8) -> Level {
        match v {
            2 => Level::Avx512,
            1 => Level::Avx2,
            _ => Level::Portable,
        }
    }
    /// The names `torch.backends.cpu.get_cpu_capability()` gives for the same levels.
    pub fn torch_name(self) -> &'static str {
        match self {
            Level::Avx512 => "AVX512",
            Level::Avx2 => "AVX2",
            Level::Portable => "DEFAULT",
        }
    }
    fn parse(s: &str) -> Option<Level> {
        match s.trim().to_ascii_lowercase().as_str() {
            // The extensions (bf16, vnni) ride on the AVX-512 level; `avx512` alone turns them off.
            "native" | "avx512bf16" | "avx512_bf16" | "avx512vnni" | "avx512" | "avx512f" | "x86-v4" => Some(Level::Avx512),
            "avx2" | "x86-v3" => Some(Level::Avx2),
            "portable" | "default" | "scalar" | "none" => Some(Level::Portable),
            _ => None,
        }
    }
}

/// The best level this CPU supports (AVX-512 means F+BW+VL: what the kernels are compiled for).
pub fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vl") {
            return Level::Avx512;
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return Level::Avx2;
        }
    }
    Level::Portable
}

const UNSET: u8 = u8::MAX;
static ACTIVE: AtomicU8 = AtomicU8::new(UNSET);

/// The level kernels use now: `detected()` capped by `CANDLE_BIND_ISA`, read once.
#[inline]
pub fn level() -> Level {
    match ACTIVE.load(Ordering::Relaxed) {
        UNSET => init(),
        v => Level::from_u8(v),
    }
}

#[cold]
fn init() -> Level {
    let best = detected();
    let chosen = requested().and_then(|r| Level::parse(&r)).map_or(best, |r| r.min(best));
    ACTIVE.store(chosen as u8, Ordering::Relaxed);
    // gemm dispatches on its own; hand it the same cap before its first call.
    gemm_common::MAX_X86_LEVEL.store(chosen as u8, Ordering::Relaxed);
    chosen
}

/// Whether the AVX-512 kernels may also use the CPU's AVX512-BF16 dot products: the CPU has them,
/// the level is AVX-512, and `CANDLE_BIND_ISA` does not ask for plain `avx512` (which tests the
/// AVX-512 paths without the extension, as a CPU without it would run them).
pub fn has_avx512_bf16() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| level() == Level::Avx512 && extensions_allowed() && cpu_has("avx512bf16"))
}

/// The same for AVX512-VNNI's int8 dot products (`vpdpbusd`).
pub fn has_avx512_vnni() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| level() == Level::Avx512 && extensions_allowed() && cpu_has("avx512vnni"))
}

/// Whether the CPU is Intel's: kernel choices measured to differ between Intel and AMD parts (cache
/// sizes and mesh L3 against AMD's CCX) follow it.
pub fn intel() -> bool {
    static INTEL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INTEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let r = std::arch::x86_64::__cpuid(0);
            let vendor: Vec<u8> = [r.ebx, r.edx, r.ecx].iter().flat_map(|w| w.to_le_bytes()).collect();
            vendor == b"GenuineIntel"
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

fn extensions_allowed() -> bool {
    !requested().is_some_and(|r| matches!(r.trim().to_ascii_lowercase().as_str(), "avx512" | "avx512f" | "x86-v4"))
}

fn cpu_has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "avx512bf16" => return std::is_x86_feature_detected!("avx512bf16"),
            "avx512vnni" => return std::is_x86_feature_detected!("avx512vnni"),
            _ => {}
        }
    }
    let _ = feature;
    false
}

fn requested() -> Option<String> {
    std::env::var("CANDLE_BIND_ISA").ok().filter(|s| !s.trim().is_empty())
}

/// (active level, best level of this CPU, the CANDLE_BIND_ISA value if it is not one we know).
#[pyfunction]
pub fn cpu_capability() -> (&'static str, &'static str, Option<String>) {
    let unknown = requested().filter(|r| Level::parse(r).is_none());
    (level().torch_name(), detected().torch_name(), unknown)
}
