#!/usr/bin/env bash
# The sweep behind the plot in docs/performance.md and the README: all-reduce, fp32 sum,
# 2 and 4 ranks, 8 B to 64 MiB, tutti and its three peers as installed (Open MPI, MPICH,
# Gloo), by bench/peers/compare.sh (alternating rounds, every element checked); then
# bench/plot_busbw.py writes the medians (CSV) and the plot (PNG). Needs
# bench/peers/setup.sh (the peers, the benchmarks and python3-matplotlib).
#
#   bench/peers/busbw_sweep.sh [--rounds R] [--worlds "2 4"] [--sizes "8 32 ..."]
#                              [--peers "ompi mpich gloo"] [--collective C] [--target S]
#                              [--out DIR] [--img DIR]
#
# Defaults: 5 rounds; sizes 8 B x 4 up to 32 MiB, and 64 MiB; --target 0.3 (seconds a
# measurement, compare.sh's); --out build/peers/sweep-<time>; --img docs/img, where it
# writes busbw_<collective>.csv and busbw_<collective>.png. Three rounds took 33 minutes on
# 2 vCPUs loaded by other work. Run it on a quiet machine: on a loaded one every
# implementation whose waiters poll (MPICH, tutti) loses most, and the plot shows the load.
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=5
worlds="2 4"
sizes="8 32 128 512 2K 8K 32K 128K 512K 2M 8M 32M 64M"
peers="ompi mpich gloo"
collective=allreduce
target=0.3
out=""
img=docs/img
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --worlds) worlds=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --peers) peers=$2; shift ;;
    --collective) collective=$2; shift ;;
    --target) target=$2; shift ;;
    --out) out=$2; shift ;;
    --img) img=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "busbw_sweep.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out="build/peers/sweep-$(date +%Y%m%d-%H%M%S)"
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
  { echo "busbw_sweep.sh: no matplotlib: run bench/peers/setup.sh first" >&2; exit 1; }

bench/peers/compare.sh --collectives "$collective" --worlds "$worlds" --sizes "$sizes" \
  --peers "$peers" --rounds "$rounds" --target "$target" --out "$out"
mkdir -p "$img"
/usr/bin/python3 bench/plot_busbw.py "$out" --csv "$img/busbw_$collective.csv" \
  --png "$img/busbw_$collective.png"
