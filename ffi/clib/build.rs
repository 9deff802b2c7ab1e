//! Gives `libordo.so` a SONAME (`libordo.so.0`, the ABI's major version), so programs linked
//! against it record the ABI they were built for and `ldconfig` can manage the library; and puts
//! the link `libordo.so.0 -> libordo.so` beside the library in cargo's output directory
//! (`target/<profile>/`), so a program linked there finds the name it recorded (with an rpath or
//! `LD_LIBRARY_PATH`) straight after `cargo build`, as it would in an installed layout.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "android" || os.ends_with("bsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libordo.so.0");
        if let Some(dir) = profile_dir() {
            link_soname(&dir);
        }
    }
}

/// `target/[<triple>/]<profile>/`: `OUT_DIR` is `<that>/build/ordo-clib-<hash>/out`. `None` when
/// the layout is not cargo's usual one (then no link is made; the library itself is unaffected).
fn profile_dir() -> Option<PathBuf> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR")?);
    let build = out.parent()?.parent()?;
    if build.file_name()? != "build" {
        return None;
    }
    Some(build.parent()?.to_path_buf())
}

/// A relative link, so the directory can be moved or copied with `cp -a`. The library is written
/// after this script runs; until then the link dangles, which is harmless.
#[cfg(unix)]
fn link_soname(dir: &Path) {
    let link = dir.join("libordo.so.0");
    if std::fs::read_link(&link).is_ok_and(|to| to == Path::new("libordo.so")) {
        return;
    }
    let _ = std::fs::remove_file(&link);
    if let Err(e) = std::os::unix::fs::symlink("libordo.so", &link) {
        println!("cargo:warning=could not link {} to libordo.so: {e}", link.display());
    }
}

#[cfg(not(unix))]
fn link_soname(_dir: &Path) {}
