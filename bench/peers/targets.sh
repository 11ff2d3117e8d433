#!/usr/bin/env bash
# Every performance target of issue 4 (one host, shared memory), measured in one go and
# checked: three compare.sh runs, tutti-blocked-cpu, and a summary that names each target,
# what this run measured and whether it was met. Needs build/ and bench/peers/setup.sh.
#
#   bench/peers/targets.sh [--rounds R] [--out DIR] [--summarize]
#
# --summarize: measure nothing, summarize the runs already in --out DIR again.
#
# The targets (docs/performance.md; ratios are tutti / best peer as compare.sh computes
# them: the median over rounds of the best peer's time over tutti's, so above 1 tutti is
# faster, and a latency of 0.8 times the best peer's reads 1.25):
#   all-reduce fp32 sum, 2 ranks, 64 and 256 MiB      >= 1.5 (peers with their tuned malloc)
#   all-reduce 8 B, 2 ranks                           >= 1.25 (latency <= 0.8x)
#   all-reduce 16 MiB, 4 and 8 ranks                  >= 2
#   all-reduce 8 B, 4 and 8 ranks                     >= 1 (latency no worse)
#   all-gather, reduce-scatter, broadcast, all-to-all,
#     1 and 64 MiB, 2 ranks                           >= 1.2
#   a rank blocked 2 s in a collective (8 ranks)      < 10% of a core
#   every checked figure                              0 wrong elements
# For the 2-rank all-gather, all-to-all and 8-byte all-reduce the summary also gives
# compare.sh's ceiling: the best peer's time over the floor's (copy_floor, the same bytes
# copied by the fastest of its ways; exchange_floor, 8 bytes each way through a cache line;
# in the same round), which is what tutti / best would read for an implementation at the
# floor. A cell whose ceiling is below its target cannot meet it on this machine in these
# minutes, whatever the implementation.
# Some VMs move their two vCPUs between cores that share a cache and cores far apart from
# minute to minute (docs/performance.md, "The two modes are where the hypervisor puts the
# two vCPUs"). A second table splits those cells' rounds by what the round's floor saw:
# "near" where copy_floor's rings beat the kernel's copy (exchange_floor: under 150 ns),
# "far" otherwise; and gives each part's tutti / best and ceiling (medians of its rounds).
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=7
out=""
summarize=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift ;;
    --out) out=$2; shift ;;
    --summarize) summarize=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "targets.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out="build/peers/targets-$(date +%Y%m%d-%H%M%S)"
[ "$summarize" = 0 ] || [ -d "$out" ] || { echo "targets.sh: no $out to summarize" >&2; exit 2; }
mkdir -p "$out"

run_compare() {  # name compare.sh-arguments...
  local name=$1
  shift
  echo "== $name: compare.sh $*" >&2
  bench/peers/compare.sh --rounds "$rounds" --out "$out/$name" "$@" >"$out/$name.log" 2>&1 ||
    echo "targets.sh: compare.sh for $name exited $?, see $out/$name.log" >&2
}

measure() {
  echo "# targets.sh $(date -u +%Y-%m-%dT%H:%MZ)," \
       "tutti $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $rounds rounds" |
    tee "$out/header.md"
  run_compare allreduce2 --collectives allreduce --sizes "8 64M 256M" --worlds 2 \
    --peers "ompi ompi-tuned mpich mpich-tuned"
  run_compare allreduce48 --collectives allreduce --sizes "8 16M" --worlds "4 8" \
    --peers "ompi ompi-nocma mpich"
  run_compare moves --collectives "allgather reducescatter alltoall broadcast" \
    --sizes "1M 64M" --worlds 2 --peers "ompi ompi-nocma mpich mpich-nocma"
  echo "== a blocked rank: tutti-run -n 8 tutti-blocked-cpu" >&2
  timeout 120 build/bin/tutti-run -n 8 build/bin/tutti-blocked-cpu >"$out/blocked.log" 2>&1 ||
    true
}
[ "$summarize" = 1 ] || measure
cp "$out/header.md" "$out/summary.md" 2>/dev/null || : >"$out/summary.md"

