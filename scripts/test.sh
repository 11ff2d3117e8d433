#!/usr/bin/env bash
# Runs the whole test suite of the release build (scripts/setup.sh builds it first).
# Every test has its own timeout; the suite as a whole stays well under 30 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --preset release -j 2 --timeout 300
