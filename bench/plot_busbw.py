#!/usr/bin/python3
"""Bus bandwidth against message size, tutti and its peers, from bench/peers/compare.sh's runs.

    /usr/bin/python3 bench/plot_busbw.py RUN_DIR --csv OUT.csv --png OUT.png
    /usr/bin/python3 bench/plot_busbw.py --from-csv OUT.csv --png OUT.png

RUN_DIR is a compare.sh output directory (--out). Its records.txt holds one line per round
and implementation ("round collective ranks bytes impl time_us busbw_gbs wrong"), which
compare.sh takes from tutti-bench's --json rows and the peer benchmarks' RESULT lines
(bench/peers/bench_common.h): the same sizes on both sides. busbw is computed again from the
time with nccl-tests' factors. Each point is the median over rounds of that implementation's
busbw; Gloo counts as one peer, its best algorithm in each round, as compare.sh's table
does. Failed, timed-out and wrong records, and the floors (copy_floor, exchange_floor), are
left out.

The CSV keeps the medians and compare.sh's header (commit, date, machine, memory probe) as
'#' lines, small enough to commit next to the PNG; --from-csv redraws the PNG from it.
Needs Debian's python3-matplotlib (bench/peers/setup.sh installs it).
"""

import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict

# Line styles: tutti first and bold, the peers in a fixed order and colour.
STYLES = {
    "tutti": dict(color="#d62728", linewidth=2.4, marker="o", zorder=5),
    "tutti-reg": dict(color="#ff7f0e", linewidth=1.8, marker="o", zorder=4),
    "ompi": dict(color="#1f77b4", marker="s"),
    "ompi-tuned": dict(color="#17becf", marker="s", linestyle="--"),
    "ompi-nocma": dict(color="#1f77b4", marker="s", linestyle=":"),
    "ompi-tcp": dict(color="#7f7f7f", marker="s", linestyle="-."),
    "mpich": dict(color="#2ca02c", marker="^"),
    "mpich-tuned": dict(color="#bcbd22", marker="^", linestyle="--"),
    "mpich-nocma": dict(color="#2ca02c", marker="^", linestyle=":"),
    "gloo": dict(color="#9467bd", marker="D"),
}
LABELS = {"ompi": "Open MPI", "mpich": "MPICH", "gloo": "Gloo (TCP)"}


