//! Builds and runs `tests/no_std_proof`: a `#![no_std]`, `#![no_main]` binary with its own panic
//! handler that links `ordo-core` (no features) and runs init -> alloc -> launch -> shutdown on
//! the host backend. It fails to compile if std ever creeps into the core.

use std::path::Path;
use std::process::Command;

/// Builds the crate in `tests/<dir>` (its own workspace) in release; returns its directory.
fn build_proof(dir: &str) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let build = Command::new(cargo)
        .args(["build", "--release", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(build.status.success(), "{dir} failed to build:\n{}", String::from_utf8_lossy(&build.stderr));
    root
}

#[test]
fn no_std_binary_builds_and_runs() {
    let root = build_proof("no_std_proof");
    let run = Command::new(root.join("target/release/ordo-no-std-proof")).output().expect("proof binary runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "stdout: {stdout}");
    assert!(stdout.contains("init, alloc, copy, launch, verify, shutdown: ok"), "{stdout}");
}

/// Links `tests/ffi_no_std_proof/main.c` against `library` and runs it.
fn link_and_run_c_proof(library: &Path, exe: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("ffi_no_std_proof");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ffi/include");
    let link = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(include)
        .arg(root.join("main.c"))
        .arg(library)
        .args(["-lc", "-o"])
        .arg(exe)
        .output()
        .expect("cc runs");
    assert!(link.status.success(), "linking failed:\n{}", String::from_utf8_lossy(&link.stderr));
    let run = Command::new(exe).output().expect("the proof program runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "stdout: {stdout} stderr: {}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("no_std C library: init, alloc, copy, launch, verify, shutdown: ok"), "{stdout}");
}

/// Builds `tests/ffi_no_std_proof` (a Rust firmware's staticlib over the `ordo-ffi` rlib without
/// std, with its own panic handler: `ordo-ffi` must bring none) and runs a C program linked
/// against it.
#[test]
fn no_std_c_abi_in_a_firmware_staticlib_builds_links_and_runs() {
    let root = build_proof("ffi_no_std_proof");
    link_and_run_c_proof(&root.join("target/release/libordo_ffi_no_std_proof.a"), &root.join("target/proof"));
}

/// The shipped C library without std: `ordo-clib --no-default-features` (panic = "abort", its
/// own aborting panic handler), linked into the same C program.
#[test]
fn shipped_no_std_c_library_builds_links_and_runs() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target_dir = workspace.join("target/clib-nostd");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let build = Command::new(cargo)
        .args(["build", "--release", "-p", "ordo-clib", "--no-default-features", "--target-dir"])
        .arg(&target_dir)
        .current_dir(&workspace)
        .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        build.status.success(),
        "ordo-clib without std failed to build:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    link_and_run_c_proof(&target_dir.join("release/libordo.a"), &target_dir.join("proof"));
}

/// Whether an optional tool or target is there; with `CI=true` a missing one fails the test.
fn required(what: &str, present: bool) -> bool {
    if !present {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {what} is missing");
        println!("skipped: {what} is missing");
    }
    present
}

/// `tests/cortex_m_proof` on an emulated Cortex-M4 (QEMU's mps2-an386 board, semihosting for
/// output and exit status): two cycles of init -> alloc -> copy -> launch -> verify -> clean
/// shutdown. Needs the thumbv7em-none-eabihf target and qemu-system-arm (`.ci/run` installs both).
#[test]
fn cortex_m4_proof_runs_under_qemu() {
    let qemu = Command::new("qemu-system-arm").arg("--version").output().is_ok_and(|o| o.status.success());
    let target = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("thumbv7em-none-eabihf"));
    if !required("qemu-system-arm", qemu) || !required("the thumbv7em-none-eabihf target", target) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cortex_m_proof");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // From inside the crate, so its .cargo/config.toml (target, linker script, capacities) applies.
    let build = Command::new(cargo)
        .args(["build", "--release"])
        .current_dir(&root)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("cargo runs");
    assert!(build.status.success(), "the Cortex-M proof failed to build:\n{}", String::from_utf8_lossy(&build.stderr));
    let elf = root.join("target/thumbv7em-none-eabihf/release/ordo-cortex-m-proof");
    let run = Command::new("timeout")
        .args(["120", "qemu-system-arm", "-machine", "mps2-an386", "-cpu", "cortex-m4", "-nographic"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(&elf)
        .output()
        .expect("qemu runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "stdout: {stdout} stderr: {}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("cortex-m4 cycle 2:") && stdout.contains("cortex-m4 proof: ok"), "{stdout}");
    print!("{stdout}");
}
