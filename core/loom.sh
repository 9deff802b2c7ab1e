#!/usr/bin/env bash
# Runs the loom models of the lifecycle (core/tests/loom.rs) and of queue-ordered memory on a
# device with a pool (core/tests/loom_ordered.rs) with small table capacities, and of the host
# queues without threads (core/tests/loom_deferred.rs), in their own target directory.
# LOOM_MAX_PREEMPTIONS bounds the search (default 3).
#
# What loom checks is the code that ships, with three differences, and why each is equivalent.
#
# 1. Hashed shards (builds without std; threads beyond the per-thread slots): the shared entry is
#    "fetch_add(shard, SeqCst); load(word, SeqCst)" and a writer does "CAS(word, SeqCst);
#    load(shards, SeqCst)" — a store-buffering (Dekker) handshake. In the C++20 model that Rust
#    uses, all SeqCst operations form one total order S, and a SeqCst load cannot read a value
#    older than the last SeqCst store before it in S; so whichever write comes first in S is seen
#    by the other side's load. loom models SeqCst accesses as AcqRel (a documented limitation)
#    and would explore the outcome the shipping code cannot have, so under cfg(loom) only,
#    `handshake_fence()` puts a SeqCst fence after the reader's increment: the fence form of the
#    same handshake, which loom models exactly. (The writer's side already ends in a SeqCst fence
#    in shipping builds with std; without std it gets the same loom-only fence.)
# 2. Per-thread slots (std builds): the reader does "store(slot, Relaxed); compiler fence;
#    load(word)" and the writer "CAS(word); membarrier(PRIVATE_EXPEDITED); SeqCst fence; load
#    (slots)". membarrier runs a full barrier on every CPU running a thread of the process, which
#    is the reader-side fence the compiler fence leaves out, placed at a point between the
#    writer's CAS and its loads; loom cannot run a system call, so it checks the mode that ships
#    where membarrier is missing: a SeqCst fence on both sides (`slots::light(false)`). The
#    barrier's semantics are the kernel's contract (membarrier(2)); the rest is the same code.
#
# 3. `DeferredHost` (core/tests/loom_deferred.rs): its two locks are loom's mutexes under cfg(loom)
#    (`sync::Mutex`, spin's otherwise), and `sync::preemption_point()` lets loom run another
#    thread between taking a piece of work off the list and running it (real threads can be
#    preempted anywhere; loom only switches at its own operations, and that window has none).
#    Its waiting list holds 3 pieces instead of 16 so that the models reach a full list.
#    Dropping the running lock from `run` fails the model of two synchronises; a wait that
#    does not run the recording queue's work through the record fails the event model.
#
# 4. The queue-ordered allocations' table (core/tests/loom_ordered.rs): its lock is loom's mutex
#    under cfg(loom) (`sync::Mutex`, spin's otherwise) and its count loom's atomic, so that the
#    models see the shared calls that change the table race each other and the teardown.
#
# Planting the bug back is caught: dropping the reader's fence (slots), the writer's fence, or
# the hashed entry's fence each fails three models. The models run three times: every thread on
# its own slot, none (hashed shards only), and mixed (ORDO_LOOM_COUNTERS, read at build time).
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
export ORDO_MAX_PLATFORMS=2 ORDO_MAX_DEVICES=2 ORDO_MAX_QUEUES=2 ORDO_MAX_EVENTS=2 ORDO_MAX_PROGRAMS=2
export ORDO_MAX_KERNELS=2 ORDO_MAX_ALLOCATIONS=2 ORDO_MAX_ORDERED_ALLOCATIONS=2 ORDO_MAX_REPORT_FAILURES=4
# Calls in flight are counted per thread (std builds) or in hashed shards (no std, and threads
# beyond the slots); the models run with every thread on its own counter, with none, and mixed.
echo "loom: clippy on the loom build (the models and the core as loom builds it)"
cargo clippy -p ordo-core --tests --release --target-dir target/loom -- -D warnings
for counters in slots hashed mixed; do
    echo "loom: calls in flight counted in: $counters"
    ORDO_LOOM_COUNTERS=$counters cargo test -p ordo-core --test loom --test loom_ordered --release \
        --target-dir target/loom -- --test-threads=1 "$@"
done
echo "loom: DeferredHost"
cargo test -p ordo-core --test loom_deferred --release --target-dir target/loom -- --test-threads=1 "$@"
