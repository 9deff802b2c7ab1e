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
# Both in one clang offload bundle (as HIP fat binaries hold them, with an empty host entry):
# program_load picks the code object for the device's ISA.
: > /tmp/ordo-empty-host
/usr/lib/llvm-22/bin/clang-offload-bundler -type=o \
  -targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx90a,hipv4-amdgcn-amd-amdhsa--gfx1030 \
  -input=/tmp/ordo-empty-host -input=builtin-gfx90a.co -input=builtin-gfx1030.co -output=builtin.bundle
rm /tmp/ordo-empty-host
