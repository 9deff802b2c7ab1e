#!/usr/bin/env bash
# The Rust benchmark (cuda_bench) and the MLIR one (mlir_bench, built here against
# gpu-bin/mlir/libordo.so.0) in N processes each, then each row's median over the processes
# (tests/gpu/bench_rows.sh). Neither benchmark takes `raw-first` yet: every process makes ordo's
# objects first. Run on the device machine from the repository root with gpu-bin/ carried:
#   bash tests/gpu/bench_processes.sh [N]   (default 6; about 75 s per pair of processes on an H200)
set -uo pipefail
n=${1:-6}
out=${OUT:-gpu-out}
mkdir -p "$out"
cuda_inc=$(for d in /usr/local/cuda/include /usr/include; do [ -f "$d/cuda.h" ] && echo "$d" && break; done)
cc -O2 -I"$cuda_inc" tests/gpu/mlir_bench.c gpu-bin/mlir/libordo.so.0 -lcuda -ldl -lpthread \
  -Wl,-rpath,"$PWD/gpu-bin/mlir" -o /tmp/mlir_bench || exit 1
cuda_logs=() mlir_logs=()
for i in $(seq "$n"); do
  gpu-bin/cuda_bench >"$out/cuda_bench_$i.log" 2>&1 || echo "cuda_bench process $i: exit $?"
  cuda_logs+=("$out/cuda_bench_$i.log")
  # (exit status 1 without upstream's wrappers, the baseline that is never carried: not a failure)
  /tmp/mlir_bench >"$out/mlir_bench_$i.log" 2>&1
  mlir_logs+=("$out/mlir_bench_$i.log")
done
echo "== cuda_bench, $n processes"
bash tests/gpu/bench_rows.sh "${cuda_logs[@]}"
echo "== mlir_bench, $n processes"
bash tests/gpu/bench_rows.sh "${mlir_logs[@]}"
