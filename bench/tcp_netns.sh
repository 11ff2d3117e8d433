#!/usr/bin/env bash
# TCP between two "hosts" (network namespaces joined by an unshaped veth pair), in one run:
# iperf3 -P 4 between the namespaces, then a 2-rank all-reduce with one rank per namespace,
# for each TUTTI_TCP_STREAMS value asked for. Needs root, iproute2 and iperf3.
#   bench/tcp_netns.sh [runs=3] [streams="1 2 4"] [size=256M]
# Prints every run, then per setting the median and range over the runs, and the median
# tutti figure as a share of iperf3's (one way and --bidir).
#
# What is compared: a 2-rank all-reduce of S bytes moves S/2 each way in its reduce-scatter
# and S/2 each way in its all-gather, so each rank sends S bytes and receives S bytes over
# its link in the call's time t, both directions at once. busbw = algbw * 2(n-1)/n = S/t for
# n = 2: the bytes per second each direction of the link carries. iperf3 -c ... -P 4
# measures one direction's throughput (the receiver's figure, 4 connections), so the two
# are comparable, iperf3's being the easier job: one direction only, no reduction. Where the
# CPUs, not the link, bound the rate (a veth pair's bytes are copied by the CPUs of the host,
# both directions on the same cores), iperf3 --bidir's rate per direction is the bound the
# all-reduce can reach; the script prints both.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
streams_list=${2:-"1 2 4"}
size=${3:-256M}
bin=${TUTTI_BUILD:-build}/bin
[ "$(id -u)" = 0 ] || { echo "tcp_netns: needs root (network namespaces)" >&2; exit 1; }
command -v iperf3 >/dev/null || { echo "tcp_netns: iperf3 missing (scripts/setup.sh)" >&2; exit 1; }
[ -x "$bin/tutti-bench" ] || { echo "tcp_netns: $bin/tutti-bench missing (build first)" >&2; exit 1; }

# Unique per run, so runs side by side (or a stale one) never collide.
id=$$$(printf '%04x' $((RANDOM)))
nsa=tutti-a-$id nsb=tutti-b-$id
veth_a=tva$id veth_b=tvb$id
# 10.<x>.<y>.0/30 from the pid: private, and unlikely to be any real route here.
net="10.$((100 + $$ % 100)).$((RANDOM % 250))"
addr_a=$net.1 addr_b=$net.2
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  ip netns del "$nsa" 2>/dev/null || true
  ip netns del "$nsb" 2>/dev/null || true  # deleting a namespace deletes its veth end
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

ip netns add "$nsa"
ip netns add "$nsb"
ip link add "$veth_a" type veth peer name "$veth_b"
ip link set "$veth_a" netns "$nsa"
ip link set "$veth_b" netns "$nsb"
ip -n "$nsa" addr add "$addr_a/30" dev "$veth_a"
ip -n "$nsb" addr add "$addr_b/30" dev "$veth_b"
for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
ip -n "$nsa" link set "$veth_a" up
ip -n "$nsb" link set "$veth_b" up

