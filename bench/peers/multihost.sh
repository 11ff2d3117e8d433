#!/usr/bin/env bash
# tutti against Open MPI and Gloo across pretend hosts: network namespaces on a bridge, each
# host's link shaped to --rate in both directions (tests/multihost/netns.sh), side by side in
# one run, alternating who goes first, R rounds; then a table of medians, of the per-round
# ratios tutti / Open MPI and tutti / Gloo, and of tutti against the link's bound, in the
# style of compare.sh; and the targets of issue 38, each met or not. Needs root (network
# namespaces), build/ and bench/peers/setup.sh.
#
#   bench/peers/multihost.sh [--quick] [--shapes "2x2 4x2"] [--collectives "allreduce ..."]
#                            [--sizes "8 64M"] [--rounds R] [--rate 1gbit] [--peers "ompi gloo"]
#                            [--target SECONDS] [--timeout SECONDS] [--gloo-algos LIST]
#                            [--variant 'NAME:VAR=VALUE ...'] [--bind host|local] [--out DIR]
#                            [--build DIR]
#
# A shape HxL is H hosts of L ranks (2 to 4 hosts). Without --shapes, --collectives and
# --sizes the cells are the targets': 2x2 all-reduce 8 B and 64 MiB; 2x2 all-gather,
# reduce-scatter, broadcast and all-to-all 64 MiB; 4x2 all-reduce 64 MiB. Any of the three
# flags makes the cells their cross product instead (defaults for the others: shapes
# "2x2 4x2", every collective of the targets, sizes "8 64M").
# Defaults: 3 rounds, 1gbit, --target 2 (seconds of timed calls a measurement), --timeout 300.
# --quick: a smoke test: 1 round of 64 B and 1 MiB on the target cells' shapes and collectives,
# --target 0.2, --timeout 120 (explicit flags still win).
# --peers "": tutti alone (the ctest smoke test multihost.bench_quick: --quick --peers "").
# --build DIR: tutti's build (build); the peers' benchmarks are always build/peers.
# Exit status: 0 when every measurement ran and checked right; 1 when one failed, timed out or
# was wrong (the table says which); 2 for a bad command line.
# --variant 'NAME:VAR=VALUE ...': one more tutti row, NAME, with those variables in every rank's
# environment (e.g. 'ring:TUTTI_ALGO=allreduce:ring'); repeatable; its column tutti / ompi
# is NAME / ompi.
#
# Who runs how. All the pretend hosts share this machine's CPUs, so every implementation's
# ranks are bound alike (unbound ranks that spin while waiting make a job on an
# oversubscribed machine several times slower), by --bind:
#   host   (default) all ranks of host h of H on CPU h * nproc / H: with as many CPUs as
#          hosts, each host has a CPU of its own, as real hosts have (tutti-run --cpu-bind
#          block does the same by rank on one host)
#   local  a host's local rank i on CPU i mod nproc: each host's ranks spread over every
#          CPU, sharing them with the other hosts' ranks
#   tutti  tutti-run --hosts h1:L,h2:L,... --launcher 'ip netns exec {host}' from a head
#          namespace on the bridge (the store on its address), tutti-bench -c 1 with a fixed
#          count of calls (from the cell's last time: about --target seconds; at first from a
#          model of the link). Its algorithms as chosen by default (hierarchical across
#          hosts); the table names the one it ran. Its figure is the out-of-place row,
#          broadcast's the in-place row (what MPI_Bcast does), as in compare.sh.
#   ompi   mpirun.openmpi from the head namespace over a hostfile of the hosts' addresses,
#          --mca plm_rsh_agent bench/peers/netns_rsh.sh (starts each host's orted in its
#          namespace, with a UTS namespace and host name of its own), --mca btl self,vader,tcp
#          with btl and oob TCP on eth0 (the namespaces' interface), --bind-to none and the
#          binding above, --mca mpi_yield_when_idle 1 (what Open MPI sets itself when it knows
#          its ranks outnumber the CPUs: here each host's hostfile gives it L slots, and without
#          it two ranks spinning on one CPU took 10-20 ms for 64 bytes). mpi_bench -t --target.
#   gloo   gloo_bench --rank R per rank in its host's namespace, meeting in a store directory,
#          its TCP device on the host's address. All-reduce: the best of --gloo-algos each
#          round (default ring_chunked,halving_doubling,bcube; ring, its predecessor, takes
#          twice as long at 64 MiB).
#
# The bound: what each host's link must carry, at --rate (R bytes/s each way; 1 Gbit/s is
# 125 MB/s). n = H*L ranks; busbw = algbw * the nccl-tests factor of n.
#   all-reduce of S bytes, hierarchical (within a host reduce-scatter, across hosts an
#     all-reduce by each local rank of its share, within a host all-gather): across hosts
#     it is a reduce-scatter and an all-gather of S bytes over H hosts, so each host's link
#     carries 2(H-1)/H * S each way, time >= 2(H-1)/H * S / R, and
#     busbw <= R * (2(n-1)/n) / (2(H-1)/H) = R * H/(H-1) * (n-1)/n.
#     2x2: 1.5 R = 0.1875 GB/s (issue 38's figure). 4x2: 4/3 * 7/8 R = 7/6 R = 0.1458 GB/s.
#     (A flat ring over all n ranks moves 2(n-1)/n * S over each host's link: busbw <= R.)
#   all-gather (S bytes out) and reduce-scatter (S bytes in): each host receives, or sends,
#     the other hosts' (H-1)/H * S once: busbw <= R * H/(H-1) * (n-1)/n, as all-reduce.
#   broadcast of S bytes: every other host receives S through its link: busbw = algbw <= R.
#   all-to-all of S bytes a rank: each host sends L * (H-1)/H * S:
#     busbw <= R * H/(L(H-1)) * (n-1)/n (2x2: 0.75 R).
#   below 4 KiB: no bound (latency; the figure is the time per call).
# tutti / bound is tutti's busbw over the bound (1: at the link's rate).
#
# Every measurement is bounded (timeout) and checks its output (-c 1, the peers' check); a
# failed, timed-out or wrong one is shown as such. Raw records (records.txt), every run's
# log, the load average and the table (table.md, targets.md) are kept in --out.
set -euo pipefail
cd "$(dirname "$0")/../.."
root_dir=$PWD

