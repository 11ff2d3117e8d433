#!/usr/bin/env bash
# Medians of repeated tutti-bench all-reduce runs (float32 sum, TCP transport) for a few
# world sizes and message sizes: the figures quoted in closing notes come from here.
#   bench/allreduce_tcp.sh [runs=5] [world sizes="2 4 8"]
# Prints, per world size and message size, the median over runs of the out-of-place time
# (us) and bus bandwidth (GB/s). Every run checks its results (-c 1) and must report 0 wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
worlds=${2:-"2 4 8"}
sizes="8 1M 16M 64M"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for n in $worlds; do
  for size in $sizes; do
    for ((i = 0; i < runs; i++)); do
      iters=20
      [ "$size" = 8 ] && iters=500
      build/bin/tutti-run -n "$n" build/bin/tutti-bench allreduce -b "$size" -e "$size" \
        -n "$iters" -w 5 -c 1 >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
      grep -q '# Out of bounds values : 0 OK' "$tmp/out" || { cat "$tmp/out"; exit 1; }
      # row: [0] size count type redop root time algbw busbw wrong ...
      awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ {print $7, $9}' "$tmp/out" >>"$tmp/n$n-$size"
    done
    count=$(wc -l <"$tmp/n$n-$size")
    mid=$(((count + 1) / 2))
    t=$(awk '{print $1}' "$tmp/n$n-$size" | sort -g | sed -n "${mid}p")
    b=$(awk '{print $2}' "$tmp/n$n-$size" | sort -g | sed -n "${mid}p")
    printf 'ranks %-2s size %-4s  time %10s us  busbw %6s GB/s  (median of %d runs)\n' \
      "$n" "$size" "$t" "$b" "$count"
  done
done
