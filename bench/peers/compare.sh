#!/usr/bin/env bash
# tutti against its peers, side by side in one run: tutti-bench and the peer benchmarks
# (Open MPI, MPICH, Gloo; bench/peers/setup.sh builds them) on the same collectives, sizes
# and world sizes, alternating, R rounds; then a table of medians and of the ratio
# tutti / best peer as the median of the per-round ratios (these machines change speed
# between runs, so only ratios taken close together mean anything).
#
#   bench/peers/compare.sh [--quick] [--collectives "allreduce ..."] [--sizes "8 1M ..."]
#                          [--worlds "2 4 8"] [--rounds R] [--peers "ompi mpich ..."]
#                          [--target SECONDS] [--timeout SECONDS] [--out DIR]
#                          [--gloo-algos LIST] [--register [--reg-algo SPEC]] [--unbound]
#
# Defaults: allreduce; 8 64K 1M 16M 64M 256M; worlds 2 4 8; 5 rounds; every peer variant.
# --quick: 2 rounds, sizes 8 1M 64M, worlds 2 4, --target 0.2, --timeout 120 (explicit
# flags still win).
# Peer variants (--peers):
#   ompi         Open MPI as installed (vader shared memory, CMA single copy)
#   ompi-tuned   the same with MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184 (glibc
#                keeps the large scratch buffers MPI allocates per call instead of unmapping
#                them: no page faults on the call path)
#   ompi-nocma   vader without single copy (btl_vader_single_copy_mechanism none)
#   ompi-tcp     TCP over loopback only (btl tcp,self)
#   mpich        MPICH as installed (ch4:ucx; UCX moves large messages with CMA)
#   mpich-tuned  the same with the malloc settings above
#   mpich-nocma  UCX restricted to shared memory without CMA (UCX_TLS=self,posix,sysv)
#   gloo         Gloo, TCP on 127.0.0.1; all-reduce: the best of its algorithms (--gloo-algos,
#                default ring,ring_chunked,halving_doubling,bcube; opt_ring is the options
#                API PyTorch calls) each round, one launch per algorithm
# --register: also run tutti with its buffers from tutti::memAlloc (tutti-bench -R 1; peers
# on the host map them and copy with memcpy instead of the kernel's copy), as a second row
# "tutti-reg" with its own ratio column. The peers have no such allocator in Debian's
# builds (Open MPI's MPI_Alloc_mem is plain memory without xpmem/knem), so they keep theirs.
# --reg-algo SPEC: that row runs with TUTTI_ALGO=SPEC (e.g. allreduce:direct_rs_ag, which
# reads peers' buffers in place and wins only when they are memAlloc'd).
# --unbound: also run tutti with tutti-run --cpu-bind none, as a row "tutti-unbound" with its
# own ratio column (tutti-run's default binds ranks that outnumber the CPUs evenly; the
# peers' launchers leave oversubscribed ranks unbound).
# The floor: for the 2-rank all-gather and all-to-all, each round also runs
# build/peers/copy_floor on the same bytes (two processes doing only the copies such a call
# cannot avoid, each way: the kernel's copy, a ring, a ring fused with the own block's copy;
# streaming stores from 4 MiB blocks) and records its fastest way as "floor"; for the
# 2-rank all-reduce of 64 bytes or less, build/peers/exchange_floor (8 bytes each way
# through a cache line, summed: the data's own round trip, no software). The table then
# adds the floor (busbw, or its time), tutti / floor (the floor's time over tutti's, per
# round: 1 is tutti at the floor) and ceiling (the best peer's time over the floor's, per
# round: what tutti / best would read for an implementation at the floor). A round's floor
# says how fast the machine copies in that round, which on some VMs changes from minute to
# minute.
# Nothing leaves loopback: Open MPI gets btl/oob_tcp_if_include lo, MPICH -iface lo and
# UCX_NET_DEVICES=lo, tutti-run binds 127.0.0.1, Gloo's device 127.0.0.1.
#
# tutti's figure is its out-of-place row, except for broadcast: the in-place row, which is
# what MPI_Bcast does (one buffer; the root does not copy its input into an output).
# Every measurement is bounded (timeout), checks every output element, and a failed,
# timed-out or wrong one is shown as such in the table rather than ending the run. Raw
# records, each run's log and the table (table.md) are kept in the output directory.
set -euo pipefail
cd "$(dirname "$0")/../.."

