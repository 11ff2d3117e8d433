#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, ASan + UBSan, build-fuzz/) and runs
# each one for a bounded time from its seed corpus (fuzz/corpus/<target>/) and its crash
# regressions (fuzz/regressions/<target>/). Fails on the first crash, sanitizer report,
# leak, slow input or memory blow-up, leaving the input in build-fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh [-t SECONDS_PER_TARGET] [TARGET...]     (default: 30 s, every target)
#
# New inputs that grow coverage go to build-fuzz/corpus-work/<target>/ (kept between local
# runs, never into the checked-in corpus, which fuzz/corpus_gen.cc owns).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=30
if [ "${1:-}" = "-t" ]; then
  seconds=$2
  shift 2
fi

cmake --preset fuzz >/dev/null
nice cmake --build --preset fuzz -j 2

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for bin in build-fuzz/fuzz/fuzz_*; do targets+=("${bin##*/fuzz_}"); done
fi

# UBSan findings abort (the build has -fno-sanitize-recover); ASan also reports leaks.
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

for t in "${targets[@]}"; do
  bin=build-fuzz/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz: no target $t ($bin)" >&2; exit 2; }
  work=build-fuzz/corpus-work/$t
  artifacts=build-fuzz/artifacts/$t
  mkdir -p "$work" "$artifacts"
  inputs=("$work" "fuzz/corpus/$t")
  [ -d "fuzz/regressions/$t" ] && inputs+=("fuzz/regressions/$t")
  echo "fuzz: $t for ${seconds}s"
  # -max_len covers the largest seed (a store SET with a 4096-byte key); -timeout flags an
  # input that takes over 10 s (a hang); -rss_limit_mb a decoder that allocates what a
  # length field claims.
  if ! "$bin" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "${inputs[@]}" \
      >"build-fuzz/$t.log" 2>&1; then
    tail -n 60 "build-fuzz/$t.log" >&2
    echo "fuzz: $t FAILED; input in $artifacts/, full log build-fuzz/$t.log;" \
         "reproduce with: $bin $artifacts/<file>" >&2
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build-fuzz/$t.log" | tr '\n' ' '
  echo
done
echo "fuzz: ${#targets[@]} targets, no failure"
