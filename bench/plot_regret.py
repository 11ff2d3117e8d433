#!/usr/bin/python3
"""Summarizes bench/regret.sh's runs: per cell (transport, world, collective, size) the best
forced algorithm (the least median time over rounds) and the tuner's and the table's ratios
to it (the median over rounds of the ratio within a round, whose candidates ran in one
launch); a table on stdout, the cells as CSV, and a heat-map PNG of both ratios.

    bench/plot_regret.py RAW [--csv CELLS.csv] [--png REGRET.png]

RAW lines: round transport world collective bytes label time_us chosen, where label is
"tuner", "table" or the forced algorithm (with "/SEGMENT" where TUTTI_SEGMENT_BYTES was set),
and transport is shm or tcp on one host, TRANSPORT@HxL on H namespaced hosts of L ranks.
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict


def human(b):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= size and b % size == 0:
            return f"{b // size}{unit}"
    return str(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("--csv")
    ap.add_argument("--png")
    args = ap.parse_args()
    times = defaultdict(list)  # (cell, label) -> times
    by_round = {}  # (cell, label, round) -> time
    chosen = {}  # (cell, label) -> the algorithm tutti-bench reported
    cells = []
    with open(args.raw) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 8:  # later fields, if any, are for other readers
                continue
            rnd, transport, world, coll, size, label, t, algo = parts[:8]
            if int(size) == 0:  # below one element per rank: a call that moves nothing
                continue
            cell = (transport, int(world), coll, int(size))
            if cell not in cells:
                cells.append(cell)
            times[(cell, label)].append(float(t))
            by_round[(cell, label, rnd)] = float(t)
            chosen[(cell, label)] = algo
    rows = []
    for cell in cells:
        forced = {label: statistics.median(v) for (c, label), v in times.items()
                  if c == cell and label not in ("tuner", "table")}
        if not forced or (cell, "tuner") not in times or (cell, "table") not in times:
            continue
        best_label = min(forced, key=forced.get)
        best = forced[best_label]
        tuner = statistics.median(times[(cell, "tuner")])
        table = statistics.median(times[(cell, "table")])

        def ratio(who, value):
            """The median of the ratio within each round (paired), else of the medians."""
            pairs = [t / by_round[(cell, best_label, r)] for (c, w, r), t in by_round.items()
                     if c == cell and w == who and by_round.get((cell, best_label, r), 0) > 0]
            if pairs:
                return statistics.median(pairs)
            return value / best if best > 0 else 1.0

        rows.append({
            "transport": cell[0], "world": cell[1], "collective": cell[2], "bytes": cell[3],
            "best": best_label, "best_us": best,
            "tuner": chosen[(cell, "tuner")], "tuner_us": tuner,
            "tuner_ratio": ratio("tuner", tuner),
            "table": chosen[(cell, "table")], "table_us": table,
            "table_ratio": ratio("table", table),
        })
    if not rows:
        print("plot_regret.py: no complete cell in", args.raw, file=sys.stderr)
        return 1
    print(f"{'tr':4} {'n':>2} {'collective':13} {'bytes':>6} {'best':24} {'best_us':>10} "
          f"{'tuner':20} {'t/best':>6} {'table':20} {'T/best':>6}")
    for r in rows:
        print(f"{r['transport']:4} {r['world']:>2} {r['collective']:13} {human(r['bytes']):>6} "
              f"{r['best']:24} {r['best_us']:10.1f} {r['tuner']:20} {r['tuner_ratio']:6.2f} "
              f"{r['table']:20} {r['table_ratio']:6.2f}")
    for who in ("tuner", "table"):
        ratios = [r[f"{who}_ratio"] for r in rows]
        within = sum(1 for x in ratios if x <= 1.10)
        print(f"{who}: within 10% of the best in {within}/{len(ratios)} cells "
              f"({100.0 * within / len(ratios):.0f}%), median {statistics.median(ratios):.2f}, "
              f"worst {max(ratios):.2f}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
    if args.png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        keys = sorted({(r["transport"], r["world"], r["collective"]) for r in rows})
        sizes = sorted({r["bytes"] for r in rows})
        fig, axes = plt.subplots(1, 2, figsize=(4 + 0.7 * len(sizes) * 2, 1.5 + 0.35 * len(keys)),
                                 squeeze=False)
        for k, (ax, who) in enumerate(zip(axes[0], ("tuner", "table"))):
            grid = [[float("nan")] * len(sizes) for _ in keys]
            for r in rows:
                grid[keys.index((r["transport"], r["world"], r["collective"]))][
                    sizes.index(r["bytes"])] = r[f"{who}_ratio"]
            im = ax.imshow(grid, cmap="RdYlGn_r", vmin=1.0, vmax=2.0, aspect="auto")
            ax.set_xticks(range(len(sizes)), [human(s) for s in sizes], rotation=45)
            # The rows' names once, on the left.
            ax.set_yticks(range(len(keys)), [f"{t} {n} {c}" for t, n, c in keys] if k == 0 else [])
            ax.set_title(f"{who} time / best forced")
            for i, row in enumerate(grid):
                for j, v in enumerate(row):
                    if v == v:
                        ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7)
        fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
        fig.savefig(args.png, dpi=120, bbox_inches="tight")
    return 0


if __name__ == "__main__":
    sys.exit(main())
