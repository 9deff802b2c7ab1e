#!/usr/bin/env bash
# Whether a launch row depends on where the loader places libordo relative to libcuda: the same
# build of libordo.so (feature offload) through offload_bench.c, linked with a padding library of
# PAD bytes between libordo.so.0 and libcuda (DT_NEEDED order: libordo, the pad, libcuda; the
# loader maps them in that order, so the pad moves libcuda and everything after it by its size
# relative to libordo). Processes of one link map the libraries at the same relative offsets, so
# a placement effect repeats in every process of that link and moves with the pad.
#
# Usage (from the repository root, gpu-bin/ carried): bash tests/gpu/placement.sh DIR...
# DIR/offload/libordo.so.0 and gpu-bin/offload/kernels.ptx (PTX=... to change). PADS (bytes,
# space-separated) defaults to "0 20480 204800 2134016".
set -uo pipefail
ptx=${PTX:-gpu-bin/offload/kernels.ptx} pads=${PADS:-0 20480 204800 2134016}
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
for dir in "$@"; do
  lib=$(realpath "$dir/offload/libordo.so.0")
  for pad in $pads; do
    extra=()
    [ "$pad" -gt 0 ] && extra=(-Wl,--no-as-needed "$work/libpad$pad.so")
    cc -O2 -I"$cuda_inc" tests/gpu/offload_bench.c "$lib" "${extra[@]}" -lcuda \
      -Wl,-rpath,"$(dirname "$lib")":"$work" -o "$work/bench" || exit 1
    echo "== $dir, pad $pad bytes"
    "$work/bench" "$ptx" | grep -E '^\| (same CUfunction|diagnosis: (ordo_launch|olLaunchKernel vs ordo))' |
      awk -F'|' '{ n = $2; gsub(/^ +| +$/, "", n); r = $5; sub(/^ +/, "", r); sub(/ .*/, "", r); sub(/;$/, "", r); print r "  " n }'
  done
done
rm -rf "$work"
