#!/usr/bin/env bash
# torch.distributed over Gloo and over tutti, side by side on this machine, in one run:
#   1. bench/torch/torch_bench.py: 8-byte and 25 MiB all_reduce, 64 MiB all_gather and
#      reduce_scatter, each backend in turn every round (medians);
#   2. the DDP example (examples/pytorch/ddp_train.py), each backend: the median step time;
#   3. the torch layer's cost: the 8-byte all_reduce through torch over tutti (bench/torch/
#      overhead.py: from Python, and from C++ for the glue alone), against
#      tutti-bench's time for the same call (blocking and async, same machine).
#
#   bench/torch/run.sh [--nproc N] [--rounds R] [--out DIR]
# Needs build/ with the Python module and the torch backend (libtorch-dev, python3-torch).
set -euo pipefail
cd "$(dirname "$0")/../.."

nproc=2
rounds=5
out=build/torch-bench
while [ $# -gt 0 ]; do
  case "$1" in
    --nproc) nproc=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
py=/usr/bin/python3
export PYTHONPATH=$PWD/build/python PYTHONDONTWRITEBYTECODE=1
port() { $py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
torchrun() {
  $py -m torch.distributed.run --nproc_per_node "$nproc" --redirects 1 --tee 1 --monitor_interval 0.2 \
    --master_addr 127.0.0.1 --master_port "$(port)" "$@"
}

echo "# $(date -u +%FT%TZ), tutti $(git rev-parse --short HEAD), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
torchrun bench/torch/torch_bench.py --rounds "$rounds" --json "$out/collectives.json" 2>/dev/null |
  sed -n 's/^\[default0\]://p'

echo
echo "| DDP step (example model, $nproc processes) | gloo ms | tutti ms | tutti/gloo |"
echo "|---|---|---|---|"
for r in $(seq "$rounds"); do
  for b in gloo tutti; do
    torchrun examples/pytorch/ddp_train.py --backend $b --steps 60 --out "$out/ddp-$b-$r.json" >/dev/null 2>&1
  done
done
$py - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
med = {}
for b in ("gloo", "tutti"):
    per_run = []
    for r in range(1, rounds + 1):
        steps = json.load(open(f"{out}/ddp-{b}-{r}.json"))["step_seconds"][10:]  # after warm-up
        per_run.append(statistics.median(steps))
    med[b] = statistics.median(per_run) * 1e3
print(f"| median of {rounds} runs | {med['gloo']:.2f} | {med['tutti']:.2f} | {med['tutti'] / med['gloo']:.2f} |")
PY

echo
torchrun bench/torch/overhead.py 2>/dev/null | sed -n 's/^\[default0\]://p' >"$out/overhead.json"
for z in 0 1; do
  build/bin/tutti-run -n "$nproc" build/bin/tutti-bench allreduce -b 8 -e 8 -n 20000 -w 1000 -z $z \
    --json "$out/tutti-bench-8B-z$z.json" >/dev/null
done
$py - "$out" <<'PY'
import json, sys
out = sys.argv[1]
bench = {z: json.load(open(f"{out}/tutti-bench-8B-z{z}.json"))[0]["time_us"] for z in (0, 1)}
torch_us = json.load(open(f"{out}/overhead.json"))
print("| 8-byte all-reduce, out of place | µs per call | over tutti-bench's async call |")
print("|---|---|---|")
print(f"| tutti-bench, blocking | {bench[0]:.2f} | |")
print(f"| tutti-bench, async (-z 1) | {bench[1]:.2f} | |")
for name, us in torch_us.items():
    print(f"| torch over tutti: {name} | {us:.2f} | {us - bench[1]:+.2f} |")
PY
