#!/usr/bin/env bash
# Builds, on a machine with cargo, everything the GPU pass runs, and copies it (stripped) into
# gpu-bin/ at the repository root (ignored by git). The device machine has no cargo registry:
# carry gpu-bin/ there and run tests/gpu/run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p ordo-cli -p ordo-cuda --examples --bins
cargo build --release -p ordo --examples
cargo build --release -p ordo-ffi --examples
cargo build --release -p ordo-clib
test_bin=$(cargo test --release -p ordo-cuda --test gpu --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="gpu" and m.get("executable"): print(m["executable"])')
ordo_test_bin=$(cargo test --release -p ordo --test gpu --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="gpu" and m.get("executable"): print(m["executable"])')
queue_test_bin=$(cargo test --release -p ordo-ffi --features mlir,offload --test default_queue --no-run \
  --message-format=json 2>/dev/null | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="default_queue" and m.get("executable"): print(m["executable"])')
two_devices_test_bin=$(cargo test --release -p ordo-ffi --features mlir,offload --test two_devices --no-run \
  --message-format=json 2>/dev/null | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="two_devices" and m.get("executable"): print(m["executable"])')
hostile_test_bin=$(cargo test --release -p ordo-ffi --features mlir,offload --test hostile --no-run \
  --message-format=json 2>/dev/null | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="hostile" and m.get("executable"): print(m["executable"])')
mgpu_two_devices_test_bin=$(cargo test --release -p ordo-ffi --features mlir,offload --test mgpu_two_devices --no-run \
  --message-format=json 2>/dev/null | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="mgpu_two_devices" and m.get("executable"): print(m["executable"])')
rm -rf gpu-bin && mkdir gpu-bin
cp target/release/ordo target/release/examples/atexit_teardown target/release/examples/cuda_bench \
  target/release/examples/vs_cudarc target/release/examples/peer_bench \
  target/release/examples/host_device_bench target/release/examples/ordered_memory_bench \
  target/release/examples/graph_bench target/release/examples/graph_vs_cudarc target/release/examples/soak \
  target/release/examples/nccl_bench target/release/examples/nccl_exit gpu-bin/
cp target/release/examples/atexit_hook gpu-bin/atexit_hook_rust
cp "$test_bin" gpu-bin/gpu_tests
cp "$ordo_test_bin" gpu-bin/ordo_gpu_tests
cp "$queue_test_bin" gpu-bin/default_queue_tests
cp "$hostile_test_bin" gpu-bin/hostile_tests
cp "$two_devices_test_bin" gpu-bin/two_devices_tests
cp "$mgpu_two_devices_test_bin" gpu-bin/mgpu_two_devices_tests
mkdir gpu-bin/ordo-examples
for example in 01_vector_add 02_queues_and_events 03_load_module 04_host_kernel 05_property_test 06_firmware 07_one_kernel_everywhere 08_all_devices 09_graph 10_all_reduce; do
  cp "target/release/examples/$example" gpu-bin/ordo-examples/
done
strip gpu-bin/ordo-examples/*
find gpu-bin -maxdepth 1 -type f -exec strip {} +
# The C library (for the C-ABI benchmark, compiled on the device from tests/gpu/c_launch_bench.c).
cp target/release/libordo.a gpu-bin/ && strip --strip-debug gpu-bin/libordo.a
# The MLIR programs of tests/mlir, compiled here (the GPU machine has no MLIR tools) against a
# libordo.so with feature `mlir`, each with libordo.so.0 beside it.
if [ -x /usr/lib/llvm-22/bin/mlir-opt ]; then
  cargo build --release -p ordo-clib --features mlir --target-dir target/mlir
  bash tests/mlir/build.sh gpu-bin/mlir target/mlir/release
  rm -f gpu-bin/mlir/*.ll gpu-bin/mlir/*.llvm.mlir gpu-bin/mlir/*.o
  strip gpu-bin/mlir/libordo.so.0
else
  echo "mlir-22-tools missing: gpu-bin/mlir not built" >&2
fi
# liboffload's API: libordo.so with feature `offload`, the conformance suite compiled here against
# Debian's OffloadAPI.h (absent on the GPU machine), and its kernels as PTX from clang-22.
if [ -f /usr/lib/llvm-22/include/offload/OffloadAPI.h ] && command -v clang-22 >/dev/null; then
  cargo build --release -p ordo-clib --features offload --target-dir target/offload
  mkdir -p gpu-bin/offload
  cp target/offload/release/libordo.so gpu-bin/offload/libordo.so.0 && strip gpu-bin/offload/libordo.so.0
  bash tests/offload/build.sh gpu-bin/offload
  cc -std=gnu11 -O2 -I/usr/lib/llvm-22/include tests/offload/conformance.c gpu-bin/offload/libordo.so.0 \
    -Wl,-rpath,'$ORIGIN' -lpthread -o gpu-bin/offload/conformance
else
  echo "liboffload-22-dev or clang-22 missing: gpu-bin/offload not built" >&2
fi
# Upstream's OffloadAPI unit tests (tests/offload/upstream), built here against the same
# libordo.so, with their device code as PTX in gpu-bin/offload-upstream/device_code (the path
# is compiled in relative to the repository root, where run.sh runs them).
if [ -f /usr/lib/llvm-22/lib/libLLVMSupport.a ] && [ -f /usr/include/gtest/gtest.h ] && [ -x gpu-bin/offload/conformance ]; then
  bash tests/offload/upstream/build.sh gpu-bin/offload-upstream target/offload/release gpu-bin/offload-upstream/device_code
  rm -rf gpu-bin/offload-upstream/src gpu-bin/offload-upstream/*.o
  strip gpu-bin/offload-upstream/*.unittests gpu-bin/offload-upstream/libordo.so.0
else
  echo "llvm-22-dev, libgtest-dev or gpu-bin/offload missing: gpu-bin/offload-upstream not built" >&2
fi
# The code these binaries are (run.sh's summary names it), "+" when the tree had changes; written
# last, after every strip.
echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +)" >gpu-bin/COMMIT
ls -la gpu-bin
