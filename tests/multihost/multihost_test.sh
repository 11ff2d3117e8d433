#!/usr/bin/env bash
# The multi-host tier (ctest label `multihost`): tutti-run --hosts over pretend hosts made
# by netns.sh (network namespaces on a bridge, links shaped to 1 Gbit/s), each launched
# through `ip netns exec {host}`.
#   multihost_test.sh CASE BUILD_DIR
# Cases:
#   collectives_2x2      every collective x algorithm (tutti_collective_worker every) on
#                        2 hosts x 2 ranks: shared memory within a host, TCP between them
#   collectives_uneven   the same on 3 hosts of 2, 1 and 2 ranks
#   rank_failure         rank 3 (on the second host) exits 1: every host's ranks are stopped,
#                        the summary and exit status name the rank and its host
#   agent_killed         the second host's agent is killed: its rank dies with it, the
#                        failure names the host, the other host's rank is stopped
#   secret               while a job runs the secret is in every rank's environment and on
#                        no process's command line; SIGTERM to tutti-run ends every host's ranks
#   host_killed          all-reduces run on 2 hosts x 2 (hier_rs_ag) when every process of the
#                        second host is killed (SIGKILL): the first host's ranks fail at once,
#                        naming a rank of the second host, the host and its ranks
#   link_down            the same with the second host's link taken down: nothing tells TCP,
#                        so every rank fails at its deadline (TUTTI_TIMEOUT=10); the first
#                        host's ranks name the ranks of the host that did not report
#   slow_link            the second host's link shaped to 10 Mbit/s (the first's at 1 Gbit/s):
#                        an all-reduce that takes seconds there completes, every element right
#   net_probe            2 hosts x 1 rank on links shaped to 1 Gbit/s: the network probe at
#                        creation (TUTTI_NET_PROBE) sees the shaped rate, not the veth's
#                        nominal 10 Gbit/s: at most 2 Gbit/s (shaping bounds it from above,
#                        so no timing can fail this); with TUTTI_NET_PROBE=0 it says so
#   bench_quick          bench/peers/multihost.sh, tutti alone, one round of a 64 KiB
#                        all-reduce and all-to-all on 2 hosts x 2 ranks: it runs, every
#                        output checks right, and its table has both rows
# Needs root, ip and tc; exits 77 (ctest's skip) with the reason otherwise.
set -euo pipefail

case_name=${1:?case}
build=$(readlink -f "${2:?build dir}")
here=$(dirname "$(readlink -f "$0")")
netns=$here/netns.sh
run=$build/bin/tutti-run
worker=$build/tests/tutti_collective_worker

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || skip "the multi-host tests need root (network namespaces)"
command -v ip >/dev/null && command -v tc >/dev/null || skip "ip and tc (iproute2) are needed"
probe=ttprobe$$
ip netns add "$probe" 2>/dev/null || skip "cannot create a network namespace here"
ip netns delete "$probe"
[ -x "$run" ] && [ -x "$worker" ] || fail "build tutti-run and tutti_collective_worker first"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Runs tutti-run in the head namespace on $TT_HOSTLIST with the netns launcher; to be called
# under `netns.sh run`. All the pretend hosts share this machine's CPUs, so each rank is
# bound to one CPU as tutti-run binds ranks on one host (neighbouring ranks share a core):
# ranks that spin-wait unbound on an oversubscribed machine make the job 5-10 times slower.
export RUN=$run
tutti_run_hosts() {
  ip netns exec "$TT_HEAD" "$RUN" --hosts "$TT_HOSTLIST" --launcher 'ip netns exec {host}' \
    --cpu-bind none "$@"
}
# The same as the process itself (for a job in the background that the test signals).
exec_tutti_run_hosts() {
  exec ip netns exec "$TT_HEAD" "$RUN" --hosts "$TT_HOSTLIST" --launcher 'ip netns exec {host}' \
    --cpu-bind none "$@"
}
export -f tutti_run_hosts exec_tutti_run_hosts
bind='exec taskset -c $((TUTTI_RANK * $(nproc) / TUTTI_WORLD_SIZE)) "$0" "$@"'

