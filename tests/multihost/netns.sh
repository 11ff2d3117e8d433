#!/usr/bin/env bash
# Pretend hosts for the multi-host tests: network namespaces joined by a bridge, each host's
# link shaped with tc tbf. Nothing touches the root namespace's network: the bridge lives in
# a "switch" namespace of its own, and tutti-run runs in a "head" namespace on the same bridge.
#
#   netns.sh run [--hosts N | --slots S1,S2,...] [--rate RATE] -- COMMAND [ARGS...]
#       Creates N hosts (2 to 4; --slots gives N and the ranks of each for $TT_HOSTLIST),
#       runs COMMAND in the root namespace with the variables below, removes everything when
#       COMMAND ends or the script is interrupted (EXIT, INT, TERM), and exits with
#       COMMAND's status. RATE is a tc rate (default 1gbit), applied in both directions of
#       every host's link: on the host's veth (its egress) and on the bridge-side veth (its
#       ingress). The head's link is not shaped (only the store's traffic crosses it).
#   netns.sh link-down HOST [host|switch|both]    take a host's link down (default: the
#   netns.sh link-up HOST [host|switch|both]      bridge side, as a pulled cable), or up
#   netns.sh shape HOST RATE                      reshape a host's link, e.g. to 10mbit
#   netns.sh clean                                remove what killed runs left (see below)
#   (HOST is one of $TT_HOSTS; COMMAND may call these while it runs, through $TT_NETNS.)
#
# Variables COMMAND gets:
#   TT_HEAD      the head namespace (run tutti-run there: ip netns exec "$TT_HEAD" ...)
#   TT_HOSTS     the host namespaces, space-separated, in order
#   TT_HOSTLIST  "host1:S1,host2:S2,...", for tutti-run --hosts (slots 1 each without --slots)
#   TT_HOST_ADDRS  the hosts' addresses, space-separated; TT_HEAD_ADDR the head's
#   TT_NETNS     this script, for the fault subcommands
# Addresses: 10.77.0.0/24, hosts .1 to .N, the head .254; every run has its own bridge, so
# parallel runs may use the same addresses without meeting.
#
# Names: every namespace of a run starts with "tt<pid>n" (pid of the script): <prefix>sw,
# <prefix>head, <prefix>h1 ... Parallel runs never collide. A run killed with SIGKILL leaves
# its namespaces behind; every run (and `clean`) removes those whose owner pid is no
# longer a running netns.sh, never those of a run still alive.
set -euo pipefail

SELF=$(readlink -f "$0")
readonly SELF
NET=10.77.0

die() { echo "netns.sh: $*" >&2; exit 2; }

# "1gbit" -> bits per second (tc's units: bit, kbit, mbit, gbit; k/m/g are decimal).
rate_bits() {
  local r=$1 n unit
  [[ $r =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] || die "rate '$r': expected e.g. 10mbit, 1gbit"
  n=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[2]}
  case $unit in
    bit) echo "$n" ;;
    kbit) echo $((n * 1000)) ;;
    mbit) echo $((n * 1000000)) ;;
    gbit) echo $((n * 1000000000)) ;;
  esac
}

# Shapes (or reshapes) the egress of DEV in namespace NS to RATE. The bucket holds 10 ms of
# the rate (at least 32 KiB): tbf needs at least a kernel tick's worth, and a whole GSO
# packet; the queue holds 100 ms more before dropping.
shape_dev() {
  local ns=$1 dev=$2 rate=$3 bits burst
  bits=$(rate_bits "$rate")
  burst=$((bits / 8 / 100))
  [ "$burst" -ge 32768 ] || burst=32768
  ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" \
    latency 100ms
}

# HOST namespace -> "prefix index" (tt123nh2 -> "tt123n 2"), refusing anything else.
parse_host() {
  [[ $1 =~ ^(tt[0-9]+n)h([0-9]+)$ ]] || die "'$1' is not a host of a netns.sh run"
  ip netns list | grep -qw "^$1" || die "no namespace '$1'"
  echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
}

