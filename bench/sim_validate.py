#!/usr/bin/python3
"""The simulator against measurements: reads a bench/regret.sh output directory and compares,
for every forced run (an algorithm, at the segment the model gives it or at one forced with
it: ring@256K, TUTTI_SEGMENT_BYTES), the model's predicted time (tutti-info explain, DIR/predicted.txt)
with the measured one (the median over rounds of DIR/raw.txt). The error of a cell is
predicted / measured - 1. Writes:

  DIR/validation.md          median and 90th percentile |error| over all forced cells, per
                             transport (layout) and per collective, the command and machine
  DIR/validation.csv         one line per forced cell
  DIR/sim-vs-measured.png    predicted against measured, log-log, with y = x

    bench/sim_validate.py DIR [DIR...] [--doc docs/simulator-validation.md]

With several DIRs (a run on one host and one on namespaced hosts, say), the report covers the
cells of all of them and is written in the first. --doc PATH also writes the report there, as
the generated page kept in docs/, with the plot next to it (PATH with .png in place of .md).
--again DIR2 [...]: other runs of the same grid (earlier ones, say): the report adds the
spread between runs, each cell of the runs above against the same cell measured there, as the
error of a model that predicted one run by another: the floor under which the machine's own
noise hides a model's error.

    bench/sim_validate.py DIR [DIR...] [--doc PAGE] [--again DIR2 [DIR2...]]
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import sys
from collections import defaultdict

# The targets (issue 39): median |error| <= 15%, 90th percentile <= 30%.
MEDIAN_TARGET = 0.15
P90_TARGET = 0.30


def human(b):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size}{unit}"
    return str(b)


def percentile(values, q):
    """The q-th percentile (0..100), linear between the closest ranks."""
    data = sorted(values)
    if not data:
        return float("nan")
    k = (len(data) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def read_measured(path):
    times = defaultdict(list)  # (transport, world, collective, bytes, label) -> times (us)
    chosen = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 8:
                continue
            _, transport, world, coll, size, label, t, algo = parts[:8]
            if int(size) == 0:  # below one element per rank: a call that moves nothing
                continue
            key = (transport, int(world), coll, int(size), label)
            times[key].append(float(t))
            chosen[key] = algo
    return {k: statistics.median(v) for k, v in times.items()}, chosen


def read_predicted(path):
    out = {}  # (transport, world, collective, bytes, label) -> explain's JSON
    with open(path) as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6:
                continue
            transport, world, coll, size, label, text = parts
            out[(transport, int(world), coll, int(size), label)] = json.loads(text)
    return out


def prediction_for(label, explained):
    """The predicted seconds of a forced label ("ring", "ring/64K"): its algorithm's entry in a
    ranking priced at one fixed segment; None where the model does not price it."""
    algo = label.split("/")[0]
    for c in explained.get("ranking", []):
        if c["algorithm"] == algo:
            return c["seconds"]
    return None


def summary_row(name, errors):
    a = [abs(e) for e in errors]
    return (name, len(a), statistics.median(a), percentile(a, 90), max(a),
            statistics.median(errors))


def table(rows):
    lines = ["| cells | n | median \\|error\\| | 90th pct \\|error\\| | worst \\|error\\| | median error |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, n, med, p90, worst, signed in rows:
        lines.append(f"| {name} | {n} | {100 * med:.0f}% | {100 * p90:.0f}% | {100 * worst:.0f}% "
                     f"| {100 * signed:+.0f}% |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", metavar="DIR")
    ap.add_argument("--doc", help="also write the report here (and its plot next to it)")
    ap.add_argument("--again", nargs="+", default=[], metavar="DIR2",
                    help="other runs of the same grid: report the spread between runs")
    args = ap.parse_args()
    args.dir = args.dirs[0]
    measured, chosen, predicted = {}, {}, {}
    for d in args.dirs:
        m, c = read_measured(os.path.join(d, "raw.txt"))
        measured.update(m)
        chosen.update(c)
        predicted.update(read_predicted(os.path.join(d, "predicted.txt")))

    cells = []  # dicts, one per forced cell with both figures
    unpriced = 0
    for key, us in measured.items():
        transport, world, coll, size, label = key
        if label in ("tuner", "table") or key not in predicted:
            continue
        seconds = prediction_for(label, predicted[key])
        if seconds is None or us <= 0:
            unpriced += 1
            continue
        pred_us = seconds * 1e6
        cells.append({"transport": transport, "world": world, "collective": coll, "bytes": size,
                      "label": label, "measured_us": us, "predicted_us": pred_us,
                      "error": pred_us / us - 1})
    if not cells:
        print("sim_validate.py: no forced cell with a prediction in", " ".join(args.dirs), file=sys.stderr)
        return 1

    # Does explain, given the run's setup, choose what the run's tuner chose (one of its
    # contenders)?
    agree = total = 0
    for key, explained in predicted.items():
        if key[4] != "tuner" or key not in chosen or not explained.get("ranking"):
            continue
        total += 1
        # Where the ranks learn among the model's contenders, the run keeps one of them.
        names = {c["algorithm"] for c in explained.get("contenders") or [explained["chosen"]]}
        agree += chosen[key] in names

    # The same cells measured in the other runs: one run's time as the other's prediction.
    again, again_runs = {}, []
    for d in args.again:
        again.update(read_measured(os.path.join(d, "raw.txt"))[0])
        header_path = os.path.join(d, "header.txt")
        if os.path.exists(header_path):
            with open(header_path) as f:
                again_runs.append(f.readline().lstrip("# ").strip())
    spread = [again[(c["transport"], c["world"], c["collective"], c["bytes"], c["label"])] /
              c["measured_us"] - 1
              for c in cells
              if again.get((c["transport"], c["world"], c["collective"], c["bytes"], c["label"]), 0) > 0]
    floor = summary_row("the same cells, another run", spread) if spread else None

    errors = [c["error"] for c in cells]
    overall = summary_row("all forced cells", errors)
    by_transport = defaultdict(list)
    by_collective = defaultdict(list)
    by_size = defaultdict(list)
    for c in cells:
        by_transport[c["transport"]].append(c["error"])
        by_collective[c["collective"]].append(c["error"])
        band = ("< 64K" if c["bytes"] < 65536 else "64K - 4M" if c["bytes"] <= 4 << 20
                else "> 4M")
        by_size[band].append(c["error"])
    headers = []
    for d in args.dirs:
        header_path = os.path.join(d, "header.txt")
        if os.path.exists(header_path):
            with open(header_path) as f:
                headers.append("".join(line[2:] if line.startswith("# ") else line for line in f).strip())
    header = "\n\n".join(headers)

    with open(os.path.join(args.dir, "validation.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(cells[0].keys()))
        w.writeheader()
        w.writerows(cells)

    png = os.path.join(args.dir, "sim-vs-measured.png")
    plot(cells, png)

    med, p90 = overall[2], overall[3]
    verdict = (f"median |error| {100 * med:.0f}% (target <= {100 * MEDIAN_TARGET:.0f}%: "
               f"{'met' if med <= MEDIAN_TARGET else 'not met'}), 90th percentile "
               f"{100 * p90:.0f}% (target <= {100 * P90_TARGET:.0f}%: "
               f"{'met' if p90 <= P90_TARGET else 'not met'})")
    worst = sorted(cells, key=lambda c: -abs(c["error"]))[:10]
    worst_lines = ["| cell | candidate | measured | predicted | error |", "|---|---|---:|---:|---:|"]
    for c in worst:
        worst_lines.append(f"| {c['transport']} {c['world']} {c['collective']} {human(c['bytes'])} "
                           f"| {c['label']} | {c['measured_us']:.1f} us | {c['predicted_us']:.1f} us "
                           f"| {100 * c['error']:+.0f}% |")

    def report(png_name):
        return f"""# The simulator against measurements

