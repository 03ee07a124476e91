"""Run a policy on evaluation-set episodes for ``layersched validate``, in two places.

1. A child process of ours (``run_in_subprocess``): imports the policy, runs the track's contract check on a fresh
   episode and times every decision of the first episode in-process. The student's module may crash, hang, print
   or change global state; none of it takes down or skews the CLI. Results stream as JSON lines on a private file
   descriptor (the policy's own prints go to stderr, of which the parent keeps the tail). The child sees the
   bundle's files alone (``stage_bundle``, as the server unpacks them) and starts in an empty folder, so nothing
   beside a bundle changes what it or the policy imports. It keeps the server's per-decision deadline and episode
   budget (``_Watchdog``) and says how far an episode got twice a second.
2. The worker's own sandbox harness (``run_in_worker_sandbox``: ``layersched.worker.sandbox.runner.open_sandbox``
   with the ``process`` backend): every scored episode, plus the first one again to check that the actions reproduce,
   exactly as the server drives them (a replica env that sees no future task, one fork per episode, the same seeds
   and decision deadline). If the worker package cannot be imported, the child runs the episodes itself and says so.

The child plays every episode as the sandbox does (``play_episode``): the evaluation set's track gives the trusted
simulator, which checks each reply and keeps the score, and the replica, whose view is all the policy sees and is
the true state at every decision whatever the policy wrote to it. So a policy sees here what it sees on the server.

Child usage (internal): ``python -m layersched.sdk.localrun`` with a JSON request on stdin.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import json
import logging
import os
import queue
import random
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from layersched.sdk.bundle import ENTRY_POINT, Bundle
from layersched.sim.episodes import Split
from layersched.sim.tracks import Replica, Track, TrustedSimulator
from layersched.sim.tracks.play import play_episode

STDERR_TAIL_BYTES = 16 * 1024
HEARTBEAT_S = 0.5  # how often the child says how far its episode got (the CLI's bar moves with it)
WATCH_S = 0.05  # how often the child's watchdog looks at the running decision
# How long past the deadline the parent waits for a word from a child whose watchdog should have ended it: a policy
# stuck in C code that holds the GIL starves the watchdog too, and then the parent ends it.
SILENCE_GRACE_S = 10.0
EXIT_TIMEOUT = 3
# What the progress line says the contract check has (the lab track's check plays 5; the interface says "a few").
CONTRACT_DECISIONS = 5


@dataclass(frozen=True)
class RunRequest:
    """What the child needs: the entry point, the evaluation set (a file, or None for the built-in sample)."""

    entry_point: str
    bundle_root: str
    bundle_sha256: str
    evalset_path: str | None
    deadline_s: float
    episode_s: float  # the server's wall budget of one episode
    startup_s: float  # ... of the policy's import
    submission_s: float  # ... of the whole run
    max_episodes: int | None = None
    all_episodes: bool = True  # False: only the timed first episode (the worker's harness scores the rest)
    # The split whose episodes to play (None: both; ``validate --report`` and ``replay`` draw private ones too: the
    # sample's seeds are public in both splits), and ``only`` one episode, as [scenario, episode id].
    split: Split | None = "public"
    only: list[str] | None = None
    # The module that defines the set's track (``layersched.sim.tracks.track_module``): the child is a fresh
    # process, which knows only the built-in tracks until it imports one an organiser registered.
    track_module: str | None = None


@dataclass
class RunOutcome:
    """Everything the child reported, plus the tail of its stderr and how it ended."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    stderr_tail: str = ""
    returncode: int | None = None
    killed_after_s: float | None = None
    killed_why: str = ""  # the server's words for the budget the child overran, when the parent had to end it


def stage_bundle(bundle: Bundle, into: Path) -> Path:
    """Copy the bundle's files alone into the new folder ``into``, as the server unpacks them (a single file as
    ``policy.py``); returns ``into``. What lies beside a bundle on disk is not in it, so it must not be importable."""
    into.mkdir(parents=True)
    if bundle.source.is_file():
        (into / ENTRY_POINT).write_bytes(bundle.data)
        return into
    for name in bundle.files:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(bundle.root / name, target)
    return into


