#!/usr/bin/env bash
# Alternates builds of tutti on one small-message measurement and prints, per build, the
# median latency and the median of its per-round ratio to the first build. Runs alternate
# (round 1: A B C, round 2: C B A, round 3: A B C, ...) because this machine's speed drifts
# between runs: the per-round ratio cancels the drift that a comparison of two separate
# series keeps, and the order turning each round keeps any build from always going first.
#
#   scripts/ab_latency.sh [-r ROUNDS] [-n RANKS] [-b BYTES] [-c COLLECTIVE] [-t TRANSPORT]
#                         [-i ITERS] [-w WARMUP] [-a "BENCH ARGS"] [-p] [-s] [-k FILE] BINDIR...
#
# -p times the in-place row instead of the out-of-place one (a broadcast in place is what
# MPI_Bcast does).
# -a passes more arguments to every tutti-bench (e.g. -a "-R 1": buffers from memAlloc).
#
# Large sizes want few iterations and little warm-up: -b 64M -i 10 -w 2 (sizes take K/M/G).
#
# BINDIR holds tutti-run and tutti-bench of one build (e.g. build/bin); BINDIR@ARG,ARG... also
# passes those arguments to that build's tutti-run (build/bin@--cpu-bind=block). The word
# `ompi` in place of a BINDIR runs Open MPI's benchmark instead (build/peers/mpi_bench_openmpi,
# bench/peers/setup.sh; the same collective and size, vader shared memory); `ompi-nocma` the
# same without the kernel's single copy (btl_vader_single_copy_mechanism none); `ompi-tuned`,
# `mpich`, `mpich-tuned` and `mpich-nocma` as compare.sh runs them (tuned: glibc keeps large buffers
# mapped). As root the ranks run SCHED_FIFO (chrt -f 10), so that a compile elsewhere on
# the machine does not preempt them in the middle of a run; the runs are short and bounded
# by `timeout`. -s keeps the normal scheduler instead, as compare.sh and users run: what
# depends on how the kernel shares cores between oversubscribed ranks (binding them,
# yielding, sleeping) can change sign under SCHED_FIFO, so measure such changes with -s.
#
# The word `floor` runs build/peers/copy_floor instead (2 ranks, all-gather or all-to-all): the
# copies such a call cannot avoid and nothing else, each way (the kernel's copy pulled or
# pushed, a ring, a ring fused with the own block's copy; streaming stores from 4 MiB
# blocks), and its time is the fastest way's: what no implementation beats on this machine.
#
# -k FILE keeps every run's time there, a line each: round, build's index, microseconds.
#
# -S TICKS also prints the summary twice more: over the rounds in which the hypervisor
# took TICKS or more clock ticks from this guest (steal in /proc/stat, all CPUs, usually
# 100 a second) and over the others. Each round's steal is printed as it ends. What a
# build does when its vCPUs are taken away (waiting, sleeping, waking) shows only in the
# first set; on a quiet host there is none.
set -euo pipefail

rounds=60 ranks=2 bytes=8 coll=allreduce transport=shm iters=50000 warmup=5000 benchargs=""
inplace=false realtime=true steal_split="" keep=""
while getopts "r:n:b:c:t:i:w:a:psS:k:" opt; do
  case $opt in
    r) rounds=$OPTARG ;; n) ranks=$OPTARG ;; b) bytes=$OPTARG ;; c) coll=$OPTARG ;;
    t) transport=$OPTARG ;; i) iters=$OPTARG ;; w) warmup=$OPTARG ;; a) benchargs=$OPTARG ;; p) inplace=true ;;
    s) realtime=false ;; S) steal_split=$OPTARG ;; k) keep=$OPTARG ;;
    *) echo "usage: $0 [-r rounds] [-n ranks] [-b bytes] [-c collective] [-t transport] [-i iters] [-w warmup] [-a bench-args] [-p] [-s] [-S steal-ticks] [-k file] BINDIR..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
