#!/usr/bin/env bash
# Regret of the algorithm choice (issue 39): over a grid of cells (transport x world x
# collective x size, one host), every applicable algorithm is forced (and, in the full
# grid, each segment where it matters), then the model's tuner (TUTTI_TUNER=model) and the
# old table (TUTTI_TUNER=table) run the cell unforced, all in the same round. Per cell:
# the best forced time, tuner/best and table/best; the summary gives the share of cells
# within 10% of the best and the worst ratio of each. Every run checks its first result
# (-c 1); a wrong element stops the script.
#
#   bench/regret.sh [--quick] [--rounds R] [--out DIR] [--transports "shm tcp"]
#                   [--worlds "2 4 8"] [--collectives "allreduce ..."] [--sizes "8 64K ..."]
#                   [--summarize]
#
# --quick: all-reduce at 8 B, 64 KiB, 4 MiB and 64 MiB on 2, 4 and 8 ranks over shm and
# tcp, default segments only (a few minutes on 2 cores). Without it: every collective,
# 8 B to 256 MiB by 8x, 2/4/8 ranks, shm and tcp, and the ring-like algorithms at 64K,
# 256K and 1M segments (TUTTI_SEGMENT_BYTES) where the size exceeds the segment (hours).
# (hybrid, shared memory on a host and TCP between hosts, needs hosts: the multi-host tier,
# tests/multihost/netns.sh and tutti-run --hosts; not run by this script.)
# Round r runs every candidate of a cell once; a figure is the median over rounds of the
# cell's out-of-place time (tutti-bench, mean over ranks). Writes DIR/raw.txt (one line per
# run), DIR/cells.csv (one line per cell) and DIR/regret.png (bench/plot_regret.py).
# --summarize: measure nothing, summarize DIR/raw.txt again.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0 rounds=1 out="" summarize=0
transports="shm tcp" worlds="2 4 8" collectives="" sizes=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --rounds) rounds=$2; shift ;;
    --out) out=$2; shift ;;
    --transports) transports=$2; shift ;;
    --worlds) worlds=$2; shift ;;
    --collectives) collectives=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --summarize) summarize=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "regret.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
if [ "$quick" = 1 ]; then
  : "${collectives:=allreduce}"
  [ -n "$sizes" ] || sizes="8 64K 4M 64M"
  segments=""
else
  : "${collectives:=allreduce allgather reducescatter broadcast reduce gather scatter alltoall barrier}"
  [ -n "$sizes" ] || sizes="8 64 512 4K 32K 256K 2M 16M 128M 256M"
  segments="64K 256K 1M"
fi
[ -n "$out" ] || out="build/regret-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
raw="$out/raw.txt"
bin=build/bin
prio=()
if [ "$(id -u)" = 0 ] && command -v chrt >/dev/null; then prio=(chrt -f 10); fi

bytes_of() {  # 64K -> 65536
  awk -v s="$1" 'BEGIN { m = 1; u = toupper(substr(s, length(s)));
    if (u == "K") m = 1024; else if (u == "M") m = 1048576; else if (u == "G") m = 1073741824;
    if (m > 1) s = substr(s, 1, length(s) - 1); printf "%d", s * m }'
}

iters_for() {  # bytes world -> timed iterations, so that a run takes about a second
  local b=$1
  if [ "$b" -le 65536 ]; then echo 200; elif [ "$b" -le 4194304 ]; then echo 20; else echo 3; fi
}

algorithms_for() {  # collective world -> the algorithm names that apply, from the error
  "$bin/tutti-run" -n "$2" "$bin/tutti-bench" "$1" -b 64 -e 64 --algo none 2>&1 |
    sed -n 's/.*algorithms that apply: //p' | head -n 1 | tr -d ',' | tr ' ' '\n' | grep -v '^$' || true
}

# Segments matter for the pipelined algorithms (ring, trees, hierarchical ones).
segmented() { case "$1" in ring|double_binary_tree|binomial|hier*|hierarchical) return 0 ;; *) return 1 ;; esac; }

run_one() {  # transport world collective size label env... -- bench args...
  local transport=$1 n=$2 coll=$3 size=$4 label=$5
  shift 5
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local b iters
  b=$(bytes_of "$size")
  iters=$(iters_for "$b")
  local tmp="$out/last.out"
  if ! env TUTTI_TRANSPORT="$transport" "${envs[@]}" timeout 600 "${prio[@]}" "$bin/tutti-run" -n "$n" \
      "$bin/tutti-bench" "$coll" -b "$b" -e "$b" -n "$iters" -w 2 -c 1 "$@" >"$tmp" 2>&1; then
    grep -q "does not apply\|algorithms that apply" "$tmp" && return 0
    echo "regret.sh: FAILED $transport $n $coll $size $label" >&2; cat "$tmp" >&2; exit 1
  fi
  awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ && $10 != 0 && $10 != "N/A" {bad = 1} END {exit bad}' "$tmp" ||
    { echo "regret.sh: WRONG $transport $n $coll $size $label" >&2; cat "$tmp" >&2; exit 1; }
  # round transport world collective bytes label time_us chosen
  awk -v r="$round" -v t="$transport" -v n="$n" -v c="$coll" -v l="$label" \
    '$1 == "[0]" && $2 ~ /^[0-9]+$/ {print r, t, n, c, $2, l, $7, $NF}' "$tmp" >>"$raw"
}

if [ "$summarize" = 0 ]; then
  : >"$raw"
  for round in $(seq 1 "$rounds"); do
    for transport in $transports; do
      for n in $worlds; do
        for coll in $collectives; do
          mapfile -t algos < <(algorithms_for "$coll" "$n")
          for size in $sizes; do
            b=$(bytes_of "$size")
            echo "== round $round: $transport $n ranks $coll $size" >&2
            run_one "$transport" "$n" "$coll" "$size" tuner TUTTI_TUNER=model --
            run_one "$transport" "$n" "$coll" "$size" table TUTTI_TUNER=table --
            for algo in "${algos[@]}"; do
              run_one "$transport" "$n" "$coll" "$size" "$algo" TUTTI_TUNER=table -- --algo "$algo"
              segmented "$algo" || continue
              for seg in $segments; do
                [ "$b" -gt "$(bytes_of "$seg")" ] || continue
                run_one "$transport" "$n" "$coll" "$size" "$algo/$seg" TUTTI_TUNER=table \
                  TUTTI_SEGMENT_BYTES="$seg" -- --algo "$algo"
              done
            done
          done
        done
      done
    done
  done
fi
/usr/bin/python3 bench/plot_regret.py "$raw" --csv "$out/cells.csv" --png "$out/regret.png"