# "collective:algorithm,..." of the algorithms that apply to N ranks on H hosts and not on
# one host (what tutti-info algorithms lists), sorted as the worker's ACROSS-HOSTS line.
across_hosts() {
  local n=$1 h=$2
  applicable() {
    "$build/bin/tutti-info" algorithms --ranks "$n" --hosts "$1" |
      awk '/^[a-z]+:$/ {c = substr($1, 1, length($1) - 1)}
           /^  [a-z_]+ .*\[applies/ {print c ":" $1}' |
      LC_ALL=C sort
  }
  LC_ALL=C comm -13 <(applicable 1) <(applicable "$h") | paste -sd, -
}

check_collectives() {
  local slots=$1 n=$2
  local rc=0
  timeout 150 "$netns" run --slots "$slots" -- bash -c \
    'tutti_run_hosts --timeout 120 -x TUTTI_DEBUG=INFO -x TUTTI_DEBUG_SUBSYS=INIT sh -c "$0" "$@"' \
    "$bind" "$worker" every >"$out/out" 2>"$out/err" || rc=$?
  [ "$rc" = 0 ] || fail "exit status $rc: $(cat "$out/out" "$out/err")"
  local r hier
  hier=$(across_hosts "$n" "$(echo "$slots" | tr , '\n' | wc -l)")
  [ -n "$hier" ] || fail "tutti-info lists no algorithm that needs several hosts"
  for ((r = 0; r < n; r++)); do
    grep -q "^\[$r\] RESULT OK rank $r of $n: every collective" "$out/out" ||
      fail "no RESULT OK from rank $r: $(cat "$out/out" "$out/err")"
    # Every algorithm made for several hosts ran (forced) on this rank, and was checked.
    grep -qxF "[$r] ACROSS-HOSTS rank $r: $hier" "$out/out" ||
      fail "rank $r did not run every hierarchical algorithm ($hier): $(grep ACROSS "$out/out")"
  done
  ! grep -q "RESULT FAILED" "$out/out" || fail "$(cat "$out/out")"
  # Each host's ranks reach each other over shared memory and the others over TCP from
  # their own host's address: the namespaces are told apart as hosts.
  local first=${slots%%,*}
  grep -q "^\[0\] .*rank 0 of $n ready, $((first - 1)) peers over shared memory, the others over TCP from 10\.77\.0\.1$" \
    "$out/err" || fail "rank 0 did not use TCP from host 1's address: $(grep ready "$out/err")"
  grep -q "^\[$((n - 1))\] .*rank $((n - 1)) of $n ready, .* over TCP from 10\.77\.0\.[2-4]$" "$out/err" ||
    fail "rank $((n - 1)) did not use TCP from its host's address: $(grep ready "$out/err")"
}

# A fault while all-reduces of 4 MB (hier_rs_ag) run on 2 hosts x 2, one after another
# until one fails (tutti_collective_worker repeat), every rank with TUTTI_TIMEOUT=10: once
# every rank has completed one, FAULT (a command, given the second host's namespace as $1)
# strikes. tutti-run gives the other ranks 30 s after the first failure, so that each fails
# on its own; its --timeout (45 s) bounds the job. Output in $out/out and $out/err, plus
# "HOSTS h1 h2" and "LEFT ..." for processes left on a host; returns the job's status.
fault_job() {
  local fault=$1
  timeout 90 "$netns" run --slots 2,2 -- bash -c '
    out=$0 fault=$1 bind=$2
    shift 2
    set -- $TT_HOSTS
    exec_tutti_run_hosts_job() {
      exec_tutti_run_hosts --grace 30 --timeout 45 -x TUTTI_TIMEOUT=10 \
        -x TUTTI_ALGO=allreduce:hier_rs_ag sh -c "$bind" "$@"
    }
    (exec_tutti_run_hosts_job '"'$worker'"' repeat 1000000) >"$out/job" 2>"$out/job.err" &
    job=$!
    for i in $(seq 300); do
      [ "$(grep -c "] READY rank" "$out/job")" -ge 4 ] && break
      sleep 0.1
    done
    sleep 0.2  # into a later call
    bash -c "$fault" fault "$2"
    wait $job
    rc=$?
    for ns in $TT_HOSTS; do
      left=$(ip netns pids "$ns")
      [ -z "$left" ] || echo "LEFT on $ns: $(ps -o pid=,args= -p "$left")"
    done
    cat "$out/job"
    cat "$out/job.err" >&2
    echo "HOSTS $TT_HOSTS"
    exit $rc' "$out" "$fault" "$bind" >"$out/out" 2>"$out/err"
}

