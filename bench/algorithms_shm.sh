#!/usr/bin/env bash
# Every algorithm of one collective against the default, over shared memory on this host,
# at a range of sizes: the evidence behind the one-host rules in src/algorithms/defaults.cc.
#
#   bench/algorithms_shm.sh [-r ROUNDS] [-n "WORLDS"] [-c COLLECTIVE] [-b MIN] [-e MAX]
#                           [-f FACTOR] [-i ITERS] [-w WARMUP] [-a "BENCH ARGS"] [ALGO...]
#
# Runs alternate (round 1: default, then each algorithm; round 2: the same ...) because the
# machine's speed drifts; each algorithm's figure is the median over rounds of its time
# divided by the default's in the same round (below 1: faster than the default). Without
# ALGO every algorithm that applies is timed. The first result of every run is checked
# (-c 1); a wrong element stops the script. As root the ranks run SCHED_FIFO (chrt -f 10).
#
#   bench/algorithms_shm.sh -n "2 4 8" -c allreduce -b 1K -e 64K -i 2000
#   bench/algorithms_shm.sh -n 4 -c allgather -b 256K -e 16M -i 20 -w 3 -a "-R 1"
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 worlds=2 coll=allreduce minb=1K maxb=64K factor=4 iters=1000 warmup=100 benchargs=""
while getopts "r:n:c:b:e:f:i:w:a:" opt; do
  case $opt in
    r) rounds=$OPTARG ;; n) worlds=$OPTARG ;; c) coll=$OPTARG ;; b) minb=$OPTARG ;;
    e) maxb=$OPTARG ;; f) factor=$OPTARG ;; i) iters=$OPTARG ;; w) warmup=$OPTARG ;;
    a) benchargs=$OPTARG ;;
    *) sed -n '4,6p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
bin=build/bin
prio=()
if [ "$(id -u)" = 0 ] && command -v chrt >/dev/null; then prio=(chrt -f 10); fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

algorithms_for() {  # collective -> algorithm names, from the error that lists them
  "$bin/tutti-run" -n 2 "$bin/tutti-bench" "$1" -b 64 -e 64 --algo none 2>&1 |
    sed -n 's/.*algorithms that apply: //p' | head -n 1 | tr -d ',' | tr ' ' '\n' | grep -v '^$' || true
}
algos=("$@")
[ ${#algos[@]} -gt 0 ] || mapfile -t algos < <(algorithms_for "$coll")

for n in $worlds; do
  : >"$tmp/t"
  for round in $(seq 1 "$rounds"); do
    for algo in auto "${algos[@]}"; do
      force=()
      [ "$algo" = auto ] || force=(--algo "$algo")
      # An algorithm that does not apply to this world (a power of two, ...) is skipped.
      if ! TUTTI_TRANSPORT=shm timeout 600 "${prio[@]}" "$bin/tutti-run" -n "$n" "$bin/tutti-bench" \
          "$coll" -b "$minb" -e "$maxb" -f "$factor" -n "$iters" -w "$warmup" -c 1 \
          "${force[@]}" $benchargs >"$tmp/out" 2>&1; then
        grep -q "does not apply\|algorithms that apply" "$tmp/out" && continue
        echo "FAILED: $n ranks $coll $algo"; cat "$tmp/out"; exit 1
      fi
      awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ && $10 != 0 {bad = 1} END {exit bad}' "$tmp/out" ||
        { echo "WRONG: $n ranks $coll $algo"; cat "$tmp/out"; exit 1; }
      # round algorithm size time default-choice
      awk -v r="$round" -v a="$algo" '$1 == "[0]" && $2 ~ /^[0-9]+$/ {print r, a, $2, $7, $NF}' \
        "$tmp/out" >>"$tmp/t"
    done
  done
  printf '%-3s %-14s %10s %-22s %12s %10s\n' ranks collective bytes algorithm median_us vs_auto
  for size in $(awk '{print $3}' "$tmp/t" | sort -gu); do
    for algo in auto "${algos[@]}"; do
      awk -v a="$algo" -v s="$size" '$2 == a && $3 == s' "$tmp/t" | grep -q . || continue
      med=$(awk -v a="$algo" -v s="$size" '$2 == a && $3 == s {print $4}' "$tmp/t" |
            sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
      ratio=$(awk -v a="$algo" -v s="$size" '$3 == s && $2 == "auto" {d[$1] = $4}
                $3 == s && $2 == a {t[$1] = $4} END {for (r in t) if (r in d) print t[r] / d[r]}' "$tmp/t" |
              sort -g | awk '{v[NR] = $1} END {printf "%.3f", v[int((NR + 1) / 2)]}')
      label=$algo
      [ "$algo" != auto ] || label="auto($(awk -v s="$size" '$2 == "auto" && $3 == s {print $5; exit}' "$tmp/t"))"
      printf '%-3s %-14s %10s %-22s %12s %10s\n' "$n" "$coll" "$size" "$label" "$med" "$ratio"
    done
  done
done
