//! The MLIR runtime ABI (`mgpu*`, feature `mlir` of `ordo-clib`): the programs in `tests/mlir/`
//! compiled ahead of time with Debian's `mlir-22-tools` and linked against `libordo.so` with
//! `--no-undefined` (every `mgpu*` symbol the lowering declares must resolve), then run. Without
//! a CUDA device (CI) each must exit with status 1 and one clear "no CUDA device" line, never
//! crash; the same holds through `mlir-runner --shared-libs=libordo.so`. On the GPU machine
//! `tests/gpu/run.sh` runs them and `FileCheck` checks their output against the `CHECK` lines.
//! With `CI=true` a missing MLIR tool fails the test; otherwise it is skipped with the reason.

use std::path::{Path, PathBuf};
use std::process::Command;

use ordo_tests::{build_clib_with, program, workspace};

const MLIR_BIN: &str = "/usr/lib/llvm-22/bin";

/// Whether the MLIR tools are installed; with `CI=true` their absence fails the test.
fn tools_present() -> bool {
    let present = Path::new(MLIR_BIN).join("mlir-opt").exists() && Path::new(MLIR_BIN).join("mlir-translate").exists();
    if !present {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but mlir-22-tools is not installed");
        println!("skipped: mlir-22-tools is not installed ({MLIR_BIN})");
    }
    present
}

fn has_cuda_device() -> bool {
    // The programs say so themselves; a machine with a driver and a device runs them in
    // tests/gpu/run.sh instead.
    Path::new("/dev/nvidiactl").exists()
}

#[test]
fn mlir_programs_link_against_libordo_and_fail_cleanly_without_a_device() {
    if !tools_present() {
        return;
    }
    let lib = build_clib_with("mlir");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mlir-programs");
    let _ = std::fs::remove_dir_all(&out);
    let build = Command::new("bash")
        .arg(workspace().join("tests/mlir/build.sh"))
        .arg(&out)
        .arg(&lib)
        .output()
        .expect("bash runs");
    assert!(build.status.success(), "compiling tests/mlir failed:\n{}", String::from_utf8_lossy(&build.stderr));
    let mut programs: Vec<PathBuf> = std::fs::read_dir(workspace().join("tests/mlir"))
        .expect("tests/mlir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
        .map(|p| out.join(p.file_stem().expect("a file name")))
        .collect();
    programs.sort();
    assert!(programs.len() >= 4, "{programs:?}");
    if has_cuda_device() {
        println!("a CUDA device is present: tests/gpu/run.sh runs these programs and checks their output");
        return;
    }
    for path in &programs {
        let run = program(path).output().expect("the program starts");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{}: {:?}, stderr: {stderr}", path.display(), run.status);
        assert!(stderr.starts_with("ordo: no CUDA device ("), "{}: {stderr}", path.display());
        assert_eq!(stderr.lines().count(), 1, "{}: one line: {stderr}", path.display());
        assert!(run.stdout.is_empty(), "{}: nothing computed without a device", path.display());
    }
    // The same program through the JIT runner, with libordo.so in place of the CUDA wrappers.
    let lowered = Command::new(Path::new(MLIR_BIN).join("mlir-opt"))
        .arg(workspace().join("tests/mlir/roundtrip.mlir"))
        .arg("-gpu-lower-to-nvvm-pipeline=cubin-format=isa")
        .output()
        .expect("mlir-opt runs");
    assert!(lowered.status.success(), "{}", String::from_utf8_lossy(&lowered.stderr));
    let input = out.join("roundtrip.lowered.mlir");
    std::fs::write(&input, &lowered.stdout).expect("write the lowered program");
    let runner = Command::new(Path::new(MLIR_BIN).join("mlir-runner"))
        .arg(&input)
        .arg("--entry-point-result=i32")
        .arg(format!(
            "--shared-libs=/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so.22.1,{}",
            lib.join("libordo.so").display()
        ))
        .output()
        .expect("mlir-runner runs");
    let stderr = String::from_utf8_lossy(&runner.stderr);
    assert_eq!(runner.status.code(), Some(1), "mlir-runner: {stderr}");
    assert!(stderr.starts_with("ordo: no CUDA device ("), "mlir-runner: {stderr}");
}
