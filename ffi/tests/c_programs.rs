//! C and C++ programs compiled against `include/ordo.h`, linked with `libordo.a`, and run:
//! every way of leaving a program, the bad-input table, and threads. Each must exit 0 with
//! nothing on stderr. Where valgrind is installed each also runs under memcheck with zero errors
//! (with `CI=true` valgrind is required), and strace checks that ordo starts no process (threads
//! only) and opens no file other than shared libraries and the host device's property files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LINK_LIBS: &[&str] = &["-ldl", "-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-lc"];

fn ffi_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `target/<profile>/` with a fresh `libordo.a` and `libordo.so`. They are `ordo-clib`'s, which
/// `cargo test -p ordo-ffi` does not build, so they are built here, once per test run, in the
/// same profile.
fn lib_dir() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("test binary path");
            let dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["build", "-p", "ordo-clib", "--lib"]);
            if dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let out = cmd.output().expect("cargo runs");
            assert!(out.status.success(), "building libordo.a failed:\n{}", String::from_utf8_lossy(&out.stderr));
            dir
        })
        .clone()
}

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("c-programs");
    std::fs::create_dir_all(&dir).expect("create the output directory");
    dir
}

/// Whether an optional tool is installed; with `CI=true` a missing one fails the test.
fn tool(name: &str) -> bool {
    let found = Command::new(name).arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but {name} is not installed");
        println!("skipped the {name} part: {name} is not installed");
    }
    found
}

/// Compiles `source` (C99, or C++17 for `.cpp`) with every warning as an error and links it
/// statically with libordo.a.
fn build(source: &str) -> PathBuf {
    build_with(source, &[])
}

