"""Cost of the sandbox: the same episodes in-process and through the docker sandbox, for Greedy and a torch MLP.

    python benchmarks/bench_sandbox.py [--episodes 10] [--tasks 500] [--runs 5] [--backend docker] [--poll-us 0]
                                       [--image layersched-sandbox:<tag>]

Per policy and run, in one process and one run:

* in-process: the episodes with the trusted simulator calling the policy directly (the policy's calls timed too);
* cold: ``open_sandbox`` starting a fresh container (start until the harness connects, then the policy's import as
  timed by the harness), the raw round trip of the channel (a tiny ping frame, same Unix socket), the same episodes,
  and ``close`` (the container removed before it returns);
* warm (docker only): the same evaluation in a container claimed from a warm pool of one that was filled before
  the timing starts. Timed: the claim, the import, the episodes and ``close``. Not timed: the removal of the used
  container and the start of the next pooled one, which run in the pool's background threads meanwhile (their
  CPU is shared with the timed evaluation, as in a worker; the benchmark waits for them between runs).

The per-decision overhead is (sandbox episode time - in-process episode time) / decisions, measured on the cold
sandbox. It includes each episode's start and end in the sandbox (fork, connect, exit), spread over its decisions;
``steady`` is the same without them, the cost of a decision once the episode runs (container start, import and the
episode's start and end are fixed costs the table shows on their own). To tell the channel's cost from the policy
computing slower in the sandbox, the harness times the policy's calls inside the sandbox and reports them (``pol
sb``) next to the same calls timed in-process (``pol in``); ``repl`` is the sandbox's replica update per decision.
Every figure is the median over ``--runs`` runs. The issue's goals: overhead under 2x the channel's round trip, and
a whole 10-episode Greedy evaluation within 3x of in-process.

Needs the engine and the image (worker/sandbox/start_dockerd.sh, worker/sandbox/build_image.sh).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
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

from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.episode import run_episode
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.worker.sandbox.episode_process import configure_torch, seed_globals
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome
from layersched.worker.sandbox.pool import SandboxPool
from layersched.worker.sandbox.runner import SandboxSession, open_sandbox

POLICIES = Path(__file__).resolve().parents[1] / "tests" / "worker" / "policies"
NAN = float("nan")


@dataclass
class Whole:
    """One whole evaluation in the sandbox: open (start or claim, then import), episodes, close."""

    open_seconds: float
    start_seconds: float
    import_seconds: float
    episodes_seconds: float
    close_seconds: float
    outcomes: list[EpisodeOutcome]

    @property
    def total(self) -> float:
        return self.open_seconds + self.episodes_seconds + self.close_seconds


@dataclass
class Run:
    inproc_seconds: float
    inproc_policy_seconds: float
    rtt_seconds: float
    raw_rtt_seconds: float
    raw_poll_rtt_seconds: float  # NaN without polling
    cold: Whole
    warm: Whole | None
    decisions: int

    @property
    def overhead_per_decision(self) -> float:
        return (self.cold.episodes_seconds - self.inproc_seconds) / self.decisions

    def sandbox_total(self, field: str) -> float:
        """The sum of an ``EpisodeTiming`` field over the cold sandbox's episodes (NaN if one did not report)."""
        timings = [o.timing for o in self.cold.outcomes]
        if any(t is None for t in timings):
            return NAN
        return sum(getattr(t, field) for t in timings)

    def sandbox_per_decision(self, field: str) -> float:
        return self.sandbox_total(field) / self.decisions

    @property
    def episode_fixed_seconds(self) -> float:
        """Per episode: its start (fork, connect) and end (exit) in the sandbox, which in-process has not."""
        fixed = self.sandbox_total("setup_seconds") + self.sandbox_total("end_seconds")
        return fixed / len(self.cold.outcomes)

    @property
    def episode_fixed_per_decision(self) -> float:
        return self.episode_fixed_seconds * len(self.cold.outcomes) / self.decisions

    @property
    def steady_overhead_per_decision(self) -> float:
        """The overhead of a decision once its episode runs: without the episode's start and end."""
        return self.overhead_per_decision - self.episode_fixed_per_decision


def _read_byte(sock: socket.socket, poll_seconds: float) -> bytes:
    """One byte; first looked for without sleeping for up to ``poll_seconds`` (as ``FrameReader._poll`` does)."""
    until = time.perf_counter() + poll_seconds
    while time.perf_counter() < until:
        try:
            return sock.recv(1, socket.MSG_DONTWAIT)
        except BlockingIOError:
            os.sched_yield()
    return sock.recv(1)


