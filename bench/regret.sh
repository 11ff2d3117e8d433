#!/usr/bin/env bash
# Regret of the algorithm choice, and the simulator against measurements (issue 39). Over a
# grid of cells (layout x transport x collective x size), the model's tuner
# (TUTTI_TUNER=model, the library's choice) and every applicable algorithm, forced, run in
# one launch of tutti-bench per (layout, transport, collective), their timed calls taking
# turns (--algo auto,A,B,... : A B C, B C A, ..., 5 blocks per size), so that all of a cell's
# candidates meet the same state of the machine: on a shared VM separate launches of one
# algorithm differ by 10-40% (where the hypervisor puts the vCPUs), more than most gaps
# between algorithms. In the full grid the ring-like algorithms also run at each segment
# (TUTTI_SEGMENT_BYTES, a launch per segment). Per cell: the best forced time, tuner/best and
# table/best; the old table (TUTTI_TUNER=table) is scored by its choice's time in the same
# launch, run as the table runs it (explain names it; a pipelined pick also runs forced at
# the communicator's segment, --algo NAME@SEGMENT). The summary gives
# the share of cells within 10% of the best and the worst ratio of each
# (bench/plot_regret.py). Every forced run's time is also compared with the model's
# prediction for that shape and candidate (tutti-info explain --json, priced as the run's
# communicator logged its segment and flat room; bench/sim_validate.py). Every run checks its
# results (-c 1); a wrong element stops the script.
#
#   bench/regret.sh [--quick] [--rounds R] [--out DIR] [--transports "shm tcp"]
#                   [--worlds "2 4 8"] [--hosts "2x2,4x2"] [--host-transports "hybrid tcp"]
#                   [--rate 1gbit] [--collectives "allreduce ..."] [--sizes "8 64K ..."]
#                   [--iters N] [--iter-bytes BYTES] [--model FILE] [--timeout S] [--summarize]
#
# --quick: all-reduce at 8 B, 64 KiB, 4 MiB and 64 MiB, default segments only. Without it:
# every collective, 8 B to 256 MiB by 8x, and the ring-like algorithms at 64K, 256K and 1M
# segments (TUTTI_SEGMENT_BYTES) at the sizes above the segment. A size below one element per
# rank, where a collective splits it (tutti-bench runs 0 bytes), is measured but left out of
# the scores.
# One host: --worlds ranks (2, 4 and 8; "" for none) over each of --transports.
# --hosts "HxL,...": also H namespaced hosts of L ranks each (2 to 4 hosts; the issue's grid
# is 2x2,4x2), links shaped to --rate (1gbit) in both directions (tests/multihost/netns.sh;
# root), over each of --host-transports: hybrid (TUTTI_TRANSPORT=auto: shared memory within
# a host, TCP between) and tcp. Their cells are named TRANSPORT@HxL (hybrid@2x2). A host's
# ranks are bound to CPU h * nproc / H, as bench/peers/multihost.sh binds them. Before the
# grid, three jobs on the first two hosts measure the network as every communicator across
# hosts does at creation (TUTTI_NET_PROBE), and DIR/model-hosts.json (the model with the
# fastest of the three network paths: a stall only slows a probe) is what every run and
# prediction on namespaced hosts uses.
# One launch of tutti-bench covers every size and candidate of a (layout, transport,
# collective) (--sizes), out of place only, with -n --iters (2000) timed calls per size but at
# most --iter-bytes (512M) of calls, at least 1 (tutti-bench --iter-bytes), after 12 to 20
# warm-ups (as many as the timed calls within those bounds: an algorithm's first calls set up
# what it uses, which 2 warm-ups left in the 8-byte figures, 5 us of 0.6; and a shape's first
# 4 to 8 calls try each way its large messages may go, core/path_learner.h, which with 2
# warm-ups put a 64 MiB Rabenseifner on 4 ranks at 146 ms against 44 ms after 16).
# --model FILE: the machine model every run and prediction uses (TUTTI_TUNING_FILE); default:
# this host's cached model (a first run probes it), copied to DIR/model.json, so that every
# round, namespaced host and prediction use the same parameters.
# Round r runs every launch once; a time is the median over rounds of the cell's
# out-of-place time, a ratio the median over rounds of the ratio within a round's launch. The
# time is the slowest rank's (tutti-bench -a 3): a block of calls lasts until its last rank is
# done, which is what the simulator prices. In a call with a root, the other ranks run ahead
# into the transport's buffers, and their mean is a pace no loop keeps (2000 reduces of 8 B on
# 8 ranks over TCP: mean over ranks 9.5 us a call, slowest rank 38). Writes DIR/raw.txt (one
# line per run and size: round transport world collective bytes label time_us chosen),
# DIR/predicted.txt (transport world collective bytes label, then explain's JSON),
# DIR/cells.csv, DIR/regret.png
# (bench/plot_regret.py), DIR/validation.md, DIR/validation.csv and DIR/sim-vs-measured.png
# (bench/sim_validate.py), DIR/logs/ (the last run's output of each launch).
# --summarize: measure nothing, summarize DIR again.
set -euo pipefail
cd "$(dirname "$0")/.."
root_dir=$PWD
args=("$@")