# One line per target from the tables: the column "tutti / best" (and "ceiling" where the
# table has one) of the row for (collective, ranks, size).
{
  echo
  echo "| target | measured (tutti / best) | ceiling | best peer | met |"
  echo "|---|---|---|---|---|"
  for spec in "allreduce2 allreduce 2 64_MiB 1.5" "allreduce2 allreduce 2 256_MiB 1.5" \
              "allreduce2 allreduce 2 8_B 1.25" \
              "allreduce48 allreduce 4 16_MiB 2" "allreduce48 allreduce 8 16_MiB 2" \
              "allreduce48 allreduce 4 8_B 1" "allreduce48 allreduce 8 8_B 1" \
              "moves allgather 2 1_MiB 1.2" "moves allgather 2 64_MiB 1.2" \
              "moves reducescatter 2 1_MiB 1.2" "moves reducescatter 2 64_MiB 1.2" \
              "moves alltoall 2 1_MiB 1.2" "moves alltoall 2 64_MiB 1.2" \
              "moves broadcast 2 1_MiB 1.2" "moves broadcast 2 64_MiB 1.2"; do
    read -r name coll world size target <<<"$spec"
    awk -F'|' -v coll="$coll" -v world="$world" -v size="${size/_/ }" -v target="$target" '
      function trim(s) { gsub(/^ +| +$/, "", s); return s }
      NR == 1 { for (i = 2; i < NF; i++) col[trim($i)] = i; next }
      trim($2) == coll && trim($3) == world && trim($4) == size {
        r = trim($(col["tutti / best"]))
        c = ("ceiling" in col) ? trim($(col["ceiling"])) : "–"
        met = (r ~ /^[0-9.]+$/ && r + 0 >= target) ? "yes" : "**no**"
        printf "| %s %s ranks %s >= %s | %s | %s | %s | %s |\n", coll, world, size, target, r, c,
               trim($(col["best peer"])), met
        found = 1
      }
      END { if (!found) printf "| %s %s ranks %s >= %s | no result | – | – | **no** |\n", coll, world, size, target }
    ' "$out/$name/table.md" 2>/dev/null ||
      echo "| $coll $world ranks ${size/_/ } >= $target | no table | – | – | **no** |"
  done
  # Every rank but the last waits for it, and prints "...: P% of a core".
  awk '/% of a core/ { n++; p = $(NF - 3); sub(/%/, "", p); if (p + 0 > worst) worst = p + 0 }
       END { printf "| a blocked rank (8 ranks, 2 s) < 10%% of a core | %s | – | – | %s |\n",
                    n ? "worst " worst "% of the " n " waiting ranks" : "no result",
                    (n == 7 && worst < 10) ? "yes" : "**no**" }' "$out/blocked.log" 2>/dev/null ||
    echo "| a blocked rank (8 ranks, 2 s) < 10% of a core | no result | – | – | **no** |"
  wrong=$(cat "$out"/*/records.txt 2>/dev/null | awk '$8 != 0 && $8 != "N/A" {n++} END {print n + 0}')
  echo "| every checked figure 0 wrong | $wrong records with wrong elements or failures | – | – |" \
       "$([ "$wrong" = 0 ] && echo yes || echo '**no**') |"
  echo
  echo "Tables: $out/*/table.md; ceiling: best peer's time / the floor's time (2-rank all-gather," \
       "all-to-all and 8-byte all-reduce only)."
} | tee -a "$out/summary.md"

# The median of the numbers on stdin, one a line, to two places ("–" for none).
middle() {
  sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) print "–"
    else printf "%.2f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# The cells with a floor, their rounds split by the mode the round's floor saw: lines of
# collective, round, near or far. A round's mode comes from one floor log: the 8-byte one
# for the all-reduce, the smallest size's for the others (a round runs its floors back to
# back).
modes() {  # name coll
  local log r s b
  for log in "$out/$1/logs"/r*-"$2"-n2-*-floor.log; do
    [ -e "$log" ] || continue
    r=${log##*/r}; r=${r%%-*}
    s=${log%-floor.log}; s=${s##*-}
    case "$s" in *K) b=$((${s%K} << 10)) ;; *M) b=$((${s%M} << 20)) ;; *G) b=$((${s%G} << 30)) ;; *) b=$s ;; esac
    tr ' ' '\n' <"$log" | awk -F= -v c="$2" -v r="$r" -v b="$b" '
      $1 == "exchange_8B_ns" { near = $2 + 0 < 150; found = 1 }
      index($1, c "_") == 1 && $1 ~ /_ring/ { if (ring == "" || $2 + 0 < ring + 0) ring = $2 }
      index($1, c "_") == 1 && $1 ~ /_(pull|push)_/ { if (kern == "" || $2 + 0 < kern + 0) kern = $2 }
      END {
        if (!found && ring != "" && kern != "") { near = ring + 0 < kern + 0; found = 1 }
        if (found) print c, r, (near ? "near" : "far"), b
      }'
  done | sort -k2,2n -k4,4n | awk '!seen[$1, $2]++ { print $1, $2, $3 }'
}
{
  echo
  echo "By the machine's mode in each round (near: the vCPUs share a cache; far: they do not):"
  echo
  echo "| cell | near rounds | tutti / best, near | ceiling, near | far rounds | tutti / best, far | ceiling, far |"
  echo "|---|---|---|---|---|---|---|"
  for spec in "allreduce2 allreduce 8" "moves allgather 1048576" "moves allgather 67108864" \
              "moves alltoall 1048576" "moves alltoall 67108864"; do
    read -r name coll bytes <<<"$spec"
    [ -f "$out/$name/records.txt" ] || continue
    # Per round with a mode: the mode, tutti / best and the ceiling (best peer / floor).
    rows=$({ modes "$name" "$coll" | sed 's/^/MODE /'; cat "$out/$name/records.txt"; } |
      awk -v coll="$coll" -v bytes="$bytes" '
        $1 == "MODE" { if ($2 == coll) mode[$3] = $4; next }
        $2 != coll || $3 != 2 || $4 != bytes || $8 != 0 || $6 !~ /^[0-9.]+$/ { next }
        $5 == "tutti" { tutti[$1] = $6; next }
        $5 == "floor" { floor[$1] = $6; next }
        $5 !~ /^tutti/ { if (!($1 in peer) || $6 + 0 < peer[$1] + 0) peer[$1] = $6 }
        END {
          for (r in tutti)
            if ((r in peer) && (r in mode))
              print mode[r], peer[r] / tutti[r], (r in floor) ? peer[r] / floor[r] : "-"
        }')
    line="| $coll 2 ranks $(awk -v b="$bytes" 'BEGIN {
      print (b >= 1048576 ? b / 1048576 " MiB" : b " B") }')"
    for m in near far; do
      line="$line | $(grep -c "^$m " <<<"$rows" || true)"
      line="$line | $(awk -v m="$m" '$1 == m {print $2}' <<<"$rows" | middle)"
      line="$line | $(awk -v m="$m" '$1 == m && $3 != "-" {print $3}' <<<"$rows" | middle)"
    done
    echo "$line |"
  done
} | tee -a "$out/summary.md"
