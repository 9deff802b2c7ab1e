#!/usr/bin/env bash
# Builds the conformance suite's GPU kernels (kernels.cpp: plain C++ with clang's <gpuintrin.h>)
# into PTX for sm_90 with Debian's clang-22, as the issue describes liboffload's own test kernels:
#   tests/offload/build.sh OUTDIR  ->  OUTDIR/kernels.ptx
# The PTX is taken to the GPU machine (it has no LLVM); the CUDA driver JIT-compiles it there.
set -euo pipefail
out=${1:?usage: build.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 -nogpulib -ffreestanding -O2 \
  -Xclang -target-feature -Xclang +ptx80 -S "$here/kernels.cpp" -o "$out/kernels.ptx"
