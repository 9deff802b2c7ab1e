//! liboffload's `ol*` API (feature `offload`): ordo's definitions against Debian's header
//! (`tests/offload/layout.c`), and the conformance suite (`tests/offload/conformance.c`) run on
//! the CPU against both ordo's `libordo.so` and Debian's `libLLVMOffload.so.22.1`, printing one
//! table of where they agree and diverge; the table must equal `tests/offload/expected-cpu.tsv`
//! (`ORDO_BLESS=1` rewrites it). ordo must pass every case it does not skip, with empty stderr.
//! The GPU kernels (`tests/offload/build.sh`, clang-22) are built here too. With `CI=true` a
//! missing liboffload-22-dev, clang-22 or valgrind fails the test; otherwise it is skipped with the
//! reason. The suite also runs on ordo under valgrind memcheck.

use std::path::{Path, PathBuf};
use std::process::Command;

use ordo_tests::{build_clib_with, program, workspace};

const HEADER: &str = "/usr/lib/llvm-22/include/offload/OffloadAPI.h";
const LLVM_LIB: &str = "/usr/lib/llvm-22/lib";

fn scratch() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("offload");
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Whether `path` exists; with `CI=true` its absence fails the test.
fn present(path: &str, package: &str) -> bool {
    let here = Path::new(path).exists();
    if !here {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {package} is not installed ({path})");
        println!("skipped: {package} is not installed ({path})");
    }
    here
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{cmd:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn compile(source: &str, output: &Path, libs: &[&str]) {
    let out = Command::new("cc")
        .args(["-std=gnu11", "-O1", "-Wall", "-Werror", "-I/usr/lib/llvm-22/include"])
        .arg(workspace().join(source))
        .arg("-o")
        .arg(output)
        .args(libs)
        .output()
        .expect("cc runs");
    assert!(out.status.success(), "compiling {source} failed:\n{}", String::from_utf8_lossy(&out.stderr));
}

/// `(name, value)` for each constant, by the name it has in ordo.
macro_rules! named {
    ($($name:ident),* $(,)?) => { vec![$((stringify!($name).to_string(), $name as i64)),*] };
}

/// `("sizeof(T)", its size)` for a type whose C and Rust names agree.
macro_rules! size {
    ($t:ident) => {
        (concat!("sizeof(", stringify!($t), ")").to_string(), std::mem::size_of::<$t>() as i64)
    };
}

/// `("offsetof(T.field)", its offset)`.
macro_rules! field {
    ($t:ident, $f:ident) => {
        (
            concat!("offsetof(", stringify!($t), ".", stringify!($f), ")").to_string(),
            std::mem::offset_of!($t, $f) as i64,
        )
    };
}

/// Every value `layout.c` prints, as ordo defines it.
fn ordo_values() -> Vec<(String, i64)> {
    use ordo_ffi::offload::*;
    use std::mem::size_of;
    let mut v: Vec<(String, i64)> = named![
        OL_ALLOC_TYPE_HOST,
        OL_ALLOC_TYPE_DEVICE,
        OL_ALLOC_TYPE_MANAGED,
        OL_ALLOC_TYPE_LAST,
        OL_DEVICE_FP_CAPABILITY_FLAG_CORRECTLY_ROUNDED_DIVIDE_SQRT,
        OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_NEAREST,
        OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_ZERO,
        OL_DEVICE_FP_CAPABILITY_FLAG_ROUND_TO_INF,
        OL_DEVICE_FP_CAPABILITY_FLAG_INF_NAN,
        OL_DEVICE_FP_CAPABILITY_FLAG_DENORM,
        OL_DEVICE_FP_CAPABILITY_FLAG_FMA,
        OL_DEVICE_FP_CAPABILITY_FLAG_SOFT_FLOAT,
        OL_DEVICE_FP_CAPABILITY_FLAG_LAST,
        OL_DEVICE_INFO_TYPE,
        OL_DEVICE_INFO_PLATFORM,
        OL_DEVICE_INFO_NAME,
        OL_DEVICE_INFO_PRODUCT_NAME,
        OL_DEVICE_INFO_UID,
        OL_DEVICE_INFO_VENDOR,
        OL_DEVICE_INFO_DRIVER_VERSION,
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE,
        OL_DEVICE_INFO_MAX_WORK_GROUP_SIZE_PER_DIMENSION,
        OL_DEVICE_INFO_MAX_WORK_SIZE,
        OL_DEVICE_INFO_MAX_WORK_SIZE_PER_DIMENSION,
        OL_DEVICE_INFO_VENDOR_ID,
        OL_DEVICE_INFO_NUM_COMPUTE_UNITS,
        OL_DEVICE_INFO_MAX_CLOCK_FREQUENCY,
        OL_DEVICE_INFO_MEMORY_CLOCK_RATE,
        OL_DEVICE_INFO_ADDRESS_BITS,
        OL_DEVICE_INFO_MAX_MEM_ALLOC_SIZE,
        OL_DEVICE_INFO_GLOBAL_MEM_SIZE,
        OL_DEVICE_INFO_WORK_GROUP_LOCAL_MEM_SIZE,
        OL_DEVICE_INFO_SINGLE_FP_CONFIG,
        OL_DEVICE_INFO_DOUBLE_FP_CONFIG,
        OL_DEVICE_INFO_HALF_FP_CONFIG,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE,
        OL_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF,
        OL_DEVICE_INFO_LAST,
        OL_DEVICE_TYPE_DEFAULT,
        OL_DEVICE_TYPE_ALL,
        OL_DEVICE_TYPE_GPU,
        OL_DEVICE_TYPE_CPU,
        OL_DEVICE_TYPE_HOST,
        OL_DEVICE_TYPE_LAST,
        OL_ERRC_SUCCESS,
        OL_ERRC_UNKNOWN,
        OL_ERRC_HOST_IO,
        OL_ERRC_INVALID_BINARY,
        OL_ERRC_INVALID_NULL_POINTER,
        OL_ERRC_INVALID_ARGUMENT,
        OL_ERRC_NOT_FOUND,
        OL_ERRC_OUT_OF_RESOURCES,
        OL_ERRC_INVALID_SIZE,
        OL_ERRC_INVALID_ENUMERATION,
        OL_ERRC_HOST_TOOL_NOT_FOUND,
        OL_ERRC_INVALID_VALUE,
        OL_ERRC_UNIMPLEMENTED,
        OL_ERRC_UNSUPPORTED,
        OL_ERRC_ASSEMBLE_FAILURE,
        OL_ERRC_COMPILE_FAILURE,
        OL_ERRC_LINK_FAILURE,
        OL_ERRC_BACKEND_FAILURE,
        OL_ERRC_UNINITIALIZED,
        OL_ERRC_INVALID_NULL_HANDLE,
        OL_ERRC_INVALID_PLATFORM,
        OL_ERRC_INVALID_DEVICE,
        OL_ERRC_INVALID_QUEUE,
        OL_ERRC_INVALID_EVENT,
        OL_ERRC_SYMBOL_KIND,
        OL_ERRC_LAST,
        OL_EVENT_INFO_QUEUE,
        OL_EVENT_INFO_IS_COMPLETE,
        OL_EVENT_INFO_LAST,
        OL_MEM_INFO_DEVICE,
        OL_MEM_INFO_BASE,
        OL_MEM_INFO_SIZE,
        OL_MEM_INFO_TYPE,
        OL_MEM_INFO_LAST,
        OL_PLATFORM_BACKEND_UNKNOWN,
        OL_PLATFORM_BACKEND_CUDA,
        OL_PLATFORM_BACKEND_AMDGPU,
        OL_PLATFORM_BACKEND_LEVEL_ZERO,
        OL_PLATFORM_BACKEND_HOST,
        OL_PLATFORM_BACKEND_LAST,
        OL_PLATFORM_INFO_NAME,
        OL_PLATFORM_INFO_VENDOR_NAME,
        OL_PLATFORM_INFO_VERSION,
        OL_PLATFORM_INFO_BACKEND,
        OL_PLATFORM_INFO_LAST,
        OL_QUEUE_INFO_DEVICE,
        OL_QUEUE_INFO_EMPTY,
        OL_QUEUE_INFO_LAST,
        OL_SYMBOL_INFO_KIND,
        OL_SYMBOL_INFO_GLOBAL_VARIABLE_ADDRESS,
        OL_SYMBOL_INFO_GLOBAL_VARIABLE_SIZE,
        OL_SYMBOL_INFO_LAST,
        OL_SYMBOL_KIND_KERNEL,
        OL_SYMBOL_KIND_GLOBAL_VARIABLE,
        OL_SYMBOL_KIND_LAST,
    ];
    v.push(size!(ol_error_struct_t));
    v.push(field!(ol_error_struct_t, Code));
    v.push(field!(ol_error_struct_t, Details));
    v.push(size!(ol_code_location_t));
    v.push(field!(ol_code_location_t, FunctionName));
    v.push(field!(ol_code_location_t, SourceFile));
    v.push(field!(ol_code_location_t, LineNumber));
    v.push(field!(ol_code_location_t, ColumnNumber));
    v.push(size!(ol_dimensions_t));
    v.push(field!(ol_dimensions_t, x));
    v.push(field!(ol_dimensions_t, y));
    v.push(field!(ol_dimensions_t, z));
    v.push(size!(ol_kernel_launch_size_args_t));
    v.push(field!(ol_kernel_launch_size_args_t, Dimensions));
    v.push(field!(ol_kernel_launch_size_args_t, NumGroups));
    v.push(field!(ol_kernel_launch_size_args_t, GroupSize));
    v.push(field!(ol_kernel_launch_size_args_t, DynSharedMemory));
    v.push(size!(ol_result_t));
    v.push(size!(ol_device_handle_t));
    v.push(size!(ol_device_iterate_cb_t));
    v.push(size!(ol_host_function_cb_t));
    v.push(("sizeof(ol_device_fp_capability_flags_t)".into(), size_of::<u32>() as i64));
    v.push(("sizeof(ol_memory_register_flags_t)".into(), size_of::<u32>() as i64));
    v.push(size!(ol_alloc_type_t));
    v.push(size!(ol_errc_t));
    v.push(size!(bool));
    v
}

#[test]
fn every_value_and_layout_matches_debians_header() {
    if !present(HEADER, "liboffload-22-dev") {
        return;
    }
    let exe = scratch().join("layout");
    compile("tests/offload/layout.c", &exe, &[]);
    let out = run(&mut program(&exe));
    let header: Vec<(String, i64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').expect("NAME VALUE");
            (name.to_string(), value.parse().expect("a number"))
        })
        .collect();
    assert_eq!(header, ordo_values());
    // Every enumerator of the header is in layout.c (a value added upstream is noticed here).
    let text = std::fs::read_to_string(HEADER).unwrap();
    let enumerators = text
        .lines()
        .filter_map(|l| l.trim().split_once(" = ").map(|(n, _)| n))
        .filter(|n| n.starts_with("OL_") && !n.ends_with("_FORCE_UINT32"))
        .count();
    assert_eq!(enumerators, header.iter().filter(|(n, _)| n.starts_with("OL_")).count());
}

/// A directory of this test's own holding the library under its SONAME (`libordo.so.0`, the name
/// the programs linked against it ask for).
fn library_copy(name: &str) -> PathBuf {
    let dir = scratch().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(build_clib_with("offload").join("libordo.so"), dir.join("libordo.so.0")).expect("copy libordo.so");
    dir
}

/// (case, result, detail) lines of a conformance run.
fn results(stdout: &[u8]) -> Vec<(String, String, String)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, '\t');
            let mut next = || parts.next().unwrap_or("").to_string();
            (next(), next(), next())
        })
        .collect()
}