bytes=$(numfmt --from=iec "$bytes")  # 64M -> 67108864, as tutti-bench prints it
[ $# -ge 1 ] || { echo "$0: name at least one build's bin directory" >&2; exit 2; }

prio=()
if $realtime && [ "$(id -u)" = 0 ] && command -v chrt >/dev/null; then prio=(chrt -f 10); fi

out=$(mktemp)
json=$(mktemp)
steal=$(mktemp)
trap 'rm -f "$out" "$json" "$steal"' EXIT
steal_ticks() { awk '$1 == "cpu" {print $9}' /proc/stat; }
builds=("$@")
for round in $(seq 1 "$rounds"); do
  # Odd rounds run the builds in the order given, even rounds in reverse: a build is not
  # always the first (or last) of its round while the machine's speed drifts.
  if ((round % 2 == 1)); then order=$(seq 0 $(($# - 1))); else order=$(seq $(($# - 1)) -1 0); fi
  steal_before=$(steal_ticks)
  for i in $order; do
    build=${builds[$i]}
    bin=${build%%@*}
    runargs=()
    [ "$bin" = "$build" ] || IFS=, read -r -a runargs <<< "${build#*@}"
    case "$build" in ompi|ompi-nocma|ompi-tuned|mpich|mpich-tuned|mpich-nocma) peer=true ;; *) peer=false ;; esac
    if [ "$build" = floor ]; then
      [ "$ranks" = 2 ] && { [ "$coll" = allgather ] || [ "$coll" = alltoall ]; } ||
        { echo "$0: floor models the 2-rank allgather and alltoall only" >&2; exit 2; }
      # One block is half the call's bytes (an all-gather's output, an all-to-all's input).
      t=$(timeout 120 "${prio[@]}" build/peers/copy_floor $((bytes / 2048)) "$iters" auto |
            tr ' ' '\n' | awk -F= -v c="$coll" 'index($1, c "_") == 1 {
              if (best == "" || $2 + 0 < best + 0) best = $2 } END {print best}')
    elif $peer; then
      tuned=(MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184)
      case "$build" in
        ompi*)
          cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe -np "$ranks"
               --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
          [ "$build" = ompi-nocma ] &&
            cmd+=(--mca btl vader,self --mca btl_vader_single_copy_mechanism none)
          [ "$build" = ompi-tuned ] && cmd+=(-x "${tuned[0]}" -x "${tuned[1]}")
          cmd+=(build/peers/mpi_bench_openmpi) ;;
        *)
          cmd=(env UCX_NET_DEVICES=lo)
          [ "$build" = mpich-tuned ] && cmd+=("${tuned[@]}")
          [ "$build" = mpich-nocma ] && cmd+=(UCX_TLS=self,posix,sysv)
          cmd+=(mpirun.mpich -launcher fork -iface lo -np "$ranks" build/peers/mpi_bench_mpich) ;;
      esac
      # Its RESULT line: label collective ranks bytes time_us ...
      t=$(timeout 120 "${prio[@]}" "${cmd[@]}" "$coll" -s "$bytes" -w "$warmup" -n "$iters" \
            2>/dev/null | awk '$1 == "RESULT" {print $6; exit}')
    else
      # Out-of-place (-p: in-place) time, in microseconds, of the one size measured, from the JSON rows
      # (nine digits; the table rounds to hundredths, too coarse for a call of 0.15 us).
      rm -f "$json"
      TUTTI_TRANSPORT=$transport timeout 120 "${prio[@]}" "$bin/tutti-run" "${runargs[@]}" \
        -n "$ranks" "$bin/tutti-bench" "$coll" -b "$bytes" -e "$bytes" -n "$iters" -w "$warmup" \
        -c 0 --json "$json" $benchargs >/dev/null 2>&1 || true
      t=$(grep -s "\"in_place\": $inplace" "$json" | sed -n 's/.*"time_us": \([^,]*\),.*/\1/p' | head -n 1)
    fi
    [ -n "$t" ] || { echo "$0: $bin gave no result in round $round" >&2; exit 1; }
    echo "$round $i $t" >> "$out"
  done
  round_steal=$(($(steal_ticks) - steal_before))
  echo "$round $round_steal" >> "$steal"
  [ -z "$steal_split" ] || echo "round $round: steal $round_steal ticks" >&2
done

[ -z "$keep" ] || cp "$out" "$keep"
median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# summary LO HI: the table over the rounds whose steal lies in [LO, HI].
summary() {
  local lo=$1 hi=$2 i=0 med ratio
  local picked
  picked=$(awk -v lo="$lo" -v hi="$hi" 'NR == FNR {if ($2 >= lo && $2 <= hi) keep[$1] = 1; next}
                                         ($1 in keep)' "$steal" "$out")
  [ -n "$picked" ] || { echo "(no such rounds)"; return; }
  printf "%-40s %12s %18s\n" build median_us ratio_to_first
  for bin in "${builds[@]}"; do
    med=$(awk -v i=$i '$2 == i {print $3}' <<< "$picked" | median)
    ratio=$(awk -v i=$i '$2 == 0 {a[$1] = $3} $2 == i {b[$1] = $3}
                         END {for (r in b) print b[r] / a[r]}' <<< "$picked" | median)
    printf "%-40s %12s %18.4f\n" "$bin" "$med" "$ratio"
    i=$((i + 1))
  done
}
if [ -n "$steal_split" ]; then
  echo "rounds with steal of $steal_split ticks or more ($(awk -v s="$steal_split" '$2 >= s' "$steal" | wc -l)):"
  summary "$steal_split" 999999999
  echo "rounds with less ($(awk -v s="$steal_split" '$2 < s' "$steal" | wc -l)):"
  summary 0 $((steal_split - 1))
  echo "all rounds:"
fi
summary 0 999999999
echo "($rounds alternating rounds, $ranks ranks over $transport, $coll of $bytes bytes, $iters iterations each$($realtime && [ ${#prio[@]} -gt 0 ] && echo ", SCHED_FIFO"))"
