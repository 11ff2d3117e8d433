#!/usr/bin/env bash
# Installs the peers tutti is measured against (Debian 12 packages, as root: Open MPI,
# MPICH, Gloo; and matplotlib for bench/plot_busbw.py), builds tutti's release preset
# (tutti-run, tutti-bench) and the peer benchmarks into build/peers/. Safe to run again: it
# only installs what is missing.
# None of this is part of the main build or of CI; bench/peers/compare.sh runs the lot.
set -euo pipefail
cd "$(dirname "$0")/../.."

PACKAGES=(
  openmpi-bin libopenmpi-dev   # Open MPI 4.1 (mpirun.openmpi, mpicxx.openmpi)
  mpich libmpich-dev           # MPICH 4.0 (mpirun.mpich, mpicxx.mpich)
  libgloo-dev                  # Gloo (headers, libgloo.so)
  make g++                     # the peer benchmarks' build
  python3-matplotlib           # bench/plot_busbw.py (the plot in docs/performance.md)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 1800 apt-get update -qq
  timeout 1800 apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# tutti's own side of the comparison (configures the release preset if needed).
[ -f build/build.ninja ] || cmake --preset release >/dev/null
cmake --build build -j2 --target tutti-run tutti-bench

make -C bench/peers -j2 OUT="$PWD/build/peers"
echo "setup: built the peer benchmarks into build/peers/"