collectives="allreduce"
sizes="8 64K 1M 16M 64M 256M"
worlds="2 4 8"
rounds=5
peers="ompi ompi-tuned ompi-nocma ompi-tcp mpich mpich-tuned mpich-nocma gloo"
target=0.3
run_timeout=300
gloo_algos="ring,ring_chunked,halving_doubling,bcube"
out=""
quick=0
tuttis="tutti"
reg_algo=""
set_sizes=0
set_worlds=0
set_rounds=0
set_target=0
set_timeout=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --collectives) collectives=$2; shift ;;
    --sizes) sizes=$2; set_sizes=1; shift ;;
    --worlds) worlds=$2; set_worlds=1; shift ;;
    --rounds) rounds=$2; set_rounds=1; shift ;;
    --peers) peers=$2; shift ;;
    --target) target=$2; set_target=1; shift ;;
    --timeout) run_timeout=$2; set_timeout=1; shift ;;
    --out) out=$2; shift ;;
    --gloo-algos) gloo_algos=$2; shift ;;
    --register) tuttis="$tuttis tutti-reg" ;;
    --unbound) tuttis="$tuttis tutti-unbound" ;;
    --reg-algo) reg_algo=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
# One name per collective, as the peers' benchmarks print it (tutti-bench takes the
# aliases too, but the table joins rows by name).
canonical=""
for c in $collectives; do
  c=${c//-/}
  c=${c//_/}
  [ "$c" = bcast ] && c=broadcast
  canonical="$canonical${canonical:+ }$c"
done
collectives=$canonical
if [ "$quick" = 1 ]; then
  [ "$set_sizes" = 1 ] || sizes="8 1M 64M"
  [ "$set_worlds" = 1 ] || worlds="2 4"
  [ "$set_rounds" = 1 ] || rounds=2
  [ "$set_target" = 1 ] || target=0.2
  [ "$set_timeout" = 1 ] || run_timeout=120
fi

bin=build/bin
peer_bin=build/peers
for f in "$bin/tutti-run" "$bin/tutti-bench" "$peer_bin/mpi_bench_openmpi" \
         "$peer_bin/mpi_bench_mpich" "$peer_bin/gloo_bench" "$peer_bin/membw" \
         "$peer_bin/copy_floor" "$peer_bin/exchange_floor"; do
  [ -x "$f" ] || { echo "compare.sh: $f is missing: run bench/peers/setup.sh first" >&2; exit 1; }
done
[ -n "$out" ] || out="build/peers/compare-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out/logs"
records="$out/records.txt"  # round collective world size impl time_us busbw wrong
: >"$records"

# Bytes from 8, 64K, 1M, 2G.
bytes_of() {
  local s=$1
  case "$s" in
    *K) echo $((${s%K} * 1024)) ;;
    *M) echo $((${s%M} * 1024 * 1024)) ;;
    *G) echo $((${s%G} * 1024 * 1024 * 1024)) ;;
    *) echo "$s" ;;
  esac
}

