#!/usr/bin/env bash
# Runs the loom models of the lifecycle (core/tests/loom.rs) with small table capacities, in
# their own target directory. LOOM_MAX_PREEMPTIONS bounds the search (default 3).
#
# What loom checks is the code that ships, with one difference, and why it is equivalent:
# the shared entry is "fetch_add(shard, SeqCst); load(word, SeqCst)" and every change of the
# word is "CAS(word, SeqCst); load(shards, SeqCst)" — a store-buffering (Dekker) handshake. In
# the C++20 model that Rust uses, all SeqCst operations form one total order S, and a SeqCst load
# cannot read a value older than the last SeqCst store before it in S; so whichever of the two
# writes comes first in S is seen by the other side's load: the call backs off, or the shutdown
# (or writer) waits for it. loom models SeqCst accesses as AcqRel (a documented limitation) and
# would then explore the store-buffering outcome that the shipping code cannot have. Under
# cfg(loom) only, `handshake_fence()` puts a SeqCst fence between each write and the following
# load: the fence form of the same handshake, which forbids exactly that outcome and which loom
# models exactly. Every other instruction is the shipping code. (Shipping the fences would add
# an `mfence` to every call on x86, where the locked read-modify-write is already a full barrier.)
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
export ORDO_MAX_PLATFORMS=2 ORDO_MAX_DEVICES=2 ORDO_MAX_QUEUES=2 ORDO_MAX_EVENTS=2 ORDO_MAX_PROGRAMS=2
export ORDO_MAX_KERNELS=2 ORDO_MAX_ALLOCATIONS=2 ORDO_MAX_REPORT_FAILURES=4
cargo test -p ordo-core --test loom --release --target-dir target/loom -- --test-threads=1 "$@"
