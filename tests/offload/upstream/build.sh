#!/usr/bin/env bash
# Builds LLVM 22.1.8's liboffload unit tests (offload/unittests/OffloadAPI, unmodified) against
# ordo's libordo.so (feature `offload`):
#   bash tests/offload/upstream/build.sh OUTDIR LIBDIR [DEVICE_CODE_DIR]
# LIBDIR holds libordo.so; OUTDIR receives one gtest binary per upstream suite (device, event,
# init, kernel, memory, platform, program, queue, symbol), libordo.so.0 beside them (they find
# it through $ORIGIN, so OUTDIR can be carried to the GPU machine), and the sources under src/.
# DEVICE_CODE_DIR is upstream's DEVICE_CODE_PATH, compiled in as given (a relative path is
# relative to where the tests run): where they look for <name>.nvptx64.bin and <name>.amdgpu.bin.
# When it is given, upstream's device code (device_code/*.cpp) is compiled there for NVPTX by
# clang-22 as PTX for sm_90 (ordo loads PTX, cubin and fatbin alike; upstream's CMake links a
# cubin with the CUDA toolkit, which the build machine does not have).
#
# The source is Debian's llvm-toolchain-22 1:22.1.8 orig tarball, fetched from the Debian
# archive this machine's apt sources name (main pool, then the security pool), checked against
# its sha256, and cached in ${ORDO_CACHE:-~/.cache/ordo}; only offload/unittests/OffloadAPI is
# extracted. The build follows upstream's CMake (offload/unittests/CMakeLists.txt): one binary
# per suite from common/Environment.cpp and the suite's files, DEVICE_CODE_PATH defined, the init
# suite with DISABLE_WRAPPER; gtest is Debian's libgtest-dev, LLVMSupport is linked statically
# from llvm-22-dev, and main.cpp here stands for LLVM's gtest main.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
libdir=$(cd "$2" && pwd)
device_code=${3:-$out/device_code}
nvptx=${3:+yes}
here=$(cd "$(dirname "$0")" && pwd)
version=22.1.8
tarball=llvm-toolchain-22_$version.orig.tar.xz
sha256=b49b9277aef97616320b2da259e1f8174c65b0ce2fbe2e8629644a97693402fe
cache=${ORDO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ordo}
mkdir -p "$cache"

if ! echo "$sha256  $cache/$tarball" | sha256sum -c --status 2>/dev/null; then
  # The archive's addresses come from apt's own configuration (deb822 sources or one-line lists;
  # a system may have either alone, so a missing file is no error here).
  uris=$( (grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | sed 's/^URIs:[[:space:]]*//' | tr ' ' '\n' || true
          grep -h '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}' || true) |
          grep -E '^https?://' | sort -u || true)
  for uri in $uris; do
    for pool in pool/main pool/updates/main; do
      url="${uri%/}/$pool/l/llvm-toolchain-22/$tarball"
      if curl -sSfL --retry 2 -o "$cache/$tarball.part" "$url" 2>/dev/null &&
        echo "$sha256  $cache/$tarball.part" | sha256sum -c --status; then
        mv "$cache/$tarball.part" "$cache/$tarball"
        break 2
      fi
      rm -f "$cache/$tarball.part"
    done
  done
  echo "$sha256  $cache/$tarball" | sha256sum -c --status ||
    { echo "could not fetch $tarball (sha256 $sha256) from the apt sources' archives" >&2; exit 1; }
fi

src=$out/src
rm -rf "$src"
mkdir -p "$src" "$device_code"
tar -xJf "$cache/$tarball" -C "$src" --strip-components=4 "llvm-toolchain-22_$version/offload/unittests/OffloadAPI"

if [ -n "$nvptx" ]; then
  for code in "$src"/device_code/*.cpp; do
    clang-22 --target=nvptx64-nvidia-cuda -march=sm_90 -nogpulib -ffreestanding -O3 \
      -Xclang -target-feature -Xclang +ptx80 -S "$code" -o "$device_code/$(basename "$code" .cpp).nvptx64.bin"
  done
fi

cp "$libdir/libordo.so" "$out/libordo.so.0"
llvm_include=/usr/lib/llvm-22/include
cxx=${CXX:-c++}
flags=(-std=c++17 -O1 -g0 -D_GNU_SOURCE -D__STDC_CONSTANT_MACROS -D__STDC_FORMAT_MACROS -D__STDC_LIMIT_MACROS
  -I"$llvm_include/offload" -I"$llvm_include" -I"$src/common" -DDEVICE_CODE_PATH="\"$device_code\"")
libs=("$out/libordo.so.0" -Wl,-rpath,'$ORIGIN' /usr/lib/llvm-22/lib/libLLVMSupport.a
  /usr/lib/llvm-22/lib/libLLVMDemangle.a -lgtest -lpthread)
"$cxx" "${flags[@]}" -c "$src/common/Environment.cpp" -o "$out/Environment.o"
"$cxx" "${flags[@]}" -DDISABLE_WRAPPER -c "$src/common/Environment.cpp" -o "$out/Environment-nowrapper.o"
"$cxx" "${flags[@]}" -c "$here/main.cpp" -o "$out/main.o"
pids=()
for suite in device event init kernel memory platform program queue symbol; do
  env=$out/Environment.o defines=()
  if [ "$suite" = init ]; then env=$out/Environment-nowrapper.o defines=(-DDISABLE_WRAPPER); fi
  "$cxx" "${flags[@]}" "${defines[@]}" "$src/$suite"/*.cpp "$env" "$out/main.o" "${libs[@]}" \
    -o "$out/$suite.unittests" &
  pids+=($!)
  # Two compilers at a time (CI has two cores).
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "$pid"; done
echo "built $(ls "$out"/*.unittests | wc -l) suites in $out"
