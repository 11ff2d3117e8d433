#!/usr/bin/env bash
# Times every collective with every algorithm that applies to it, forced by name, at a few
# sizes and world sizes: the evidence behind the default rules in src/algorithms/defaults.cc.
#   bench/algorithms_tcp.sh [world sizes="4 8"] [sizes="1K 64K 4M"] [runs=3]
# Prints one line per (world, collective, size, algorithm): the median over runs of the
# out-of-place time in microseconds. Every run checks its results (-c 1).
set -euo pipefail
cd "$(dirname "$0")/.."
worlds=${1:-"4 8"}
sizes=${2:-"1K 64K 4M"}
runs=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

algorithms_for() {  # collective -> algorithm names, from the error that lists them
  build/bin/tutti-run -n 2 build/bin/tutti-bench "$1" -b 64 -e 64 --algo none 2>&1 |
    sed -n 's/.*algorithms that apply: //p' | head -n 1 | tr -d ',' | tr ' ' '\n' | grep -v '^$' || true
}

for collective in allreduce allgather reducescatter broadcast reduce gather scatter alltoall; do
  algos=$(algorithms_for "$collective")
  for n in $worlds; do
    for size in $sizes; do
      for algo in $algos; do
        : >"$tmp/t"
        for ((i = 0; i < runs; i++)); do
          build/bin/tutti-run -n "$n" build/bin/tutti-bench "$collective" -b "$size" -e "$size" \
            -n 10 -w 2 -c 1 --algo "$algo" >"$tmp/out" 2>&1 || { echo "FAILED: $collective $algo"; cat "$tmp/out"; exit 1; }
          grep -q 'values : 0 OK' "$tmp/out" || { echo "WRONG: $collective $algo"; cat "$tmp/out"; exit 1; }
          awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ {print $7}' "$tmp/out" >>"$tmp/t"
        done
        mid=$(((runs + 1) / 2))
        printf '%-2s %-14s %-5s %-20s %12s\n' "$n" "$collective" "$size" "$algo" \
          "$(sort -g "$tmp/t" | sed -n "${mid}p")"
      done
    done
  done
done
