#!/usr/bin/env bash
# The test command (README; .ci/run calls it after scripts/setup.sh has built the release
# preset). Steps, in this order, each timed; the first failure stops the run:
#   release  every test of build/
#   asan     builds what the tests labelled `sanitize` or `asan` need in build-asan/
#            (AddressSanitizer + UndefinedBehaviorSanitizer) and runs those tests
#   tsan     the same in build-tsan/ (ThreadSanitizer) for the tests labelled `sanitize`
#   fuzz     scripts/fuzz.sh: every libFuzzer target for 30 s, two at a time (clang,
#            build-fuzz/)
# Which tests carry which label, why, and the measured times: docs/testing.md.
# `scripts/test.sh asan tsan` runs only the steps named. The whole of .ci/run (setup and
# these steps) stays under 40 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(release asan tsan fuzz)

# Sanitizer run-time settings live here, not in code; child processes (tutti-run and its
# ranks) inherit them. UBSan is built with -fno-sanitize-recover, so its findings abort the
# test; halt_on_error does the same for TSan, whose reports would otherwise only be printed
# (exit code 66 then). No suppression file is used: a report is a bug to fix.
export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

sanitized() {  # preset, build target, ctest label regex
  cmake --preset "$1" >/dev/null
  nice cmake --build --preset "$1" -j 2 --target "$2"
  ctest --preset "$1" -j 2 --timeout 900 -L "$3"
}

run_step() {
  case "$1" in
    release) ctest --preset release -j 2 --timeout 300 ;;
    asan) sanitized asan tutti_tests_asan '^(sanitize|asan)$' ;;
    tsan) sanitized tsan tutti_tests_tsan '^sanitize$' ;;
    fuzz) ./scripts/fuzz.sh -t 30 ;;
    *) echo "test.sh: unknown step '$1' (release, asan, tsan, fuzz)" >&2; return 2 ;;
  esac
}

total=$SECONDS
for step in "${steps[@]}"; do
  start=$SECONDS
  run_step "$step"
  echo "test.sh: $step passed in $((SECONDS - start)) s"
done
[ ${#steps[@]} -eq 1 ] || echo "test.sh: all steps (${steps[*]}) passed in $((SECONDS - total)) s"
