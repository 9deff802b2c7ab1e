//! Turns the `ORDO_MAX_*` environment variables into the table capacities of `ordo-core`, so a
//! user can size the fixed tables for their host without editing the source.

use std::{env, fs, path::PathBuf};

/// (constant, environment variable, default, what it bounds)
const CAPACITIES: &[(&str, &str, usize, &str)] = &[
    ("MAX_PLATFORMS", "ORDO_MAX_PLATFORMS", 4, "registered backends (platforms)"),
    ("MAX_DEVICES", "ORDO_MAX_DEVICES", 32, "devices over all platforms"),
    ("MAX_QUEUES", "ORDO_MAX_QUEUES", 256, "live queues"),
    ("MAX_EVENTS", "ORDO_MAX_EVENTS", 1024, "live events"),
    ("MAX_PROGRAMS", "ORDO_MAX_PROGRAMS", 1024, "loaded programs"),
    ("MAX_KERNELS", "ORDO_MAX_KERNELS", 4096, "kernels looked up in loaded programs"),
    ("MAX_ALLOCATIONS", "ORDO_MAX_ALLOCATIONS", 16384, "live memory allocations"),
    (
        "MAX_ORDERED_ALLOCATIONS",
        "ORDO_MAX_ORDERED_ALLOCATIONS",
        1024,
        "live queue-ordered allocations of devices with memory pools (CUDA), beside MAX_ALLOCATIONS",
    ),
    ("MAX_GRAPHS", "ORDO_MAX_GRAPHS", 64, "live graphs"),
    ("MAX_COMMUNICATORS", "ORDO_MAX_COMMUNICATORS", 64, "live communicators (one per rank of this process)"),
    (
        "MAX_CACHED_BLOCKS",
        "ORDO_MAX_CACHED_BLOCKS",
        64,
        "blocks of queue-ordered memory the cache keeps, over all queues (at most 16 per queue)",
    ),
    ("MAX_REPORT_FAILURES", "ORDO_MAX_REPORT_FAILURES", 32, "failures kept in a teardown report"),
];

fn main() {
    let mut out = String::new();
    for (name, var, default, what) in CAPACITIES {
        println!("cargo:rerun-if-env-changed={var}");
        let value = match env::var(var) {
            Ok(text) => match text.trim().parse::<usize>() {
                Ok(v) if v > 0 && (v < (1 << 16) || name.ends_with("BYTES")) => v,
                _ => panic!("{var}={text:?} must be a positive integer (tables: below 65536)"),
            },
            Err(_) => *default,
        };
        out.push_str(&format!(
            "/// Capacity for {what}: `{var}` at build time, default {default}.\npub const {name}: usize = {value};\n"
        ));
    }
    let path = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("capacity.rs");
    fs::write(path, out).expect("write capacity.rs");
}
