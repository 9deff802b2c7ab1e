#!/usr/bin/env bash
# The GPU pass, run on the device machine from the repository root with gpu-bin/ carried
# (built by tests/gpu/build.sh). Writes logs to $OUT (or ./gpu-out) and prints a summary.
# Exit status: 0 when every step passed.
#
# Usage: tests/gpu/run.sh [PART...], PART one of
#   tests   ordo info/demo, the GPU test suites (Rust, default queue, hostile callers) and the
#           exit paths                                        (about 3 minutes on an H100)
#   rust    the typed API (crate ordo): its GPU tests, its examples, and its launch and graphs
#           against cudarc's and the raw driver's (cli/examples/vs_cudarc.rs,
#           graph_vs_cudarc.rs)                                          (about 2 minutes)
#   multi   two GPUs: copies between them and with the host device, events across devices,
#           example 08 over every device, the peer bandwidth (peer_bench) and the bandwidth
#           between a GPU and the host device (host_device_bench); needs two GPUs
#   abi     the MLIR programs, liboffload's conformance suite and upstream's OffloadAPI tests
#   bench   the benchmarks: cuda_bench, queue-ordered memory and graphs against the raw driver,
#           ordo bench, and the launch rows in several processes
#   torch   ordo's cache of queue-ordered memory beside PyTorch's CUDA caching allocator, in one
#           process (tests/gpu/torch_cache_bench.cpp, built here against the machine's torch)
#   soak    16 threads of random typed operations with a raw teardown and re-init every 3 s,
#           tracing switched on and off, for 8 minutes (cli/examples/soak.rs; SOAK_SECONDS)
#   nccl    collectives through NCCL on every GPU of the machine: ordo's collective tests (one GPU;
#           two GPUs when there are) and the all-reduce against direct NCCL calls (nccl_bench)
#   sanitize NVIDIA's compute-sanitizer (tests/gpu/sanitize.sh): memcheck with the leak check,
#           racecheck, synccheck and initcheck over the demo, every example, the Rust, C-ABI,
#           mgpu* and ol* GPU suites. Every API error must be
#           one a test provokes on purpose, listed by name below; SANITIZE_ONLY=NAME,... runs
#           only the named programs
# No PART runs all four in order (more than one 10-minute device call: run them a call each).
set -uo pipefail
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests rust abi bench)  # multi: on a two-GPU machine, asked for
wants() { local p; for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }
for p in "${parts[@]}"; do
  case $p in tests|rust|multi|abi|bench|torch|nccl|sanitize|soak) ;; *) echo "unknown part: $p (tests, rust, multi, abi, bench, torch, nccl, sanitize or soak)"; exit 2 ;; esac
done
out=${OUT:-gpu-out}
mkdir -p "$out"
status=0
# The machine's rule for every program that may load NCCL: no NVLink multicast.
export NCCL_NVLS_ENABLE=0
# Everything printed also goes to $out/run.log, from which the summary is written at the end.
exec > >(tee "$out/run.log") 2>&1
# NVRTC for the runtime-compilation tests: the CUDA toolkit's, where the machine has one (then
# required: ORDO_REQUIRE_NVRTC=1), else whatever LD_LIBRARY_PATH already finds.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  if ls "$d"/libnvrtc.so.* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ORDO_REQUIRE_NVRTC=1
    echo "NVRTC: $d"
    break
  fi
