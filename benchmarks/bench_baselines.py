"""Benchmark: the six baselines, against their references in the same run (issue 16, item 13).

Two measurements, each refused unless both sides give the same numbers:

* ``table``: ``python -m layersched.sim`` (the lab's baseline table: 6 baselines x 5 seeds x 500 tasks) as a whole
  process, against the lab's own ``sim.py`` as a whole process. The lab's file is cut from the lab text
  (``../shared/seeds/000_*.txt``, or ``--lab-text``) and run on the lab catalog written out as its ``images.json``. The
  two processes alternate; the printed tables must agree to the digit, and the table's per-seed means must equal, bit
  for bit, those of ``layersched.sim.tracks.layers_v1.reference_baselines`` (the lab's way of writing the baselines)
  in-process.
* ``rows``: the baseline rows of the 150-episode challenge template (a real set drawn from
  ``hidden_seeds/challenge-example.toml`` with fresh keys in a temporary folder), as ``layersched serve`` computes
  them (``score_baselines`` on every core), against the previous code: the reference baselines, one episode after
  another in this process. Every record (metrics and trace hash) must be equal.

Run: ``python benchmarks/bench_baselines.py [--repeats 3] [--only table|rows]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from layersched.sim.evalset import EpisodeRecord, baseline_bundle_id, evaluate_policy, new_evalset, score_baselines
from layersched.sim.ordered_pool import available_cores
from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.reference_baselines import REFERENCE_BASELINES
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.table import baseline_table

ROOT = Path(__file__).resolve().parents[1]
LAB_START = "# sim.py："  # the first line of the lab's sim.py in the lab text
LAB_END = "和论文相比"  # the paragraph after it


def lab_sim_py(text_path: Path) -> str:
    """The lab's ``sim.py``, cut from the lab text."""
    text = text_path.read_text(encoding="utf-8")
    start = text.index(LAB_START)
    return text[start : text.index(LAB_END, start)].rstrip() + "\n"


def default_lab_text() -> Path:
    found = sorted((ROOT.parent / "shared" / "seeds").glob("000_*.txt"))
    if not found:
        raise SystemExit("no lab text in ../shared/seeds/000_*.txt; pass --lab-text")
    return found[0]


def timed(command: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, result.stdout


def lab_numbers(stdout: str) -> list[tuple[str, str, str]]:
    """(name, mean, std) as the lab prints them: ``Greedy       平均完成时间    60.2 s（5 次的标准差 3.4）``."""
    rows = []
    for line in stdout.splitlines():
        name, rest = line.split(maxsplit=1)
        mean = rest.split("平均完成时间", 1)[1].split("s", 1)[0].strip()
        std = rest.split("标准差", 1)[1].rstrip("）").strip()
        rows.append((name, mean, std))
    return rows


def our_numbers(stdout: str) -> list[tuple[str, str, str]]:
    """(name, mean, std) from ``Greedy          60.2 +-   3.4 s``, the header line skipped."""
    rows = []
    for line in stdout.splitlines()[1:]:
        name, mean, _, std, _ = line.split()
        rows.append((name, mean, std))
    return rows


def bench_table(repeats: int, lab_text: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "sim.py").write_text(lab_sim_py(lab_text), encoding="utf-8")
        (folder / "images.json").write_text(json.dumps(load_catalog("lab").to_json()), encoding="utf-8")
        ours_cmd = [sys.executable, "-m", "layersched.sim"]
        lab_cmd = [sys.executable, "sim.py", "--images", "images.json"]
        # Identical numbers first: the JSON table against the reference baselines in-process, bit for bit.
        _, as_json = timed([*ours_cmd, "--json"], folder)
        reference = baseline_table(Scenario(), range(5), list(REFERENCE_BASELINES), REFERENCE_BASELINES)
        got = json.loads(as_json)["baselines"]
        for name, row in reference.items():
            if got[name]["per_seed"] != row["per_seed"]:
                raise SystemExit(f"{name}: per-seed means differ from the reference baselines")
        lab_times, our_times = [], []
        for _ in range(repeats):
            lab_s, lab_out = timed(lab_cmd, folder)
            our_s, our_out = timed(ours_cmd, folder)
            if lab_numbers(lab_out) != our_numbers(our_out):
                raise SystemExit(f"the tables differ:\n{lab_out}\n{our_out}")
            lab_times.append(lab_s)
            our_times.append(our_s)
    lab_med, our_med = statistics.median(lab_times), statistics.median(our_times)
    print("table: identical per-seed means (reference baselines, bit for bit) and printed table (lab sim.py): yes")
    print(
        f"table: lab sim.py {lab_med:.2f} s, python -m layersched.sim {our_med:.2f} s: {lab_med / our_med:.2f}x"
        f" (medians of {repeats}; lab {_spread(lab_times)}, ours {_spread(our_times)})"
    )


def reference_rows(evalset: object) -> dict[str, list[EpisodeRecord]]:
    """The previous ``score_baselines``: each reference baseline on every episode, one after another."""
    return {
        name: evaluate_policy(evalset, policy, bundle_id=baseline_bundle_id(name))  # type: ignore[arg-type]
        for name, policy in REFERENCE_BASELINES.items()
    }


def bench_rows(repeats: int) -> None:
    workers = available_cores()
    with tempfile.TemporaryDirectory() as tmp:
        evalset = new_evalset(ROOT / "hidden_seeds" / "challenge-example.toml", Path(tmp) / "challenge.toml")
    episodes = len(evalset.jobs())
    sides: dict[str, Callable[[], dict[str, list[EpisodeRecord]]]] = {
        "reference": lambda: reference_rows(evalset),
        "layersched": lambda: score_baselines(evalset, workers=workers),
    }
    times: dict[str, list[float]] = {side: [] for side in sides}
    results: dict[str, dict[str, list[EpisodeRecord]]] = {}
    for _ in range(repeats):
        for side, run in sides.items():
            start = time.perf_counter()
            results[side] = run()
            times[side].append(time.perf_counter() - start)
        if results["layersched"] != results["reference"]:
            raise SystemExit("the baseline rows differ from the reference's")
    ref_med, our_med = (statistics.median(times[side]) for side in sides)
    print(f"rows: identical records (metrics and trace hashes) of all 6 baselines on {episodes} episodes: yes")
    print(
        f"rows: reference (one process, one episode after another) {ref_med:.2f} s, score_baselines on {workers}"
        f" processes {our_med:.2f} s: {ref_med / our_med:.1f}x (medians of {repeats}; reference"
        f" {_spread(times['reference'])}, ours {_spread(times['layersched'])})"
    )


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions; medians are reported")
    parser.add_argument("--only", choices=["table", "rows"], help="one of the two measurements")
    parser.add_argument("--lab-text", type=Path, help="the lab text holding sim.py (default ../shared/seeds/000_*)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.only in (None, "table"):
        bench_table(args.repeats, args.lab_text or default_lab_text())
    if args.only in (None, "rows"):
        bench_rows(args.repeats)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