def raw_round_trip(n: int = 2000, poll_seconds: float = 0.0) -> float:
    """Median round trip of one byte over a Unix socket pair to a forked echo process: the kernel's own cost.
    With ``poll_seconds``, both ends poll for the byte before they sleep, as the sandbox's channel then does."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        a.close()
        while data := _read_byte(b, poll_seconds):
            b.sendall(data)
        os._exit(0)
    b.close()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        a.sendall(b"x")
        _read_byte(a, poll_seconds)
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


def jobs_for(session: SandboxSession, scenario: Scenario, episodes: list[EpisodeSpec]) -> list[EpisodeJob]:
    return [
        EpisodeJob("lab", scenario, ep, policy_seed(session.bundle_sha256, scenario.content_hash, ep.id))
        for ep in episodes
    ]


def evaluate(
    bundle: Path,
    scenario: Scenario,
    episodes: list[EpisodeSpec],
    backend: str,
    pool: SandboxPool | None,
    limits: SandboxLimits,
    image: str | None,
    before_episodes: Callable[[SandboxSession, list[EpisodeJob]], None] = lambda s, j: None,
) -> Whole:
    """One whole evaluation; ``before_episodes`` runs untimed between the open and the episodes."""
    t0 = time.perf_counter()
    session = open_sandbox(bundle, backend=backend, pool=pool, limits=limits, image=image)  # type: ignore[arg-type]
    with session:
        opened = time.perf_counter() - t0
        if session.startup.status is not None:
            sys.exit(f"sandbox failed to start: {session.startup.status}: {session.startup.message}")
        if session.pooled != (pool is not None):
            sys.exit(f"{bundle.name}: expected a {'pooled' if pool else 'fresh'} sandbox")
        jobs = jobs_for(session, scenario, episodes)
        before_episodes(session, jobs)
        t = time.perf_counter()
        outcomes = [session.run_episode(job) for job in jobs]
        ran = time.perf_counter() - t
        start, imported = session.container_start_seconds, session.import_seconds
        t = time.perf_counter()
    closed = time.perf_counter() - t
    return Whole(opened, start, imported, ran, closed, outcomes)


def measure(
    bundle: Path,
    scenario: Scenario,
    episodes: list[EpisodeSpec],
    backend: str,
    pool: SandboxPool | None,
    limits: SandboxLimits,
    image: str | None,
) -> Run:
    policy = load_policy(bundle)
    policy_time = [0.0]

    def timed(env: ClusterEnv, task: Any, rng: random.Random) -> Any:
        t = time.perf_counter()
        action = policy(env, task, rng)
        policy_time[0] += time.perf_counter() - t
        return action

    expected: list[str] = []
    inproc = [0.0]
    rtts: list[float] = []

    def in_process(session: SandboxSession, jobs: list[EpisodeJob]) -> None:
        # Between the open and the episodes, so that both see the same machine state (and the same jobs).
        for job in jobs:
            seed_globals(job.policy_seed)
            t = time.perf_counter()
            rng = random.Random(job.policy_seed)
            result = run_episode(ClusterEnv(scenario), timed, job.episode.workload_rng(), rng)
            inproc[0] += time.perf_counter() - t
            expected.append(result.trace_hash)
        rtts.extend(session.ping(500))

    cold = evaluate(bundle, scenario, episodes, backend, None, limits, image, in_process)
    raw = raw_round_trip()
    raw_poll = raw_round_trip(poll_seconds=limits.poll_seconds) if limits.poll_seconds > 0 else NAN
    warm = None
    if pool is not None:
        if not pool.wait_ready(120):
            sys.exit("the warm pool did not fill")
        warm = evaluate(bundle, scenario, episodes, backend, pool, limits, image)
        pool.drain()  # the used container's removal, untimed: the next run starts from a quiet, full pool
        pool.wait_ready(120)
    for whole in (cold, warm):
        if whole is None:
            continue
        for outcome, trace in zip(whole.outcomes, expected, strict=True):
            if outcome.status != "ok" or outcome.trace_hash != trace:
                sys.exit(f"{bundle.name}: sandbox and in-process disagree: {outcome}")
    decisions = sum(o.n_actions for o in cold.outcomes)
    return Run(inproc[0], policy_time[0], statistics.median(rtts), raw, raw_poll, cold, warm, decisions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backend", choices=["docker", "process"], default="docker")
    parser.add_argument(
        "--poll-us",
        type=int,
        default=round(SandboxLimits().poll_seconds * 1e6),
        help="LAYERSCHED_SANDBOX_POLL_US for the sandboxes (default: the service's default)",
    )
    parser.add_argument(
        "--image",
        help="the docker sandbox's image (default: layersched-sandbox:latest); another checkout's tag, as "
        "build_image.sh prints it, compares its sandbox with this one's without retagging",
    )
    args = parser.parse_args()
    scenario = Scenario(n_tasks=args.tasks)
    episodes = [EpisodeSpec(f"bench-{i}", seed=i) for i in range(args.episodes)]
    limits = SandboxLimits(poll_seconds=args.poll_us * 1e-6)
    pool = SandboxPool(size=1, limits=limits, image=args.image) if args.backend == "docker" else None
    print(
        f"{args.episodes} episodes x {args.tasks} tasks, {args.backend} sandbox, poll {args.poll_us} us, "
        f"medians of {args.runs} runs"
    )
    results: dict[str, list[Run]] = {}
    try:
        for name in ("greedy", "torch_mlp"):
            results[name] = [
                measure(POLICIES / name, scenario, episodes, args.backend, pool, limits, args.image)
                for _ in range(args.runs)
            ]
    finally:
        if pool is not None:
            pool.close()

    def med(runs: list[Run], f: Callable[[Run], float]) -> float:
        values = [f(r) for r in runs]
        return NAN if any(math.isnan(v) for v in values) else statistics.median(values)

    print("\nper decision (cold sandbox's episodes vs in-process; us)")
    header = (
        f"{'policy':<10} {'in-proc s':>9} {'sandbox s':>9} {'eps/in':>6} {'raw':>6} {'rawp':>6} {'rtt':>6} {'ovh':>6} "
        f"{'ovh/rtt':>7} {'steady':>6} {'st/rtt':>6} {'pol in':>6} {'pol sb':>6} {'sb/in':>5} {'repl':>5} "
        f"{'ep ms':>5} {'ep/dec':>6}"
    )
    print(header)
    print("-" * len(header))
    for name, runs in results.items():
        inproc = med(runs, lambda r: r.inproc_seconds)
        sandboxed = med(runs, lambda r: r.cold.episodes_seconds)
        rtt, overhead = med(runs, lambda r: r.rtt_seconds), med(runs, lambda r: r.overhead_per_decision)
        pol_in = med(runs, lambda r: r.inproc_policy_seconds / r.decisions)
        pol_sb = med(runs, lambda r: r.sandbox_per_decision("policy_seconds"))
        steady = med(runs, lambda r: r.steady_overhead_per_decision)
        print(
            f"{name:<10} {inproc:>9.3f} {sandboxed:>9.3f} {sandboxed / inproc:>6.2f} "
            f"{med(runs, lambda r: r.raw_rtt_seconds) * 1e6:>6.1f} "
            f"{med(runs, lambda r: r.raw_poll_rtt_seconds) * 1e6:>6.1f} "
            f"{rtt * 1e6:>6.1f} {overhead * 1e6:>6.1f} "
            f"{overhead / rtt:>7.2f} {steady * 1e6:>6.1f} {steady / rtt:>6.2f} "
            f"{pol_in * 1e6:>6.1f} {pol_sb * 1e6:>6.1f} {pol_sb / pol_in:>5.2f} "
            f"{med(runs, lambda r: r.sandbox_per_decision('replica_seconds')) * 1e6:>5.1f} "
            f"{med(runs, lambda r: r.episode_fixed_seconds) * 1e3:>5.1f} "
            f"{med(runs, lambda r: r.episode_fixed_per_decision) * 1e6:>6.1f}"
        )
    print("raw: 1-byte Unix socket echo between two host processes; rawp: the same with both ends polling (only")
    print("with --poll-us); rtt: one framed ping through the sandbox's")
    print("channel; ovh: per-decision overhead of the sandbox over in-process; pol in / pol sb: the policy's own")
    print("call, timed in-process and (by the harness) inside the sandbox, sb/in their ratio; repl: the sandbox's")
    print("replica update; ep ms: per episode, the sandbox's start (fork, connect) and end (exit) of the episode")
    print("process, and ep/dec that spread over its decisions. The overhead includes pol sb - pol in and ep/dec;")
    print("steady is the overhead without ep/dec (a decision's cost once its episode runs), st/rtt its ratio.")

    for label, pick in (("cold: a fresh container", "cold"), ("warm: claimed from a filled pool", "warm")):
        if any(getattr(r, pick) is None for runs in results.values() for r in runs):
            continue
        print(f"\nwhole {args.episodes}-episode evaluation, {label} (s)")
        header = (
            f"{'policy':<10} {'in-proc':>7} {'start':>7} {'import':>7} {'episodes':>8} {'close':>7} "
            f"{'whole':>7} {'whole/in':>8}"
        )
        print(header)
        print("-" * len(header))
        for name, runs in results.items():
            inproc = med(runs, lambda r: r.inproc_seconds)
            wholes: list[Whole] = [getattr(r, pick) for r in runs]

            def wmed(f: Callable[[Whole], float], wholes: list[Whole] = wholes) -> float:
                return statistics.median(f(w) for w in wholes)

            whole = wmed(lambda w: w.total)
            print(
                f"{name:<10} {inproc:>7.3f} {wmed(lambda w: w.start_seconds):>7.3f} "
                f"{wmed(lambda w: w.import_seconds):>7.3f} {wmed(lambda w: w.episodes_seconds):>8.3f} "
                f"{wmed(lambda w: w.close_seconds):>7.3f} {whole:>7.3f} {whole / inproc:>8.2f}"
            )
    print("\nwhole: open (cold: container start + import; warm: claim from the pool + import) + episodes + close.")
    print("cold close removes the container before it returns; warm close hands it to the pool's background")
    print("removal, and the pool starts the next container in the background during the timed evaluation (its")
    print("CPU is shared with it, its wall time is not counted). start for warm: the claim's liveness checks.")


if __name__ == "__main__":
    main()
