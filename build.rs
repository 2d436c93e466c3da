//! With the `cuda` feature: compiles `src/cuda/kernels.cu` (candle_bind's own CUDA kernels) to PTX
//! for CUDA_COMPUTE_CAP with nvcc, as candle-kernels does for Candle's. Without it: nothing.

fn main() {
    println!("cargo:rerun-if-changed=src/cuda/kernels.cu");
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "80".into());
    let cap: String = cap.chars().filter(|c| c.is_ascii_digit()).collect();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("kernels.ptx");
    let status = std::process::Command::new("nvcc")
        .args(["--ptx", "-O3", "-std=c++17", &format!("-arch=compute_{cap}"), "src/cuda/kernels.cu", "-o"])
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("nvcc failed ({s}) on src/cuda/kernels.cu"),
        Err(e) => panic!("nvcc not found ({e}): the `cuda` feature needs CUDA's compiler (scripts/build_cuda.sh installs it)"),
    }
}