# One iperf3 run (-P 4, one direction, then both at once): prints the receivers' GB/s over
# the 4 connections, one direction's, then the mean of the two directions' with --bidir.
iperf_once() {
  local port=$1 args out=()
  for args in "" "--bidir"; do
    # A bounded server: one that never sees its client must not hold the run.
    ip netns exec "$nsa" timeout 60 iperf3 -s -1 -p "$port" >"$tmp/iperf-server" 2>&1 &
    local server=$!
    pids+=("$server")
    local ok=0
    for _ in $(seq 50); do
      if ip netns exec "$nsb" timeout 60 iperf3 -c "$addr_a" -p "$port" -P 4 -t 5 -O 1 $args -J \
          >"$tmp/iperf.json" 2>&1; then ok=1; break; fi
      sleep 0.2
    done
    wait "$server" || true
    [ "$ok" = 1 ] || { echo "tcp_netns: iperf3 failed" >&2; cat "$tmp/iperf.json" "$tmp/iperf-server" >&2; exit 1; }
    out+=("$(python3 -c '
import json, sys
end = json.load(open(sys.argv[1]))["end"]
rates = [end["sum_received"]["bits_per_second"]]
if "sum_received_bidir_reverse" in end:
    rates.append(end["sum_received_bidir_reverse"]["bits_per_second"])
print(sum(rates) / len(rates) / 8e9)' "$tmp/iperf.json")")
    port=$((port + 1))
  done
  echo "${out[@]}"
}

# One all-reduce run with TUTTI_TCP_STREAMS=$1: prints rank 0's busbw (GB/s).
tutti_once() {
  local streams=$1 port=$((20000 + RANDOM % 20000)) secret
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  local common=(env TUTTI_WORLD_SIZE=2 TUTTI_STORE_ADDR="$addr_a:$port" TUTTI_SECRET="$secret"
                TUTTI_TRANSPORT=tcp TUTTI_TCP_STREAMS="$streams")
  # torchrun's variables make rank 0 serve the store (src/bootstrap/launch_env.h).
  ip netns exec "$nsa" "${common[@]}" RANK=0 WORLD_SIZE=2 MASTER_ADDR="$addr_a" MASTER_PORT="$port" \
    "$bin/tutti-bench" allreduce -b "$size" -e "$size" -n 5 -w 2 -c 1 >"$tmp/r0" 2>&1 &
  local r0=$!
  pids+=("$r0")
  ip netns exec "$nsb" "${common[@]}" RANK=1 WORLD_SIZE=2 MASTER_ADDR="$addr_a" MASTER_PORT="$port" \
    "$bin/tutti-bench" allreduce -b "$size" -e "$size" -n 5 -w 2 -c 1 >"$tmp/r1" 2>&1 ||
    { cat "$tmp/r1" >&2; exit 1; }
  wait "$r0" || { cat "$tmp/r0" >&2; exit 1; }
  grep -q '# Out of bounds values : 0 OK' "$tmp/r0" || { cat "$tmp/r0" >&2; exit 1; }
  # row: size count type redop root time algbw busbw wrong ... (out-of-place first)
  awk '$1 ~ /^[0-9]+$/ {print $8; exit}' "$tmp/r0"
}

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
range() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%s-%s", lo, hi}'; }

for ((i = 0; i < runs; i++)); do
  read -r uni bidir < <(iperf_once $((5201 + 2 * i)))
  echo "run $i: iperf3 -P 4: $uni GB/s one way; --bidir: $bidir GB/s each way"
  echo "$uni" >>"$tmp/iperf"
  echo "$bidir" >>"$tmp/bidir"
  for s in $streams_list; do
    v=$(tutti_once "$s")
    echo "run $i: tutti all-reduce $size, TUTTI_TCP_STREAMS=$s: busbw $v GB/s" && echo "$v" >>"$tmp/s$s"
  done
done

iperf=$(median <"$tmp/iperf")
bidir=$(median <"$tmp/bidir")
printf '\niperf3 -P 4, one direction             median %6.3f GB/s  range %s\n' "$iperf" "$(range <"$tmp/iperf")"
printf 'iperf3 -P 4 --bidir, each direction     median %6.3f GB/s  range %s\n' "$bidir" "$(range <"$tmp/bidir")"
for s in $streams_list; do
  m=$(median <"$tmp/s$s")
  printf 'tutti all-reduce %-5s streams=%-2s     median %6.3f GB/s  range %s  = %3.0f%% of iperf3 -P 4, %3.0f%% of --bidir\n' \
    "$size" "$s" "$m" "$(range <"$tmp/s$s")" "$(awk -v a="$m" -v b="$iperf" 'BEGIN {print 100 * a / b}')" \
    "$(awk -v a="$m" -v b="$bidir" 'BEGIN {print 100 * a / b}')"
done