# tutti-bench takes a fixed iteration count: from the last measured time of the same cell
# (so later rounds take about --target seconds, as the peers' runs do with -t), at first
# from a short run (run_tutti), and where that failed from a rough model of tutti over TCP
# (40 us per rank of latency, 0.5 GB/s). Capped at
# 2M calls (0.3 s of 0.15 us calls); a cap of 20000 made an 8-byte run last 8 ms against
# the peers' 0.3 s, which weighed a few slow calls (a timer tick, a preemption) 40 times
# more in tutti's average than in theirs.
declare -A last_us
tutti_iters() {
  local key=$1 bytes=$2 world=$3 us
  us=${last_us[$key]:-}
  if [ -z "$us" ]; then
    us=$(awk -v b="$bytes" -v n="$world" 'BEGIN { printf "%.3f", 40 * n + b / 500 }')
  fi
  awk -v t="$target" -v us="$us" 'BEGIN {
    n = int(t * 1e6 / (us > 0.01 ? us : 0.01))
    print (n < 3 ? 3 : (n > 2000000 ? 2000000 : n)) }'
}

# Warm-up calls: a few for small messages, fewer where one call is long.
warmup_for() { if [ "$1" -ge $((16 * 1024 * 1024)) ]; then echo 2; else echo 5; fi; }

run_logged() {  # log command...: runs it bounded; its status is the command's
  local log=$1
  shift
  local status=0
  timeout --kill-after=10 "$run_timeout" "$@" >"$log" 2>&1 || status=$?
  return $status
}

record_failure() {  # round coll world size impl status
  local what=FAIL
  case "$6" in 124|137) what=TIMEOUT ;; esac
  echo "$1 $2 $3 $4 $5 $what $what $what" >>"$records"
}

run_tutti() {  # round coll world size impl (tutti; tutti-reg: buffers from memAlloc;
               # tutti-unbound: ranks left unbound)
  local round=$1 coll=$2 world=$3 size=$4 impl=$5 bytes iters warm log json us status=0
  local extra=() env=()
  if [ "$impl" = tutti-reg ]; then
    extra=(-R 1)
    [ -n "$reg_algo" ] && env=(-x "TUTTI_ALGO=$reg_algo")
  fi
  [ "$impl" = tutti-unbound ] && env=(--cpu-bind none)
  bytes=$(bytes_of "$size")
  log="$out/logs/r$round-$coll-n$world-$size-$impl.log"
  json="$out/logs/r$round-$coll-n$world-$size-$impl.json"
  # The first round's count comes from a short run of the same call, not recorded: the
  # model in tutti_iters is tutti over TCP, which put 137 calls of 1 MiB over shared memory
  # in a round (7 ms against the peers' 0.3 s), all of them among the first calls of a job.
  if [ -z "${last_us[$impl/$coll/$world/$size]:-}" ]; then
    run_logged "$log.probe" "$bin/tutti-run" "${env[@]}" --timeout "$run_timeout" -n "$world" \
      "$bin/tutti-bench" "$coll" -b "$bytes" -e "$bytes" -n 10 -w 10 -c 0 "${extra[@]}" \
      --json "$json.probe" || true
    # The faster row (in place or not): a job's first calls take milliseconds (3 calls of
    # 1 MiB: 4 ms each, pages faulting in), so the row timed first reads slow.
    us=$(sed -n 's/.*"time_us": \([^,]*\),.*/\1/p' "$json.probe" 2>/dev/null | sort -g | head -n 1)
    [ -n "$us" ] && last_us[$impl/$coll/$world/$size]=$us
  fi
  iters=$(tutti_iters "$impl/$coll/$world/$size" "$bytes" "$world")
  warm=$(warmup_for "$bytes")
  run_logged "$log" "$bin/tutti-run" "${env[@]}" --timeout "$run_timeout" -n "$world" \
    "$bin/tutti-bench" "$coll" -b "$bytes" -e "$bytes" -n "$iters" -w "$warm" -c 1 "${extra[@]}" \
    --json "$json" || status=$?
  if [ "$status" != 0 ] || [ ! -s "$json" ]; then
    echo "  $impl $coll n=$world $size: failed ($status), see $log" >&2
    record_failure "$round" "$coll" "$world" "$bytes" "$impl" "$status"
    return
  fi
  # The row that does what the peers do (one JSON object per line): out of place, except
  # broadcast. MPI_Bcast has one buffer, which the root sends from and the others receive
  # into: that is tutti's in-place broadcast. Out of place, tutti's root also copies its
  # input into its output, which no MPI peer does. (Gloo's broadcast is out of place, but it
  # runs over TCP and is never the best peer on one machine.)
  local row inplace=false
  [ "$coll" = broadcast ] && inplace=true
  row=$(grep "\"in_place\": $inplace" "$json" | head -n 1)
  local bw wrong
  us=$(echo "$row" | sed -n 's/.*"time_us": \([^,]*\),.*/\1/p')
  bw=$(echo "$row" | sed -n 's/.*"busbw_gbs": \([^,]*\),.*/\1/p')
  wrong=$(echo "$row" | sed -n 's/.*"wrong": \([^}]*\)}.*/\1/p')
  local rbytes
  rbytes=$(echo "$row" | sed -n 's/.*"bytes": \([0-9]*\),.*/\1/p')
  if [ -z "$us" ] || [ -z "$rbytes" ]; then
    record_failure "$round" "$coll" "$world" "$bytes" "$impl" 1
    return
  fi
  last_us[$impl/$coll/$world/$size]=$us
  echo "$round $coll $world $rbytes $impl $us $bw $wrong" >>"$records"
}

