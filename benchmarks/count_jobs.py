"""Instructions per jobs-v1 decision, the track's simulator and SJF against the DeepRM transcription, by callgrind.

``bench_jobs.py`` times whole SJF episodes; on these VMs its seconds drift with the machine's load by 10% or more
between runs, too much to tell a change of a few percent. Instruction counts do not drift (the same binary, input
and environment give the same count whatever else the machine does). This counts, for each side, a process that
imports what it needs and plays ``--episodes`` SJF episodes (seeds 0..N-1, bench_jobs.py's ``play_ours`` and
``play_reference``), minus the same process playing none: what is left is the episodes' cost alone, divided by our
decisions over those episodes (as bench_jobs.py divides both sides' times). It is a guide for changing the code,
not the figure the issue's goal is about: that is bench_jobs.py's, in seconds.

Run: ``python benchmarks/count_jobs.py [--episodes 20]`` (needs valgrind; about two minutes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import callgrind

HERE = Path(__file__).resolve().parent
SIDES = ("ours", "transcription")


def play_episodes(side: str, episodes: int) -> None:
    """The measured process: import both sides, then play ``episodes`` SJF episodes of ``side``."""
    sys.path.insert(0, str(HERE))
    from bench_jobs import play_ours, play_reference

    from layersched.sim.tracks.jobs_v1.scenario import JobsScenario

    play = play_ours if side == "ours" else play_reference
    scenario = JobsScenario()
    for seed in range(episodes):
        play(scenario, seed)


def decisions(episodes: int) -> int:
    sys.path.insert(0, str(HERE))
    from bench_jobs import play_ours

    from layersched.sim.tracks.jobs_v1.scenario import JobsScenario

    return sum(play_ours(JobsScenario(), seed)[0] for seed in range(episodes))


def instructions(side: str, episodes: int) -> int:
    """Instructions callgrind counts for ``play_episodes(side, episodes)`` in a fresh interpreter."""
    return callgrind.instructions(__file__, ["--child", side, str(episodes)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=20, help="SJF episodes (seeds 0..N-1) at the default rate")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "EPISODES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        play_episodes(args.child[0], int(args.child[1]))
        return
    if args.episodes < 1:
        parser.error(f"--episodes must be at least 1, got {args.episodes}")
    callgrind.require_valgrind()
    count = decisions(args.episodes)
    per_decision = {side: (instructions(side, args.episodes) - instructions(side, 0)) / count for side in SIDES}
    print(f"instructions per decision ({args.episodes} SJF episodes, {count} decisions):")
    print(f"  transcription          {per_decision['transcription']:10,.0f}")
    ratio = per_decision["transcription"] / per_decision["ours"]
    print(f"  simulator + SJF        {per_decision['ours']:10,.0f}   {ratio:.1f}x fewer")


if __name__ == "__main__":
    main()
