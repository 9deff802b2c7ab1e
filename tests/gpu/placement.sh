#!/usr/bin/env bash
# Whether a launch row depends on where the loader places libordo relative to libcuda: the same
# build of libordo.so (feature offload) through offload_bench.c, linked with a padding library of
# PAD bytes between libcuda and libordo.so.0 (DT_NEEDED order: libcuda, the pad, libordo; the
# loader maps them one below the other in that order, so the pad moves libordo away from
# libcuda by its size, in pages). ASLR moves the libraries together, so every process of one
# link has the same distance. Each run prints the distance it got (offload_bench's
# "olLaunchKernel - cuLaunchKernel" line) and its rows (tests/gpu/bench_rows.sh). Exit status 1
# when a benchmark failed.
# Usage (from the repository root, gpu-bin/ carried): bash tests/gpu/placement.sh DIR...
# DIR/offload/libordo.so.0 and gpu-bin/offload/kernels.ptx (PTX=... to change). PADS (bytes,
# space-separated) defaults to "0 20480 204800 1060864".
set -uo pipefail
ptx=${PTX:-gpu-bin/offload/kernels.ptx} pads=${PADS:-0 20480 204800 1060864}
[ $# -ge 1 ] || { echo "usage: placement.sh DIR..." >&2; exit 2; }
cuda_inc=$(for d in /usr/local/cuda/include /usr/include; do [ -f "$d/cuda.h" ] && echo "$d" && break; done)
command -v cc >/dev/null && [ -n "$cuda_inc" ] || { echo "FAIL: needs cc and cuda.h"; exit 1; }
work=$(mktemp -d)
for pad in $pads; do
  if [ "$pad" -gt 0 ]; then
    printf 'const char ordo_placement_pad[%d] = {1};\n' "$pad" > "$work/pad.c"
    cc -shared -fPIC -o "$work/libpad$pad.so" "$work/pad.c" || exit 1
  fi
done
status=0
for dir in "$@"; do
  lib=$(realpath "$dir/offload/libordo.so.0")
  for pad in $pads; do
    extra=()
    [ "$pad" -gt 0 ] && extra=("$work/libpad$pad.so")
    cc -O2 -I"$cuda_inc" tests/gpu/offload_bench.c -Wl,--no-as-needed -lcuda "${extra[@]}" "$lib" \
      -Wl,-rpath,"$(dirname "$lib")":"$work" -o "$work/bench" || exit 1
    echo "== $dir, pad $pad bytes"
    # The rows as bench_rows.sh reads them (for one process: its own values).
    if "$work/bench" "$ptx" > "$work/bench.log"; then
      grep '^olLaunchKernel - ' "$work/bench.log"
      bash tests/gpu/bench_rows.sh "$work/bench.log"
    else
      echo "FAIL: offload_bench (rc=$?)"; cat "$work/bench.log"; status=1
    fi
  done
done
rm -rf "$work"
exit $status