# The floor of a 2-rank all-gather or all-to-all (see the header): one copy_floor run, its
# fastest way for the collective; of a 2-rank all-reduce of 64 bytes or less: one
# exchange_floor run. Recorded as the implementation "floor".
has_floor() {
  [ "$2" = 2 ] && { [ "$1" = allgather ] || [ "$1" = alltoall ] || [ "$1" = allreduce ]; }
}
run_floor() {  # round coll world
  local round=$1 coll=$2 world=$3 s bytes log n us status
  has_floor "$coll" "$world" || return 0
  for s in $sizes; do
    bytes=$(bytes_of "$s")
    log="$out/logs/r$round-$coll-n$world-$s-floor.log"
    status=0
    if [ "$coll" = allreduce ]; then
      [ "$bytes" -le 64 ] || continue
      # About --target seconds a repeat at 300 ns an exchange; the best of 3 repeats.
      n=$(awk -v t="$target" 'BEGIN { n = int(t * 1e9 / 300); print (n < 1000 ? 1000 : n) }')
      run_logged "$log" "$peer_bin/exchange_floor" "$n" 3 || status=$?
      us=$(tr ' ' '\n' <"$log" | awk -F= '$1 == "exchange_8B_ns" { printf "%.4f", $2 / 1000 }')
    else
      [ "$bytes" -ge 2048 ] || continue  # a block of whole KiB
      # About --target seconds a way, from a copy at 10 GB/s; 20 to 2000 rounds.
      n=$(awk -v t="$target" -v b="$bytes" 'BEGIN {
        n = int(t * 1e6 / (b / 1e4)); print (n < 20 ? 20 : (n > 2000 ? 2000 : n)) }')
      run_logged "$log" "$peer_bin/copy_floor" $((bytes / 2048)) "$n" auto || status=$?
      us=$(tr ' ' '\n' <"$log" | awk -F= -v c="$coll" 'index($1, c "_") == 1 {
             if (best == "" || $2 + 0 < best + 0) best = $2 } END {print best}')
    fi
    if [ "$status" != 0 ] || [ -z "$us" ]; then
      record_failure "$round" "$coll" "$world" "$bytes" floor "$status"
      continue
    fi
    echo "$round $coll $world $bytes floor $us $(awk -v b="$bytes" -v t="$us" \
      'BEGIN {printf "%.3f", b / (t * 1e3) / 2}') 0" >>"$records"
  done
}