/// As `build`, with more linker flags.
fn build_with(source: &str, flags: &[&str]) -> PathBuf {
    let src = ffi_dir().join("tests/c").join(source);
    let cxx = source.ends_with(".cpp");
    let exe = out_dir().join(source.replace('.', "_"));
    let lib = lib_dir().join("libordo.a");
    assert!(lib.exists(), "{} was not built", lib.display());
    let mut cmd = Command::new(if cxx { "c++" } else { "cc" });
    cmd.arg(if cxx { "-std=c++17" } else { "-std=c99" })
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-g", "-O1"])
        .arg("-I")
        .arg(ffi_dir().join("include"))
        .arg("-I")
        .arg(ffi_dir().join("tests/c"))
        .arg(&src)
        .arg(&lib)
        .args(LINK_LIBS)
        .args(flags)
        .arg("-o")
        .arg(&exe);
    let out = cmd.output().expect("the C compiler runs");
    assert!(out.status.success(), "compiling {source} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

fn assert_quiet_success(what: &str, out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "{what}: status {:?}\nstdout:\n{}\nstderr:\n{stderr}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Runs the program plainly, then under valgrind memcheck when available.
fn run(source: &str) {
    run_with(source, &[]);
}

/// As `run`, with arguments.
fn run_with(source: &str, args: &[&Path]) {
    run_built(source, &build(source), args);
}

/// Runs `exe` (built from `source`) with `args`, then under valgrind as `run` does.
fn run_built(source: &str, exe: &Path, args: &[&Path]) {
    let out = Command::new(exe).args(args).env_remove("RUST_LOG").output().expect("the program runs");
    assert_quiet_success(source, &out);
    if tool("valgrind") {
        let out = Command::new("valgrind")
            .args(["-q", "--error-exitcode=97", "--leak-check=full", "--errors-for-leak-kinds=definite"])
            .args(["--show-leak-kinds=definite"])
            .arg(exe)
            .args(args)
            .output()
            .expect("valgrind runs");
        assert_quiet_success(&format!("{source} under valgrind"), &out);
    }
}

#[test]
fn shutdown_from_main() {
    run("exit_main.c");
}

#[test]
fn shutdown_from_an_atexit_handler() {
    run("exit_atexit.c");
}

#[test]
fn shutdown_from_a_cxx_static_destructor_and_calls_after_it() {
    run("exit_cxx_static.cpp");
}

#[test]
fn shutdown_twice_and_reinit() {
    run("exit_twice.c");
}

#[test]
fn never_shut_down() {
    run("exit_never.c");
}

#[test]
fn shutdown_at_exit_hook_runs_before_earlier_handlers() {
    run("exit_hook.c");
}

#[test]
fn bad_input_table() {
    run("bad_input.c");
}

/// Host kernels written in C (`ordo_host_program_register`): registered, loaded by name,
/// launched with checked sizes and their layout, a kernel's error status at the synchronise,
/// and every refusal of the registration.
#[test]
fn host_kernels_written_in_c() {
    run("host_kernels.c");
}

/// `tests/c/<source>` built as a shared object `name` (a host image), with `defines`.
fn shared_object(source: &str, name: &str, defines: &[&str]) -> PathBuf {
    let so = out_dir().join(name);
    let out = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-shared", "-fPIC"])
        .args(defines)
        .arg("-I")
        .arg(ffi_dir().join("include"))
        .arg(ffi_dir().join("tests/c").join(source))
        .arg("-o")
        .arg(&so)
        .output()
        .expect("the C compiler runs");
    assert!(out.status.success(), "compiling {name} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    so
}

/// Host images: `host_image_kernels.c` built as a shared object (and once without its kernel
/// table), read into memory and loaded on the host device by `host_image.c`.
#[test]
fn host_images_loaded_from_memory() {
    let image = shared_object("host_image_kernels.c", "host_image.so", &[]);
    let bare = shared_object("host_image_kernels.c", "host_image_bare.so", &["-DNO_TABLE"]);
    run_with("host_image.c", &[&image, &bare]);
}

/// A host image whose constructor forks, registers a C table and tries to load another image,
/// all while ordo loads it (`host_image_init.c`; the program exports its symbols to the image).
#[test]
fn host_image_initialisers_may_call_ordo_and_fork() {
    let image = shared_object("host_image_ctor.c", "host_image_ctor.so", &[]);
    let other = shared_object("host_image_kernels.c", "host_image_other.so", &[]);
    let exe = build_with("host_image_init.c", &["-rdynamic"]);
    run_built("host_image_init.c", &exe, &[&image, &other]);
}

#[test]
fn threads_churning_through_the_c_api() {
    run("threads.c");
}

#[test]
fn no_process_spawned_and_no_file_read_but_libraries() {
    if !tool("strace") {
        return;
    }
    let exe = build("exit_main.c");
    let log = out_dir().join("strace.log");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=execve,execveat,fork,vfork,clone,clone3,open,openat,openat2", "-o"])
        .arg(&log)
        .arg(&exe)
        .output()
        .expect("strace runs");
    assert_quiet_success("exit_main.c under strace", &out);
    let trace = std::fs::read_to_string(&log).expect("strace log");
    let mut execs = 0;
    // Once a driver library is open, its own probing of the machine (libnuma and the HSA
    // runtime read /proc/self/status and /sys/devices/system and open /dev/kfd at hsa_init) is
    // the driver's, not ordo's: opens under /proc, /sys and /dev are allowed from then on.
    let mut driver_open = false;
    for line in trace.lines() {
        let call = line.split_whitespace().nth(1).unwrap_or("");
        if call.starts_with("execve") {
            execs += 1;
            continue;
        }
        // Threads are allowed (each host queue has one); a new process is not.
        let thread = call.starts_with("clone") && line.contains("CLONE_THREAD");
        assert!(
            !call.starts_with("fork") && !call.starts_with("vfork") && (thread || !call.starts_with("clone")),
            "{line}"
        );
        if call.starts_with("open") {
            let path = line.split('"').nth(1).unwrap_or("");
            let library = path == "/etc/ld.so.cache" || path.contains(".so") || path.ends_with("/");
            let probe = driver_open && ["/proc/", "/sys/", "/dev/"].iter().any(|p| path.starts_with(p));
            // What the host device reports about the machine (clock, vendor, memory: the least of
            // MemTotal, the process's cgroup limits and its RLIMIT_AS / RLIMIT_DATA).
            let host_info = [
                "/proc/cpuinfo",
                "/proc/meminfo",
                "/proc/self/limits",
                "/proc/self/cgroup",
                "/sys/fs/cgroup/",
                "/sys/devices/system/cpu/",
                "/sys/firmware/dmi/",
            ]
            .iter()
            .any(|p| path.starts_with(p));
            assert!(library || probe || host_info, "ordo opened a file that is not a shared library: {line}");
            driver_open |= (path.contains("libhsa-runtime64") || path.contains("libcuda")) && !line.contains("ENOENT");
        }
    }
    assert_eq!(execs, 1, "only the program itself is executed:\n{trace}");
}

#[test]
fn libordo_registers_no_static_destructors_or_constructors() {
    let lib = lib_dir().join("libordo.a");
    let dir = out_dir().join("ar");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("ar").arg("x").arg(&lib).current_dir(&dir).output().expect("ar runs");
    assert!(out.status.success());
    let mut objects = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let sections = Command::new("readelf").arg("-SW").arg(&path).output().expect("readelf runs");
        let text = String::from_utf8_lossy(&sections.stdout);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        objects += 1;
        assert!(!text.contains(".fini_array"), "{name} registers a static destructor");
        // Rust's std records argc/argv from .init_array; nothing else may run before main. In
        // std's own object, or (with fat LTO, as in release builds) in the one object std was
        // merged into: every .init_array entry there must be std's argv hook.
        if text.contains(".init_array") && !name.starts_with("std-") {
            let relocations = Command::new("readelf").arg("-rW").arg(&path).output().expect("readelf runs");
            let relocations = String::from_utf8_lossy(&relocations.stdout);
            let mut in_init = false;
            let mut entries = 0;
            for line in relocations.lines() {
                if line.starts_with("Relocation section") {
                    in_init = line.contains(".rela.init_array");
                } else if in_init && line.split_whitespace().nth(2).is_some_and(|t| t.starts_with("R_")) {
                    entries += 1;
                    assert!(line.contains("ARGV_INIT_ARRAY"), "{name} registers a static constructor: {line}");
                }
            }
            assert!(entries > 0, "{name} has an .init_array whose entries readelf does not show");
        }
    }
    assert!(objects > 10);
}

fn run_example(exe: &Path, env: &[(&str, &Path)]) {
    let mut cmd = Command::new(exe);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the example runs");
    assert_quiet_success("examples/c/vector_add", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("platform host device 0") && stdout.contains("65536 of 65536 elements correct"),
        "{stdout}"
    );
    assert!(stdout.contains("teardown: 3 allocations released, 0 failures"), "{stdout}");
}

/// docs/c-abi.md's build line for the example, with this run's library directory.
#[test]
fn example_builds_with_the_readme_line_and_runs() {
    let exe = out_dir().join("vector_add_static");
    let example = ffi_dir().join("../examples/c/vector_add.c");
    let out = Command::new("cc")
        .args(["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(ffi_dir().join("include"))
        .arg(&example)
        .arg(lib_dir().join("libordo.a"))
        .args(LINK_LIBS)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run_example(&exe, &[]);
}

/// README's C quick start, taken from README.md as it stands, compiled with every warning as
/// an error, linked with libordo.a, and run: it prints the sums and exits 0, silent on stderr.
#[test]
fn readme_c_quick_start_builds_and_runs() {
    let readme = std::fs::read_to_string(ffi_dir().join("../README.md")).expect("README.md");
    let section = readme.split("## Quick start (C)").nth(1).expect("README has a C quick start");
    let code = section.split("```c\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a ```c block");
    let src = out_dir().join("quickstart.c");
    std::fs::write(&src, code).expect("write quickstart.c");
    let exe = out_dir().join("quickstart");
    let out = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(ffi_dir().join("include"))
        .arg(&src)
        .arg(lib_dir().join("libordo.a"))
        .args(LINK_LIBS)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(&exe).output().expect("the quick start runs");
    assert_quiet_success("README's C quick start", &out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "11 22 33 44\n");
}

/// `ffi/install.sh` into a prefix, then the example built with `pkg-config --cflags --libs ordo`
/// against the shared library.
#[test]
fn install_and_pkg_config() {
    if !tool("pkg-config") {
        return;
    }
    let prefix = out_dir().join("prefix");
    let _ = std::fs::remove_dir_all(&prefix);
    let out = Command::new("bash")
        .arg(ffi_dir().join("install.sh"))
        .arg(&prefix)
        .arg(lib_dir())
        .output()
        .expect("install.sh runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pkg_config_path = prefix.join("lib/pkgconfig");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "ordo"])
        .env("PKG_CONFIG_PATH", &pkg_config_path)
        .output()
        .expect("pkg-config runs");
    assert!(flags.status.success(), "{}", String::from_utf8_lossy(&flags.stderr));
    let flags = String::from_utf8_lossy(&flags.stdout).to_string();
    assert!(flags.contains("-lordo") && flags.contains(&format!("-I{}", prefix.join("include").display())), "{flags}");
    let exe = out_dir().join("vector_add_shared");
    let out = Command::new("cc")
        .args(["-std=c99", "-O2"])
        .arg(ffi_dir().join("../examples/c/vector_add.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("cc runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run_example(&exe, &[("LD_LIBRARY_PATH", &prefix.join("lib"))]);
}

/// `libordo.so` carries a SONAME (`libordo.so.0`), so programs record the ABI they linked.
#[test]
fn the_shared_library_has_a_soname() {
    if !tool("readelf") {
        return;
    }
    let lib = lib_dir().join("libordo.so");
    let out = Command::new("readelf").arg("-d").arg(&lib).output().expect("readelf runs");
    let dynamic = String::from_utf8_lossy(&out.stdout);
    assert!(dynamic.contains("Library soname: [libordo.so.0]"), "{}:\n{dynamic}", lib.display());
}