shapes=""
collectives=""
sizes=""
rounds=3
rate=1gbit
peers="ompi gloo"
target=2
run_timeout=300
gloo_algos="ring_chunked,halving_doubling,bcube"
bind=host
build=build
out=""
quick=0
variants=()
set_rounds=0
set_target=0
set_timeout=0
args=("$@")

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --shapes) shapes=$2; shift ;;
    --collectives) collectives=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --rounds) rounds=$2; set_rounds=1; shift ;;
    --rate) rate=$2; shift ;;
    --peers) peers=$2; shift ;;
    --target) target=$2; set_target=1; shift ;;
    --timeout) run_timeout=$2; set_timeout=1; shift ;;
    --gloo-algos) gloo_algos=$2; shift ;;
    --variant) variants+=("$2"); shift ;;
    --out) out=$2; shift ;;
    --bind) bind=$2; shift ;;
    --build) build=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "multihost.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if [ "$quick" = 1 ]; then
  [ "$set_rounds" = 1 ] || rounds=1
  [ "$set_target" = 1 ] || target=0.2
  [ "$set_timeout" = 1 ] || run_timeout=120
  [ -n "$sizes" ] || sizes="64 1M"
fi

# The cells: "shape collective size" lines.
cells=""
default_cells=0
if [ -z "$shapes$collectives$sizes" ]; then
  default_cells=1
  cells="2x2 allreduce 8