quick=0 rounds=1 out="" summarize=0 model="" timeout_s=1800
transports="shm tcp" worlds="2 4 8" collectives="" sizes="" hosts="" host_transports="hybrid tcp"
rate=1gbit iters=2000 iter_bytes=512M
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --rounds) rounds=$2; shift ;;
    --out) out=$2; shift ;;
    --transports) transports=$2; shift ;;
    --worlds) worlds=$2; shift ;;
    --hosts) hosts=$(echo "$2" | tr ',' ' '); shift ;;
    --host-transports) host_transports=$2; shift ;;
    --rate) rate=$2; shift ;;
    --collectives) collectives=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --iters) iters=$2; shift ;;
    --iter-bytes) iter_bytes=$2; shift ;;
    --model) model=$2; shift ;;
    --timeout) timeout_s=$2; shift ;;
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
for shape in $hosts; do
  [[ $shape =~ ^([2-4])x([1-9][0-9]*)$ ]] ||
    { echo "regret.sh: --hosts '$shape': HxL with 2 to 4 hosts (e.g. 2x2)" >&2; exit 2; }
done
for t in $host_transports; do
  case $t in hybrid|tcp) ;; *) echo "regret.sh: --host-transports: hybrid or tcp, not '$t'" >&2; exit 2 ;; esac
done
[[ $rate =~ ^([0-9]+)(mbit|gbit)$ ]] || { echo "regret.sh: --rate '$rate': e.g. 1gbit, 100mbit" >&2; exit 2; }
[ -n "$out" ] || out="build/regret-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out/logs"
out=$(readlink -f "$out")
raw="$out/raw.txt"
predicted="$out/predicted.txt"
bin=$root_dir/build/bin

summarize_dir() {
  /usr/bin/python3 bench/plot_regret.py "$raw" --csv "$out/cells.csv" --png "$out/regret.png"
  if [ -s "$predicted" ]; then
    /usr/bin/python3 bench/sim_validate.py "$out"
  fi
}

# ---- the outer run with hosts: the whole grid inside netns.sh (namespaces removed on exit)
if [ "$summarize" = 0 ] && [ -n "$hosts" ] && [ -z "${REGRET_INNER:-}" ]; then
  [ "$(id -u)" = 0 ] || { echo "regret.sh: --hosts needs root (network namespaces)" >&2; exit 1; }
  max_hosts=$(for s in $hosts; do echo "${s%x*}"; done | sort -n | tail -n 1)
  export REGRET_INNER=1
  # The command as given, for the header (the inner run is also told where to write).
  REGRET_COMMAND=$(printf '%q ' "${args[@]}")
  export REGRET_COMMAND
  status=0
  tests/multihost/netns.sh run --hosts "$max_hosts" --rate "$rate" -- "$0" "${args[@]}" \
    --out "$out" || status=$?
  unset REGRET_INNER
  [ "$status" = 0 ] || { echo "regret.sh: the run ended with status $status" >&2; exit "$status"; }
  summarize_dir
  exit 0
fi

