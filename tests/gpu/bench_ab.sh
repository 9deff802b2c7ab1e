#!/usr/bin/env bash
# Builds of libordo.so (two or more) through the same launch benchmarks (mlir_bench.c and
# offload_bench.c), run in turn in separate processes on the device machine — A B, then B A, ...
# (the order reversed every pass) — so that a change to the launch path is measured against its
# predecessor on the same host in the same minutes. Each run's rows are ratios against the
# driver measured in that process; this script prints them per library and run.
#
# Usage (from the repository root, with gpu-bin/ carried):
#   PASSES=3 bash tests/gpu/bench_ab.sh DIR_A DIR_B [DIR_C ...]
# DIR_X/mlir/libordo.so.0 (feature mlir) and, when present, DIR_X/offload/libordo.so.0 (feature
# offload) with the kernels at $PTX (default gpu-bin/offload/kernels.ptx) and DIR_X/libordo.a (the
# C-ABI benchmark, c_launch_bench.c, linked statically as run.sh links it). PASSES defaults to 3.
# tests/gpu/upstream/CudaRuntimeWrappers.cpp, when present, is built as mlir_bench's baseline.
# Then the first build against each other one in one process (inproc_ab.c), both orders.
set -uo pipefail
dirs=("$@") passes=${PASSES:-3} ptx=${PTX:-gpu-bin/offload/kernels.ptx}
[ ${#dirs[@]} -ge 2 ] || { echo "usage: bench_ab.sh DIR_A DIR_B [DIR ...]"; exit 2; }
cc=$(command -v cc || command -v gcc || true)
cuda_inc=$(for d in /usr/local/cuda/include /usr/include; do [ -f "$d/cuda.h" ] && echo "$d" && break; done)
[ -n "$cc" ] && [ -n "$cuda_inc" ] || { echo "FAIL: needs cc and cuda.h"; exit 1; }
upstream=()
if [ -f tests/gpu/upstream/CudaRuntimeWrappers.cpp ] && command -v g++ >/dev/null; then
  g++ -O2 -std=c++17 -fPIC -shared -I"$cuda_inc" tests/gpu/upstream/CudaRuntimeWrappers.cpp -lcuda \
    -o /tmp/ab_upstream.so && upstream=(/tmp/ab_upstream.so)
fi
# offload_bench's floor rows: a forwarding call in its own shared object (launch_shim.c).
mkdir -p /tmp/ab_shim
"$cc" -O2 -shared -fPIC -I"$cuda_inc" tests/gpu/launch_shim.c -ldl -o /tmp/ab_shim/liblaunch_shim.so || exit 1
for side in "${!dirs[@]}"; do
  dir=$(realpath "${dirs[$side]}")
  "$cc" -O2 -I"$cuda_inc" tests/gpu/mlir_bench.c "$dir/mlir/libordo.so.0" -lcuda -ldl -lpthread \
    -Wl,-rpath,"$dir/mlir" -o /tmp/ab_mlir_$side || exit 1
  if [ -f "$dir/offload/libordo.so.0" ]; then
    "$cc" -O2 -I"$cuda_inc" tests/gpu/offload_bench.c "$dir/offload/libordo.so.0" -lcuda \
      -Wl,--no-as-needed /tmp/ab_shim/liblaunch_shim.so -Wl,--as-needed -Wl,-rpath,"$dir/offload" \
      -Wl,-rpath,/tmp/ab_shim -o /tmp/ab_offload_$side || exit 1
  fi
  if [ -f "$dir/libordo.a" ]; then
    "$cc" -std=c99 -O2 -D_POSIX_C_SOURCE=200809L -I ffi/include tests/gpu/c_launch_bench.c "$dir/libordo.a" \
      -ldl -lgcc_s -lutil -lrt -lpthread -lm -lc -o /tmp/ab_c_$side || exit 1
  fi
done
run() { # side, run number
  echo "== ${dirs[$1]}, run $2"
  /tmp/ab_mlir_$1 "${upstream[@]}" | grep -E '^\| (mgpuLaunchKernel|host time|diagnosis|synchronous launch sequence vs)'
  if [ -x /tmp/ab_offload_$1 ]; then
    /tmp/ab_offload_$1 "$ptx" | grep -E '^\| (empty kernel|vector_add_f32|same CUfunction|diagnosis|floor|olLaunchKernel vs)'
  fi
  if [ -x /tmp/ab_c_$1 ]; then
    /tmp/ab_c_$1 | grep -E '^\| C ABI'
  fi
}
order=("${!dirs[@]}")
for i in $(seq 1 "$passes"); do
  for side in "${order[@]}"; do run "$side" "$i"; done
  order=($(printf '%s\n' "${order[@]}" | tac))
done
# The first build against each other in one process (tests/gpu/inproc_ab.c), both orders: what
# moves between processes moves both alike, so "B's ratio / A's ratio" tells builds apart more
# finely than the runs above.
if [ -f "${dirs[0]}/offload/libordo.so.0" ] &&
  "$cc" -O2 -I"$cuda_inc" tests/gpu/inproc_ab.c -lcuda -ldl -o /tmp/ab_inproc; then
  first=$(realpath "${dirs[0]}/offload/libordo.so.0")
  for side in "${!dirs[@]}"; do
    if [ "$side" = 0 ] || [ ! -f "${dirs[$side]}/offload/libordo.so.0" ]; then continue; fi
    other=$(realpath "${dirs[$side]}/offload/libordo.so.0")
    echo "== in one process: ${dirs[0]} and ${dirs[$side]}"
    /tmp/ab_inproc "$ptx" "$first" "$other"
    /tmp/ab_inproc "$ptx" "$other" "$first"
  done
fi