# The launcher and environment of each peer variant; $1 is the world size.
peer_command() {
  local peer=$1 world=$2
  local ompi=(mpirun.openmpi --allow-run-as-root --oversubscribe -np "$world"
              --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
  local mpich=(env UCX_NET_DEVICES=lo mpirun.mpich -launcher fork -iface lo -np "$world")
  local tuned=(MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=17179869184)
  case "$peer" in
    ompi) cmd=("${ompi[@]}" "$peer_bin/mpi_bench_openmpi") ;;
    ompi-tuned) cmd=("${ompi[@]}" -x "${tuned[0]}" -x "${tuned[1]}"
                     "$peer_bin/mpi_bench_openmpi") ;;
    ompi-nocma) cmd=("${ompi[@]}" --mca btl "vader,self" --mca btl_vader_single_copy_mechanism none
                     "$peer_bin/mpi_bench_openmpi") ;;
    ompi-tcp) cmd=("${ompi[@]}" --mca btl "tcp,self" "$peer_bin/mpi_bench_openmpi") ;;
    mpich) cmd=("${mpich[@]}" "$peer_bin/mpi_bench_mpich") ;;
    mpich-tuned) cmd=(env "${tuned[@]}" "${mpich[@]}" "$peer_bin/mpi_bench_mpich") ;;
    mpich-nocma) cmd=(env "UCX_TLS=self,posix,sysv" "${mpich[@]}" "$peer_bin/mpi_bench_mpich") ;;
    gloo:*) cmd=("$peer_bin/gloo_bench" -np "$world" --timeout "$run_timeout" -a "${peer#gloo:}") ;;
    *) echo "compare.sh: unknown peer '$peer'" >&2; exit 2 ;;
  esac
}

run_peer() {  # round coll world peer: every size in one launch (Gloo: one per algorithm)
  local round=$1 coll=$2 world=$3 peer=$4
  if [ "$peer" = gloo ]; then
    local algo algos=default
    [ "$coll" = allreduce ] && algos=${gloo_algos//,/ }
    for algo in $algos; do run_peer "$round" "$coll" "$world" "gloo:$algo"; done
    return
  fi
  local list="" s log status=0
  for s in $sizes; do list="$list${list:+,}$(bytes_of "$s")"; done
  peer_command "$peer" "$world"
  log="$out/logs/r$round-$coll-n$world-${peer/:/-}.log"
  run_logged "$log" "${cmd[@]}" "$coll" -s "$list" -w 2 -t "$target" --label "${peer%%:*}" ||
    status=$?
  # Whatever finished is recorded; a size that did not gets a failure record.
  awk -v r="$round" '$1 == "RESULT" {
      impl = $2; if ($11 != "default") impl = impl ":" $11
      print r, $3, $4, $5, impl, $6, $8, $9 }' "$log" >>"$records"
  if [ "$status" != 0 ]; then
    echo "  $peer $coll n=$world: exit $status, see $log" >&2
    for s in $sizes; do
      local b
      b=$(bytes_of "$s")
      grep -q "^RESULT ${peer%%:*} $coll $world $b " "$log" ||
        record_failure "$round" "$coll" "$world" "$b" "$peer" "$status"
    done
  fi
}

# ---- the run
{
  echo "# compare.sh $(date -u +%Y-%m-%dT%H:%MZ)," \
       "tutti $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "# machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)," \
       "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -r)"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# collectives: $collectives | sizes: $sizes | worlds: $worlds | rounds: $rounds"
  echo "# peers: $peers"
  if [ -n "$reg_algo" ]; then echo "# tutti-reg: TUTTI_ALGO=$reg_algo"; fi
} | tee "$out/header.txt"
membw_start=$(timeout 120 "$peer_bin/membw" 2>&1 || echo "MEMBW failed")
echo "$membw_start (start)" | tee -a "$out/header.txt"

# Time the hypervisor took from this VM's CPUs (the steal column of /proc/stat, in ticks):
# on a shared host a round with much of it reads several times slower (4x was seen for 8
# ranks on 2 vCPUs), whichever side it hits, so each round's share is recorded.
steal_ticks() { awk '/^cpu / {print $9}' /proc/stat; }
ticks_per_s=$(getconf CLK_TCK 2>/dev/null || echo 100)
steal_log=""