prio=()
if [ "$(id -u)" = 0 ] && command -v chrt >/dev/null; then prio=(chrt -f 10); fi

bytes_of() {  # 64K -> 65536
  awk -v s="$1" 'BEGIN { m = 1; u = toupper(substr(s, length(s)));
    if (u == "K") m = 1024; else if (u == "M") m = 1048576; else if (u == "G") m = 1073741824;
    if (m > 1) s = substr(s, 1, length(s) - 1); printf "%d", s * m }'
}

human_bytes() {  # 262144 -> 256K (as tutti-bench's --algo NAME@SEGMENT is written back)
  awk -v b="$1" 'BEGIN { if (b % 1048576 == 0) printf "%dM", b / 1048576;
    else if (b % 1024 == 0) printf "%dK", b / 1024; else printf "%d", b }'
}

# Segments matter for the pipelined algorithms (ring, trees, hierarchical ones).
segmented() { case "$1" in ring|double_binary_tree|binomial|hier*) return 0 ;; *) return 1 ;; esac; }

# A layout: "1xN" (one host, N ranks) or "HxL" (namespaced hosts). Its transports' names in
# the records: shm, tcp; hybrid@HxL, tcp@HxL.
record_transport() {  # layout transport
  if [ "${1%x*}" = 1 ]; then echo "$2"; else echo "$2@$1"; fi
}

