#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, ASan + UBSan, build-fuzz/) and runs
# each one for a bounded time from its seed corpus (fuzz/corpus/<target>/) and its crash
# regressions (fuzz/regressions/<target>/), two targets at a time (one per core). Fails when
# a target finds a crash, sanitizer report, leak, hang or memory blow-up, leaving the input
# in build-fuzz/artifacts/<target>/.
#
#   scripts/fuzz.sh [-t SECONDS_PER_TARGET] [TARGET...]     (default: 30 s, every target)
#
# New inputs that grow coverage go to build-fuzz/corpus-work/<target>/ (kept between local
# runs, never into the checked-in corpus, which fuzz/corpus_gen.cc owns). A crash found
# here becomes a regression input: copy it to fuzz/regressions/<target>/ with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=30
if [ "${1:-}" = "-t" ]; then
  seconds=$2
  shift 2
fi
parallel=2

cmake --preset fuzz >/dev/null
# Only the fuzz targets and what they link (about 50 units of the tree's 170).
nice cmake --build --preset fuzz -j 2 --target tutti_fuzzers

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for bin in build-fuzz/fuzz/fuzz_*; do targets+=("${bin##*/fuzz_}"); done
fi
for t in "${targets[@]}"; do
  if [ ! -x "build-fuzz/fuzz/fuzz_$t" ]; then
    echo "fuzz: no target $t (build-fuzz/fuzz/fuzz_$t)" >&2
    exit 2
  fi
done

# UBSan findings abort (the build has -fno-sanitize-recover); ASan also reports leaks.
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Runs one target; its output goes to build-fuzz/<target>.log.
run_target() {
  local t=$1
  local work=build-fuzz/corpus-work/$t artifacts=build-fuzz/artifacts/$t
  mkdir -p "$work" "$artifacts"
  local inputs=("$work" "fuzz/corpus/$t")
  [ -d "fuzz/regressions/$t" ] && inputs+=("fuzz/regressions/$t")
  # -max_len covers the largest seed (a store SET with a 4096-byte key); -timeout flags an
  # input that takes over 10 s (a hang); -rss_limit_mb a decoder that allocates what a
  # length field claims.
  "build-fuzz/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" "${inputs[@]}" \
    >"build-fuzz/$t.log" 2>&1
}

# Reports how a finished target went; returns its status.
report() {
  local t=$1 status=$2
  if [ "$status" -ne 0 ]; then
    tail -n 60 "build-fuzz/$t.log" >&2
    echo "fuzz: $t FAILED; input in build-fuzz/artifacts/$t/, full log build-fuzz/$t.log;" \
         "reproduce with: build-fuzz/fuzz/fuzz_$t build-fuzz/artifacts/$t/<file>" >&2
    return 1
  fi
  echo "fuzz: $t for ${seconds}s: $(grep -E "stat::number_of_executed_units|stat::peak_rss_mb" \
    "build-fuzz/$t.log" | tr -s ' \n' ' ')"
}

declare -A running=()  # pid -> target
failed=0
# Waits for one running target to finish and reports it.
reap_one() {
  local pid=0 status=0
  wait -n -p pid "${!running[@]}" || status=$?
  report "${running[$pid]}" "$status" || failed=1
  unset "running[$pid]"
}
for t in "${targets[@]}"; do
  while [ ${#running[@]} -ge $parallel ]; do reap_one; done
  run_target "$t" &
  running[$!]=$t
done
while [ ${#running[@]} -gt 0 ]; do reap_one; done
[ $failed -eq 0 ] || exit 1
echo "fuzz: ${#targets[@]} targets, no failure"