# The EXPECTED-FAILURE line of rank R (the worker's), or a failure of the test.
failure_of() {
  grep "^\[$1\] EXPECTED-FAILURE " "$out/out" ||
    fail "rank $1 did not fail on its own: $(cat "$out/out" "$out/err")"
}

case $case_name in
  collectives_2x2) check_collectives 2,2 4 ;;
  collectives_uneven) check_collectives 2,1,2 5 ;;

  rank_failure)
    rc=0
    timeout 60 "$netns" run --slots 2,2 -- bash -c '
      tutti_run_hosts --grace 1 --timeout 40 sh -c \
        "if [ \$TUTTI_RANK = 3 ]; then sleep 0.5; echo rank 3 fails; exit 1; fi; exec sleep 30"
      rc=$?
      # Nothing of the job may be left on any host.
      for ns in $TT_HOSTS; do
        left=$(ip netns pids "$ns")
        [ -z "$left" ] || { echo "LEFT on $ns: $left"; ps -o pid,args -p "$left"; }
      done
      echo "HOSTS $TT_HOSTS"
      exit $rc' >"$out/out" 2>"$out/err" || rc=$?
    all=$(cat "$out/out" "$out/err")
    [ "$rc" = 1 ] || fail "exit status $rc, not rank 3's 1: $all"
    read -r _ h1 h2 < <(grep '^HOSTS ' "$out/out")
    grep -q "^\[3\] rank 3 fails$" "$out/out" || fail "rank 3's output is missing: $all"
    grep -q "^tutti-run: job failed: first failure: rank 3 on host $h2 (pid [0-9]*) exited with status 1" \
      "$out/err" || fail "the summary does not name rank 3 on host $h2: $all"
    for r in 0 1; do
      grep -q "stopped by tutti-run: rank $r on host $h1 (pid [0-9]*) killed by signal 15" "$out/err" ||
        fail "rank $r on $h1 was not stopped: $all"
    done
    grep -q "stopped by tutti-run: rank 2 on host $h2 " "$out/err" || fail "rank 2 not stopped: $all"
    ! grep -q "^LEFT" "$out/out" || fail "processes left behind: $all"
    ;;

  agent_killed)
    rc=0
    timeout 60 "$netns" run --slots 1,1 -- bash -c '
      set -- $TT_HOSTS
      exec_tutti_run_hosts --grace 1 --timeout 40 sh -c "echo up; exec sleep 30" &
      job=$!
      # Once both ranks are up, kill the agent of host 2 (ip netns exec became it).
      for i in $(seq 100); do
        [ "$(ip netns pids "$2" | wc -l)" -ge 2 ] && break
        sleep 0.1
      done
      for pid in $(ip netns pids "$2"); do
        if tr "\0" " " </proc/$pid/cmdline | grep -q -- "--agent"; then kill -KILL $pid; fi
      done
      wait $job
      rc=$?
      echo "HOSTS $TT_HOSTS"
      exit $rc' >"$out/out" 2>"$out/err" || rc=$?
    all=$(cat "$out/out" "$out/err")
    read -r _ h1 h2 < <(grep '^HOSTS ' "$out/out")
    [ "$rc" = 137 ] || fail "exit status $rc, not the killed launcher's 137: $all"
    grep -q "^tutti-run: job failed: first failure: host $h2: the launcher killed by signal 9 (SIGKILL) before its rank 1 finished" \
      "$out/err" || fail "the summary does not name host $h2: $all"
    grep -q "stopped by tutti-run: rank 0 on host $h1 " "$out/err" || fail "rank 0 not stopped: $all"
    ;;

  secret)
    rc=0
    timeout 60 "$netns" run --slots 1,2 -- bash -c '
      exec_tutti_run_hosts --timeout 40 sh -c "echo up; exec sleep 30" >"$0/job" 2>&1 &
      job=$!
      for i in $(seq 100); do
        [ "$(grep -c "] up$" "$0/job")" = 3 ] && break
        sleep 0.1
      done
      ranks=$(for ns in $TT_HOSTS; do ip netns pids "$ns"; done | while read -r pid; do
                [ "$(cat /proc/$pid/comm)" = sleep ] && echo $pid; done)
      [ "$(echo $ranks | wc -w)" = 3 ] || { echo "NOT 3 RANKS: $ranks"; exit 1; }
      secret=""
      for pid in $ranks; do
        s=$(tr "\0" "\n" </proc/$pid/environ | sed -n "s/^TUTTI_SECRET=//p")
        [ -n "$s" ] || { echo "NO SECRET in rank pid $pid"; exit 1; }
        [ -z "$secret" ] || [ "$s" = "$secret" ] || { echo "SECRETS DIFFER"; exit 1; }
        secret=$s
      done
      # From a file: the secret on grep'"'"'s own command line would be found.
      printf "%s\n" "$secret" >"$0/secret"
      for f in /proc/[0-9]*/cmdline; do
        if grep -qF -f "$0/secret" "$f" 2>/dev/null; then
          echo "SECRET ON THE COMMAND LINE of ${f%/cmdline}: $(tr "\0" " " <"$f")"
        fi
      done
      echo CHECKED
      kill -TERM $job
      wait $job
      rc=$?
      cat "$0/job"
      exit $rc' "$out" >"$out/out" 2>"$out/err" || rc=$?
    all=$(cat "$out/out" "$out/err")
    grep -q "^CHECKED$" "$out/out" || fail "$all"
    ! grep -q "SECRET ON THE COMMAND LINE" "$out/out" || fail "$all"
    [ "$rc" = 143 ] || fail "exit status $rc after SIGTERM, not 143: $all"
    grep -q "job interrupted: tutti-run received SIGTERM" "$out/out" || fail "$all"
    ;;

  host_killed)
    rc=0
    fault_job 'ip netns pids "$1" | xargs -r kill -KILL' || rc=$?
    all=$(cat "$out/out" "$out/err")
    read -r _ h1 h2 < <(grep '^HOSTS ' "$out/out") || fail "$all"
    # The first failure is the second host's: its agent killed (or one of its ranks, where
    # the agent saw that before it died itself).
    [ "$rc" = 137 ] || fail "exit status $rc, not a SIGKILL's 137: $all"
    grep -q "^tutti-run: job failed: first failure: \(host $h2: \|rank [23] on host $h2 \)" \
      "$out/err" || fail "the summary does not name host $h2 first: $all"
    for r in 0 1; do
      line=$(failure_of $r)
      lost="rank [23] (10\.77\.0\.2:[0-9]*) .*; rank [23] is on host 1 '[^']*' at 10\.77\.0\.2"
      echo "$line" | grep -q "code=peer failure peer=[23]: .*$lost (ranks 2-3)" ||
        fail "rank $r does not name the lost rank and its host: $line"
      grep -q "also failed: rank $r on host $h1 (pid [0-9]*) exited with status 3" "$out/err" ||
        fail "rank $r did not end on its own: $all"
    done
    ! grep -q "^LEFT" "$out/out" || fail "processes left behind: $all"
    ;;

  link_down)
    rc=0
    fault_job '"$TT_NETNS" link-down "$1"' || rc=$?
    all=$(cat "$out/out" "$out/err")
    read -r _ h1 h2 < <(grep '^HOSTS ' "$out/out") || fail "$all"
    # Every rank fails at its deadline (exit 3), none is stopped by tutti-run's bound (124).
    [ "$rc" = 3 ] || fail "exit status $rc, not the failed ranks' 3: $all"
    grep -q "^tutti-run: job failed: first failure: rank [0-3] on host \($h1\|$h2\) (pid [0-9]*) \
exited with status 3" "$out/err" || fail "no summary naming the first failed rank: $all"
    for r in 0 1 2 3; do
      line=$(failure_of $r)
      # (Refused: the deadline passed on a peer, whose failure came between two calls.)
      call="allreduce #[0-9]* (count 1000000 float32 sum, hier_rs_ag)"
      echo "$line" |
        grep -q "code=timeout peer=[-0-9]*: $call \(failed on rank $r\|refused\): .* timed out after " ||
        fail "rank $r did not fail on its deadline: $line"
    done
    # The first host's ranks reach the store: their hang report names the ranks that did
    # not report, on the host cut off. (The second host's cannot post theirs.)
    for r in 0 1; do
      failure_of $r | grep -q "hang report: .*did not report within [0-9.]* s (stopped, dead, or \
outside any tutti call): ranks 2-3 on host 1 '[^']*' at 10\.77\.0\.2" ||
        fail "rank $r does not name the unreachable ranks and their host: $(failure_of $r)"
    done
    ! grep -q "^LEFT" "$out/out" || fail "processes left behind: $all"
    ;;

  slow_link)
    rc=0
    # 4 MB all-reduced by the default algorithm: each host sends at least 4 MB, some
    # seconds at 10 Mbit/s; TUTTI_TIMEOUT (a deadline on each call) leaves it room.
    timeout 90 "$netns" run --slots 2,2 -- bash -c '
      worker=$1
      set -- $TT_HOSTS
      "$TT_NETNS" shape "$2" 10mbit
      tutti_run_hosts --timeout 60 -x TUTTI_TIMEOUT=40 sh -c "$0" "$worker" repeat 1000000 1' \
      "$bind" "$worker" >"$out/out" 2>"$out/err" || rc=$?
    all=$(cat "$out/out" "$out/err")
    [ "$rc" = 0 ] || fail "exit status $rc: $all"
    for r in 0 1 2 3; do
      grep -q "^\[$r\] RESULT OK rank $r of 4: 1 all-reduces of 1000000 " "$out/out" ||
        fail "no RESULT OK from rank $r: $all"
    done
    grep "RESULT OK" "$out/out"  # the time each took, for the log
    ;;

  net_probe)
    for probe in 1 0; do
      rc=0
      timeout 60 "$netns" run --slots 1,1 -- bash -c '
        tutti_run_hosts --timeout 40 -x TUTTI_DEBUG=INFO -x TUTTI_DEBUG_SUBSYS=TUNE \
          -x TUTTI_NET_PROBE='"$probe"' sh -c "$0" "$1" repeat 1000 1' \
        "$bind" "$worker" >"$out/out" 2>"$out/err" || rc=$?
      all=$(cat "$out/out" "$out/err")
      [ "$rc" = 0 ] || fail "TUTTI_NET_PROBE=$probe: exit status $rc: $all"
      for r in 0 1; do
        grep -q "^\[$r\] RESULT OK rank $r of 2: 1 all-reduces of 1000 " "$out/out" ||
          fail "TUTTI_NET_PROBE=$probe: no RESULT OK from rank $r: $all"
      done
      if [ "$probe" = 1 ]; then
        line=$(grep -o "network: measured with rank 1: .* Mbit/s sustained" <<<"$all") ||
          fail "no network measurement logged: $all"
        echo "$line"
        mbits=$(sed -E 's/.*\), ([0-9]+) Mbit\/s sustained/\1/' <<<"$line")
        [ "$mbits" -gt 0 ] && [ "$mbits" -le 2000 ] ||
          fail "the probe's $mbits Mbit/s is not the link's 1 Gbit/s shaping: $line"
      else
        grep -q "network: not measured (TUTTI_NET_PROBE is off)" <<<"$all" ||
          fail "TUTTI_NET_PROBE=0 was not logged as such: $all"
      fi
    done
    ;;

  bench_quick)
    rc=0
    timeout 90 "$here/../../bench/peers/multihost.sh" --quick --peers "" --shapes 2x2 \
      --collectives "allreduce alltoall" --sizes 64K --build "$build" --out "$out/bench" \
      >"$out/out" 2>&1 || rc=$?
    [ "$rc" = 0 ] || fail "multihost.sh exited $rc: $(cat "$out/out")"
    for coll in allreduce alltoall; do
      grep -q "^| 2 x 2 | $coll | 64 KiB | [0-9.]* | " "$out/bench/table.md" ||
        fail "no $coll row with a bandwidth: $(cat "$out/out")"
    done
    ;;

  *) fail "unknown case '$case_name'" ;;
esac
echo "PASSED: $case_name"
