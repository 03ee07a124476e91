"""Cost of the sandbox: the same episodes in-process and through the docker sandbox, for Greedy and a torch MLP.

    python benchmarks/bench_sandbox.py [--episodes 10] [--tasks 500] [--runs 5] [--backend docker]

Per policy and run: container start (until the harness connects), policy import (as timed by the harness), the
raw round trip of the channel (a tiny ping frame, same Unix socket, same run), and the episodes' wall time in both
places. The per-decision overhead is (sandbox episode time - in-process episode time) / decisions. Every figure is
the median over ``--runs`` runs. The issue's goals: overhead under 2x the channel's round trip, and a whole
10-episode Greedy evaluation (container start included) within 3x of in-process.

Needs the engine and the image (worker/sandbox/start_dockerd.sh, worker/sandbox/build_image.sh).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import socket
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layersched.sim.env import ClusterEnv
from layersched.sim.episode import run_episode
from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.scenario import Scenario
from layersched.worker.harness import configure_torch, seed_globals
from layersched.worker.runner import EpisodeJob, open_sandbox

POLICIES = Path(__file__).resolve().parents[1] / "tests" / "worker" / "policies"


@dataclass
class Run:
    inproc_seconds: float
    sandbox_open_seconds: float
    container_start_seconds: float
    import_seconds: float
    rtt_seconds: float
    raw_rtt_seconds: float
    sandbox_seconds: float
    close_seconds: float
    decisions: int

    @property
    def overhead_per_decision(self) -> float:
        return (self.sandbox_seconds - self.inproc_seconds) / self.decisions

    @property
    def whole_sandbox(self) -> float:
        return self.sandbox_open_seconds + self.sandbox_seconds + self.close_seconds


def raw_round_trip(n: int = 2000) -> float:
    """Median round trip of one byte over a Unix socket pair to a forked echo process: the kernel's own cost."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        a.close()
        while data := b.recv(1):
            b.sendall(data)
        os._exit(0)
    b.close()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        a.sendall(b"x")
        a.recv(1)
        times.append(time.perf_counter() - t)
    a.close()
    os.waitpid(pid, 0)
    return statistics.median(times)


def load_policy(bundle: Path) -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location(f"bench_{bundle.name}", bundle / "policy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    seed_globals(0)
    spec.loader.exec_module(module)
    configure_torch()  # single-threaded and deterministic, as in the sandbox: compare the channel, not torch settings
    return module.policy  # type: ignore[no-any-return]


def measure(bundle: Path, scenario: Scenario, episodes: list[EpisodeSpec], backend: str) -> Run:
    policy = load_policy(bundle)
    t0 = time.perf_counter()
    with open_sandbox(bundle, backend=backend) as session:
        opened = time.perf_counter() - t0
        if session.startup.status is not None:
            sys.exit(f"sandbox failed to start: {session.startup.status}: {session.startup.message}")
        jobs = [
            EpisodeJob("lab", scenario, ep, policy_seed(session.bundle_sha256, scenario.content_hash, ep.id))
            for ep in episodes
        ]
        inproc = 0.0
        expected = []
        for job in jobs:
            seed_globals(job.policy_seed)
            t = time.perf_counter()
            result = run_episode(
                ClusterEnv(scenario), policy, job.episode.workload_rng(), random.Random(job.policy_seed)
            )
            inproc += time.perf_counter() - t
            expected.append(result.trace_hash)
        rtt = statistics.median(session.ping(500))
        raw = raw_round_trip()
        t = time.perf_counter()
        outcomes = [session.run_episode(job) for job in jobs]
        sandboxed = time.perf_counter() - t
        for outcome, trace in zip(outcomes, expected, strict=True):
            if outcome.status != "ok" or outcome.trace_hash != trace:
                sys.exit(f"{bundle.name}: sandbox and in-process disagree: {outcome}")
        start, imported = session.container_start_seconds, session.import_seconds
        t = time.perf_counter()
    closed = time.perf_counter() - t
    return Run(inproc, opened, start, imported, rtt, raw, sandboxed, closed, sum(o.n_actions for o in outcomes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backend", choices=["docker", "process"], default="docker")
    args = parser.parse_args()
    scenario = Scenario(n_tasks=args.tasks)
    episodes = [EpisodeSpec(f"bench-{i}", seed=i) for i in range(args.episodes)]
    print(f"{args.episodes} episodes x {args.tasks} tasks, {args.backend} sandbox, medians of {args.runs} runs")
    header = (
        f"{'policy':<10} {'in-proc s':>9} {'sandbox s':>9} {'eps/in':>6} {'whole s':>8} {'whole/in':>8} "
        f"{'start s':>7} {'import s':>8} {'close s':>7} {'raw us':>6} {'rtt us':>6} {'ovh us':>6} {'ovh/rtt':>7}"
    )
    print(header)
    print("-" * len(header))
    for name in ("greedy", "torch_mlp"):
        runs = [measure(POLICIES / name, scenario, episodes, args.backend) for _ in range(args.runs)]

        def med(f: Callable[[Run], float], runs: list[Run] = runs) -> float:
            return statistics.median(f(r) for r in runs)

        inproc, sandboxed = med(lambda r: r.inproc_seconds), med(lambda r: r.sandbox_seconds)
        whole, rtt = med(lambda r: r.whole_sandbox), med(lambda r: r.rtt_seconds)
        overhead = med(lambda r: r.overhead_per_decision)
        print(
            f"{name:<10} {inproc:>9.3f} {sandboxed:>9.3f} {sandboxed / inproc:>6.2f} {whole:>8.3f} "
            f"{whole / inproc:>8.2f} {med(lambda r: r.container_start_seconds):>7.3f} "
            f"{med(lambda r: r.import_seconds):>8.3f} {med(lambda r: r.close_seconds):>7.3f} "
            f"{med(lambda r: r.raw_rtt_seconds) * 1e6:>6.1f} {rtt * 1e6:>6.1f} {overhead * 1e6:>6.1f} "
            f"{overhead / rtt:>7.2f}"
        )
    print("in-proc / sandbox: the episodes only (eps/in their ratio); whole: sandbox open (container start + import)")
    print("+ episodes + close; raw: 1-byte Unix socket echo between two host processes; rtt: one framed ping")
    print("through the sandbox's channel; ovh: per-decision overhead of the sandbox over in-process. Medians.")


if __name__ == "__main__":
    main()
