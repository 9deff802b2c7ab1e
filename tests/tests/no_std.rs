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

/// Builds `tests/ffi_no_std_proof` (the C library without std: a `no_std` staticlib of `ordo-ffi`
/// with the host backend only and its own panic handler) and runs a C program linked against it.
#[test]
fn no_std_c_library_builds_links_and_runs() {
    let root = build_proof("ffi_no_std_proof");
    let exe = root.join("target/proof");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ffi/include");
    let link = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(include)
        .arg(root.join("main.c"))
        .arg(root.join("target/release/libordo_ffi_no_std_proof.a"))
        .args(["-lc", "-o"])
        .arg(&exe)
        .output()
        .expect("cc runs");
    assert!(link.status.success(), "linking failed:\n{}", String::from_utf8_lossy(&link.stderr));
    let run = Command::new(&exe).output().expect("the proof program runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "stdout: {stdout} stderr: {}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("no_std C library: init, alloc, copy, launch, verify, shutdown: ok"), "{stdout}");
}
