#!/usr/bin/env bash
# Runs the loom models of the lifecycle (core/tests/loom.rs) with small table capacities, in
# their own target directory. LOOM_MAX_PREEMPTIONS bounds the search (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
export ORDO_MAX_PLATFORMS=2 ORDO_MAX_DEVICES=2 ORDO_MAX_QUEUES=2 ORDO_MAX_EVENTS=2 ORDO_MAX_PROGRAMS=2
export ORDO_MAX_KERNELS=2 ORDO_MAX_ALLOCATIONS=2 ORDO_MAX_REPORT_FAILURES=4
cargo test -p ordo-core --test loom --release --target-dir target/loom -- --test-threads=1 "$@"
