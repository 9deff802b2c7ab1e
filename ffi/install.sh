#!/usr/bin/env bash
# Installs libordo.a, libordo.so, ordo.h and ordo.pc under PREFIX (lib/, include/,
# lib/pkgconfig/). Build first: cargo build --release -p ordo-clib.
# Usage: ffi/install.sh PREFIX [LIBDIR]   (LIBDIR defaults to target/release)
set -euo pipefail
prefix=${1:?usage: install.sh PREFIX [LIBDIR]}
here=$(cd "$(dirname "$0")" && pwd)
libdir=${2:-$here/../target/release}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/../Cargo.toml" | head -n 1)
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
cp "$libdir/libordo.a" "$prefix/lib/"
# The shared library carries the SONAME libordo.so.0: install it under that name, with the
# development link beside it.
cp "$libdir/libordo.so" "$prefix/lib/libordo.so.0"
ln -sf libordo.so.0 "$prefix/lib/libordo.so"
cp "$here/include/ordo.h" "$prefix/include/"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" "$here/ordo.pc.in" >"$prefix/lib/pkgconfig/ordo.pc"
echo "installed ordo $version under $prefix"
