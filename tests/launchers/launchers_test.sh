#!/usr/bin/env bash
# Real launchers (ctest label `launchers`): the collective worker started by Open MPI's
# mpirun, MPICH's mpirun (hydra) and Slurm's srun on a Slurm this script starts, with no
# tutti variable but TUTTI_STORE_ADDR (none of them gives the ranks a store address).
#   launchers_test.sh CASE BUILD_DIR
# Cases (LAUNCHER is openmpi, mpich or slurm):
#   LAUNCHER_collectives  every collective x algorithm (tutti_collective_worker every) on 4
#                         ranks of one host, every element checked
#   LAUNCHER_rank_killed  rank 1 kills itself (SIGKILL) after joining, before an all-reduce:
#                         ranks 0, 2 and 3 fail naming it; their log shows that each rank
#                         found its rank, size and local rank in the launcher's variables
#                         and reached its 3 peers over shared memory
#   mpich_rank_absent     rank 1 exits (status 0) before joining: ranks 0, 2 and 3 fail
#                         by their short deadline (TUTTI_TIMEOUT=5), not the 300 s default,
#                         rank 0 naming rank 1, ranks 2 and 3 naming it or the store, gone
#                         with rank 0
#   slurm_two_nodes       2 Slurm nodes (a slurmd in each of two network namespaces made by
#                         tests/multihost/netns.sh) x 2 tasks: every collective, then rank 3
#                         killed and named by the ranks of both nodes
# Each case runs in network namespaces of its own (one private namespace, or netns.sh's)
# where nothing else listens, so the store's port (29500) and Slurm's (6817, 6818) are fixed
# with no race for a free one. It needs root for that, and exits 77 (ctest's skip) with the
# reason when it is not root, cannot make a namespace, or the launcher is not installed.
# Processes enter the namespaces with nsenter, not `ip netns exec`, whose fresh /sys has no
# cgroup file system, without which slurmd does not start.
set -euo pipefail

case_name=${1:?case}
build=$(readlink -f "${2:?build dir}")
here=$(dirname "$(readlink -f "$0")")
netns=$here/../multihost/netns.sh
worker=$build/tests/tutti_collective_worker
store_port=29500
n=4

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }

launcher=${case_name%%_*}
case $launcher in
  openmpi) command -v mpirun.openmpi >/dev/null || skip "mpirun.openmpi (Debian's openmpi-bin) is not installed" ;;
  mpich) command -v mpirun.mpich >/dev/null || skip "mpirun.mpich (Debian's mpich) is not installed" ;;
  slurm)
    for tool in slurmctld slurmd srun sinfo; do
      command -v $tool >/dev/null || skip "$tool (Debian's slurm-wlm) is not installed"
    done
    ;;
  *) fail "unknown case '$case_name'" ;;
esac
[ "$(id -u)" = 0 ] || skip "needs root: each case runs in network namespaces of its own"
command -v ip >/dev/null || skip "ip (iproute2) is needed"
[ -x "$worker" ] || fail "build tutti_collective_worker first"

