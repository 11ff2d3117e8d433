#!/usr/bin/env bash
# Fault injection at scale (issue 5): kills a random rank of a running
# `tutti-run -n 4 tutti-bench <collective>` at a random moment, over a random transport,
# TRIALS times, and checks that every surviving rank reports an error naming the victim and
# that the job ends within 40 s (TUTTI_TIMEOUT=20). The CI runs a few such trials per
# collective and transport (tests/multiproc/fault_test.cc); this runs hundreds.
#   scripts/fault_inject.sh [TRIALS] [BUILD_DIR]      (defaults: 200, build)
set -uo pipefail
cd "$(dirname "$0")/.."
TRIALS=${1:-200}
BUILD=${2:-build}
RUN="$BUILD/bin/tutti-run"
BENCH="$BUILD/bin/tutti-bench"
[ -x "$RUN" ] && [ -x "$BENCH" ] || { echo "build first: scripts/setup.sh" >&2; exit 2; }
COLLECTIVES=(allreduce allgather reducescatter broadcast reduce gather scatter alltoall sendrecv barrier)
TRANSPORTS=(shm tcp hybrid)
N=4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
skipped=0
worst=0
for ((t = 1; t <= TRIALS; t++)); do
  coll=${COLLECTIVES[RANDOM % ${#COLLECTIVES[@]}]}
  transport=${TRANSPORTS[RANDOM % ${#TRANSPORTS[@]}]}
  victim=$((RANDOM % N))
  delay_ms=$((RANDOM % 500))
  mode=$transport
  [ "$transport" = hybrid ] && mode=auto
  wrap=()
  [ "$transport" = hybrid ] && wrap=(/bin/sh -c 'TUTTI_SHM_HOST=pair$((TUTTI_RANK / 2)) exec "$0" "$@"')
  out="$work/out" err="$work/err"
  "$RUN" -n $N --verbose --grace 30 -x TUTTI_TIMEOUT=20 -x TUTTI_TRANSPORT=$mode "${wrap[@]}" \
    "$BENCH" "$coll" -b 64K -e 64K -n 100000000 -w 1 -c 0 >"$out" 2>"$err" &
  job=$!
  # Wait (bounded) until every rank's pid is known and the benchmark runs.
  for ((w = 0; w < 600; w++)); do
    [ "$(grep -c 'tutti-run: rank [0-9]*: pid' "$err")" -ge $N ] && grep -q '#wrong' "$out" && break
    sleep 0.1
  done
  pid=$(sed -n "s/^tutti-run: rank $victim: pid \([0-9]*\)$/\1/p" "$err")
  if [ -z "$pid" ] || ! grep -q '#wrong' "$out"; then
    # Not a fault-handling failure: the job never got going (a loaded machine?). Say so.
    echo "trial $t: the job did not start within 60 s ($coll over $transport); skipped"
    kill -9 $job 2>/dev/null; wait $job 2>/dev/null
    skipped=$((skipped + 1))
    continue
  fi
  sleep "$(printf '0.%03d' "$delay_ms")"
  start=$(date +%s%N)
  kill -9 "$pid" 2>/dev/null || echo "trial $t: could not kill rank $victim (pid $pid)"
  # Bound the job: 60 s, then it counts as a hang.
  for ((w = 0; w < 600; w++)); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
  if kill -0 $job 2>/dev/null; then kill -9 $job 2>/dev/null; fi
  wait $job 2>/dev/null
  ms=$((($(date +%s%N) - start) / 1000000))
  problems=""
  ((ms >= 40000)) && problems+=" took ${ms} ms;"
  for ((r = 0; r < N; r++)); do
    [ $r -eq $victim ] && continue
    grep -Eq "^\[$r\] tutti-bench: rank $r: (peer failure|aborted): .*\brank $victim\b" "$out" "$err" \
      || problems+=" rank $r did not name rank $victim;"
  done
  if [ -z "$problems" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "trial $t FAILED ($coll over $transport, victim $victim after ${delay_ms} ms):$problems"
    cp "$out" "fault_trial_${t}.out"; cp "$err" "fault_trial_${t}.err"
  fi
  ((ms > worst)) && worst=$ms
done
echo "fault injection: $passed of $TRIALS trials passed, $failed failed, $skipped did not start; slowest job end after the kill: ${worst} ms"
[ $failed -eq 0 ]
