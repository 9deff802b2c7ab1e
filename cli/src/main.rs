//! `ordo`: show the platforms and devices (`info`), or run a verified vector add and reduction on
//! every device and print the ordered teardown (`demo`).

mod bench;
mod demo;
mod info;
mod trace;

/// The process-wide runtime shared with the C library: host backend, plus CUDA when present.
fn runtime() -> &'static ordo_core::Runtime {
    ordo::runtime()
}

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: bench::CountingAllocator = bench::CountingAllocator;

const USAGE: &str = "usage: ordo <command>

commands:
  info [--json]   platforms, devices and their properties; absent platforms with the reason
  bench [--json]  the cost of ordo itself, each figure against a baseline measured in the
                  same run (see docs/PERFORMANCE.md)
  demo [--trace FILE]
                  on every device: load a program, run a vector add and a reduction on real
                  data, check every element, then shut down and print the teardown in order;
                  with --trace, write the run's timeline to FILE (Chrome trace-event JSON:
                  open it in Perfetto or chrome://tracing)
  trace summary FILE
                  a trace's top kernels and copies by device time, bandwidths, call counts
  trace check FILE
                  every event well formed, device work after its call, no overlap on a queue

tracing: ORDO_TRACE=FILE traces any run (docs/tracing.md)

logging: RUST_LOG=ordo=debug (env_logger)";

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match words.as_slice() {
        ["info"] => info::run(false),
        ["info", "--json"] => info::run(true),
        ["demo"] => demo::run(),
        ["demo", "--trace", path] => demo::run_traced(path),
        ["trace", "summary", path] => trace::summary(path),
        ["trace", "check", path] => trace::check(path),
        ["bench"] => bench::run(false),
        ["bench", "--json"] => bench::run(true),
        ["help" | "--help" | "-h"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ordo: {message}");
            ExitCode::FAILURE
        }
    }
}