for coll in $collectives; do
  for world in $worlds; do
    steal_rounds=""
    for ((round = 1; round <= rounds; round++)); do
      echo "round $round/$rounds: $coll, $world ranks" >&2
      steal_before=$(steal_ticks)
      # Alternate who goes first, so neither side always runs on a warmer machine.
      if ((round % 2 == 1)); then
        for s in $sizes; do for t in $tuttis; do run_tutti "$round" "$coll" "$world" "$s" "$t"; done; done
        for p in $peers; do run_peer "$round" "$coll" "$world" "$p"; done
        run_floor "$round" "$coll" "$world"
      else
        run_floor "$round" "$coll" "$world"
        for p in $peers; do run_peer "$round" "$coll" "$world" "$p"; done
        for s in $sizes; do for t in $tuttis; do run_tutti "$round" "$coll" "$world" "$s" "$t"; done; done
      fi
      steal_rounds="$steal_rounds $(awk -v t=$(($(steal_ticks) - steal_before)) -v hz="$ticks_per_s" \
                                      'BEGIN {printf "%.2f", t / hz}')"
    done
    steal_log="$steal_log# time stolen per round (s, all CPUs), $coll $world ranks:$steal_rounds"$'\n'
  done
done

membw_end=$(timeout 120 "$peer_bin/membw" 2>&1 || echo "MEMBW failed")
echo "$membw_end (end)" | tee -a "$out/header.txt"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/header.txt"
printf '%s' "$steal_log" | tee -a "$out/header.txt"

# ---- the table. Per (collective, world, size): each implementation's median over rounds
# (busbw in GB/s; time in us below 4 KiB, where latency is the point), then the best peer
# and the median over rounds of tutti's speed / the best peer's speed in that round
# (= best peer time / tutti time; below 1 tutti is slower), and the same against Open MPI
# over TCP, the peer on tutti's transport. Gloo's algorithms count as one peer: its best
# in each round.
floors=0
for coll in $collectives; do for world in $worlds; do
  if has_floor "$coll" "$world"; then floors=1; fi
