#!/usr/bin/env bash
# The fuzz targets that need a CUDA device, run on the GPU machine: `mgpu_api` (the MLIR runtime
# ABI, which exits without a device) and `offload_api` (liboffload's ol* API, which there also
# drives the CUDA device), each without a sanitizer and under AddressSanitizer.
#
# Built here (the GPU machine has no cargo registry):
#   for t in mgpu_api offload_api; do
#     (cd fuzz && cargo +nightly fuzz build $t --features gpu --sanitizer none) &&
#       strip --strip-debug -o gpu-bin/fuzz/${t}_plain fuzz/target/x86_64-unknown-linux-gnu/release/$t
#     (cd fuzz && cargo +nightly fuzz build $t --features gpu) &&
#       strip --strip-debug -o gpu-bin/fuzz/${t}_asan fuzz/target/x86_64-unknown-linux-gnu/release/$t
#   done
# Then there, from the repository root: SECONDS_EACH=90 bash tests/gpu/fuzz.sh [OUTDIR]
# (TARGETS="mgpu_api" runs one of them).
# Prints each run's last lines; a crash, a failed check or a hang (20 s on one input) fails the run
# and leaves its input in OUTDIR; the full logs (with ordo's error lines) are in OUTDIR too.
set -uo pipefail
out=${1:-/tmp/ordo-fuzz} each=${SECONDS_EACH:-90} status=0
mkdir -p "$out"
# CUDA maps its own large ranges: AddressSanitizer must leave the shadow gap unprotected, and the
# driver's allocations at exit are not leaks of ordo's.
export ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0:allocator_may_return_null=1
for t in ${TARGETS:-mgpu_api offload_api}; do
  for kind in plain asan; do
    bin=gpu-bin/fuzz/${t}_$kind
    [ -x "$bin" ] || { echo "FAIL $t ($kind): $bin missing"; status=1; continue; }
    corpus=$out/corpus_$t && mkdir -p "$corpus"
    # No seed corpus: on the GPU each final olShutDown releases the CUDA context, so offload_api
    # runs a few inputs a second and replaying its checked-in corpus alone would take minutes.
    "$bin" "$corpus" -max_total_time="$each" -timeout=20 -rss_limit_mb=8192 \
      -print_final_stats=1 -artifact_prefix="$out/${t}_${kind}_" >"$out/${t}_$kind.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then echo "PASS $t ($kind)"; else echo "FAIL $t ($kind): exit $rc"; status=1; fi
    grep -E -A2 '^(stat::number_of_executed_units|stat::new_units_added|Done|==[0-9]+==ERROR|SUMMARY|thread .* panicked)' \
      "$out/${t}_$kind.log" | head -12
  done
done
exit $status
