#!/usr/bin/env bash
# Rebuilds the checked-in AMDGPU code objects from builtin.cl with Debian's clang-22, lld-22 and
# clang-tools-22 (clang-offload-bundler), all 22.1.8: one per target ISA (code object version 5,
# clang's default), and both in one clang offload bundle (as HIP fat binaries hold them, with an
# empty host entry), from which program_load picks the code object for the device's ISA.
# Usage: build.sh [OUTPUT_DIR] (default: this directory). The output is deterministic:
# tests/amdgpu.rs rebuilds into a temporary directory and compares with the checked-in files.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$src}" && cd "${1:-$src}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for mcpu in gfx90a gfx1030; do
  clang-22 -x cl -cl-std=CL2.0 --target=amdgcn-amd-amdhsa -mcpu=$mcpu -nogpulib -O2 \
    -Xclang -finclude-default-header -c "$src/builtin.cl" -o "$tmp/builtin-$mcpu.o"
  ld.lld-22 -shared "$tmp/builtin-$mcpu.o" -o "$out/builtin-$mcpu.co"
done
: > "$tmp/empty-host"
/usr/lib/llvm-22/bin/clang-offload-bundler -type=o \
  -targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx90a,hipv4-amdgcn-amd-amdhsa--gfx1030 \
  -input="$tmp/empty-host" -input="$out/builtin-gfx90a.co" -input="$out/builtin-gfx1030.co" \
  -output="$out/builtin.bundle"
clang-22 --version | head -n 1 > "$out/clang-version.txt"