#[test]
fn conformance_suite_on_ordo_and_on_debians_liboffload() {
    if !present(HEADER, "liboffload-22-dev") || !present(&format!("{LLVM_LIB}/libLLVMOffload.so.22.1"), "liboffload-22")
    {
        return;
    }
    let lib = library_copy("lib-conformance");
    let dir = scratch();
    let ordo_exe = dir.join("conformance-ordo");
    let llvm_exe = dir.join("conformance-llvm");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    compile(
        "tests/offload/conformance.c",
        &ordo_exe,
        &[&format!("{}/libordo.so.0", lib.display()), &rpath, "-lpthread"],
    );
    compile(
        "tests/offload/conformance.c",
        &llvm_exe,
        &[&format!("-L{LLVM_LIB}"), "-lLLVMOffload", &format!("-Wl,-rpath,{LLVM_LIB}"), "-lpthread"],
    );
    // ordo's host platform: its program image is the built-in program's name.
    let image = dir.join("host-image");
    std::fs::write(&image, "ordo.builtin").unwrap();
    let ordo = run(program(&ordo_exe).env("OL_TEST_IMAGE", &image));
    let llvm = run(&mut program(&llvm_exe));
    let (ordo_results, llvm_results) = (results(&ordo.stdout), results(&llvm.stdout));
    assert!(ordo_results.len() >= 80, "the suite has {} cases", ordo_results.len());
    assert_eq!(ordo_results.len(), llvm_results.len());

    let mut table = String::from("case\tordo\tDebian liboffload 22.1.8\n");
    let (mut agree, mut diverge, mut one_side) = (0, 0, 0);
    for ((case, ours, _), (case2, theirs, detail)) in ordo_results.iter().zip(&llvm_results) {
        assert_eq!(case, case2);
        let theirs = if theirs == "FAIL" || theirs == "CRASH" { format!("{theirs}: {detail}") } else { theirs.clone() };
        match (ours.as_str(), theirs.as_str()) {
            (a, b) if a == b => agree += 1,
            ("SKIP", _) | (_, "SKIP") => one_side += 1,
            _ => diverge += 1,
        }
        table.push_str(&format!("{case}\t{ours}\t{theirs}\n"));
    }
    println!("{table}\n{agree} cases agree, {one_side} ran on one side only, {diverge} diverge");
    for (case, result, detail) in &ordo_results {
        assert!(result == "PASS" || result == "SKIP", "ordo: {case}: {result} {detail}");
    }
    let passed = ordo_results.iter().filter(|(_, r, _)| r == "PASS").count();
    assert!(passed >= 120, "ordo passes {passed} cases on the CPU");
    assert!(ordo.stderr.is_empty(), "ordo wrote to stderr:\n{}", String::from_utf8_lossy(&ordo.stderr));

    let expected = workspace().join("tests/offload/expected-cpu.tsv");
    if std::env::var("ORDO_BLESS").is_ok() {
        std::fs::write(&expected, &table).unwrap();
    }
    let want = std::fs::read_to_string(&expected).unwrap_or_default();
    assert_eq!(table, want, "the table differs from tests/offload/expected-cpu.tsv (ORDO_BLESS=1 rewrites it)");
}

