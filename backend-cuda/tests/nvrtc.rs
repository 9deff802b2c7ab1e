//! Runtime compilation without a GPU: NVRTC compiles real kernels (SAXPY, a reduction through
//! shared memory, a template instantiated through name expressions) to PTX, and the PTX says
//! what was asked for; the compiler's log comes with a failure; results are cached in memory
//! and on disk; without NVRTC each call is `NotPresent`, never a panic. NVRTC comes from PyPI
//! (`pip install nvidia-cuda-nvrtc`, its lib directory on `LD_LIBRARY_PATH`): with `CI=true` its
//! absence fails these tests, otherwise they skip saying why. `ORDO_EXPECT_NO_NVRTC=1` checks
//! the absent case instead (CI runs this file once without the library).

use std::sync::Arc;

use ordo_core::ErrorCode;
use ordo_cuda::nvrtc::{self, CompileOptions};

const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"#;

const REDUCE: &str = r#"
#ifndef BLOCK
#error BLOCK must be defined
#endif
extern "C" __global__ void block_sum(const float* in, float* out, unsigned n) {
    __shared__ float part[BLOCK];
    unsigned i = blockIdx.x * BLOCK + threadIdx.x;
    part[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
"#;

const TEMPLATE: &str = r#"
template <typename T>
__global__ void scale(T* v, T by, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= by;
}
"#;

/// Whether to run: NVRTC present, or absent and allowed to be (or expected to be).
fn present() -> bool {
    if std::env::var("ORDO_EXPECT_NO_NVRTC").as_deref() == Ok("1") {
        return false;
    }
    if nvrtc::available() {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and NVRTC is missing: {}", nvrtc::NVRTC_MISSING);
    eprintln!("skipped: {}", nvrtc::NVRTC_MISSING);
    false
}

#[test]
fn real_kernels_compile_to_the_ptx_asked_for() {
    if !present() {
        return;
    }
    let (major, _) = nvrtc::version().unwrap();
    assert!(major >= 12, "NVRTC {major}");
    let saxpy =
        nvrtc::compile(SAXPY, &CompileOptions { arch: Some(nvrtc::arch_of(9, 0)), ..Default::default() }).unwrap();
    let ptx = saxpy.ptx_text();
    assert!(ptx.contains(".target sm_90"), "the architecture asked for");
    assert!(ptx.contains(".visible .entry saxpy("), "an unmangled entry point");
    assert_eq!(saxpy.ptx().last(), Some(&0), "NUL-terminated for program_load");

    let options = CompileOptions {
        defines: vec![("BLOCK".into(), Some("256".into()))],
        std: Some("c++17".into()),
        line_info: true,
        ..Default::default()
    };
    let reduce = nvrtc::compile(REDUCE, &options).unwrap();
    let ptx = reduce.ptx_text();
    assert!(ptx.contains(".visible .entry block_sum("));
    assert!(ptx.contains(".shared .align 4 .b8") && ptx.contains("[1024]"), "256 floats of shared memory");
    assert!(ptx.contains("bar.sync"), "__syncthreads");
    assert!(ptx.contains(".loc"), "line information");

    let options =
        CompileOptions { name_expressions: vec!["scale<float>".into(), "scale<double>".into()], ..Default::default() };
    let scale = nvrtc::compile(TEMPLATE, &options).unwrap();
    let (f, d) = (scale.lowered_name("scale<float>").unwrap(), scale.lowered_name("scale<double>").unwrap());
    assert!(f.starts_with("_Z5scaleIfEvPT_S0_j"), "{f}");
    assert!(d.starts_with("_Z5scaleIdEvPT_S0_j"), "{d}");
    assert!(scale.ptx_text().contains(&format!(".entry {f}(")) && scale.ptx_text().contains(&format!(".entry {d}(")));
    assert_eq!(scale.lowered_name("scale<int>"), None);
}

#[test]
fn failures_carry_the_compilers_log_and_change_nothing() {
    if !present() {
        return;
    }
    let err = nvrtc::compile(REDUCE, &CompileOptions::default()).unwrap_err();
    assert_eq!(err.error.code, ErrorCode::InvalidBinary);
    assert!(err.log.contains("BLOCK must be defined"), "{}", err.log);
    let err = nvrtc::compile("__global__ void k() { undefined_name(); }", &CompileOptions::default()).unwrap_err();
    assert_eq!(err.error.code, ErrorCode::InvalidBinary);
    assert!(err.log.contains("undefined_name") && err.log.contains("ordo.cu(1)"), "{}", err.log);
    let bad_option = CompileOptions { extra: vec!["--no-such-option".into()], ..Default::default() };
    assert_eq!(nvrtc::compile(SAXPY, &bad_option).unwrap_err().error.code, ErrorCode::InvalidArgument);
    let nul = CompileOptions { std: Some("c++17\0".into()), ..Default::default() };
    assert_eq!(nvrtc::compile(SAXPY, &nul).unwrap_err().error.code, ErrorCode::InvalidArgument);
    assert_eq!(nvrtc::compile("a\0b", &CompileOptions::default()).unwrap_err().error.code, ErrorCode::InvalidArgument);
    let missing = CompileOptions { name_expressions: vec!["nothing<int>".into()], ..Default::default() };
    assert_eq!(nvrtc::compile(TEMPLATE, &missing).unwrap_err().error.code, ErrorCode::InvalidBinary);
    // The source still compiles afterwards.
    assert!(nvrtc::compile(SAXPY, &CompileOptions::default()).is_ok());
}

#[test]
fn results_are_cached_in_memory_and_on_disk() {
    if !present() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ordo-nvrtc-test-{}", std::process::id()));
    let options = CompileOptions {
        cache_dir: Some(dir.clone()),
        defines: vec![("UNIQUE".into(), Some(format!("{}", std::process::id())))],
        name_expressions: vec!["scale<float>".into()],
        ..Default::default()
    };
    let first = nvrtc::compile(TEMPLATE, &options).unwrap();
    let again = nvrtc::compile(TEMPLATE, &options).unwrap();
    assert!(Arc::ptr_eq(&first, &again), "the same result from memory");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "one cache file");
    let other = CompileOptions { line_info: true, ..options.clone() };
    assert!(!Arc::ptr_eq(&first, &nvrtc::compile(TEMPLATE, &other).unwrap()), "other options, another result");
    // From the disk once memory forgot it: the same PTX and names.
    nvrtc::clear_memory_cache();
    let from_disk = nvrtc::compile(TEMPLATE, &options).unwrap();
    assert!(!Arc::ptr_eq(&first, &from_disk));
    assert_eq!(
        (from_disk.ptx(), from_disk.lowered_name("scale<float>")),
        (first.ptx(), first.lowered_name("scale<float>"))
    );
    // A damaged file is a miss: compiled again (and rewritten).
    for file in std::fs::read_dir(&dir).unwrap() {
        std::fs::write(file.unwrap().path(), "ordo nvrtc cache 0000\n--\nnot ptx").unwrap();
    }
    nvrtc::clear_memory_cache();
    assert_eq!(nvrtc::compile(TEMPLATE, &options).unwrap().ptx(), first.ptx());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_nvrtc_every_call_is_not_present() {
    if std::env::var("ORDO_EXPECT_NO_NVRTC").as_deref() != Ok("1") {
        return;
    }
    assert!(!nvrtc::available());
    let err = nvrtc::compile(SAXPY, &CompileOptions::default()).unwrap_err();
    assert_eq!(err.error.code, ErrorCode::NotPresent);
    // The install line names the version that matches the driver (a newer NVRTC writes PTX an
    // older driver refuses).
    assert!(err.error.message.contains("pip install 'nvidia-cuda-nvrtc==13.0.*'"), "{}", err.error.message);
    assert!(err.error.message.contains("matches the driver"), "{}", err.error.message);
    assert_eq!(nvrtc::version().unwrap_err().error.code, ErrorCode::NotPresent);
}