<!-- Generated by bench/sim_validate.py from a bench/regret.sh run; do not edit by hand.
     Regenerate: bench/regret.sh --rounds 3 [--hosts 2x2,4x2] --out DIR (or one run on one
     host and one on namespaced hosts, each with its own --out), then
     bench/sim_validate.py DIR [DIR2] [--again EARLIER_DIR...] --doc docs/simulator-validation.md -->

Every forced run of the regret grid (an algorithm at the segment the model gives it, or at
one forced with it: `ring@256K`, `TUTTI_SEGMENT_BYTES`) against the model's prediction for
that exact call:
`tutti-info explain --json` on the machine model the runs used (`TUTTI_TUNING_FILE`), the
communicator's topology view (`TUTTI_TOPO_DUMP_FILE`), transport, segment and flat-exchange
room, and for namespaced hosts a flat network of the links' rate. The error of a cell is
predicted / measured - 1 (negative: the model is optimistic); measured is the median over
rounds of tutti-bench's out-of-place time (in a round, the median of the blocks in which a
launch's candidates took turns).

Result: {verdict}, over {len(cells)} cells{f"; {unpriced} forced cells the model does not price" if unpriced else ""}.
{f"the run's tuner ran what explain chose, or one of its contenders, in {agree} of {total} cells (across hosts the tuner sees the model's NIC speed, explain the links' rate)." if total else ""}

