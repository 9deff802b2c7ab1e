#!/usr/bin/env bash
# The GPU pass, run on the device machine from the repository root with gpu-bin/ carried
# (built by tests/gpu/build.sh). Writes logs to $OUT (or ./gpu-out) and prints a summary.
# Exit status: 0 when every step passed.
set -uo pipefail
out=${OUT:-gpu-out}
mkdir -p "$out"
status=0
step() { # name, command...
  local name=$1; shift
  local t0=$(date +%s%N)
  "$@" >"$out/$name.log" 2>"$out/$name.err"
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc -eq 0 ]; then echo "PASS $name (${ms} ms)"; else echo "FAIL $name (rc=$rc)"; status=1; fi
  tail -n 40 "$out/$name.log"
  if [ -s "$out/$name.err" ]; then echo "--- stderr of $name:"; tail -n 20 "$out/$name.err"; fi
}

echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
nvidia-smi | grep -o 'CUDA Version: [0-9.]*' || true
date -u +%Y-%m-%dT%H:%M:%SZ

echo "== ordo info / demo"
step info gpu-bin/ordo info
step info_json gpu-bin/ordo info --json
step demo gpu-bin/ordo demo

echo "== GPU test suite"
step gpu_tests env ORDO_REQUIRE_GPU=1 gpu-bin/gpu_tests --test-threads=1 --nocapture

echo "== teardown from an atexit handler registered before the first init"
gpu-bin/atexit_teardown >"$out/atexit.log" 2>"$out/atexit.err"
rc=$?
cat "$out/atexit.log"
if [ $rc -eq 0 ] && [ ! -s "$out/atexit.err" ]; then echo "PASS atexit (exit 0, nothing on stderr)"; else
  echo "FAIL atexit (rc=$rc)"; cat "$out/atexit.err"; status=1; fi

echo "== benchmarks"
step bench gpu-bin/cuda_bench
cc=$(command -v cc || command -v gcc || true)
if [ -n "$cc" ]; then
  step c_bench_build "$cc" -std=c99 -O2 -D_POSIX_C_SOURCE=200809L -I ffi/include tests/gpu/c_launch_bench.c \
    gpu-bin/libordo.a -ldl -lgcc_s -lutil -lrt -lpthread -lm -lc -o /tmp/c_launch_bench
  step c_bench /tmp/c_launch_bench
else
  echo "FAIL c_bench (no C compiler on this machine)"; status=1
fi

echo "== summary: $([ $status -eq 0 ] && echo ALL PASSED || echo FAILURES)"
exit $status