done; done
awk -v peers="$peers" -v tuttis="$tuttis" -v floors="$floors" '
function median(list,    n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 2; i <= n; i++) {
    t = a[i] + 0
    for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
    a[j + 1] = t
  }
  if (n == 0) return ""
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function human(b) {
  if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
  if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
  return b " B"
}
function cell(key, small,    m) {
  if (!(key in times)) return (key in bad) ? bad[key] : "–"
  if (bad[key] == "WRONG") return "WRONG"
  m = median(times[key])
  if (small) return sprintf("%.1f µs", m)
  return sprintf("%.2f", median(bws[key]))
}
{
  round = $1; coll = $2; world = $3; size = $4; impl = $5; t = $6; bw = $7; wrong = $8
  if (impl ~ /^gloo:/) impl = "gloo"   # best algorithm per round, below
  cellkey = coll SUBSEP world SUBSEP size
  if (!(cellkey in seen)) { seen[cellkey] = 1; order[++ncells] = cellkey }
  key = cellkey SUBSEP impl
  if (t == "FAIL" || t == "TIMEOUT") { if (bad[key] != "WRONG") bad[key] = t; next }
  if (wrong != 0) { bad[key] = "WRONG"; next }
  rk = key SUBSEP round
  if (!(rk in best) || t + 0 < best[rk] + 0) { best[rk] = t; bestbw[rk] = bw }
  rounds[round] = 1
}
END {
  np = split(peers, plist, " ")
  nt = split(tuttis, tlist, " ")
  # Per-round values (Gloo: its best algorithm) into lists for the medians.
  for (rk in best) {
    split(rk, p, SUBSEP); key = p[1] SUBSEP p[2] SUBSEP p[3] SUBSEP p[4]
    times[key] = times[key] " " best[rk]; bws[key] = bws[key] " " bestbw[rk]
  }
  head = "| collective | ranks | size"
  rule = "|---|---|---"
  for (i = 1; i <= nt; i++) { head = head " | " tlist[i]; rule = rule "|---" }
  for (i = 1; i <= np; i++) { head = head " | " plist[i]; rule = rule "|---" }
  head = head " | best peer"; rule = rule "|---"
  for (i = 1; i <= nt; i++) { head = head " | " tlist[i] " / best"; rule = rule "|---" }
  head = head " | tutti / ompi-tcp"; rule = rule "|---"
  if (floors) { head = head " | floor | tutti / floor | ceiling"; rule = rule "|---|---|---" }
  print head " |"
  print rule "|"
  for (c = 1; c <= ncells; c++) {
    split(order[c], p, SUBSEP); coll = p[1]; world = p[2]; size = p[3]
    small = size + 0 < 4096
    line = "| " coll " | " world " | " human(size)
    for (i = 1; i <= nt; i++) line = line " | " cell(order[c] SUBSEP tlist[i], small)
    for (i = 1; i <= np; i++) line = line " | " cell(order[c] SUBSEP plist[i], small)
    # Ratios per round, then their median, for each tutti variant.
    tcp = ""; bestname = ""; delete wins; delete ratios
    for (r in rounds) {
      bt = ""; bn = ""
      for (i = 1; i <= np; i++) {
        pk = order[c] SUBSEP plist[i] SUBSEP r
        if ((pk in best) && (bt == "" || best[pk] + 0 < bt + 0)) { bt = best[pk]; bn = plist[i] }
      }
      if (bt != "") wins[bn]++
      for (i = 1; i <= nt; i++) {
        tk = order[c] SUBSEP tlist[i] SUBSEP r
        if (!(tk in best)) continue
        if (bt != "") ratios[i] = ratios[i] " " (bt / best[tk])
        pk = order[c] SUBSEP "ompi-tcp" SUBSEP r
        if (i == 1 && (pk in best)) tcp = tcp " " (best[pk] / best[tk])
      }
    }
    most = 0
    for (n in wins) if (wins[n] > most) { most = wins[n]; bestname = n }
    line = line " | " (bestname == "" ? "–" : bestname)
    for (i = 1; i <= nt; i++)
      line = line " | " (ratios[i] == "" ? "–" : sprintf("%.2f", median(ratios[i])))
    line = line " | " (tcp == "" ? "–" : sprintf("%.2f", median(tcp)))
    if (floors) {
      # The floor against tutti and against the best peer, per round.
      fl = ""; ceil = ""
      for (r in rounds) {
        fk = order[c] SUBSEP "floor" SUBSEP r
        if (!(fk in best)) continue
        tk = order[c] SUBSEP tlist[1] SUBSEP r
        if (tk in best) fl = fl " " (best[fk] / best[tk])
        bt = ""
        for (i = 1; i <= np; i++) {
          pk = order[c] SUBSEP plist[i] SUBSEP r
          if ((pk in best) && (bt == "" || best[pk] + 0 < bt + 0)) bt = best[pk]
        }
        if (bt != "") ceil = ceil " " (bt / best[fk])
      }
      line = line " | " cell(order[c] SUBSEP "floor", small)
      line = line " | " (fl == "" ? "–" : sprintf("%.2f", median(fl)))
      line = line " | " (ceil == "" ? "–" : sprintf("%.2f", median(ceil)))
    }
    print line " |"
  }
}' "$records" >"$out/table.md"

echo
cat "$out/table.md"
echo
echo "busbw in GB/s (nccl-tests factors); time per call below 4 KiB. Medians over rounds."
echo "tutti / best: median over rounds of (best peer's time / tutti's time) in that round;"
echo "below 1 tutti is slower. best peer: the variant fastest in most rounds."
[ "$floors" = 0 ] || echo "floor: copy_floor's fastest way, exchange_floor for 2-rank all-reduces of 64 B or less;" \
  "tutti / floor: floor time / tutti time;" \
  "ceiling: best peer time / floor time (medians over rounds)."
echo "Records, logs and table.md: $out"