## Run

```
{header.strip()}
```

## Error

{table([overall] + [summary_row(t, e) for t, e in sorted(by_transport.items())])}

{table([summary_row(k, e) for k, e in sorted(by_collective.items())])}

{table([summary_row(k, by_size[k]) for k in ("< 64K", "64K - 4M", "> 4M") if k in by_size])}

{f'''## Between runs

The cells measured again in another run of the grid ({len(spread)} of them), that run's time
taken as a prediction of this one's: the spread the machine's own noise puts under any
model's error. The other runs: {"; ".join(again_runs) if again_runs else ", ".join(args.again)}.

{table([floor])}
''' if floor else ''}
## The worst cells

{chr(10).join(worst_lines)}

![predicted against measured]({png_name})
"""

    with open(os.path.join(args.dir, "validation.md"), "w") as f:
        f.write(report("sim-vs-measured.png"))
    if args.doc:
        doc_png = os.path.splitext(args.doc)[0] + ".png"
        shutil.copyfile(png, doc_png)
        with open(args.doc, "w") as f:
            f.write(report(os.path.basename(doc_png)))
    print(f"simulator: {verdict}, over {len(cells)} forced cells"
          + (f"; explain agreed with the tuner in {agree}/{total} cells" if total else ""))
    rows = [overall] + [summary_row(t, e) for t, e in sorted(by_transport.items())]
    for name, n, m, p, _, s in rows + ([floor] if floor else []):
        print(f"  {name:20} {n:5} cells  median |error| {100 * m:4.0f}%  p90 {100 * p:4.0f}%  "
              f"median error {100 * s:+.0f}%")
    return 0


def plot(cells, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 6))
    transports = sorted({c["transport"] for c in cells})
    markers = "osD^v<>ph*"
    for i, t in enumerate(transports):
        xs = [c["measured_us"] for c in cells if c["transport"] == t]
        ys = [c["predicted_us"] for c in cells if c["transport"] == t]
        ax.scatter(xs, ys, s=12, marker=markers[i % len(markers)], alpha=0.7, label=t)
    lo = min(min(c["measured_us"], c["predicted_us"]) for c in cells)
    hi = max(max(c["measured_us"], c["predicted_us"]) for c in cells)
    lo, hi = lo / 2, hi * 2
    ax.plot([lo, hi], [lo, hi], "k-", linewidth=0.8, label="y = x")
    ax.plot([lo, hi], [lo * 1.3, hi * 1.3], "k:", linewidth=0.6, label="±30%")
    ax.plot([lo, hi], [lo * 0.7, hi * 0.7], "k:", linewidth=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured (us)")
    ax.set_ylabel("predicted (us)")
    ax.set_title("tutti's simulator against forced runs")
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    fig.savefig(path, dpi=120, bbox_inches="tight")


if __name__ == "__main__":
    sys.exit(main())
