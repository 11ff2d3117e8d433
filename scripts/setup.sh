#!/usr/bin/env bash
# Installs what tutti needs from Debian 12's packages (as root), then configures and builds
# the release preset into build/. Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential g++ cmake ninja-build pkg-config   # toolchain
  lld                                                # the linker (cmake/linker.cmake)
  libgtest-dev libgmock-dev                          # tests
  libbenchmark-dev                                   # kernel micro-benchmarks
  libcli11-dev                                       # command lines of the tools
  libssl-dev                                         # HMAC for the authenticated bootstrap
  libhwloc-dev                                       # the host's topology (src/topology)
  clang libclang-rt-14-dev                           # libFuzzer and its runtimes (scripts/fuzz.sh)
  iproute2 procps                                    # network-namespace tests, ps/pgrep
  openmpi-bin mpich slurm-wlm                        # the launchers' tests (tests/launchers)
  iperf3                                             # bench/tcp_netns.sh (a benchmark only)
  python3-dev pybind11-dev python3-numpy python3-pytest  # import tutti, and its tests
  python3-torch libtorch-dev                         # the torch.distributed backend
  python3-matplotlib                                 # tutti-sim --plot
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake --preset release >/dev/null
cmake --build --preset release
