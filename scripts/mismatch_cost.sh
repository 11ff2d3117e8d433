#!/usr/bin/env bash
# What mismatch detection costs an 8-byte all-reduce (issue: "within 2%"): builds tutti a
# second time with TUTTI_CALL_STAMPS=OFF (messages unstamped, nothing checked) in
# build-nostamps/, then alternates it with build/ (scripts/ab_latency.sh). The ratio of
# build/ to the first build is the cost.
#
#   scripts/mismatch_cost.sh [ROUNDS] [TRANSPORT]      (defaults: 100, shm)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-100}
transport=${2:-shm}
cmake --preset release >/dev/null
cmake -S . -B build-nostamps -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTUTTI_CALL_STAMPS=OFF -DTUTTI_BUILD_TESTS=OFF >/dev/null
nice cmake --build build -j 2 --target tutti-run tutti-bench >/dev/null
nice cmake --build build-nostamps -j 2 --target tutti-run tutti-bench >/dev/null
exec ./scripts/ab_latency.sh -r "$rounds" -t "$transport" build-nostamps/bin build/bin
