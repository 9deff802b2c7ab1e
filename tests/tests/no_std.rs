//! Builds and runs `tests/no_std_proof`: a `#![no_std]`, `#![no_main]` binary with its own panic
//! handler that links `ordo-core` (no features) and runs init -> alloc -> launch -> shutdown on
//! the host backend. It fails to compile if std ever creeps into the core.

use std::path::Path;
use std::process::Command;

#[test]
fn no_std_binary_builds_and_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("no_std_proof");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let build = Command::new(cargo)
        .args(["build", "--release", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(build.status.success(), "no_std proof failed to build:\n{}", String::from_utf8_lossy(&build.stderr));
    let run = Command::new(root.join("target/release/ordo-no-std-proof")).output().expect("proof binary runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "stdout: {stdout}");
    assert!(stdout.contains("init, alloc, copy, launch, verify, shutdown: ok"), "{stdout}");
}
