"""Training curves over seeds: the mean and the min-max band of each group of runs, as in the lab's plot.py.

    python plot_curves.py                                  # train_seed*.csv and imitation_seed*.csv, if present
    python plot_curves.py "train_seed*.csv" --smooth 20 --out reinforce

Each pattern is one group (one line and its band). Episodes are smoothed with a moving average first, because a
single episode's result is noisy. With matplotlib this writes OUT.png and OUT.pdf; without it, OUT_summary.csv
with the same numbers (group, episode, mean, min, max, seeds), and says so.
"""

from __future__ import annotations

import argparse
import csv
import glob
from pathlib import Path

import numpy as np

DEFAULT_PATTERNS = ["train_seed*.csv", "imitation_seed*.csv"]


def load_group(pattern: str) -> tuple[list[str], np.ndarray]:
    """The files matching ``pattern`` and their mean_completion_s columns, cut to the shortest run."""
    files = sorted(glob.glob(pattern))
    curves = []
    for name in files:
        with open(name, newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if int(r["episode"]) >= 0]  # -1: imitation's starting point
        curves.append(np.array([float(r["mean_completion_s"]) for r in rows]))
    if not curves:
        return files, np.empty((0, 0))
    n = min(len(c) for c in curves)
    return files, np.array([c[:n] for c in curves])


def smooth(data: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Moving average of width k (narrower if the runs are shorter); x is the episode at each window's end."""
    k = max(1, min(k, data.shape[1]))
    out = np.array([np.convolve(c, np.ones(k) / k, mode="valid") for c in data])
    return np.arange(out.shape[1]) + k - 1, out


def label_of(pattern: str) -> str:
    stem = Path(pattern).name.split("_seed")[0].split("*")[0]
    return {"train": "REINFORCE", "imitation": "Imitation + PG"}.get(stem, stem or pattern)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("patterns", nargs="*", default=DEFAULT_PATTERNS, help="one glob per group of runs")
    parser.add_argument("--smooth", type=int, default=10, help="moving-average width in episodes (default 10)")
    parser.add_argument("--out", default="train_curve", help="output name without extension (default train_curve)")
    args = parser.parse_args()

    groups = []
    for pattern in args.patterns:
        files, data = load_group(pattern)
        if files:
            x, s = smooth(data, args.smooth)
            groups.append((label_of(pattern), len(files), x, s))
    if not groups:
        raise SystemExit(f"no CSV file matches {' '.join(args.patterns)}; run train_reinforce.py first")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        out = Path(f"{args.out}_summary.csv")
        with out.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["group", "episode", "mean", "min", "max", "seeds"])
            for label, n, x, s in groups:
                for i, ep in enumerate(x):
                    writer.writerow(
                        [label, int(ep), f"{s[:, i].mean():.3f}", f"{s[:, i].min():.3f}", f"{s[:, i].max():.3f}", n]
                    )
        print(f"matplotlib is not installed, so no figure: wrote {out} instead (pip install matplotlib for the plot)")
        return

    plt.rcParams.update({"font.size": 12, "pdf.fonttype": 42})
    fig, ax = plt.subplots(figsize=(4.5, 3))
    for label, n, x, s in groups:
        ax.plot(x, s.mean(axis=0), label=f"{label} ({n} seed{'s' if n != 1 else ''})")
        ax.fill_between(x, s.min(axis=0), s.max(axis=0), alpha=0.25)
    ax.set_xlabel("Episode")
    ax.set_ylabel("Mean completion time (s)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(f"{args.out}.pdf")
    fig.savefig(f"{args.out}.png", dpi=150)
    print(f"saved {args.out}.png and {args.out}.pdf")


if __name__ == "__main__":
    main()
