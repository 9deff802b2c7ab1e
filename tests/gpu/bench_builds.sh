#!/usr/bin/env bash
# One Rust benchmark (an example binary that prints BENCH_JSON lines: ordered_memory_bench,
# graph_bench, ...) from two or more builds, run in turn in separate processes on the device
# machine (A B, then B A, ... — the order reversed every pass), so that a change is measured
# against its predecessor on the same host in the same minutes. Each process's ratios are
# against the driver measured in that process; this script prints its BENCH_JSON lines per
# build and pass.
#
# Usage (from the repository root, the builds' binaries carried):
#   PASSES=3 bash tests/gpu/bench_builds.sh BENCH DIR_A DIR_B [DIR ...]
# runs DIR_X/BENCH for each build. PASSES defaults to 3.
set -uo pipefail
bench=${1:?usage: bench_builds.sh BENCH DIR_A DIR_B [DIR ...]}
shift
dirs=("$@") passes=${PASSES:-3}
[ ${#dirs[@]} -ge 2 ] || { echo "usage: bench_builds.sh BENCH DIR_A DIR_B [DIR ...]"; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pass in $(seq "$passes"); do
  order=("${dirs[@]}")
  if [ $((pass % 2)) -eq 0 ]; then
    order=()
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do order+=("${dirs[$i]}"); done
  fi
  for dir in "${order[@]}"; do
    echo "== $bench, build $dir, pass $pass"
    "$dir/$bench" >"$log" 2>&1 || echo "$dir/$bench: exit $?"
    grep '^BENCH_JSON' "$log" || tail -5 "$log"
  done
done