2x2 allreduce 64M
2x2 allgather 64M
2x2 reducescatter 64M
2x2 broadcast 64M
2x2 alltoall 64M
4x2 allreduce 64M"
else
  for shape in ${shapes:-2x2 4x2}; do
    [[ $shape =~ ^[2-4]x[1-9][0-9]*$ ]] ||
      { echo "multihost.sh: shape '$shape': expected HxL, 2 to 4 hosts (e.g. 2x2)" >&2; exit 2; }
    colls=${collectives:-allreduce allgather reducescatter broadcast alltoall}
    # Without --collectives the 4-host shapes keep to the all-reduce, as the targets do.
    [ -n "$collectives" ] || [ "${shape%x*}" = 2 ] || colls=allreduce
    for c in $colls; do
      c=${c//-/}
      c=${c//_/}
      [ "$c" = bcast ] && c=broadcast
      for s in ${sizes:-8 64M}; do cells+="${cells:+$'\n'}$shape $c $s"; done
    done
  done
fi
tuttis="tutti"
for v in "${variants[@]}"; do
  [[ $v =~ ^[A-Za-z0-9_.-]+:.+$ ]] ||
    { echo "multihost.sh: --variant '$v': expected NAME:VAR=VALUE ..." >&2; exit 2; }
  tuttis+=" ${v%%:*}"
done

bin=$(readlink -f "$build")/bin
peer_bin=build/peers
netns=tests/multihost/netns.sh
bytes_of() {
  local s=$1
  case "$s" in
    *K) echo $((${s%K} * 1024)) ;;
    *M) echo $((${s%M} * 1024 * 1024)) ;;
    *G) echo $((${s%G} * 1024 * 1024 * 1024)) ;;
    *) echo "$s" ;;
  esac
}
rate_bytes() {  # tc rate -> bytes per second
  local r=$1
  [[ $r =~ ^([0-9]+)(kbit|mbit|gbit)$ ]] || { echo "multihost.sh: rate '$r'" >&2; exit 2; }
  case ${BASH_REMATCH[2]} in
    kbit) echo $((BASH_REMATCH[1] * 1000 / 8)) ;;
    mbit) echo $((BASH_REMATCH[1] * 1000000 / 8)) ;;
    gbit) echo $((BASH_REMATCH[1] * 1000000000 / 8)) ;;
  esac
}

