#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and uses it as a user would: a project of
# its own (consumer/) built once with CMake (find_package(tutti)) and once with pkg-config,
# each program run on 3 ranks under the installed tutti-run.
#   install_test.sh BUILD_DIR CONSUMER_SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
for f in bin/tutti-run bin/tutti-bench include/tutti/tutti.h include/tutti/tutti.hpp \
         lib/cmake/tutti/tuttiConfig.cmake; do
  [ -e "$prefix/$f" ] || { echo "install_test: $f is not in the prefix" >&2; exit 1; }
done
# The shared library carries its soname, and the .so link points at it.
lib=$(find "$prefix" -name 'libtutti.so' -print -quit)
[ -n "$lib" ] || { echo "install_test: no libtutti.so in the prefix" >&2; exit 1; }
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
[ "$soname" = "libtutti.so.0" ] || { echo "install_test: soname is '$soname'" >&2; exit 1; }
[ -e "$(dirname "$lib")/$soname" ] || { echo "install_test: no $soname beside $lib" >&2; exit 1; }

# CMake: find_package(tutti) from the prefix alone.
cmake -S "$src" -B "$tmp/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/cmake-build" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }

# pkg-config: the flags it gives, nothing else (the run path is the user's choice).
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name tutti.pc -print -quit)")
libdir=$(pkg-config --variable=libdir tutti)
mkdir -p "$tmp/pc"
# shellcheck disable=SC2046
c++ -std=c++20 -o "$tmp/pc/consumer_cxx" "$src/consumer.cc" $(pkg-config --cflags --libs tutti) \
  -Wl,-rpath,"$libdir"
# shellcheck disable=SC2046
cc -std=c99 -o "$tmp/pc/consumer_c" "$src/consumer.c" $(pkg-config --cflags --libs tutti) \
  -Wl,-rpath,"$libdir"

# Each program on 3 ranks under the installed launcher; every rank must say ok.
for prog in "$tmp/cmake-build/consumer_cxx" "$tmp/cmake-build/consumer_c" \
            "$tmp/pc/consumer_cxx" "$tmp/pc/consumer_c"; do
  # The program must load the prefix's library, not the build tree's.
  # (ldd's whole output first: grep -q stopping early would make ldd fail under pipefail)
  libs=$(ldd "$prog")
  grep -q "$prefix/.*libtutti" <<<"$libs" || { echo "install_test: $prog does not load the prefix's libtutti" >&2; echo "$libs"; exit 1; }
  out=$("$prefix/bin/tutti-run" -n 3 "$prog")
  echo "$out"
  n=$(grep -c ': ok' <<<"$out" || true)
  [ "$n" = 3 ] || { echo "install_test: $prog: $n of 3 ranks said ok" >&2; exit 1; }
done

# The Python package, when the build has it: imported from the prefix alone.
if ls "$build"/python/tutti/_tutti*.so >/dev/null 2>&1; then
  pydir=$prefix/lib/python3/dist-packages
  [ -e "$pydir/tutti/__init__.py" ] || { echo "install_test: no tutti package in $pydir" >&2; exit 1; }
  out=$(PYTHONPATH=$pydir "$prefix/bin/tutti-run" -n 2 /usr/bin/python3 -c '
import numpy as np, tutti
assert tutti.__file__.startswith("'"$pydir"'"), tutti.__file__
with tutti.Communicator.from_env() as comm:
    x = np.full(5, comm.rank + 1, dtype=np.int32)
    comm.allreduce(x)
    assert (x == 3).all(), x
    print("python rank", comm.rank, ": ok")
')
  echo "$out"
  [ "$(grep -c ': ok' <<<"$out" || true)" = 2 ] || { echo "install_test: the installed Python package failed" >&2; exit 1; }
fi
echo "install_test: passed"