/// The whole suite on ordo under valgrind memcheck (every child process too): no invalid read or
/// write, no use of uninitialised memory, anywhere in ordo's `ol*` paths on the CPU.
#[test]
fn conformance_suite_on_ordo_under_valgrind() {
    if !present(HEADER, "liboffload-22-dev") || !present("/usr/bin/valgrind", "valgrind") {
        return;
    }
    let lib = library_copy("lib-valgrind");
    let dir = scratch();
    let exe = dir.join("conformance-ordo-valgrind");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    compile("tests/offload/conformance.c", &exe, &[&format!("{}/libordo.so.0", lib.display()), &rpath, "-lpthread"]);
    let image = dir.join("host-image-valgrind");
    std::fs::write(&image, "ordo.builtin").unwrap();
    let out = program("valgrind")
        .args(["-q", "--error-exitcode=9", "--leak-check=no"])
        .arg(&exe)
        .env("OL_TEST_IMAGE", &image)
        .output()
        .expect("valgrind runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "valgrind reported:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(results(&out.stdout).iter().filter(|(_, r, _)| r == "PASS").count() >= 120, "{stdout}");
}

/// `ol*` results of threads that exited (`tests/offload/thread_errors.c`: 64 threads fail two
/// calls each and exit) stay readable and unchanged, and under valgrind nothing is definitely
/// lost: results are kept in one process-wide set, not a struct leaked per thread (which lost
/// 1,040 bytes for every thread that ever failed a call). Debian's liboffload runs it too.
#[test]
fn results_of_exited_threads_stay_valid_and_nothing_leaks() {
    if !present(HEADER, "liboffload-22-dev") || !present("/usr/bin/valgrind", "valgrind") {
        return;
    }
    let lib = library_copy("lib-thread-errors");
    let dir = scratch();
    let exe = dir.join("thread-errors-ordo");
    let rpath = format!("-Wl,-rpath,{}", lib.display());
    compile("tests/offload/thread_errors.c", &exe, &[&format!("{}/libordo.so.0", lib.display()), &rpath, "-lpthread"]);
    let plain = program(&exe).output().expect("the program runs");
    let stdout = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.status.success() && stdout.starts_with("PASS"), "{stdout}{}", String::from_utf8_lossy(&plain.stderr));
    let out = program("valgrind")
        .args(["-q", "--error-exitcode=9", "--leak-check=full", "--errors-for-leak-kinds=definite"])
        .args(["--show-leak-kinds=definite"])
        .arg(&exe)
        .output()
        .expect("valgrind runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "valgrind reported:\n{}", String::from_utf8_lossy(&out.stderr));
    if Path::new(&format!("{LLVM_LIB}/libLLVMOffload.so.22.1")).exists() {
        let theirs = dir.join("thread-errors-llvm");
        compile(
            "tests/offload/thread_errors.c",
            &theirs,
            &[&format!("-L{LLVM_LIB}"), "-lLLVMOffload", &format!("-Wl,-rpath,{LLVM_LIB}"), "-lpthread"],
        );
        // The reference library, not ordo: under a loaded CI machine it has failed once with no
        // output (it passed 3 of 3 right after); up to three runs, every failure shown.
        let mut failures = String::new();
        let passed = (0..3).any(|_| {
            let out = program(&theirs).output().expect("the program runs");
            if !out.status.success() {
                failures += &format!(
                    "{:?}: {}{}\n",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            out.status.success()
        });
        assert!(passed, "Debian's liboffload failed three runs:\n{failures}");
        if !failures.is_empty() {
            eprintln!("Debian's liboffload passed after failing: {failures}");
        }
    }
}

#[test]
fn gpu_kernels_build_with_clang() {
    if !present("/usr/bin/clang-22", "clang-22") {
        return;
    }
    let dir = scratch().join("kernels");
    let out = Command::new("bash").arg(workspace().join("tests/offload/build.sh")).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ptx = std::fs::read_to_string(dir.join("kernels.ptx")).unwrap();
    for entry in ["vector_add_f32(", "add_global(", "mixed(", "empty("] {
        assert!(ptx.contains(&format!(".entry {entry}")), "no {entry} in the PTX");
    }
    assert!(ptx.contains(".target sm_90") && ptx.contains("ol_test_global[16]"));
}

/// Upstream's own liboffload unit tests (LLVM 22.1.8 `offload/unittests/OffloadAPI`, 289 gtest
/// cases, fetched from Debian's source package and built unmodified by
/// `tests/offload/upstream/build.sh`) linked against ordo's `libordo.so` and run on ordo's CPU
/// device: every failure must be in `tests/offload/upstream/expected-cpu.tsv` with its reason,
/// and every test listed there must fail (`tests/offload/upstream/run.sh` checks both). Needs
/// llvm-22-dev (LLVMSupport), libgtest-dev and liboffload-22-dev, and the archive the apt
/// sources name, once (the tarball is cached).
#[test]
fn upstream_offload_api_unit_tests_on_the_cpu_device() {
    if !present(HEADER, "liboffload-22-dev")
        || !present("/usr/lib/llvm-22/lib/libLLVMSupport.a", "llvm-22-dev")
        || !present("/usr/include/gtest/gtest.h", "libgtest-dev")
    {
        return;
    }
    let lib = build_clib_with("offload");
    let out = scratch().join("upstream");
    let build = program("bash")
        .arg(workspace().join("tests/offload/upstream/build.sh"))
        .arg(&out)
        .arg(&lib)
        .output()
        .expect("bash runs");
    assert!(
        build.status.success(),
        "building upstream's OffloadAPI tests failed:\n{}{}",
        String::from_utf8_lossy(&build.stdout),
        String::from_utf8_lossy(&build.stderr)
    );
    let run = program("bash")
        .arg(workspace().join("tests/offload/upstream/run.sh"))
        .arg(&out)
        .arg("ordo host")
        .arg(workspace().join("tests/offload/upstream/expected-cpu.tsv"))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    assert!(run.status.success(), "{stdout}{}", String::from_utf8_lossy(&run.stderr));
}
