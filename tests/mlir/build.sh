#!/usr/bin/env bash
# Compiles each tests/mlir/*.mlir ahead of time with Debian's mlir-22-tools and links it against
# libordo.so (built with feature `mlir`) and print.c (the entry points `vector.print` calls):
#   bash tests/mlir/build.sh OUTDIR LIBDIR
# The pipeline is the one MLIR documents for CUDA (PTX embedded, JIT-loaded by the driver).
set -euo pipefail
out=$1; libdir=$2
bin=${MLIR_BIN:-/usr/lib/llvm-22/bin}
mkdir -p "$out"
# The programs find both libraries beside themselves ($ORIGIN), so the directory can be carried
# to a machine without the MLIR tools (the GPU machine).
cp "$libdir/libordo.so" "$out/libordo.so.0"
cc -c -O2 "$(dirname "$0")/print.c" -o "$out/print.o"
for src in "$(dirname "$0")"/*.mlir; do
  name=$(basename "$src" .mlir)
  # A program may ask for other pipeline options on a line `// PIPELINE: ...` (e.g. sm_90 for
  # clusters); the default embeds PTX for the driver to JIT.
  options=$(sed -n 's|^// PIPELINE: ||p' "$src")
  "$bin/mlir-opt" "$src" -gpu-lower-to-nvvm-pipeline="${options:-cubin-format=isa}" -o "$out/$name.llvm.mlir"
  "$bin/mlir-translate" --mlir-to-llvmir "$out/$name.llvm.mlir" -o "$out/$name.ll"
  "$bin/llc" -O2 -filetype=obj -relocation-model=pic "$out/$name.ll" -o "$out/$name.o"
  cc "$out/$name.o" "$out/print.o" -o "$out/$name" "$out/libordo.so.0" -Wl,-rpath,'$ORIGIN' \
     -Wl,--no-undefined
done
