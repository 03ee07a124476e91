"""jobs-v1's baseline table computed with the DeepRM transcription alone: bench_jobs.py's reference process.

``python benchmarks/deeprm_table.py`` prints what ``python -m layersched.sim --track jobs-v1`` prints (rate 0.7,
seeds 0-4, simu_len 50), from ``tests/sim/deeprm_transcription.py``: its workload, its ``Env`` and its SJF, Packer
and Tetris* (``get_packer_sjf_action`` with our knob), and our Random's draw made from its state. It imports numpy
and the transcription only, not the track, so that the whole process is the reference's. Each episode is the
reference's sequence behind one empty step (docs/tracks/jobs-v1.md, decision 1), as in
``tests/sim/test_jobs_differential.py``; for Random the machine tries our placement range (decision 4).
"""

from __future__ import annotations

import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

# The transcription lives with the tests that pin the track to it; the benchmark runs from the repository's root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.sim import deeprm_transcription as ref

# The track's defaults that differ from the reference's Parameters (bench_jobs.py checks them against the track).
SIMU_LEN, NUM_NW, NEW_JOB_RATE = 50, 10, 0.7
TETRIS_KNOB = 0.001
SEEDS = range(5)

Heuristic = Callable[[ref.Machine, ref.JobSlot], int]
HEURISTICS: dict[str, Heuristic] = {
    "SJF": ref.get_sjf_action,
    "Packer": ref.get_packer_action,
    "Tetris*": lambda machine, job_slot: ref.get_packer_sjf_action(machine, job_slot, TETRIS_KNOB),
}


def parameters(simu_len: int = SIMU_LEN) -> ref.Parameters:
    pa = ref.Parameters()
    pa.simu_len, pa.num_nw, pa.new_job_rate = simu_len, NUM_NW, NEW_JOB_RATE
    pa.episode_max_length = 1 << 30  # the all_done run must never be cut short
    pa.compute_dependent_parameters()
    return pa


def reference_env(seed: int) -> ref.Env:
    """The reference's sequence of seed ``seed``, drawn by the reference, behind one empty step."""
    lens, sizes = ref.generate_sequence_work(parameters(), seed=seed)
    pa = parameters(SIMU_LEN + 1)
    late_lens = np.zeros((1, pa.simu_len), dtype=int)
    late_sizes = np.zeros((1, pa.simu_len, pa.num_res), dtype=int)
    late_lens[0, 1:], late_sizes[0, 1:] = lens[0], sizes[0]
    return ref.Env(pa, late_lens, late_sizes)


def random_action(env: ref.Env, rng: random.Random) -> int:
    """Our Random's draw (``baselines.random_allowed``) from the reference's state: uniform over the jobs that fit at
    some offset of ``0..time_horizon - len``, and void when allowed; no draw when no job fits (no decision)."""
    pa, avbl = env.pa, env.machine.avbl_slot
    choices: list[int | None] = []
    for i, job in enumerate(env.job_slot.slot):
        offsets = range(pa.time_horizon - job.len + 1) if job is not None else ()
        if any((avbl[t : t + job.len] >= job.res_vec).all() for t in offsets):
            choices.append(i)
    if not choices:
        return pa.num_nw
    # Our void_allowed, in the reference's times (ours + 1).
    if env.curr_time - 1 < SIMU_LEN - 1 or not (avbl == pa.res_slot).all():
        choices.append(None)
    choice = rng.choice(choices)
    return pa.num_nw if choice is None else choice


def play(seed: int, name: str = "SJF") -> ref.Env:
    """The reference's episode of seed ``seed`` under baseline ``name``, played to its end."""
    env = reference_env(seed)
    rng = random.Random(seed)  # the table's policy rng (only Random draws)
    if name == "Random":
        # Decision 4: our Random may place a job at the last offset, time_horizon - len, which the reference's
        # range(0, time_horizon - len) never tries; its allocate_job reads time_horizon for that range only.
        env.machine.time_horizon = env.pa.time_horizon + 1
    done = False
    while not done:
        action = random_action(env, rng) if name == "Random" else HEURISTICS[name](env.machine, env.job_slot)
        _, _, done, _ = env.step(action)
    return env


def expected_load(pa: ref.Parameters) -> float:
    """The track's ``expected_load``, from the reference's distribution bounds."""
    d = pa.dist
    length = (
        d.job_small_chance * (d.job_len_small_lower + d.job_len_small_upper) / 2
        + (1 - d.job_small_chance) * (d.job_len_big_lower + d.job_len_big_upper) / 2
    )
    demand = ((d.dominant_res_lower + d.dominant_res_upper) / 2 + (d.other_res_lower + d.other_res_upper) / 2) / 2
    return pa.new_job_rate * length * demand / pa.res_slot


def main() -> None:
    pa = parameters()
    print(f"jobs-v1  rate={NEW_JOB_RATE} (load {expected_load(pa):.0%}) simu_len={SIMU_LEN} seeds={list(SEEDS)}")
    print(f"{'':10s} {'slowdown':>9s} {'completion':>11s}")
    for name in (*HEURISTICS, "Random"):
        slowdown, completion = [], []
        for seed in SEEDS:
            record = play(seed, name).job_record.record
            jobs = [record[i] for i in sorted(record)]
            # Summed as metrics.episode_metrics sums them: per job in arrival order, then over the jobs.
            times = [job.finish_time - job.enter_time for job in jobs]
            slowdown.append(sum(t / job.len for t, job in zip(times, jobs, strict=True)) / len(jobs))
            completion.append(sum(times) / len(jobs))
        print(f"{name:10s} {statistics.fmean(slowdown):9.3f} {statistics.fmean(completion):11.3f}")


if __name__ == "__main__":
    main()