done
step() { # name, command...
  local name=$1; shift
  local t0=$(date +%s%N)
  "$@" >"$out/$name.log" 2>"$out/$name.err"
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc -eq 0 ]; then echo "PASS $name (${ms} ms)"; else echo "FAIL $name (rc=$rc)"; status=1; fi
  tail -n 40 "$out/$name.log"
  if [ -s "$out/$name.err" ]; then echo "--- stderr of $name:"; tail -n 20 "$out/$name.err"; fi
  return $rc
}
quiet_exit() { # name, command...: exit 0 and nothing on stderr
  local name=$1; shift
  "$@" >"$out/$name.log" 2>"$out/$name.err"
  local rc=$?
  cat "$out/$name.log"
  if [ $rc -eq 0 ] && [ ! -s "$out/$name.err" ]; then echo "PASS $name (exit 0, nothing on stderr)"; else
    echo "FAIL $name (rc=$rc)"; cat "$out/$name.err"; status=1; fi
}
# A launch benchmark in 2 x ROUNDS processes, the order of object creation alternated (a process's
# first stream and module are not its second: each benchmark takes `raw-first` to make its own
# before ordo's), then each row's median over them (tests/gpu/bench_rows.sh).
processes() { # name, rounds, command...
  local name=$1 rounds=$2 i; shift 2
  local logs=()
  for i in $(seq "$rounds"); do
    step "${name}_$i" "$@"
    step "${name}_raw_first_$i" "$@" raw-first
    logs+=("$out/${name}_$i.log" "$out/${name}_raw_first_$i.log")
  done
  step "${name}_rows" bash tests/gpu/bench_rows.sh "${logs[@]}"
}

echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
nvidia-smi | grep -o 'CUDA Version: [0-9.]*' || true
date -u +%Y-%m-%dT%H:%M:%SZ

arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '.')
cc=$(command -v cc || command -v gcc || true)

if wants tests; then
echo "== ordo info / demo"
step info gpu-bin/ordo info
step info_json gpu-bin/ordo info --json
step demo gpu-bin/ordo demo
echo "== the demo traced (ORDO_TRACE): checked, summarised"
step demo_traced env ORDO_TRACE="$out/trace-demo.json" gpu-bin/ordo demo
step trace_check_demo gpu-bin/ordo trace check "$out/trace-demo.json"
step trace_summary_demo gpu-bin/ordo trace summary "$out/trace-demo.json"

echo "== real cubin and fatbin images (nvcc), for the image checks"
images=()
if command -v nvcc >/dev/null; then
  step nvcc_cubin nvcc -cubin -arch=sm_$arch -o /tmp/empty.cubin tests/gpu/empty.cu
  step nvcc_fatbin nvcc -fatbin -gencode arch=compute_$arch,code=sm_$arch \
    -gencode arch=compute_$arch,code=compute_$arch -o /tmp/empty.fatbin tests/gpu/empty.cu
  images=(ORDO_CUBIN=/tmp/empty.cubin ORDO_FATBIN=/tmp/empty.fatbin)
else
  echo "FAIL nvcc (not found)"; status=1
fi

echo "== GPU test suite"
step gpu_tests env ORDO_REQUIRE_GPU=1 "${images[@]}" gpu-bin/gpu_tests --test-threads=1 --nocapture

echo "== the per-device default queue: racing first ol* and mgpu* calls make one queue per device"
step default_queue env ORDO_REQUIRE_GPU=1 gpu-bin/default_queue_tests --nocapture
step hostile env ORDO_REQUIRE_GPU=1 gpu-bin/hostile_tests --nocapture

echo "== teardown from an atexit handler registered before the first init"
gpu-bin/atexit_teardown >"$out/atexit.log" 2>"$out/atexit.err"
rc=$?
cat "$out/atexit.log"
if [ $rc -eq 0 ] && [ ! -s "$out/atexit.err" ]; then echo "PASS atexit (exit 0, nothing on stderr)"; else
  echo "FAIL atexit (rc=$rc)"; cat "$out/atexit.err"; status=1; fi

echo "== ordo_shutdown_at_exit with live CUDA objects and a running kernel, from Rust and from C"
quiet_exit atexit_hook_rust gpu-bin/atexit_hook_rust
if [ -n "$cc" ]; then
  step atexit_hook_c_build "$cc" -std=c99 -O2 -I ffi/include tests/gpu/atexit_hook.c \
    gpu-bin/libordo.a -ldl -lgcc_s -lutil -lrt -lpthread -lm -lc -o /tmp/atexit_hook_c
  quiet_exit atexit_hook_c /tmp/atexit_hook_c
fi

fi