# ---- inside `netns.sh run` (MH_INNER set): the measurements, into $out/records.txt
inner() {
  local records=$out/records.txt  # round shape coll bytes impl time_us busbw wrong algo
  local link
  link=$(rate_bytes "$rate")
  read -r -a host_names <<<"$TT_HOSTS"
  read -r -a host_addrs <<<"$TT_HOST_ADDRS"
  # The CPU of rank r (global), local rank i, of host h of H (see the header): one
  # expression for the three, evaluated in each rank's shell (tutti, Open MPI) or here (Gloo).
  local cpu_of
  if [ "$bind" = host ]; then
    cpu_of='(h * $(nproc) / H)'
  else
    cpu_of='(i % $(nproc))'
  fi
  # shellcheck disable=SC2016
  local bind_tutti='H=$1; shift; h=$((TUTTI_RANK / TUTTI_LOCAL_WORLD_SIZE)); i=$TUTTI_LOCAL_RANK
    exec taskset -c $(('"$cpu_of"')) "$@"'
  # shellcheck disable=SC2016
  local bind_ompi='H=$1; shift; h=$((OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_LOCAL_SIZE))
    i=$OMPI_COMM_WORLD_LOCAL_RANK; exec taskset -c $(('"$cpu_of"')) "$@"'
  declare -A last_us

  run_logged() {  # log command...
    local log=$1 status=0
    shift
    timeout --kill-after=10 "$run_timeout" "$@" </dev/null >"$log" 2>&1 || status=$?
    return $status
  }
  record_failure() {  # round shape coll bytes impl status
    local what=FAIL
    case "$6" in 124|137) what=TIMEOUT ;; esac
    echo "$1 $2 $3 $4 $5 $what $what $what -" >>"$records"
  }
  hostlist() {  # shape -> h1:L,h2:L,...
    local h=${1%x*} l=${1#*x} i list=""
    for ((i = 0; i < h; i++)); do list+="${list:+,}${host_names[i]}:$l"; done
    echo "$list"
  }

  run_tutti() {  # round shape coll size impl
    local round=$1 shape=$2 coll=$3 size=$4 impl=$5 bytes n us iters warm log json status=0
    local env=() v
    if [ "$impl" != tutti ]; then
      for v in "${variants[@]}"; do
        [ "${v%%:*}" = "$impl" ] || continue
        for a in ${v#*:}; do env+=(-x "$a"); done
      done
    fi
    bytes=$(bytes_of "$size")
    n=$((${shape%x*} * ${shape#*x}))
    log="$out/logs/r$round-$shape-$coll-$size-$impl.log"
    json="$out/logs/r$round-$shape-$coll-$size-$impl.json"
    # Calls for about --target seconds: from this cell's last time, at first from the link
    # (1 ms a call plus the bytes at a third of the link's rate).
    us=${last_us[$impl/$shape/$coll/$size]:-}
    [ -n "$us" ] || us=$(awk -v b="$bytes" -v r="$link" 'BEGIN { print 1000 + b / r * 3e6 }')
    iters=$(awk -v t="$target" -v us="$us" 'BEGIN {
      n = int(t * 1e6 / us); print (n < 3 ? 3 : (n > 100000 ? 100000 : n)) }')
    warm=5
    [ "$bytes" -lt $((1024 * 1024)) ] || warm=1
    run_logged "$log" ip netns exec "$TT_HEAD" "$bin/tutti-run" --hosts "$(hostlist "$shape")" \
      --launcher 'ip netns exec {host}' --cpu-bind none --timeout "$run_timeout" "${env[@]}" \
      sh -c "$bind_tutti" bind "${shape%x*}" "$bin/tutti-bench" "$coll" -b "$bytes" -e "$bytes" \
      -n "$iters" -w "$warm" -c 1 --json "$json" || status=$?
    if [ "$status" != 0 ] || [ ! -s "$json" ]; then
      echo "  $impl $shape $coll $size: failed ($status), see $log" >&2
      record_failure "$round" "$shape" "$coll" "$bytes" "$impl" "$status"
      return
    fi
    local row inplace=false bw wrong rbytes algo
    [ "$coll" = broadcast ] && inplace=true
    row=$(grep "\"in_place\": $inplace" "$json" | head -n 1)
    us=$(echo "$row" | sed -n 's/.*"time_us": \([^,]*\),.*/\1/p')
    bw=$(echo "$row" | sed -n 's/.*"busbw_gbs": \([^,]*\),.*/\1/p')
    wrong=$(echo "$row" | sed -n 's/.*"wrong": \([^}]*\)}.*/\1/p')
    rbytes=$(echo "$row" | sed -n 's/.*"bytes": \([0-9]*\),.*/\1/p')
    algo=$(echo "$row" | sed -n 's/.*"algorithm": "\([^"]*\)".*/\1/p')
    if [ -z "$us" ] || [ -z "$rbytes" ]; then
      record_failure "$round" "$shape" "$coll" "$bytes" "$impl" 1
      return
    fi
    last_us[$impl/$shape/$coll/$size]=$us
    echo "$round $shape $coll $rbytes $impl $us $bw $wrong ${algo:--}" >>"$records"
  }

  run_ompi() {  # round shape coll sizes...
    local round=$1 shape=$2 coll=$3 h l n i s list="" log hostfile status=0
    shift 3
    h=${shape%x*}
    l=${shape#*x}
    n=$((h * l))
    hostfile="$out/logs/hostfile-$shape"
    : >"$hostfile"
    for ((i = 0; i < h; i++)); do echo "${host_addrs[i]} slots=$l" >>"$hostfile"; done
    for s in "$@"; do list+="${list:+,}$(bytes_of "$s")"; done
    log="$out/logs/r$round-$shape-$coll-ompi.log"
    run_logged "$log" ip netns exec "$TT_HEAD" mpirun.openmpi --allow-run-as-root -np "$n" \
      --hostfile "$hostfile" --mca plm_rsh_agent "$root_dir/bench/peers/netns_rsh.sh" \
      --mca btl self,vader,tcp --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
      --mca mpi_yield_when_idle 1 --bind-to none \
      sh -c "$bind_ompi" bind "$h" "$root_dir/$peer_bin/mpi_bench_openmpi" "$coll" \
      -s "$list" -w 1 -t "$target" --label ompi || status=$?
    record_results "$round" "$shape" "$log" ompi "$status" "$coll" "$@"
  }

  run_gloo() {  # round shape coll sizes...
    local round=$1 shape=$2 coll=$3 h l n r s list="" log store status=0 algo algos=default
    shift 3
    h=${shape%x*}
    l=${shape#*x}
    n=$((h * l))
    for s in "$@"; do list+="${list:+,}$(bytes_of "$s")"; done
    [ "$coll" = allreduce ] && algos=${gloo_algos//,/ }
    for algo in $algos; do
      log="$out/logs/r$round-$shape-$coll-gloo-$algo.log"
      store=$(mktemp -d /tmp/multihost-gloo.XXXXXX)
      local pids=() a=() cpu
      [ "$algo" = default ] || a=(-a "$algo")
      for ((r = 0; r < n; r++)); do
        # Rank r on host r / l, as local rank r % l.
        # shellcheck disable=SC2034  # H, h and i are read by $cpu_of
        cpu=$(H=$h; h=$((r / l)); i=$((r % l)); eval "echo \$(($cpu_of))")
        timeout --kill-after=10 "$run_timeout" ip netns exec "${host_names[r / l]}" \
          taskset -c "$cpu" "$peer_bin/gloo_bench" "$coll" -np "$n" --rank "$r" \
          --store "$store" --addr "${host_addrs[r / l]}" --timeout "$run_timeout" "${a[@]}" \
          -s "$list" -w 1 -t "$target" --label gloo </dev/null >"$log.$r" 2>&1 &
        pids+=($!)
      done
      status=0
      for r in "${pids[@]}"; do
        wait "$r" || { s=$?; [ "$status" != 0 ] || status=$s; }
      done
      rm -rf "$store"
      cat "$log".* >"$log"
      rm -f "$log".*
      record_results "$round" "$shape" "$log" gloo "$status" "$coll" "$@"
    done
  }

  record_results() {  # round shape log impl status coll sizes...: RESULT lines; failures
    local round=$1 shape=$2 log=$3 impl=$4 status=$5 coll=$6 s b
    shift 6
    awk -v r="$round" -v shape="$shape" -v impl="$impl" '$1 == "RESULT" {
        print r, shape, $3, $5, impl, $6, $8, $9, $11 }' "$log" >>"$records"
    [ "$status" = 0 ] && return
    echo "  $impl $shape $coll: exit $status, see $log" >&2
    for s in "$@"; do
      b=$(bytes_of "$s")
      grep -q "^RESULT $impl $coll [0-9]* $b " "$log" ||
        record_failure "$round" "$shape" "$coll" "$b" "$impl" "$status"
    done
  }

  run_tuttis() {  # round shape coll sizes...: every tutti row at every size
    local size t
    for size in "${@:4}"; do
      for t in $tuttis; do run_tutti "$1" "$2" "$3" "$size" "$t"; done
    done
  }

  local round shape coll p
  for ((round = 1; round <= rounds; round++)); do
    echo "round $round/$rounds (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    echo "$round $(cut -d' ' -f1 /proc/loadavg)" >>"$out/load.txt"
    # One cell's sizes of a shape and collective go to the peers in one launch.
    while read -r shape coll; do
      local cell_sizes
      cell_sizes=$(echo "$cells" | awk -v s="$shape" -v c="$coll" '$1 == s && $2 == c {print $3}')
      # Alternate who goes first, so neither side always runs on a warmer machine.
      if ((round % 2 == 1)); then
        run_tuttis "$round" "$shape" "$coll" $cell_sizes
        for p in $peers; do "run_$p" "$round" "$shape" "$coll" $cell_sizes; done
      else
        for p in $peers; do "run_$p" "$round" "$shape" "$coll" $cell_sizes; done
        run_tuttis "$round" "$shape" "$coll" $cell_sizes
      fi
    done < <(echo "$cells" | awk '!seen[$1, $2]++ {print $1, $2}')
  done
}

if [ -n "${MH_INNER:-}" ]; then
  inner
  exit 0
fi

# ---- the outer run: checks, the namespaces, the table
[ "$(id -u)" = 0 ] || { echo "multihost.sh: needs root (network namespaces)" >&2; exit 1; }
need=("$bin/tutti-run" "$bin/tutti-bench")
for p in $peers; do
  case $p in
    ompi) need+=("$peer_bin/mpi_bench_openmpi") ;;
    gloo) need+=("$peer_bin/gloo_bench") ;;
    *) echo "multihost.sh: unknown peer '$p' (ompi gloo)" >&2; exit 2 ;;
  esac
done
for f in "${need[@]}"; do
  [ -x "$f" ] || { echo "multihost.sh: $f is missing: run bench/peers/setup.sh first" >&2; exit 1; }
done
rate_bytes "$rate" >/dev/null
case $bind in
  host|local) ;;
  *) echo "multihost.sh: --bind host or local, not '$bind'" >&2; exit 2 ;;
esac
[ -n "$out" ] || out="build/peers/multihost-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out/logs"
out=$(readlink -f "$out")
: >"$out/records.txt"
: >"$out/load.txt"
max_hosts=$(echo "$cells" | awk '{h = $1; sub(/x.*/, "", h); if (h + 0 > m) m = h + 0}
                                  END {print m}')
{
  echo "# multihost.sh $(date -u +%Y-%m-%dT%H:%MZ)," \
       "tutti $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "# machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)," \
       "$(uname -r); links $rate; $rounds rounds; --target $target s; --bind $bind"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# cells: $(echo "$cells" | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
  echo "# peers: $peers (gloo all-reduce: best of $gloo_algos)"
  for v in "${variants[@]}"; do echo "# variant ${v%%:*}: ${v#*:}"; done
} | tee "$out/header.txt"
export MH_INNER=1
status=0
"$netns" run --hosts "$max_hosts" --rate "$rate" -- "$0" "${args[@]}" --out "$out" || status=$?
unset MH_INNER
[ "$status" = 0 ] || echo "multihost.sh: the run ended with status $status" >&2
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/header.txt"
echo "# load average (1 min) at each round's start:" \
  "$(awk '{printf "%s%s", (NR > 1 ? ", " : ""), $2}' "$out/load.txt")" | tee -a "$out/header.txt"

# ---- the table: per cell, each implementation's median over rounds (busbw GB/s; time per
# call below 4 KiB), the algorithm tutti ran, the bound, the ratios (medians of per-round
# ratios of times; above 1 tutti is faster) and tutti / bound.
awk -v peers="$peers" -v tuttis="$tuttis" -v link="$(rate_bytes "$rate")" -v OFS=' ' '
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
# busbw bound in GB/s of a collective on H hosts of L ranks (see the header).
function bound(coll, h, l,    n, f) {
  n = h * l
  f = (n - 1) / n
  if (coll == "allreduce" || coll == "allgather" || coll == "reducescatter")
    return link * h / (h - 1) * f / 1e9
  if (coll == "broadcast") return link / 1e9
  if (coll == "alltoall") return link * h / (l * (h - 1)) * f / 1e9
  return ""
}
function cell(key, small,    m) {
  if (!(key in times)) return (key in bad) ? bad[key] : "–"
  if (bad[key] == "WRONG") return "WRONG"
  if (small) return sprintf("%.0f µs", median(times[key]))
  return sprintf("%.3f", median(bws[key]))
}
function ratio(c, a, b,    r, list, ka, kb) {  # median over rounds of time(b) / time(a)
  list = ""
  for (r in rounds) {
    ka = c SUBSEP a SUBSEP r; kb = c SUBSEP b SUBSEP r
    if ((ka in best) && (kb in best)) list = list " " (best[kb] / best[ka])
  }
  return list == "" ? "–" : sprintf("%.2f", median(list))
}
{
  round = $1; shape = $2; coll = $3; size = $4; impl = $5; t = $6; bw = $7; wrong = $8
  ck = shape SUBSEP coll SUBSEP size
  if (!(ck in seen)) { seen[ck] = 1; order[++ncells] = ck }
  key = ck SUBSEP impl
  if (t == "FAIL" || t == "TIMEOUT") { if (bad[key] != "WRONG") bad[key] = t; next }
  if (wrong != 0) { bad[key] = "WRONG"; next }
  if (impl == "tutti" && $9 != "-") algos[key] = algos[key] (index(algos[key], $9) ? "" : " " $9)
  rk = key SUBSEP round
  # Gloo: its best algorithm in the round.
  if (!(rk in best) || t + 0 < best[rk] + 0) { best[rk] = t; bestbw[rk] = bw }
  rounds[round] = 1
}
END {
  np = split(peers, plist, " ")
  nt = split(tuttis, tlist, " ")
  for (rk in best) {
    split(rk, p, SUBSEP); key = p[1] SUBSEP p[2] SUBSEP p[3] SUBSEP p[4]
    times[key] = times[key] " " best[rk]; bws[key] = bws[key] " " bestbw[rk]
  }
  head = "| hosts x ranks | collective | size"; rule = "|---|---|---"
  for (i = 1; i <= nt; i++) { head = head " | " tlist[i]; rule = rule "|---" }
  for (i = 1; i <= np; i++) { head = head " | " plist[i]; rule = rule "|---" }
  head = head " | bound | tutti algorithm"; rule = rule "|---|---"
  for (i = 1; i <= np; i++) { head = head " | tutti / " plist[i]; rule = rule "|---" }
  for (i = 2; i <= nt; i++) { head = head " | " tlist[i] " / ompi"; rule = rule "|---" }
  head = head " | tutti / bound"; rule = rule "|---"
  print head " |"
  print rule "|"
  for (c = 1; c <= ncells; c++) {
    split(order[c], p, SUBSEP); shape = p[1]; coll = p[2]; size = p[3]
    h = shape; sub(/x.*/, "", h); l = shape; sub(/.*x/, "", l)
    small = size + 0 < 4096
    line = "| " h " x " l " | " coll " | " human(size)
    for (i = 1; i <= nt; i++) line = line " | " cell(order[c] SUBSEP tlist[i], small)
    for (i = 1; i <= np; i++) line = line " | " cell(order[c] SUBSEP plist[i], small)
    b = small ? "" : bound(coll, h, l)
    line = line " | " (b == "" ? "–" : sprintf("%.4f", b))
    a = algos[order[c] SUBSEP "tutti"]; sub(/^ /, "", a)
    line = line " | " (a == "" ? "–" : a)
    for (i = 1; i <= np; i++) line = line " | " ratio(order[c], "tutti", plist[i])
    for (i = 2; i <= nt; i++) line = line " | " ratio(order[c], tlist[i], "ompi")
    tk = order[c] SUBSEP "tutti"
    line = line " | " ((b == "" || !(tk in bws)) ? "–" : sprintf("%.2f", median(bws[tk]) / b))
    print line " |"
  }
}' "$out/records.txt" >"$out/table.md"

# ---- the targets of issue 38 (ratios from the table: above 1 tutti is faster).
awk -F'|' '
function trim(s) { gsub(/^ +| +$/, "", s); return s }
NR == 1 { for (i = 2; i < NF; i++) col[trim($i)] = i; next }
NR == 2 { next }
{ key = trim($2) "/" trim($3) "/" trim($4); for (name in col) v[key, name] = trim($(col[name])) }
function check(key, name, want, label,    r, met) {
  r = ((key, name) in v) ? v[key, name] : "no result"
  met = (r ~ /^[0-9.]+$/ && r + 0 >= want) ? "yes" : "**no**"
  printf "| %s | %s | %s |\n", label, r, met
}
END {
  print "| target | measured | met |"
  print "|---|---|---|"
  check("2 x 2/allreduce/64 MiB", "tutti / bound", 0.9,
        "2x2 all-reduce 64 MiB: tutti / bound >= 0.9")
  check("2 x 2/allreduce/64 MiB", "tutti / ompi", 1.5, "2x2 all-reduce 64 MiB: tutti / ompi >= 1.5")
  check("2 x 2/allgather/64 MiB", "tutti / ompi", 1.3, "2x2 all-gather 64 MiB: tutti / ompi >= 1.3")
  check("2 x 2/reducescatter/64 MiB", "tutti / ompi", 1.3,
        "2x2 reduce-scatter 64 MiB: tutti / ompi >= 1.3")
  check("2 x 2/broadcast/64 MiB", "tutti / ompi", 1.3, "2x2 broadcast 64 MiB: tutti / ompi >= 1.3")
  check("2 x 2/alltoall/64 MiB", "tutti / ompi", 1.2, "2x2 all-to-all 64 MiB: tutti / ompi >= 1.2")
  check("2 x 2/allreduce/8 B", "tutti / ompi", 1,
        "2x2 all-reduce 8 B: time <= ompi (tutti / ompi >= 1)")
  check("4 x 2/allreduce/64 MiB", "tutti / bound", 0.9,
        "4x2 all-reduce 64 MiB: tutti / bound >= 0.9")
}' "$out/table.md" >"$out/targets.md"

echo
cat "$out/table.md"
echo
echo "busbw in GB/s (nccl-tests factors); time per call below 4 KiB. Medians over rounds."
echo "tutti / peer: median over rounds of the peer's time / tutti's in that round (above 1"
echo "tutti is faster); Gloo: its best algorithm each round. bound: each host's link at $rate"
echo "(see the header of $0); tutti / bound: tutti's median busbw over it."
if [ "$default_cells" = 1 ]; then
  echo
  cat "$out/targets.md"
fi
echo "Records, logs, table.md and targets.md: $out"
[ "$status" = 0 ] || exit 1
if awk '$6 == "FAIL" || $6 == "TIMEOUT" || ($8 != 0 && $8 != "-") {bad = 1} END {exit !bad}' \
     "$out/records.txt"; then
  echo "multihost.sh: some measurements failed, timed out or were wrong (see the table)" >&2
  exit 1
fi
[ -s "$out/records.txt" ] || { echo "multihost.sh: nothing was measured" >&2; exit 1; }