# Runs `tutti-bench ARGS` on LAYOUT over TRANSPORT with the variables ENVS, output to FILE.
launch() {  # layout transport file env... -- bench args...
  local layout=$1 transport=$2 file=$3
  shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local h=${layout%x*} l=${layout#*x} tv=$transport
  [ "$tv" = hybrid ] && tv=auto
  local pinned=$model
  [ "$h" = 1 ] || pinned=$model_hosts
  envs+=(TUTTI_TRANSPORT="$tv" TUTTI_TUNING_FILE="$pinned" TUTTI_DEBUG=INFO
         TUTTI_DEBUG_SUBSYS=TUNE TUTTI_TOPO_DUMP_FILE="$out/logs/topo-$layout-$transport.json")
  if [ "$h" = 1 ]; then
    env "${envs[@]}" timeout "$timeout_s" "${prio[@]}" "$bin/tutti-run" -n "$l" \
      "$bin/tutti-bench" "$@" >"$file" 2>&1
  else
    local list="" i
    read -r -a host_names <<<"$TT_HOSTS"
    for ((i = 0; i < h; i++)); do list+="${list:+,}${host_names[i]}:$l"; done
    # Host h of H on CPU h * nproc / H (bench/peers/multihost.sh's --bind host).
    # shellcheck disable=SC2016
    local bind='H=$1; shift; h=$((TUTTI_RANK / TUTTI_LOCAL_WORLD_SIZE))
      exec taskset -c $((h * $(nproc) / H)) "$@"'
    env "${envs[@]}" timeout --kill-after=10 "$timeout_s" ip netns exec "$TT_HEAD" \
      "$bin/tutti-run" --hosts "$list" --launcher 'ip netns exec {host}' --cpu-bind none \
      --timeout "$timeout_s" sh -c "$bind" bind "$h" "$bin/tutti-bench" "$@" >"$file" 2>&1
  fi
}

algorithms_for() {  # layout transport collective -> the algorithm names that apply
  launch "$1" "$2" "$out/logs/algorithms.out" TUTTI_TUNER=table -- "$3" -b 64 -e 64 --algo none || true
  sed -n 's/.*algorithms that apply: //p' "$out/logs/algorithms.out" | head -n 1 | tr -d ',' |
    tr ' ' '\n' | grep -v '^$' || true
}

# explain's JSON for one shape, priced as the run's communicator was set up, into
# $explain_json; cached per question (the forced runs of a cell share the default segment's),
# so called without a subshell.
declare -A explained
explain_json=""
explain() {  # layout transport collective bytes segment fixed(0|1) flat_room
  local layout=$1 transport=$2 coll=$3 b=$4 seg=$5 fixed=$6 room=$7
  local key="$*"
  if [ -z "${explained[$key]:-}" ]; then
    local h=${layout%x*} l=${layout#*x} a=()
    local pinned=$model
    [ "$h" = 1 ] || pinned=$model_hosts
    a=(explain "$coll" "$b" --ranks $((h * l)) --model "$pinned" --transport "$transport"
       --segment "$seg" --flat-room "$room" --json)
    [ "$fixed" = 1 ] && a+=(--fixed-segment)
    local topo="$out/logs/topo-$layout-$transport.json"
    [ -s "$topo" ] && a+=(--topo "$topo")
    explained[$key]=$("$bin/tutti-info" "${a[@]}" 2>"$out/logs/explain.err" |
      tr -d '\n') || { echo "regret.sh: explain failed: ${a[*]}" >&2; cat "$out/logs/explain.err" >&2; exit 1; }
  fi
  explain_json=${explained[$key]}
}

# One launch: every size of a (layout, transport, collective) with every candidate of LIST
# (comma-separated; auto is the model's tuner), their timed calls taking turns (tutti-bench
# --algo A,B,... --blocks), so that they are compared under the same state of the machine.
# SUFFIX ("" or "/64K") follows the forced algorithms' labels. A size that some candidate
# does not apply to is rerun alone, without the candidates that do not apply to it.
run_one() {  # layout transport collective candidates suffix sizes env... -- bench args...
  local layout=$1 transport=$2 coll=$3 candidates=$4 suffix=$5 list=$6
  shift 6
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  [ -n "$list" ] && [ -n "$candidates" ] || return 0
  local tmp="$out/logs/$layout-$transport-$coll${suffix//\//_}.out" status=0
  launch "$layout" "$transport" "$tmp" "${envs[@]}" -- "$coll" --sizes "$list" -n "$iters" \
    --iter-bytes "$iter_bytes" -w 20 --min-warmup 12 -c 1 --no-in-place -a 3 --algo "$candidates" \
    "$@" || status=$?
  if [ "$status" != 0 ]; then
    local refused
    refused=$(sed -n 's/.*--algo \([A-Za-z0-9_]*\) does not apply to.*/\1/p' "$tmp" | head -n 1)
    if [ -n "$refused" ]; then
      local one
      if [[ $list == *,* ]]; then
        for one in ${list//,/ }; do
          run_one "$layout" "$transport" "$coll" "$candidates" "$suffix" "$one" "${envs[@]}" -- "$@"
        done
      else
        local kept
        kept=$(echo ",$candidates," | sed "s/,$refused,/,/; s/^,//; s/,$//")
        run_one "$layout" "$transport" "$coll" "$kept" "$suffix" "$list" "${envs[@]}" -- "$@"
      fi
      return 0
    fi
    echo "regret.sh: FAILED $layout $transport $coll $list $candidates" >&2; cat "$tmp" >&2; exit 1
  fi
  awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ && $10 != 0 && $10 != "N/A" {bad = 1} END {exit bad}' "$tmp" ||
    { echo "regret.sh: WRONG $layout $transport $coll $candidates" >&2; cat "$tmp" >&2; exit 1; }
  local rt n
  rt=$(record_transport "$layout" "$transport")
  n=$((${layout%x*} * ${layout#*x}))
  # The communicator's segment and flat room (comm_impl.cc's TUNE line at creation).
  local seg room fixed=0
  seg=$(sed -n 's/.*: segment \([0-9]*\) bytes (.*flat exchange room \([0-9]*\) bytes.*/\1/p' "$tmp" | head -n 1)
  room=$(sed -n 's/.*flat exchange room \([0-9]*\) bytes.*/\1/p' "$tmp" | head -n 1)
  if [ -z "$seg" ] || [ -z "$room" ]; then
    echo "regret.sh: no segment line (TUNE) in $tmp" >&2; exit 1
  fi
  [ -z "$suffix" ] || fixed=1
  # Rows: size, time, then the algorithm (auto:NAME for the tuner's row, NAME@SEGMENT for one
  # forced with its segment, labelled NAME/SEGMENT).
  local b t algo label chosen eseg efixed
  while read -r b t algo; do
    eseg=$seg efixed=$fixed chosen=$algo
    if [[ $algo == auto:* ]]; then
      label=tuner chosen=${algo#auto:}
    elif [[ $algo == *@* ]]; then
      label=${algo/@//} eseg=$(bytes_of "${algo#*@}") efixed=1
    else
      label=$algo$suffix
    fi
    # round transport world collective bytes label time_us chosen
    echo "$round $rt $n $coll $b $label $t $chosen" >>"$raw"
    explain "$layout" "$transport" "$coll" "$b" "$eseg" "$efixed" "$room"
    [ "$round" != 1 ] || echo "$rt $n $coll $b $label $explain_json" >>"$predicted"
    [ "$label" = tuner ] || continue
    # The old table is scored by its choice's time in this launch, run as the table runs it:
    # at the communicator's segment (the launch has NAME@SEGMENT for the table's pipelined
    # picks); explain names the table's choice for the shape.
    local pick run_as
    pick=$(sed -n 's/.*"table": "\([^"]*\)".*/\1/p' <<<"$explain_json")
    run_as=$pick
    segmented "$pick" && run_as="$pick@$(human_bytes "$seg")"
    local pt
    pt=$(awk -v a="$run_as" '$1 == "[0]" && $2 == "'"$b"'" && $NF == a {print $7}' "$tmp" | head -n 1)
    if [ -n "$pt" ]; then
      echo "$round $rt $n $coll $b table $pt $pick" >>"$raw"
    else
      echo "regret.sh: the table's choice $run_as for $rt $n $coll $b was not run" >&2
    fi
  done < <(awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ {print $2, $7, $NF}' "$tmp")
}

# The sizes of LIST above SEGMENT bytes, comma-separated.
sizes_above() {  # segment list...
  local seg s out=""
  seg=$(bytes_of "$1")
  shift
  for s in "$@"; do
    [ "$(bytes_of "$s")" -gt "$seg" ] && out+="${out:+,}$(bytes_of "$s")"
  done
  echo "$out"
}

# DIR/model-hosts.json: $model with the network path a communicator across two namespaced
# hosts measures at creation (its TUNE line: core/model_setup.cc), as applyNetworkCosts
# (tuning/probe_network.h) puts it: alpha, the loopback's overhead, the sustained rate as
# beta and nic_bandwidth.
measure_network() {
  local file="$out/logs/network.out" line="" one rate best=0 try
  model_hosts=""  # unpinned: the probe runs
  # Three jobs, the fastest sustained rate kept: the probe's drained round is one stream of a
  # few MiB, which a stall of the sending CPU (another process here) slows, and nothing
  # makes a link faster than it is (one such round read 504 of 957 Mbit/s before a 4x2 run).
  for try in 1 2 3; do
    launch 2x1 hybrid "$file" -- barrier -n 1 -w 0 ||
      { echo "regret.sh: the network probe's job failed" >&2; cat "$file" >&2; exit 1; }
    one=$(grep -o "network: measured with rank [0-9]*: .* Mbit/s sustained.*" "$file" | head -n 1) ||
      { echo "regret.sh: no network measurement in $file" >&2; cat "$file" >&2; exit 1; }
    echo "# probe $try: $one" >>"$out/header.txt"
    rate=$(sed -n 's/.*, \([0-9.]*\) Mbit\/s sustained.*/\1/p' <<<"$one")
    if awk -v a="$rate" -v b="$best" 'BEGIN { exit !(a > b) }'; then best=$rate line=$one; fi
  done
  echo "# $line" >>"$out/header.txt"
  model_hosts=$out/model-hosts.json
  /usr/bin/python3 - "$model" "$model_hosts" "$line" <<'PY'
import json, re, sys
source, target, line = sys.argv[1:]
m = re.search(r"\(alpha ([0-9.]+) us\), ([0-9.]+) Mbit/s", line)
model = json.load(open(source))
net = model["paths"]["network"]
net["alpha"] = float(m.group(1)) * 1e-6
bandwidth = float(m.group(2)) * 1e6 / 8
net["beta"] = 1 / bandwidth
if model.get("loopback", {}).get("overhead", 0) > 0:
    net["overhead"] = model["loopback"]["overhead"]
model["nic_bandwidth"] = bandwidth
b = re.search(r"bucket of ([0-9]+) KiB at ([0-9.]+) Mbit/s", line)
model["nic_burst_bytes"] = int(b.group(1)) * 1024 if b else 0
model["nic_line_bandwidth"] = float(b.group(2)) * 1e6 / 8 if b else 0
json.dump(model, open(target, "w"), indent=2)
PY
}

measure() {
  if [ -z "$model" ]; then
    # A first communicator probes this host's model and caches it, if nothing is cached.
    env TUTTI_TUNING_FILE= "$bin/tutti-run" -n 2 "$bin/tutti-bench" barrier -n 1 -w 0 >/dev/null 2>&1 || true
    "$bin/tutti-info" tune --json >"$out/model.json"
    model=$out/model.json
  else
    model=$(readlink -f "$model")
    cp "$model" "$out/model.json" 2>/dev/null || true
  fi
  local layouts=() n shape
  for n in $worlds; do layouts+=("1x$n"); done
  for shape in $hosts; do layouts+=("$shape"); done
  local all_sizes=""
  for s in $sizes; do all_sizes+="${all_sizes:+,}$(bytes_of "$s")"; done
  : >"$raw"
  : >"$predicted"
  model_hosts=$model
  {
    echo "# regret.sh $(date -u +%Y-%m-%dT%H:%MZ), tutti $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo "# command: bench/regret.sh ${REGRET_COMMAND:-$(printf '%q ' "${args[@]}")}"
    echo "# machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(uname -r)"
    echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# model: $model"
    [ -z "$hosts" ] || echo "# hosts: $hosts, links $rate"
  } >"$out/header.txt"
  [ -z "$hosts" ] || measure_network
  local layout transport coll seg list
  for round in $(seq 1 "$rounds"); do
    for layout in "${layouts[@]}"; do
      local tlist=$transports
      [ "${layout%x*}" = 1 ] || tlist=$host_transports
      for transport in $tlist; do
        for coll in $collectives; do
          mapfile -t algos < <(algorithms_for "$layout" "$transport" "$coll")
          echo "== round $round: $layout $transport $coll: ${#algos[@]} algorithms, sizes $sizes" >&2
          local all=auto segmented_list="" algo
          for algo in "${algos[@]}"; do
            all+=",$algo"
            segmented "$algo" && segmented_list+="${segmented_list:+,}$algo"
          done
          # The table's pipelined picks also run at the communicator's segment, as the table
          # runs them (the forced ones get the model's best segment for them).
          local seg0 room0 b pick picks=" "
          seg0=$(sed -n 's/.*: segment \([0-9]*\) bytes (.*flat exchange room.*/\1/p' "$out/logs/algorithms.out" | head -n 1)
          room0=$(sed -n 's/.*flat exchange room \([0-9]*\) bytes.*/\1/p' "$out/logs/algorithms.out" | head -n 1)
          if [ -n "$seg0" ] && [ -n "$room0" ]; then
            for b in ${all_sizes//,/ }; do
              explain "$layout" "$transport" "$coll" "$b" "$seg0" 0 "$room0"
              pick=$(sed -n 's/.*"table": "\([^"]*\)".*/\1/p' <<<"$explain_json")
              if segmented "$pick" && [[ $picks != *" $pick "* ]]; then
                picks+="$pick "
                all+=",$pick@$(human_bytes "$seg0")"
              fi
            done
          fi
          run_one "$layout" "$transport" "$coll" "$all" "" "$all_sizes" TUTTI_TUNER=model --
          for seg in $segments; do
            # shellcheck disable=SC2086
            list=$(sizes_above "$seg" $sizes)
            run_one "$layout" "$transport" "$coll" "$segmented_list" "/$seg" "$list" \
              TUTTI_TUNER=model TUTTI_SEGMENT_BYTES="$seg" --
          done
        done
      done
    done
  done
  echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/header.txt"
}

if [ "$summarize" = 0 ]; then
  measure
  # Inside netns.sh the outer run summarizes, once the namespaces are gone.
  [ -z "${REGRET_INNER:-}" ] || exit 0
fi
summarize_dir