if wants rust; then
echo "== the typed Rust API (crate ordo) on the GPU: its tests and its examples"
step ordo_gpu_tests env ORDO_REQUIRE_GPU=1 gpu-bin/ordo_gpu_tests --test-threads=1 --nocapture
for example in gpu-bin/ordo-examples/*; do
  step "ordo_example_$(basename "$example")" env ORDO_TRACE="$out/trace-$(basename "$example").json" "$example"
  step "trace_check_$(basename "$example")" gpu-bin/ordo trace check "$out/trace-$(basename "$example").json"
done
step ordo_example_07_on_the_cpu env ORDO_DEVICE=host gpu-bin/ordo-examples/07_one_kernel_everywhere
echo "== the typed launch against cudarc's launch builder and the raw driver (one process, ABBA)"
step vs_cudarc gpu-bin/vs_cudarc
step graph_vs_cudarc gpu-bin/graph_vs_cudarc
echo "== the graph benchmark again, traced: its trace checked and summarised (its timings are the untraced run's)"
step graph_vs_cudarc_traced env ORDO_TRACE="$out/trace-graph_vs_cudarc.json" gpu-bin/graph_vs_cudarc
step trace_check_graph_vs_cudarc gpu-bin/ordo trace check "$out/trace-graph_vs_cudarc.json"
step trace_summary_graph_vs_cudarc gpu-bin/ordo trace summary "$out/trace-graph_vs_cudarc.json"
fi

if wants nccl; then
echo "== collectives through NCCL: ordo's tests on every GPU, the all-reduce against direct NCCL calls"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
step ordo_gpu_tests_collectives env ORDO_REQUIRE_GPU=1 $([ "$gpus" -ge 2 ] && echo ORDO_REQUIRE_GPUS=2) \
  gpu-bin/ordo_gpu_tests --test-threads=1 --nocapture collectives::
step nccl_bench gpu-bin/nccl_bench
# A communicator left live at exit (with ordo's at-exit teardown and without): exit 0, silent.
quiet_exit nccl_exit_leave gpu-bin/nccl_exit leave
quiet_exit nccl_exit_hook gpu-bin/nccl_exit hook
step ordo_example_10_all_reduce gpu-bin/ordo-examples/10_all_reduce
if [ "$gpus" -ge 2 ]; then
  # One rank per process, joined by a unique id in a file: example 10 and the exit program.
  two_ranks() { # name, command... (run as rank 0 and rank 1 of two, each with its rank's arguments)
    local name=$1; shift
    rm -f "$out/$name.id"
    "$@" 0 >"$out/$name.rank0.log" 2>&1 & local p=$!
    "$@" 1 >"$out/$name.rank1.log" 2>&1; local rc1=$?
    wait $p; local rc0=$?
    if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]; then echo "PASS $name"; else echo "FAIL $name (rc=$rc0, $rc1)"; status=1; fi
    tail -n 3 "$out/$name.rank0.log" "$out/$name.rank1.log"
  }
  ex10() { gpu-bin/ordo-examples/10_all_reduce --world 2 --id "$out/ex10_two_processes.id" --rank "$1"; }
  two_ranks ex10_two_processes ex10
  ranks() { gpu-bin/nccl_exit rank "$1" "$out/nccl_two_processes.id"; }
  two_ranks nccl_two_processes ranks
  # A peer killed after the first all-reduce: the survivor's next synchronise fails within the
  # bound, its teardown completes, it exits 0 and prints nothing.
  rm -f "$out/peer.id"
  ORDO_NCCL_TIMEOUT_MS=5000 gpu-bin/nccl_exit rank 0 "$out/peer.id" survive >"$out/peer_survivor.log" 2>&1 & p=$!
  gpu-bin/nccl_exit rank 1 "$out/peer.id" die >/dev/null 2>&1
  wait $p; rc=$?
  if [ $rc -eq 0 ] && [ ! -s "$out/peer_survivor.log" ]; then echo "PASS nccl_peer_killed (survivor: exit 0, silent)"; else
    echo "FAIL nccl_peer_killed (rc=$rc)"; cat "$out/peer_survivor.log"; status=1; fi
fi
fi

if wants multi; then
echo "== two GPUs: copies and events between devices (typed API), every device at once, peer bandwidth"
nvidia-smi topo -m 2>/dev/null | head -5
step ordo_gpu_tests_two_gpus env ORDO_REQUIRE_GPUS=2 gpu-bin/ordo_gpu_tests --test-threads=1 --nocapture \
  gigabytes_between_two_gpus_and_the_host an_event_of_one_gpu_gates_work_on_the_other \
  large_copies_with_the_host_device_are_page_locked_and_asynchronous
step ol_memcpy_two_devices env ORDO_REQUIRE_GPUS=2 gpu-bin/two_devices_tests --nocapture
step mgpu_two_devices env ORDO_REQUIRE_GPUS=2 gpu-bin/mgpu_two_devices_tests --nocapture
step ordo_example_08_all_devices gpu-bin/ordo-examples/08_all_devices
step info_peers gpu-bin/ordo info
step peer_bench gpu-bin/peer_bench
step host_device_bench gpu-bin/host_device_bench
fi

if wants abi; then
echo "== MLIR programs (tests/mlir, compiled ahead of time, libordo.so in place of the CUDA wrappers)"
if [ -d gpu-bin/mlir ]; then
  for prog in gpu-bin/mlir/*; do
    [ -x "$prog" ] && [ -f "$prog" ] && [ "${prog##*.}" != "0" ] || continue
    name=mlir_$(basename "$prog")
    echo "--- $name output"
    if [ "$name" = mlir_assert ]; then
      # Expected on stderr: the driver's assertion message and exactly one error line from ordo.
      "$prog" >"$out/$name.log" 2>"$out/$name.err"; rc=$?
      cat "$out/$name.log"; echo "--- $name stderr:"; cat "$out/$name.err"
      lines=$(grep -c "failed with" "$out/$name.err")
      if [ $rc -eq 0 ] && [ "$lines" -eq 1 ] && grep -qi "assert" "$out/$name.err"; then echo "PASS $name"; else
        echo "FAIL $name (rc=$rc, $lines error lines)"; status=1; fi
      continue
    fi
    quiet_exit "$name" "$prog"
    # Traced too: still silent, and its trace well formed.
    quiet_exit "${name}_traced" env ORDO_TRACE="$out/trace-$name.json" "$prog"
    step "trace_check_$name" gpu-bin/ordo trace check "$out/trace-$name.json"
  done
else
  echo "FAIL mlir (gpu-bin/mlir was not built: no mlir-22-tools where build.sh ran)"; status=1
fi

echo "== liboffload's ol* API: the conformance suite with PTX (clang-22), cubin and fatbin images"
if [ -x gpu-bin/offload/conformance ]; then
  ptx=gpu-bin/offload/kernels.ptx
  offload_images=(ptx="$ptx")
  if command -v nvcc >/dev/null; then
    step offload_cubin nvcc -cubin -arch=sm_$arch -o /tmp/kernels.cubin "$ptx" && offload_images+=(cubin=/tmp/kernels.cubin)
    step offload_fatbin nvcc -fatbin -arch=sm_$arch -o /tmp/kernels.fatbin "$ptx" &&
      offload_images+=(fatbin=/tmp/kernels.fatbin)
    foreign=80; [ "$arch" = 80 ] && foreign=90
    step offload_foreign nvcc -cubin -arch=sm_$foreign -o /tmp/foreign.cubin tests/gpu/empty.cu
  fi
  for entry in "${offload_images[@]}"; do
    kind=${entry%%=*}
    step "offload_conformance_$kind" env OL_TEST_IMAGE="${entry#*=}" OL_TEST_GLOBAL=ol_test_global \
      OL_TEST_FOREIGN=/tmp/foreign.cubin gpu-bin/offload/conformance
    echo "    $(grep -c $'\tPASS' "$out/offload_conformance_$kind.log") passed," \
      "$(grep -c $'\tSKIP' "$out/offload_conformance_$kind.log") skipped:"
    grep $'\tSKIP' "$out/offload_conformance_$kind.log" | sed 's/^/    /'
    if [ -s "$out/offload_conformance_$kind.err" ]; then echo "FAIL offload_conformance_$kind wrote to stderr"; status=1; fi
  done
else
  echo "FAIL offload (gpu-bin/offload was not built: no liboffload-22-dev or clang-22 where build.sh ran)"; status=1
fi

echo "== upstream's OffloadAPI unit tests (LLVM 22.1.8) on CUDA, against tests/offload/upstream/expected-cuda.tsv"
if [ -x gpu-bin/offload-upstream/device.unittests ]; then
  # The CUDA platform's devices (the H100); ordo's CPU device runs them in CI.
  step offload_upstream bash tests/offload/upstream/run.sh gpu-bin/offload-upstream CUDA tests/offload/upstream/expected-cuda.tsv
  cp gpu-bin/offload-upstream/results-CUDA.tsv "$out/offload_upstream_results.tsv" 2>/dev/null || true
else
  echo "FAIL offload_upstream (gpu-bin/offload-upstream was not built where build.sh ran)"; status=1
fi

fi

if wants bench; then
echo "== benchmarks"
step bench gpu-bin/cuda_bench
step ordered_memory_bench gpu-bin/ordered_memory_bench
step graph_bench gpu-bin/graph_bench
step ordo_bench gpu-bin/ordo bench
if [ -n "$cc" ]; then
  step c_bench_build "$cc" -std=c99 -O2 -D_POSIX_C_SOURCE=200809L -I ffi/include tests/gpu/c_launch_bench.c \
    gpu-bin/libordo.a -ldl -lgcc_s -lutil -lrt -lpthread -lm -lc -o /tmp/c_launch_bench
  processes c_bench 3 /tmp/c_launch_bench # ordo_launch against cuLaunchKernel (six processes)
else
  echo "FAIL c_bench (no C compiler on this machine)"; status=1
fi
cuda_inc=$(for d in /usr/local/cuda/include /usr/include; do [ -f "$d/cuda.h" ] && echo "$d" && break; done)
if [ -n "$cc" ] && [ -n "$cuda_inc" ] && [ -d gpu-bin/mlir ]; then
  step mlir_bench_build "$cc" -O2 -I"$cuda_inc" tests/gpu/mlir_bench.c gpu-bin/mlir/libordo.so.0 -lcuda -ldl \
    -lpthread -Wl,-rpath,"$PWD/gpu-bin/mlir" -o /tmp/mlir_bench
  # The baseline: upstream's CudaRuntimeWrappers.cpp functions, kept (git-ignored) in
  # tests/gpu/upstream/ and built here with the host's C++ compiler; never part of ordo.
  upstream=()
  if [ -f tests/gpu/upstream/CudaRuntimeWrappers.cpp ] && command -v g++ >/dev/null; then
    step upstream_build g++ -O2 -std=c++17 -fPIC -shared -I"$cuda_inc" tests/gpu/upstream/CudaRuntimeWrappers.cpp \
      -lcuda -o /tmp/libmlir_cuda_runtime_upstream.so && upstream=(/tmp/libmlir_cuda_runtime_upstream.so)
  else
    echo "FAIL upstream wrappers (tests/gpu/upstream/CudaRuntimeWrappers.cpp or g++ missing)"; status=1
  fi
  step mlir_bench /tmp/mlir_bench "${upstream[@]}"
else
  echo "FAIL mlir_bench (needs cc, cuda.h and gpu-bin/mlir)"; status=1
fi

if [ -n "$cc" ] && [ -n "$cuda_inc" ] && [ -x gpu-bin/offload/conformance ]; then
  # The floor rows' forwarding call (launch_shim.c), linked after libcuda so that the loader
  # maps libordo and libcuda next to each other as in a link without it.
  mkdir -p /tmp/shim
  step launch_shim_build "$cc" -O2 -shared -fPIC -I"$cuda_inc" tests/gpu/launch_shim.c -ldl \
    -o /tmp/shim/liblaunch_shim.so
  step offload_bench_build "$cc" -O2 -I"$cuda_inc" tests/gpu/offload_bench.c gpu-bin/offload/libordo.so.0 -lcuda \
    -Wl,--no-as-needed /tmp/shim/liblaunch_shim.so -Wl,--as-needed -Wl,-rpath,"$PWD/gpu-bin/offload" -Wl,-rpath,/tmp/shim -o /tmp/offload_bench
  processes offload_bench 3 /tmp/offload_bench gpu-bin/offload/kernels.ptx
  # The same rows linked libcuda first, libordo at three distances below it (placement.sh).
  step placement env PADS="20480 204800 1060864" bash tests/gpu/placement.sh gpu-bin
  # What raises a cuLaunchKernel loop's cost on this host (no libordo: the driver alone).
  step launch_probe_build "$cc" -O2 -I"$cuda_inc" tests/gpu/launch_probe.c -lcuda -o /tmp/launch_probe
  step launch_probe /tmp/launch_probe gpu-bin/offload/kernels.ptx
  # Whether another driver call than the raw benchmarks' makes the queue-ordered pair or the
  # graph update cheaper (no libordo: the driver alone).
  step driver_probe_build "$cc" -O2 -I"$cuda_inc" tests/gpu/driver_probe.c -lcuda -o /tmp/driver_probe
  step driver_probe /tmp/driver_probe 40
else
  echo "FAIL offload_bench (needs cc, cuda.h and gpu-bin/offload)"; status=1
fi

fi

if wants torch; then
echo "== ordo's cache against PyTorch's caching allocator (one process, the same streams)"
py=$(command -v python3 || command -v python)
torch_dir=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
abi=$("$py" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null)
# cuda_runtime_api.h: the toolkit's, or the one PyTorch's wheels bring.
cudart_inc=$(for d in /usr/local/cuda/include $(dirname "$torch_dir")/nvidia/cuda_runtime/include \
  $(dirname "$torch_dir")/nvidia/cu13/include; do [ -f "$d/cuda_runtime_api.h" ] && echo "$d" && break; done)
if [ -n "$torch_dir" ] && [ -n "$cudart_inc" ] && command -v g++ >/dev/null; then
  "$py" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
  step torch_bench_build g++ -O2 -std=c++20 -D_GLIBCXX_USE_CXX11_ABI="${abi:-1}" -I ffi/include -I"$torch_dir/include" \
    -I"$torch_dir/include/torch/csrc/api/include" -I"$cudart_inc" tests/gpu/torch_cache_bench.cpp gpu-bin/libordo.a \
    -L"$torch_dir/lib" -Wl,--no-as-needed -ltorch_cuda -ltorch_cpu -ltorch -Wl,--as-needed -lc10_cuda -lc10 \
    -Wl,-rpath,"$torch_dir/lib" -ldl -lpthread -lrt -lm -o /tmp/torch_cache_bench
  step torch_cache_bench /tmp/torch_cache_bench
else
  echo "FAIL torch (needs python3 with torch, cuda_runtime_api.h and g++)"; status=1
fi
fi

if wants soak; then
echo "== soak: 16 threads, raw teardowns under them, tracing on and off"
step soak gpu-bin/soak "${SOAK_SECONDS:-480}" 16
fi

if wants sanitize; then
echo "== compute-sanitizer"
compute-sanitizer --version | tail -n 1
# sanitized NAME TOOL ALLOWED COMMAND...: one program under one tool (see sanitize.sh).
sanitized() {
  local name=$1 tool=$2 allowed=$3; shift 3
  if [ -n "${SANITIZE_ONLY:-}" ] && [[ ",$SANITIZE_ONLY," != *",$name,"* ]]; then return 0; fi
  step "sanitize_${tool}_$name" bash tests/gpu/sanitize.sh "$out/sanitize_${tool}_$name.txt" "$tool" "$allowed" -- "$@"
}
for tool in memcheck racecheck synccheck initcheck; do
  sanitized demo $tool - gpu-bin/ordo demo
  for example in gpu-bin/ordo-examples/*; do
    sanitized "example_$(basename "$example")" $tool - "$example"
  done
done
# racecheck, synccheck and initcheck over every GPU suite too (their API errors are memcheck's to
# name, below; these three report none of them): the Rust, C-ABI (hostile, default queue), MLIR
# and ol* ones. SANITIZE_EACH=1 adds initcheck over ordo's typed suite one test at a time, so that
# an uninitialised read names its test.
for tool in racecheck synccheck initcheck; do
  sanitized gpu_tests $tool - env ORDO_REQUIRE_GPU=1 gpu-bin/gpu_tests --test-threads=1
  sanitized ordo_gpu_tests $tool - env ORDO_REQUIRE_GPU=1 gpu-bin/ordo_gpu_tests --test-threads=1
  sanitized hostile $tool - env ORDO_REQUIRE_GPU=1 gpu-bin/hostile_tests
  sanitized default_queue $tool - env ORDO_REQUIRE_GPU=1 gpu-bin/default_queue_tests
  if [ -d gpu-bin/mlir ]; then
    for prog in gpu-bin/mlir/*; do
      [ -x "$prog" ] && [ -f "$prog" ] && [ "${prog##*.}" != "0" ] || continue
      [ "$(basename "$prog")" = assert ] && continue # a device-side assertion on purpose
      sanitized "mlir_$(basename "$prog")" $tool - "$prog"
    done
  fi
  if [ -x gpu-bin/offload/conformance ]; then
    sanitized offload_conformance $tool - env OL_TEST_IMAGE=gpu-bin/offload/kernels.ptx OL_TEST_GLOBAL=ol_test_global \
      gpu-bin/offload/conformance
  fi
done
if [ "${SANITIZE_EACH:-0}" = 1 ]; then
  for t in $(gpu-bin/ordo_gpu_tests --list 2>/dev/null | sed -n 's/: test$//p'); do
    sanitized "ordo_gpu_tests_$t" initcheck - env ORDO_REQUIRE_GPU=1 gpu-bin/ordo_gpu_tests --exact "$t"
  done
fi
# The suites make mistakes on purpose (images the device cannot load, kernels that are not
# there, launches the driver refuses, memory freed twice through the raw driver...): the API
# errors each provokes are listed by name; any other fails the step.
# backend-cuda/tests/gpu/checks.rs, bad_inputs_on_the_gpu: a 1 TiB allocation, PTX the JIT
# refuses, a kernel that is not there, dynamic shared memory over the device's opt-in limit, the
# time between events never recorded; tensor_maps_encode_over_device_memory: a tensor map the
# driver refuses (checked by ordo as far as it can, the rest is the driver's).
gpu_tests_allowed=CUDA_ERROR_OUT_OF_MEMORY@cuMemAlloc_v2,CUDA_ERROR_INVALID_PTX@cuModuleLoadDataEx
gpu_tests_allowed+=,CUDA_ERROR_NOT_FOUND@cuModuleGetFunction,CUDA_ERROR_INVALID_VALUE@cuFuncSetAttribute
gpu_tests_allowed+=,CUDA_ERROR_INVALID_HANDLE@cuEventElapsedTime_v2,CUDA_ERROR_INVALID_VALUE@cuTensorMapEncodeTiled
sanitized gpu_tests memcheck "$gpu_tests_allowed" env ORDO_REQUIRE_GPU=1 gpu-bin/gpu_tests --test-threads=1
# The collectives through NCCL: NCCL's own init probes kernels this build has no image for
# (cudaFuncGetAttributes, 4 per communicator, inside libnccl), and a communicator whose peer never
# arrives, aborted during its init, leaves NCCL's 4-byte host allocation (cuMemHostAlloc inside
# ncclCommInitRankConfig). Neither is ordo's call. ordo's typed suite holds the collective tests.
# (nccl_exit is not sanitized: its teardown runs after the driver's exit handlers, by design, so
# the leak check sees every allocation the driver took with it.)
nccl_allowed=cudaErrorNoKernelImageForDevice@cudaFuncGetAttributes,leaked=4
# ordo/tests/gpu/main.rs, ptx_the_jit_refuses_is_a_load_error_with_the_jit_log.
sanitized ordo_gpu_tests memcheck "CUDA_ERROR_INVALID_PTX@cuModuleLoadDataEx,$nccl_allowed" \
  env ORDO_REQUIRE_GPU=1 gpu-bin/ordo_gpu_tests --test-threads=1
sanitized hostile memcheck - env ORDO_REQUIRE_GPU=1 gpu-bin/hostile_tests
sanitized default_queue memcheck - env ORDO_REQUIRE_GPU=1 gpu-bin/default_queue_tests
# ffi/examples/atexit_hook.rs: a PTX load the JIT refuses (its log becomes the error's detail).
sanitized atexit_hook_rust memcheck CUDA_ERROR_INVALID_PTX@cuModuleLoadDataEx gpu-bin/atexit_hook_rust
if [ -n "$cc" ]; then
  "$cc" -std=c99 -O2 -I ffi/include tests/gpu/atexit_hook.c gpu-bin/libordo.a -ldl -lgcc_s -lutil -lrt \
    -lpthread -lm -lc -o /tmp/atexit_hook_c && sanitized atexit_hook_c memcheck - /tmp/atexit_hook_c
fi
if [ -d gpu-bin/mlir ]; then
  for prog in gpu-bin/mlir/*; do
    [ -x "$prog" ] && [ -f "$prog" ] && [ "${prog##*.}" != "0" ] || continue
    [ "$(basename "$prog")" = assert ] && continue # a device-side assertion on purpose
    sanitized "mlir_$(basename "$prog")" memcheck - "$prog"
  done
else
  echo "FAIL sanitize mlir (gpu-bin/mlir was not built: no mlir-22-tools where build.sh ran)"; status=1
fi
if [ -x gpu-bin/offload/conformance ]; then
  # tests/offload/conformance.c: symbol_not_found looks up a kernel and a global that are not
  # there; exit_without_shutdown allocates 256 bytes and exits with liboffload still up (its
  # memory is the process's to the end, as liboffload's is).
  offload_allowed=CUDA_ERROR_NOT_FOUND@cuModuleGetFunction,CUDA_ERROR_NOT_FOUND@cuModuleGetGlobal_v2,leaked=256
  sanitized offload_conformance memcheck "$offload_allowed" env OL_TEST_IMAGE=gpu-bin/offload/kernels.ptx \
    OL_TEST_GLOBAL=ol_test_global gpu-bin/offload/conformance
else
  echo "FAIL sanitize offload (gpu-bin/offload was not built where build.sh ran)"; status=1
fi
fi

# The summary, in the same shape every run (tests/gpu/RESULTS.md keeps the latest): when and where,
# which code, each step's result, and every benchmark line that carries a ratio
# ("median [p25, p75]").
{
  echo "## $(date -u '+%Y-%m-%d, %H:%M UTC') — $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c |
    sed 's/^ *\([0-9]*\) /\1 × /' | paste -sd, -) (driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null |
    head -1)), $(nproc)-core host — parts: ${parts[*]}"
  echo
  echo "Code: $(cat gpu-bin/COMMIT 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown). Result: $([ $status -eq 0 ] && echo '**ALL PASSED**' || echo '**FAILURES**')."
  echo
  echo "| step | result |"
  echo "|---|---|"
  grep -E '^(PASS|FAIL) ' "$out/run.log" | sed -E 's/^(PASS|FAIL) ([^ ]+) ?(.*)$/| \2 | \1 \3 |/'
  echo
  echo "Benchmark lines:"
  echo
  grep -E '[0-9]\.[0-9]+ \[[0-9.]+, [0-9.]+\]' "$out/run.log" | grep -vE '^(PASS|FAIL) ' | sed 's/^/    /' || echo "    (none in these parts)"
} >"$out/SUMMARY.md"
echo "== summary (${parts[*]}): $([ $status -eq 0 ] && echo ALL PASSED || echo FAILURES)"
cat "$out/SUMMARY.md"
exit $status
