"""Benchmark: jobs-v1's simulator and SJF against the transcription of DeepRM's environment, in one run.

Issue 19 ("Checks: Speed"). The named reference is ``tests/sim/deeprm_transcription.py``, the line-by-line Python 3
transcription of hongzimao/deeprm that the differential tests hold the track to. Two measurements:

* per decision: whole SJF episodes on the same seeded workloads (``{ seed = N }``, the reference's
  ``generate_sequence_work(pa, seed=N)``), each side drawing its jobs and playing to the end. Ours is
  ``TRACK.run_episode``'s path (the trusted ``JobsEnv``, a fresh ``JobsView`` per decision, the reply's check), the
  reference its ``Env.step`` with ``get_sjf_action`` at every time step; both times are divided by the same count,
  our decisions (the reference asks at every step, ours only when a job can be placed). The reference is given the
  sequence behind one empty step (docs/tracks/jobs-v1.md, decision 1), as in ``test_jobs_differential.py``;
* the baseline table as a whole process: ``python -m layersched.sim --track jobs-v1`` against
  ``python benchmarks/deeprm_table.py``, which prints the same table from the transcription alone (its SJF, Packer
  and Tetris*, and Random drawing as ours does from the transcription's state), alternated.

Times are CPU times (``time.process_time``; the table process's user and system time), so that the load of other
work on the machine's cores falls out of the figures as far as it can; medians of alternated runs. The table's
processes, both sides', keep their compiled modules in a temporary bytecode cache, written by the check run: as an
installed package has its .pyc files (``table_output``). ``count_jobs.py`` counts the per-decision instructions.

Before timing, every episode's allocations (start and finish of every job), and so its slowdowns, must be the same
on both sides, and the two processes must print the same table; the benchmark refuses to report figures otherwise.

Run: ``python benchmarks/bench_jobs.py [--repeats 5] [--seeds 20] [--table-repeats 3]``
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# The reference's process (deeprm_table.py) puts the repository's root on the path, for the transcription.
import deeprm_table
from deeprm_table import ref

from layersched.sim.episodes import EpisodeSpec
from layersched.sim.tracks.jobs_v1 import TRACK
from layersched.sim.tracks.jobs_v1.baselines import TETRIS_KNOB
from layersched.sim.tracks.jobs_v1.sandbox import JobsEpisode, JobsSimulator
from layersched.sim.tracks.jobs_v1.scenario import JobsScenario
from layersched.sim.tracks.play import play_episode

ROOT = Path(__file__).resolve().parents[1]

# A job's (arrival, length, start, finish), in job id order: what both sides must agree on (and so the slowdowns).
Placements = list[tuple[int, int, int, int]]


# ----------------------------------------------------------------------------- ours


class KeptSimulator(JobsSimulator):
    """The track's simulator, keeping its last episode so that its placements can be read after the run."""

    last: JobsEpisode | None = None

    def episode(self, workload: random.Random) -> JobsEpisode:
        self.last = super().episode(workload)
        return self.last


def play_ours(scenario: JobsScenario, seed: int) -> tuple[int, Placements]:
    """``TRACK.run_episode``'s path for SJF on ``{ seed = N }``: the decisions made and the placements."""
    simulator = KeptSimulator(scenario)
    workload = EpisodeSpec(f"seed-{seed}", seed=seed).workload_rng()
    actions, _ = play_episode(simulator, TRACK.replica(scenario), TRACK.baseline("SJF"), workload, random.Random(seed))
    assert simulator.last is not None and simulator.last.env is not None
    env = simulator.last.env
    return len(actions), [(job.arrival, job.length, env.start[job.id], env.finish[job.id]) for job in env.entered]


# ----------------------------------------------------------------------------- the transcription


def reference_placements(env: ref.Env) -> Placements:
    """The reference's record in our times (its are one step later)."""
    record = env.job_record.record
    jobs = [record[i] for i in sorted(record)]
    return [(job.enter_time - 1, int(job.len), job.start_time - 1, job.finish_time - 1) for job in jobs]


def play_reference(scenario: JobsScenario, seed: int) -> ref.Env:
    return deeprm_table.play(seed)


# ----------------------------------------------------------------------------- the measurements