tmp=$(mktemp -d)
ns=""
child=""
cleanup() {
  local rc=$?
  if [ -n "$child" ]; then
    # netns.sh (under timeout, which passes the signal on) removes its namespaces on TERM.
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  if [ -n "$ns" ]; then
    # Whatever still runs in the namespace is ours: the daemons, a launcher, its ranks.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns delete "$ns" 2>/dev/null || true
  fi
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs a command in the background and waits for it, so that INT and TERM (ctest's timeout)
# reach the traps at once rather than when the command ends.
run() {
  local rc=0
  "$@" &
  child=$!
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

# A private namespace with loopback up. Slurm resolves its addresses with AI_ADDRCONFIG,
# which finds none where 127.0.0.1 is the only one: a second address on lo gives it one
# (not for Open MPI, whose mpirun then finds no interface: it takes lo only when lo is all).
make_private_netns() {
  ns=ttl$$
  ip netns add "$ns" 2>/dev/null || skip "cannot create a network namespace here"
  ip -n "$ns" link set lo up
  [ "$launcher" != slurm ] || ip -n "$ns" addr add 10.78.0.1/32 dev lo
}

# The rank program and its arguments follow this wrapper, which reports the program's
# status as "EXIT rank R status S" and exits 0 itself: Open MPI, hydra and srun each end a
# job one of whose ranks died, and the wrapper keeps them from stopping the others before
# these report what tutti told them. The rank is whichever launcher's variable is set.
wrapper=$tmp/rank.sh
# shellcheck disable=SC2016
printf '%s\n' '#!/bin/sh' '"$@"' 's=$?' \
  'echo "EXIT rank ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-$SLURM_PROCID}} status $s"' >"$wrapper"
chmod +x "$wrapper"

# The rank-failure runs: a short default deadline (the failure must come from tutti noticing
# the dead peer, long before any outer timeout) and INIT's log, for the checks below.
killed_env="TUTTI_TIMEOUT=20 TUTTI_CONNECT_TIMEOUT=20 TUTTI_DEBUG=INFO TUTTI_DEBUG_SUBSYS=INIT"

# Starts slurmctld here and a slurmd for each node (NAME:ADDRESS:NAMESPACE, the namespace
# empty for this one), with state, spool, pid and log files under $tmp/slurm, and waits
# until every node is idle (10 s at most). Slurm's authentication is off (auth/none,
# cred/none: no munge), every daemon runs as root. Sets SLURM_CONF for srun and sinfo.
start_slurm() {
  local ctld_addr=$1
  shift
  local dir=$tmp/slurm names="" node name addr node_ns
  mkdir -p "$dir/state" "$dir/log"
  for node in "$@"; do
    IFS=: read -r name addr node_ns <<<"$node"
    names+="${names:+,}$name"
    mkdir -p "$dir/spool/$name"
  done
  {
    echo "ClusterName=tutti"
    # slurmctld runs only where the host name is the controller's.
    echo "SlurmctldHost=$(hostname)($ctld_addr)"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/none"
    echo "CredType=cred/none"
    echo "SlurmctldPort=6817"
    echo "SlurmdPort=6818"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd.%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd.%n.log"
    # No cgroups: tasks are tracked by their parentage and not bound to CPUs.
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "MpiDefault=none"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "ReturnToService=2"
    # A node has the CPUs this file gives it, whatever the machine has.
    echo "SlurmdParameters=config_overrides"
    for node in "$@"; do
      IFS=: read -r name addr node_ns <<<"$node"
      echo "NodeName=$name NodeAddr=$addr CPUs=2 State=UNKNOWN"
    done
    echo "PartitionName=test Nodes=$names Default=YES MaxTime=INFINITE State=UP"
  } >"$dir/slurm.conf"
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -D -i >"$dir/log/slurmctld.out" 2>&1 &
  for node in "$@"; do
    IFS=: read -r name addr node_ns <<<"$node"
    if [ -n "$node_ns" ]; then
      nsenter --net="/run/netns/$node_ns" slurmd -D -N "$name" >"$dir/log/slurmd.$name.out" 2>&1 &
    else
      slurmd -D -N "$name" >"$dir/log/slurmd.$name.out" 2>&1 &
    fi
  done
  local i idle=0
  for ((i = 0; i < 100; i++)); do
    idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l)
    [ "$idle" -ge $# ] && return 0
    sleep 0.1
  done
  echo "Slurm did not start: $idle of $# nodes idle after 10 s" >&2
  tail -n 20 "$dir"/log/* >&2
  return 1
}

# Runs the launcher on 4 ranks of this host in the private namespace, with the variables
# given (KEY=VALUE...), then `--`, then the rank program and its arguments; the store on
# rank 0's loopback. Under Slurm, the daemons are started first, in the namespace too.
launch() {
  local -a vars=()
  while [ "$1" != -- ]; do
    vars+=("$1")
    shift
  done
  shift
  local -a cmd
  case $launcher in
    # --oversubscribe: 4 ranks on 2 cores; as root, Open MPI wants both variables.
    openmpi) cmd=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                  mpirun.openmpi --oversubscribe -np "$n" -x TUTTI_STORE_ADDR) ;;
    mpich) cmd=(mpirun.mpich -n "$n" -launcher fork) ;;
    # --overcommit: 4 tasks on the node's 2 CPUs.
    slurm) cmd=(srun -n "$n" --overcommit --mpi=none) ;;
  esac
  local -a prelude=()
  if [ "$launcher" = slurm ]; then
    export -f start_slurm
    export tmp
    # shellcheck disable=SC2016
    prelude=(bash -c 'start_slurm 10.78.0.1 node1:10.78.0.1: && exec "$@"' start_slurm)
  fi
  nsenter --net="/run/netns/$ns" env TUTTI_STORE_ADDR=127.0.0.1:$store_port "${vars[@]}" \
    timeout 60 "${prelude[@]}" "${cmd[@]}" "$@"
}

# Under netns.sh run: slurmctld and srun in the head namespace, a slurmd in each host's.
# A node's tasks run in its namespace (slurmd starts them there), so the nodes are two hosts
# to tutti. Rank 0 runs on node1 (srun places tasks in blocks), whose address takes the store.
two_nodes() {
  local h1 h2 a1 a2
  read -r h1 h2 <<<"$TT_HOSTS"
  read -r a1 a2 <<<"$TT_HOST_ADDRS"
  export TUTTI_STORE_ADDR=$a1:$store_port
  start_slurm "$TT_HEAD_ADDR" "node1:$a1:$h1" "node2:$a2:$h2" || return 1
  echo "== every"
  local rc=0
  timeout 60 srun -N 2 -n $n --mpi=none "$worker" every || rc=$?
  echo "== status $rc"
  echo "== killed"
  rc=0
  # shellcheck disable=SC2086
  env $killed_env timeout 60 srun -N 2 -n $n --mpi=none "$wrapper" "$worker" die 3 small || rc=$?
  echo "== status $rc"
}

launcher_title() {
  case $launcher in openmpi) echo "Open MPI" ;; mpich) echo PMI ;; slurm) echo Slurm ;; esac
}

check_every() {
  local count=$1 out=$2 r
  for ((r = 0; r < count; r++)); do
    grep -q "^RESULT OK rank $r of $count: every collective$" "$out" ||
      fail "no RESULT OK from rank $r: $(cat "$out")"
  done
  ! grep -q "RESULT FAILED" "$out" || fail "$(cat "$out")"
}

# VICTIM was killed and every other rank failed naming it. PLACES: for each rank
# "rank:local rank:local size:peers over shared memory (a number, or all)", as the log must
# show them.
check_killed() {
  local victim=$1 out=$2 places=$3 title place r l ls peers
  title=$(launcher_title)
  grep -q "^EXIT rank $victim status 137$" "$out" || fail "rank $victim was not killed: $(cat "$out")"
  for place in $places; do
    IFS=: read -r r l ls peers <<<"$place"
    grep -q "launched by $title: rank $r of $n (local $l of $ls)" "$out" ||
      fail "rank $r did not find rank $r of $n, local $l of $ls in $title's variables: $(cat "$out")"
    if [ "$peers" = all ]; then peers="peers reached"; else peers="$peers peers"; fi
    grep -q "rank $r of $n ready, $peers over shared memory" "$out" ||
      fail "rank $r does not reach $peers over shared memory: $(cat "$out")"
    [ "$r" = "$victim" ] && continue
    # 3: the worker's status after the failure it expected (EXPECTED-FAILURE).
    grep -q "^EXIT rank $r status 3$" "$out" || fail "rank $r did not exit 3: $(cat "$out")"
  done
  # Every survivor's failure names the victim: over shared memory its process is found
  # dead, over TCP its socket closes (in the call, or before it: "failed earlier").
  local named
  named=$(grep -Ec "^EXPECTED-FAILURE code=peer failure peer=$victim: .*rank $victim \((pid [0-9]+\) died|[0-9.:]+\) closed the connection)" \
    "$out" || true)
  [ "$named" = $((n - 1)) ] || fail "$named of $((n - 1)) survivors name rank $victim: $(cat "$out")"
}

rc=0
case $case_name in
  *_collectives)
    make_private_netns
    run launch -- "$worker" every >"$tmp/out" 2>&1 || rc=$?
    [ "$rc" = 0 ] || fail "exit status $rc: $(cat "$tmp/out")"
    check_every $n "$tmp/out"
    ;;

  *_rank_killed)
    make_private_netns
    # shellcheck disable=SC2086
    run launch $killed_env -- "$wrapper" "$worker" die 1 small >"$tmp/out" 2>&1 || rc=$?
    [ "$rc" = 0 ] || fail "exit status $rc: $(cat "$tmp/out")"
    check_killed 1 "$tmp/out" "0:0:4:all 1:1:4:all 2:2:4:all 3:3:4:all"
    ;;

  mpich_rank_absent)
    make_private_netns
    # Rank 1 runs `exit 0` instead of the worker (PMI_RANK: hydra's variable).
    absent=$tmp/absent.sh
    # shellcheck disable=SC2016
    printf '%s\n' '#!/bin/sh' '[ "$PMI_RANK" = 1 ] && exec "$0.exit"' 'exec "$@"' >"$absent"
    printf '%s\n' '#!/bin/sh' 'exit 0' >"$absent.exit"
    chmod +x "$absent" "$absent.exit"
    run launch TUTTI_TIMEOUT=5 TUTTI_CONNECT_TIMEOUT=5 -- "$wrapper" "$absent" "$worker" every \
      >"$tmp/out" 2>&1 || rc=$?
    [ "$rc" = 0 ] || fail "exit status $rc: $(cat "$tmp/out")"
    grep -q "^EXIT rank 1 status 0$" "$tmp/out" || fail "rank 1 did not exit 0: $(cat "$tmp/out")"
    for r in 0 2 3; do
      grep -q "^EXIT rank $r status 1$" "$tmp/out" || fail "rank $r did not fail: $(cat "$tmp/out")"
    done
    grep -q "rank 0 of 4): waiting for rank 1 to join (did it start?)" "$tmp/out" ||
      fail "rank 0 does not name rank 1: $(cat "$tmp/out")"
    named=$(grep -Ec "^RESULT FAILED to create the communicator: .*\(rank [23] of 4\): (waiting for rank 1 to join|.*store at 127\.0\.0\.1:$store_port)" \
      "$tmp/out" || true)
    [ "$named" = 2 ] || fail "$named of 2 of ranks 2 and 3 name rank 1 or the store: $(cat "$tmp/out")"
    ;;

  slurm_two_nodes)
    [ -x "$netns" ] || fail "$netns is missing"
    export tmp worker n store_port wrapper killed_env
    export -f start_slurm two_nodes
    # shellcheck disable=SC2016
    run timeout 90 "$netns" run --hosts 2 -- bash -c 'nsenter --net="/run/netns/$TT_HEAD" bash -c two_nodes' \
      >"$tmp/out" 2>&1 || rc=$?
    [ "$rc" = 0 ] || fail "exit status $rc: $(cat "$tmp/out")"
    sed -n '/^== every$/,/^== status/p' "$tmp/out" >"$tmp/every"
    grep -q "^== status 0$" "$tmp/every" || fail "every: $(cat "$tmp/out")"
    check_every $n "$tmp/every"
    sed -n '/^== killed$/,/^== status/p' "$tmp/out" >"$tmp/killed"
    grep -q "^== status 0$" "$tmp/killed" || fail "killed: $(cat "$tmp/out")"
    check_killed 3 "$tmp/killed" "0:0:2:1 1:1:2:1 2:0:2:1 3:1:2:1"
    ;;

  *) fail "unknown case '$case_name'" ;;
esac
echo "PASSED: $case_name"
