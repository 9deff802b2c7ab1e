//! The guide's C build blocks, run as written: every ```sh block of docs/c-abi.md,
//! docs/liboffload.md and docs/mlir.md (in that order) that starts with
//! `cargo build --release -p ordo-clib` runs in `bash -euo pipefail` from the repository root,
//! and what it builds must start: the static and shared `vector_add` examples and
//! the `ol*` example print their results, the MLIR program loads `libordo.so.0` through its rpath
//! (and, without a CUDA device, says so in one line). A block needing liboffload's header or the
//! MLIR tools is skipped with the reason when they are missing, and fails with `CI=true`.

use std::path::Path;

use ordo_tests::{program, workspace};

/// The guide's C build blocks, in order.
fn c_blocks() -> Vec<String> {
    let guide: String = ["docs/c-abi.md", "docs/liboffload.md", "docs/mlir.md"]
        .iter()
        .map(|chapter| std::fs::read_to_string(workspace().join(chapter)).expect("a chapter of the guide"))
        .collect();
    guide
        .split("```sh\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .filter(|block| block.starts_with("cargo build --release -p ordo-clib"))
        .map(str::to_owned)
        .collect()
}

/// Whether what a block needs is installed; with `CI=true` its absence fails the test.
fn needs(block: &str, marker: &str, path: &str, package: &str) -> bool {
    if !block.contains(marker) || Path::new(path).exists() {
        return true;
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {package} is not installed ({path})");
    println!("skipped a guide block: {package} is not installed ({path})");
    false
}

fn run_block(block: &str) -> String {
    let out = program("bash")
        .args(["-euo", "pipefail", "-c", block])
        .current_dir(workspace())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "guide block failed ({:?}):\n{block}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stdout
}

/// The dynamic loader's view of `program`: every library it needs, and where it was found.
fn loaded_libraries(path: &Path) -> String {
    let out = program(path).env("LD_TRACE_LOADED_OBJECTS", "1").output().expect("the loader runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn readme_c_build_blocks_run_as_written() {
    let blocks = c_blocks();
    assert_eq!(blocks.len(), 3, "the C ABI, liboffload and MLIR blocks: {blocks:#?}");
    let release = workspace().join("target/release");

    // The C ABI: the example linked statically and against the shared library by its SONAME.
    let stdout = run_block(&blocks[0]);
    assert_eq!(stdout.matches("65536 of 65536 elements correct").count(), 2, "{stdout}");
    let release = release.canonicalize().expect("target/release");
    let link = std::fs::read_link(release.join("libordo.so.0")).expect("libordo.so.0 beside libordo.so");
    assert_eq!(link, Path::new("libordo.so"));
    let libs = loaded_libraries(&workspace().join("target/vector_add_shared"));
    assert!(libs.contains(&format!("libordo.so.0 => {}", release.join("libordo.so.0").display())), "{libs}");

    // liboffload's API: the example lists ordo's host device and copies to it and back.
    if needs(&blocks[1], "llvm-22/include", "/usr/lib/llvm-22/include/offload/OffloadAPI.h", "liboffload-22-dev") {
        let stdout = run_block(&blocks[1]);
        assert!(stdout.contains("ordo host: host CPU"), "{stdout}");
        assert!(stdout.lines().all(|l| l.ends_with("16 bytes there and back match")), "{stdout}");
    }

    // MLIR's runtime ABI: the program is linked, and starts on libordo.so.0.
    if needs(&blocks[2], "mlir-opt-22", "/usr/bin/mlir-opt-22", "mlir-22-tools") {
        run_block(&blocks[2]);
        let roundtrip = workspace().join("target/roundtrip");
        let libs = loaded_libraries(&roundtrip);
        assert!(libs.contains(&format!("libordo.so.0 => {}", release.join("libordo.so.0").display())), "{libs}");
        if !Path::new("/dev/nvidiactl").exists() {
            let run = program(&roundtrip).output().expect("the program starts");
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert_eq!(run.status.code(), Some(1), "{stderr}");
            assert!(stderr.starts_with("ordo: no CUDA device ("), "{stderr}");
        }
    }
}
