#!/usr/bin/python3
# tutti-sim --plot: busbw against size, one line per algorithm, from the CSV tutti-sim
# writes (algorithm,bytes,seconds,algbw,busbw). Needs Debian's python3-matplotlib.
import csv
import sys

def main():
    if len(sys.argv) != 4:
        sys.exit("usage: tutti-sim-plot.py DATA.csv OUT.png TITLE")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("tutti-sim-plot: matplotlib is missing (apt-get install python3-matplotlib)")
    lines = {}
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f):
            lines.setdefault(row["algorithm"], []).append((int(row["bytes"]), float(row["busbw"])))
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, points in sorted(lines.items()):
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(sys.argv[3], fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)

if __name__ == "__main__":
    main()