# Deletes the namespaces of PREFIX, after killing whatever still runs in them.
remove_prefix() {
  local prefix=$1 ns
  for ns in $(ip netns list | awk '{print $1}' | grep "^${prefix}" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns delete "$ns" 2>/dev/null || true
  done
}

# Removes the namespaces of runs whose script is gone (killed before its trap ran).
clean_stale() {
  local prefix pid
  for prefix in $(ip netns list | awk '{print $1}' | sed -n 's/^\(tt[0-9]\+n\).*/\1/p' | sort -u); do
    pid=${prefix#tt}
    pid=${pid%n}
    # The owner is alive when that pid runs this script (a reused pid running something
    # else does not count).
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "netns.sh"; then
      continue
    fi
    remove_prefix "$prefix"
  done
}

# Creates the switch, the head and N hosts shaped to RATE.
create() {
  local prefix=$1 n=$2 rate=$3 i ns
  local sw=${prefix}sw head=${prefix}head
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  ip netns add "$head"
  ip -n "$head" link set lo up
  ip -n "$sw" link add head type veth peer name eth0 netns "$head"
  ip -n "$sw" link set head master br0 up
  ip -n "$head" addr add "$NET.254/24" dev eth0
  ip -n "$head" link set eth0 up
  for ((i = 1; i <= n; i++)); do
    ns=${prefix}h$i
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$sw" link add "h$i" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "h$i" master br0 up
    ip -n "$ns" addr add "$NET.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    shape_dev "$ns" eth0 "$rate"
    shape_dev "$sw" "h$i" "$rate"
  done
}

cmd_run() {
  local hosts=2 slots="" rate=1gbit
  while [ $# -gt 0 ]; do
    case $1 in
      --hosts) hosts=$2; shift 2 ;;
      --slots) slots=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --) shift; break ;;
      *) die "run: unknown option '$1'" ;;
    esac
  done
  [ $# -gt 0 ] || die "run: no command after --"
  local -a slot_list=()
  if [ -n "$slots" ]; then
    IFS=, read -r -a slot_list <<<"$slots"
    hosts=${#slot_list[@]}
  fi
  [[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 2 ] && [ "$hosts" -le 4 ] ||
    die "run: 2 to 4 hosts, not '$hosts'"
  rate_bits "$rate" >/dev/null
  [ "$(id -u)" = 0 ] || die "run: needs root (network namespaces)"

  local prefix="tt$$n"
  clean_stale
  child=""
  # shellcheck disable=SC2064
  trap "teardown $prefix" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  create "$prefix" "$hosts" "$rate"

  local i list="" names="" addrs=""
  for ((i = 1; i <= hosts; i++)); do
    names+="${names:+ }${prefix}h$i"
    addrs+="${addrs:+ }$NET.$i"
    list+="${list:+,}${prefix}h$i:${slot_list[i - 1]:-1}"
  done
  export TT_HEAD=${prefix}head TT_HOSTS=$names TT_HOSTLIST=$list TT_HOST_ADDRS=$addrs
  export TT_HEAD_ADDR=$NET.254 TT_NETNS=$SELF
  # In the background, so that INT and TERM reach the trap while it runs.
  "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

teardown() {
  local rc=$?
  if [ -n "${child:-}" ]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  remove_prefix "$1"
  exit "$rc"
}

# The veth ends of HOST: "ns dev" on the host side and the bridge side.
link_cmd() {
  local action=$1 host=$2 side=${3:-switch} prefix index
  read -r prefix index <<<"$(parse_host "$host")"
  case $side in
    host | both) ip -n "$host" link set eth0 "$action" ;;&
    switch | both) ip -n "${prefix}sw" link set "h$index" "$action" ;;
    host) ;;
    *) die "link-$action: side is host, switch or both, not '$side'" ;;
  esac
}

case ${1:-} in
  run) shift; cmd_run "$@" ;;
  link-down) [ $# -ge 2 ] || die "usage: link-down HOST [host|switch|both]"; link_cmd down "${@:2}" ;;
  link-up) [ $# -ge 2 ] || die "usage: link-up HOST [host|switch|both]"; link_cmd up "${@:2}" ;;
  shape)
    [ $# -eq 3 ] || die "usage: shape HOST RATE"
    read -r prefix index <<<"$(parse_host "$2")"
    shape_dev "$2" eth0 "$3"
    shape_dev "${prefix}sw" "h$index" "$3"
    ;;
  clean) clean_stale ;;
  *) die "usage: netns.sh run|link-down|link-up|shape|clean ... (see the top of $SELF)" ;;
esac