def human(nbytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def busbw_of(coll, ranks, nbytes, time_us):
    """GB/s by nccl-tests' factors (bench_common.h's busFactor), from the time: the peers
    print busbw with four decimals, which reads 0 for small messages."""
    if coll == "allreduce":
        factor = 2.0 * (ranks - 1) / ranks
    elif coll in ("broadcast", "reduce"):
        factor = 1.0
    else:
        factor = (ranks - 1) / ranks
    return nbytes / (time_us * 1e3) * factor


def read_records(run_dir):
    """{(collective, ranks, bytes, impl): [busbw per round]} and the run's header lines."""
    best = {}  # (coll, ranks, bytes, impl, round) -> (time_us, busbw): Gloo's best algorithm
    with open(os.path.join(run_dir, "records.txt")) as f:
        for line in f:
            fields = line.split()
            if len(fields) != 8:
                continue
            rnd, coll, ranks, nbytes, impl, time_us, _, wrong = fields
            if time_us in ("FAIL", "TIMEOUT") or wrong != "0" or impl == "floor":
                continue
            impl = impl.split(":")[0]
            key = (coll, int(ranks), int(nbytes), impl, int(rnd))
            if key not in best or float(time_us) < best[key][0]:
                best[key] = (float(time_us), busbw_of(coll, int(ranks), int(nbytes),
                                                      float(time_us)))
    rounds = defaultdict(list)
    for (coll, ranks, nbytes, impl, _), (time_us, busbw) in sorted(best.items()):
        rounds[(coll, ranks, nbytes, impl)].append((time_us, busbw))
    header = []
    header_path = os.path.join(run_dir, "header.txt")
    if os.path.exists(header_path):
        with open(header_path) as f:
            header = [line.rstrip("\n").lstrip("# ") for line in f if line.strip()]
    return rounds, header


def write_csv(path, rounds, header):
    with open(path, "w", newline="") as f:
        for line in header:
            f.write(f"# {line}\n")
        out = csv.writer(f)
        out.writerow(["collective", "ranks", "bytes", "impl", "rounds", "time_us", "busbw_gbs"])
        for (coll, ranks, nbytes, impl), values in sorted(rounds.items()):
            time_us = statistics.median(v[0] for v in values)
            busbw = statistics.median(v[1] for v in values)
            out.writerow([coll, ranks, nbytes, impl, len(values), f"{time_us:.4g}",
                          f"{busbw:.4g}"])


def read_csv(path):
    """[(collective, ranks, bytes, impl, busbw)] and the '#' header lines."""
    header, rows = [], []
    with open(path) as f:
        lines = []
        for line in f:
            if line.startswith("#"):
                header.append(line[1:].strip())
            else:
                lines.append(line)
    for row in csv.DictReader(lines):
        rows.append((row["collective"], int(row["ranks"]), int(row["bytes"]), row["impl"],
                     float(row["busbw_gbs"])))
    return rows, header


def plot(rows, header, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(coll, ranks) for coll, ranks, _, _, _ in rows})
    impls = sorted({impl for _, _, _, impl, _ in rows},
                   key=lambda i: (list(STYLES).index(i) if i in STYLES else 99, i))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False,
                             sharey=True)
    for ax, (coll, ranks) in zip(axes[0], panels):
        for impl in impls:
            points = sorted((b, bw) for c, r, b, i, bw in rows
                            if (c, r, i) == (coll, ranks, impl) and bw > 0)
            if not points:
                continue
            ax.plot([p[0] for p in points], [p[1] for p in points],
                    label=LABELS.get(impl, impl), markersize=4, **STYLES.get(impl, {}))
        sizes = sorted({b for c, r, b, _, _ in rows if (c, r) == (coll, ranks)})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sizes[::2] if len(sizes) > 8 else sizes
        ax.set_xticks(ticks)
        ax.set_xticklabels([human(b) for b in ticks], rotation=45, ha="right", fontsize=8)
        ax.minorticks_off()
        ax.set_title(f"{coll}, {ranks} ranks", fontsize=10)
        ax.set_xlabel("message size (bytes of the larger buffer)", fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("busbw, GB/s (median over rounds)", fontsize=9)
    axes[0][-1].legend(fontsize=8, loc="lower right")
    # The run's commit, date, machine and load, from compare.sh's header, under the plots:
    # a plot made on a busy machine says so.
    note = [line for line in header
            if line.startswith(("compare.sh", "machine", "load average at start"))]
    if note:
        fig.text(0.01, 0.005, " | ".join(note), fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(png, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", nargs="?", help="a bench/peers/compare.sh --out directory")
    parser.add_argument("--from-csv", help="redraw from a CSV this script wrote")
    parser.add_argument("--csv", help="write the medians here")
    parser.add_argument("--png", required=True, help="write the plot here")
    args = parser.parse_args()
    if bool(args.run_dir) == bool(args.from_csv):
        parser.error("give a compare.sh run directory or --from-csv, not both")
    csv_path = args.from_csv
    if args.run_dir:
        rounds, header = read_records(args.run_dir)
        if not rounds:
            sys.exit(f"plot_busbw.py: no usable record in {args.run_dir}/records.txt")
        csv_path = args.csv or os.path.join(args.run_dir, "busbw.csv")
        write_csv(csv_path, rounds, header)
    rows, header = read_csv(csv_path)
    plot(rows, header, args.png)
    print(f"plot_busbw.py: {len(rows)} points from {csv_path} -> {args.png}")


if __name__ == "__main__":
    main()
