#!/usr/bin/env bash
# Acceptance run: every collective x world sizes x sizes from 0 bytes to 16 MiB with
# checking on and every row's schedules verified first (--verify), then every all-reduce
# algorithm forced by name. Fails on any wrong element or verifier finding.
#   bench/check_collectives.sh [world sizes="1 2 3 5 8"] [max bytes=16M]
set -euo pipefail
cd "$(dirname "$0")/.."
worlds=${1:-"1 2 3 5 8"}
max=${2:-16M}
for n in $worlds; do
  out=$(build/bin/tutti-run -n "$n" build/bin/tutti-bench all -b 0 -e "$max" -f 8 -n 2 -w 1 -c 1 --verify 2>&1) ||
    { echo "$out"; echo "FAILED: all collectives, $n ranks"; exit 1; }
  echo "$out" | grep -q 'Out of bounds values : 0 OK' || { echo "$out"; exit 1; }
  echo "$n ranks: every collective, 0 .. $max: $(echo "$out" | grep -c '^\[0\] *[0-9]') rows, 0 wrong"
done
# The list of names comes from the error an unknown name gets (the run itself fails).
algos=$( (build/bin/tutti-run -n 2 build/bin/tutti-bench allreduce -b 64 -e 64 --algo none 2>&1 || true) |
        sed -n 's/.*algorithms that apply: //p' | head -n 1 | tr -d ',')
[ -n "$algos" ] || { echo "could not list the all-reduce algorithms"; exit 1; }
for algo in $algos; do
  for n in $worlds; do
    out=$(build/bin/tutti-run -n "$n" build/bin/tutti-bench allreduce -b 0 -e "$max" -f 8 -n 2 -w 1 \
            -c 1 -d all --algo "$algo" 2>&1) || { echo "$out"; echo "FAILED: allreduce $algo, $n ranks"; exit 1; }
    echo "$out" | grep -q 'Out of bounds values : 0 OK' || { echo "$out"; exit 1; }
  done
  echo "allreduce --algo $algo: worlds $worlds, every dtype, 0 .. $max: 0 wrong"
done