def check_episodes(scenario: JobsScenario, seeds: range) -> int:
    """Our decisions over ``seeds``, once every episode's placements are the reference's (else exit)."""
    decisions = 0
    for seed in seeds:
        count, mine = play_ours(scenario, seed)
        theirs = reference_placements(play_reference(scenario, seed))
        if mine != theirs:
            raise SystemExit(f"seed {seed}: our SJF's placements differ from the transcription's: no figures")
        decisions += count
    return decisions


def episodes_seconds(play: Callable[[JobsScenario, int], object], scenario: JobsScenario, seeds: range) -> float:
    start = time.process_time()
    for seed in seeds:
        play(scenario, seed)
    return time.process_time() - start


TABLE_COMMANDS = {
    "ours": [sys.executable, "-m", "layersched.sim", "--track", "jobs-v1"],
    "transcription": [sys.executable, str(Path(deeprm_table.__file__).resolve())],
}


def children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def table_output(command: list[str], bytecode: Path) -> tuple[float, str]:
    """The process's CPU seconds (user and system) and its output. Both sides' processes keep their compiled
    modules in ``bytecode`` (the first writes them, the later read them), as an installed package has its .pyc
    files: a machine that sets PYTHONDONTWRITEBYTECODE (this one does) would have every process compile every
    module it imports from source again, which is no part of either side's work."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    start = children_seconds()
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    return children_seconds() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed passes over the episodes, per side")
    parser.add_argument("--seeds", type=int, default=20, help="SJF episodes (seeds 0..N-1) at the default rate")
    parser.add_argument("--table-repeats", type=int, default=3, help="timed table processes, per side")
    args = parser.parse_args()
    scenario = JobsScenario()
    same = (scenario.simu_len, scenario.num_nw, scenario.new_job_rate, TETRIS_KNOB) == (
        deeprm_table.SIMU_LEN,
        deeprm_table.NUM_NW,
        deeprm_table.NEW_JOB_RATE,
        deeprm_table.TETRIS_KNOB,
    )
    if not same or list(deeprm_table.SEEDS) != list(range(5)):
        raise SystemExit("deeprm_table.py's constants are not the track's defaults: no figures")

    seeds = range(args.seeds)
    decisions = check_episodes(scenario, seeds)
    print(f"{args.seeds} SJF episodes at rate {scenario.new_job_rate}, {decisions} decisions: same placements")
    ours, reference = [], []
    for _ in range(args.repeats):  # alternated, so that a change in the machine's load falls on both sides
        ours.append(episodes_seconds(play_ours, scenario, seeds) / decisions * 1e6)
        reference.append(episodes_seconds(play_reference, scenario, seeds) / decisions * 1e6)
    mine, theirs = statistics.median(ours), statistics.median(reference)
    print(f"simulator + SJF  median {mine:.1f} us per decision ({min(ours):.1f}-{max(ours):.1f})")
    print(f"transcription    median {theirs:.1f} us per decision ({min(reference):.1f}-{max(reference):.1f})")
    print(f"ratio            {theirs / mine:.1f}x (target 5x)")

    bytecode = Path(tempfile.mkdtemp(prefix="bench-jobs-pyc-"))
    outputs = {side: table_output(command, bytecode)[1] for side, command in TABLE_COMMANDS.items()}
    if outputs["ours"] != outputs["transcription"]:
        raise SystemExit(
            f"the tables differ: no figures\nours:\n{outputs['ours']}\ntranscription:\n{outputs['transcription']}"
        )
    print("the baseline table, same figures from both processes:\n" + outputs["ours"].rstrip())
    runs: dict[str, list[float]] = {side: [] for side in TABLE_COMMANDS}
    for _ in range(args.table_repeats):
        for side, command in TABLE_COMMANDS.items():
            runs[side].append(table_output(command, bytecode)[0])
    shutil.rmtree(bytecode)
    table = {side: statistics.median(seconds) for side, seconds in runs.items()}
    for side, seconds in runs.items():
        print(f"table, {side:13s} median {table[side]:.2f} s ({min(seconds):.2f}-{max(seconds):.2f})")
    print(f"ratio            {table['transcription'] / table['ours']:.1f}x (target 3x)")


if __name__ == "__main__":
    main()