def staged_request(bundle: Bundle, into: Path, evalset_path: Path, limits: Any, **options: Any) -> RunRequest:
    """Stage ``bundle`` in ``into/bundle`` (``stage_bundle``) and the request of a child that runs it on the set at
    ``evalset_path`` under ``limits`` (a ``SandboxLimits``: the server's budgets); ``options`` are the request's other
    fields."""
    staged = stage_bundle(bundle, into / "bundle")
    return RunRequest(
        entry_point=str(staged / ENTRY_POINT),
        bundle_root=str(staged),
        bundle_sha256=bundle.sha256,
        evalset_path=str(evalset_path),
        deadline_s=limits.decision_seconds,
        episode_s=limits.episode_seconds,
        startup_s=limits.startup_seconds,
        submission_s=limits.submission_seconds,
        **options,
    )


def run_in_subprocess(
    request: RunRequest,
    *,
    workdir: Path,
    on_message: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutcome:
    """Start the child in ``workdir`` (an empty folder: ``-m`` puts it first on the child's ``sys.path``), feed it
    ``request``, relay its messages; end it if its import overruns the startup budget or it falls silent."""
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, LAYERSCHED_RESULT_FD=str(write_fd), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "layersched.sdk.localrun"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(write_fd,),
        env=env,
        cwd=workdir,
    )
    os.close(write_fd)
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(json.dumps(request.__dict__).encode())
    proc.stdin.close()

    lines: queue.Queue[str | None] = queue.Queue()
    tail: collections.deque[bytes] = collections.deque()
    tail_size = [0]

    def read_results() -> None:
        with os.fdopen(read_fd, "r", encoding="utf-8") as fh:
            for line in fh:
                lines.put(line)
        lines.put(None)

    stderr = proc.stderr

    def read_stderr() -> None:
        for chunk in iter(lambda: os.read(stderr.fileno(), 4096), b""):
            tail.append(chunk)
            tail_size[0] += len(chunk)
            while tail_size[0] > STDERR_TAIL_BYTES and len(tail) > 1:
                tail_size[0] -= len(tail.popleft())

    readers = [threading.Thread(target=read_results, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
    for t in readers:
        t.start()
    # The server's budgets: the import gets the startup budget; after it the child's watchdog ends an overrun
    # decision itself and speaks twice a second, so silence past the deadline means it is stuck where it cannot.
    outcome = RunOutcome()
    started = time.monotonic()
    imported = False
    last_word = started
    while True:
        now = time.monotonic()
        if imported:
            left = min(last_word + request.deadline_s + SILENCE_GRACE_S, started + request.submission_s) - now
            why = f"no action within the per-decision deadline of {request.deadline_s:g} s"
            if started + request.submission_s <= last_word + request.deadline_s + SILENCE_GRACE_S:
                why = f"submission wall budget of {request.submission_s:g} s exhausted"
        else:
            left = started + request.startup_s - now
            why = f"policy import did not finish within {request.startup_s:g} s"
        try:
            line = lines.get(timeout=max(left, 0.01))
        except queue.Empty:
            proc.kill()
            outcome.killed_after_s = time.monotonic() - started
            outcome.killed_why = why
            break
        if line is None:
            break
        last_word = time.monotonic()
        try:
            message = json.loads(line)
        except ValueError:
            continue  # cannot happen from our child; never trust it blindly anyway
        imported = imported or message.get("kind") == "imported"
        outcome.messages.append(message)
        if on_message is not None:
            on_message(message)
    outcome.returncode = proc.wait()
    for t in readers:
        t.join(timeout=5)
    stderr.close()
    outcome.stderr_tail = b"".join(tail).decode("utf-8", "replace")
    return outcome


# ---------------------------------------------------------------------------------------------- the child


class _Watchdog:
    """The server's per-decision deadline and episode budget, kept inside the child.

    The policy's calls go through ``decide``, which times them. A thread of its own ends the process with a
    ``timeout`` message in the server's words as soon as a running decision or episode overruns, so a slow policy
    fails within seconds as on the server instead of after a whole episode of slow decisions; a decision that
    returns over the deadline before the thread saw it (a busy machine) ends it the same way. The thread also sends
    ``progress`` (the running episode and its step) every ``HEARTBEAT_S``.
    """

    def __init__(self, send: Callable[..., None], *, deadline_s: float, episode_s: float) -> None:
        self.times: list[float] = []  # the current episode's decision times
        self._send = send
        self._deadline_s = deadline_s
        self._episode_s = episode_s
        self._where = ""
        self._of = 0
        self._decision_started: float | None = None
        self._episode_started: float | None = None
        self._firing = threading.Lock()  # taken once, never given back: the first timeout ends the process
        threading.Thread(target=self._watch, name="layersched-watchdog", daemon=True).start()

    def begin(self, where: str, decisions: int) -> None:
        """An episode (or the contract check) starts: ``where`` names it in messages."""
        self.times.clear()
        self._where, self._of = where, decisions
        self._episode_started = time.perf_counter()

    def end(self) -> None:
        self._episode_started = None

    def decide(self, policy: Callable[..., Any], *args: Any) -> Any:
        """``policy(*args)`` (the track's arguments, as its replica passes them), timed."""
        started = time.perf_counter()
        self._decision_started = started
        try:
            return policy(*args)
        finally:
            took = time.perf_counter() - started
            self._decision_started = None
            if took > self._deadline_s:
                self._fire(self._late(len(self.times)), took)
            self.times.append(took)

    def _late(self, step: int) -> str:
        return f"step {step}: no action within the per-decision deadline of {self._deadline_s:g} s"

    def _watch(self) -> None:
        last_beat = float("-inf")
        while True:
            time.sleep(WATCH_S)
            now = time.perf_counter()
            decision, episode, step = self._decision_started, self._episode_started, len(self.times)
            if episode is None:
                continue
            if decision is not None and now - decision > self._deadline_s:
                self._fire(self._late(step), now - decision)
            if now - episode > self._episode_s:
                self._fire(f"step {step}: episode wall budget of {self._episode_s:g} s exhausted", 0.0)
            if now - last_beat >= HEARTBEAT_S:
                self._send(kind="progress", where=self._where, step=step, decisions=self._of)
                last_beat = now

    def _fire(self, message: str, took: float) -> None:
        self._firing.acquire()
        times = [*self.times, took] if took else list(self.times)
        stats = {"decisions": len(times), "time_mean": sum(times) / len(times), "time_max": max(times)} if times else {}
        self._send(kind="timeout", where=self._where, message=message, **stats)
        os._exit(EXIT_TIMEOUT)  # the policy's thread may be anywhere: nothing else of this process matters now


def default_sample_path() -> Path:
    """The public sample set the server's public board scores on by default, shipped in ``layersched.sim``."""
    from layersched.sim.evalset import SAMPLE_PATH

    return SAMPLE_PATH


def sample_evalset(name_or_path: str | None) -> Any:
    """The evaluation set to validate on: a built-in set's name or a file; by default the public sample."""
    from layersched.sim.evalset import evalset_file, load_evalset

    return load_evalset(evalset_file(name_or_path if name_or_path is not None else "sample"))


def _seed_globals(seed: int) -> None:
    """As the sandbox harness does (layersched.worker.sandbox.harness.seed_globals), so local runs match it."""
    import numpy as np

    random.seed(seed)
    np.random.seed([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF])
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def _load_policy(entry: Path, root: Path) -> Callable[..., Any]:
    sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("policy", entry)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {entry}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["policy"] = module
    spec.loader.exec_module(module)
    if not hasattr(module, "policy"):
        raise AttributeError(f"{entry.name} defines no `policy`")
    fn: Callable[..., Any] = module.policy
    return fn


class _Sides:
    """A scenario's trusted simulator and replica, built once and reused for each of its episodes (as the worker
    builds its simulator per scenario and the sandbox its replica)."""

    def __init__(self, track: Track) -> None:
        self._track = track
        self._by_hash: dict[str, tuple[TrustedSimulator, Replica]] = {}

    def of(self, scenario: Any, scenario_hash: str) -> tuple[TrustedSimulator, Replica]:
        sides = self._by_hash.get(scenario_hash)
        if sides is None:
            sides = self._by_hash[scenario_hash] = (self._track.simulator(scenario), self._track.replica(scenario))
        return sides


def _child_main(out: TextIO) -> int:
    from layersched.sdk.checks import check_policy
    from layersched.sdk.errors import PolicyCheckError
    from layersched.sim.episodes import policy_seed, trace_hash
    from layersched.sim.errors import PolicyError
    from layersched.sim.tracks import get_track, load_track_module

    lock = threading.Lock()  # the watchdog's thread sends too

    def send(**message: Any) -> None:
        with lock:
            out.write(json.dumps(message) + "\n")
            out.flush()

    req = RunRequest(**json.loads(sys.stdin.read()))
    if req.track_module is not None:
        load_track_module(req.track_module)
    evalset = sample_evalset(req.evalset_path)
    track = get_track(evalset.track)
    jobs = select_jobs(evalset.jobs(req.split), req.only)
    if req.max_episodes is not None:
        jobs = jobs[: req.max_episodes]
    send(kind="plan", episodes=len(jobs))

    _seed_globals(0)
    t0 = time.perf_counter()
    try:
        policy = _load_policy(Path(req.entry_point), Path(req.bundle_root))
    except BaseException as exc:  # the sandbox reports any import failure as import_error: so do we
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        send(kind="import_error", message=last, traceback=traceback.format_exc())
        return 1
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)  # the sandbox runs torch single-threaded: time it the same way
    send(kind="imported", seconds=time.perf_counter() - t0)
    watchdog = _Watchdog(send, deadline_s=req.deadline_s, episode_s=req.episode_s)

    try:
        watchdog.begin("the contract check", CONTRACT_DECISIONS)
        check_policy(policy, jobs[0].scenario, track=track.id, decide=watchdog.decide)
        watchdog.end()
        send(kind="contract", ok=True, message=f"contract: policy{track.policy_arguments} returned valid actions")
    except PolicyCheckError as exc:
        send(kind="contract", ok=False, message=str(exc))
        return 1
    except Exception as exc:
        send(
            kind="contract",
            ok=False,
            message=f"policy raised {type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(),
        )
        return 1

    times = watchdog.times
    sides = _Sides(track)
    # A content hash may serialise a whole catalog: once per scenario that is played.
    hashes = {
        name: track.scenario_hash(scenario) for name, scenario in {j.scenario_name: j.scenario for j in jobs}.items()
    }

    def timed(*args: Any) -> Any:
        return watchdog.decide(policy, *args)

    def run(job: Any) -> dict[str, Any]:
        seed = policy_seed(req.bundle_sha256, hashes[job.scenario_name], job.episode.id)
        _seed_globals(seed)
        base = {"scenario": job.scenario_name, "episode": job.episode.id}
        watchdog.begin(f"episode {job.scenario_name}/{job.episode.id}", track.decisions(job.scenario) or 0)
        simulator, replica = sides.of(job.scenario, hashes[job.scenario_name])
        try:
            actions, metrics = play_episode(simulator, replica, timed, job.episode.workload_rng(), random.Random(seed))
        except PolicyError as exc:
            return {**base, "status": "invalid_action", "message": str(exc)}
        except Exception as exc:
            return {
                **base,
                "status": "crash",
                "message": f"step {len(times) - 1}: {type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
            }
        finally:
            watchdog.end()
        return {
            **base,
            "status": "ok",  # a decision over the deadline ended the process (the watchdog)
            "message": "",
            **metric_values(track, metrics),
            "trace_hash": trace_hash(actions),
            "actions": actions,  # the student's own run of a public episode: what `--report` and `replay` draw
            "decisions": len(times),
            "time_mean": sum(times) / len(times),
            "time_max": max(times),
        }

    if not req.all_episodes:
        send(kind="timing", **run(jobs[0]))
        return 0
    first: dict[str, Any] | None = None
    for job in jobs:
        record = run(job)
        first = first or record
        send(kind="episode", **record)
    if first is not None and first["status"] == "ok":
        again = run(jobs[0])
        send(kind="repeat", same=again.get("trace_hash") == first["trace_hash"], episode=first["episode"])
    return 0


def select_jobs(jobs: list[Any], only: list[str] | None) -> list[Any]:
    """``jobs``, or of them the one episode ``only`` names ([scenario, episode id]); ``ConfigError`` if none is."""
    if only is None:
        return jobs
    chosen = [j for j in jobs if [j.scenario_name, j.episode.id] == list(only)]
    if not chosen:
        from layersched.sdk.errors import ConfigError

        known = ", ".join(f"{j.scenario_name}/{j.episode.id}" for j in jobs)
        raise ConfigError(f"no episode {'/'.join(only)} in the evaluation set (its episodes: {known})")
    return chosen


def metric_values(track: Track, metrics: Any) -> dict[str, float]:
    """A metrics record's values by name, as episode messages carry them (``Track.metric_specs``)."""
    return {spec.name: getattr(metrics, spec.name) for spec in track.metric_specs}


def _child() -> int:
    fd = int(os.environ["LAYERSCHED_RESULT_FD"])
    out = os.fdopen(fd, "w", encoding="utf-8")
    # The policy's prints must not mix with our results: fd 1 becomes a copy of stderr.
    os.dup2(2, 1)
    try:
        return _child_main(out)
    finally:
        out.close()


@contextlib.contextmanager
def _ticking(emit: Callable[[dict[str, Any]], None], where: str) -> Iterator[None]:
    """``progress`` messages with the seconds spent so far, every ``HEARTBEAT_S`` while the block runs (the harness
    tells nothing before an episode ends, and a slow one may take minutes)."""
    stop = threading.Event()
    started = time.monotonic()

    def tick() -> None:
        while not stop.wait(HEARTBEAT_S):
            emit({"kind": "progress", "where": where, "seconds": time.monotonic() - started})

    thread = threading.Thread(target=tick, name="layersched-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def worker_sandbox_available() -> bool:
    """Whether the worker's sandbox runner is installed (it is part of the ``layersched`` distribution)."""
    try:
        import layersched.worker.sandbox.runner  # noqa: F401
    except ImportError:
        return False
    return True


def run_in_worker_sandbox(
    bundle_path: Path,
    bundle_sha256: str,
    jobs: list[Any],
    *,
    track: Track,
    limits: Any,
    on_message: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every job (of ``track``'s scenarios) through the worker's harness (process backend) under ``limits`` (a
    ``SandboxLimits``), then the first again; messages as the child's, and ``progress`` with the running episode's
    seconds every ``HEARTBEAT_S``."""
    from layersched.sim.episodes import policy_seed
    from layersched.worker.sandbox.outcomes import EpisodeJob
    from layersched.worker.sandbox.runner import open_sandbox

    messages: list[dict[str, Any]] = []

    def emit(message: dict[str, Any]) -> None:
        messages.append(message)
        if on_message is not None:
            on_message(message)

    hashes: dict[str, str] = {}

    def run(session: Any, job: Any) -> dict[str, Any]:
        if job.scenario_name not in hashes:  # a content hash serialises the whole catalog: once per scenario
            hashes[job.scenario_name] = track.scenario_hash(job.scenario)
        seed = policy_seed(bundle_sha256, hashes[job.scenario_name], job.episode.id)
        with _ticking(emit, f"episode {job.scenario_name}/{job.episode.id}"):
            outcome = session.run_episode(EpisodeJob(job.scenario_name, job.scenario, job.episode, seed, track.id))
        record: dict[str, Any] = {
            "scenario": outcome.scenario_name,
            "episode": outcome.episode_id,
            "status": outcome.status,
            "message": outcome.message,
            "trace_hash": outcome.trace_hash,
            "actions": list(outcome.actions),
            "stdout": outcome.stdout,
            "stderr": outcome.stderr,
        }
        if outcome.metrics is not None:
            record.update(metric_values(track, outcome.metrics))
        return record

    # The process backend warns that it is weaker than docker: true, and irrelevant on the student's own machine.
    backend_log = logging.getLogger("layersched.worker.sandbox.process_backend")
    level = backend_log.level
    backend_log.setLevel(logging.ERROR)
    try:
        with contextlib.closing(
            open_sandbox(
                bundle_path,
                backend="process",
                limits=limits,
                # On the student's own machine the keys are in the student's file: nothing to protect.
                allow_process_for_hidden=True,
            )
        ) as session:
            first: dict[str, Any] | None = None
            for job in jobs:
                record = run(session, job)
                first = first or record
                emit({"kind": "episode", **record})
            if first is not None and first["status"] == "ok":
                again = run(session, jobs[0])
                emit(
                    {"kind": "repeat", "same": again["trace_hash"] == first["trace_hash"], "episode": first["episode"]}
                )
    finally:
        backend_log.setLevel(level)
    return messages


if __name__ == "__main__":
    sys.exit(_child())
