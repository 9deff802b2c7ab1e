#!/usr/bin/env bash
# Rebuilds the checked-in AMDGPU code objects from builtin.cl with Debian's clang-22 and lld-22
# (clang 22.1.8): one per target ISA. Code object version 5 (clang's default).
set -euo pipefail
cd "$(dirname "$0")"
for mcpu in gfx90a gfx1030; do
  clang-22 -x cl -cl-std=CL2.0 --target=amdgcn-amd-amdhsa -mcpu=$mcpu -nogpulib -O2 \
    -Xclang -finclude-default-header -c builtin.cl -o /tmp/ordo-builtin-$mcpu.o
  ld.lld-22 -shared /tmp/ordo-builtin-$mcpu.o -o builtin-$mcpu.co
  rm /tmp/ordo-builtin-$mcpu.o
done
clang-22 --version | head -n 1 > clang-version.txt
