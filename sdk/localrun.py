"""Run a policy on evaluation-set episodes for ``layersched validate``, in two places.

1. A child process of ours (``run_in_subprocess``): imports the policy, runs ``check_policy`` on a fresh episode
   and times every decision of the first episode in-process. The student's module may crash, hang, print or change
   global state; none of it takes down or skews the CLI. Results stream as JSON lines on a private file descriptor
   (the policy's own prints go to stderr, of which the parent keeps the tail). The child sees the bundle's files
   alone (``stage_bundle``, as the server unpacks them) and starts in an empty folder, so nothing beside a bundle
   changes what it or the policy imports.
2. The worker's own sandbox harness (``run_in_worker_sandbox``: ``layersched.worker.runner.open_sandbox`` with the
   ``process`` backend): every scored episode, plus the first one again to check that the actions reproduce,
   exactly as the server drives them (a replica env that sees no future task, one fork per episode, the same seeds
   and decision deadline). If the worker package cannot be imported, the child runs the episodes itself with
   ``layersched.sim.episode.run_episode`` and says so.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from layersched.sdk.bundle import ENTRY_POINT, Bundle

STDERR_TAIL_BYTES = 16 * 1024
IMPORT_BUDGET_S = 120.0


@dataclass(frozen=True)
class RunRequest:
    """What the child needs: the entry point, the evaluation set (a file, or None for the built-in sample)."""

    entry_point: str
    bundle_root: str
    bundle_sha256: str
    evalset_path: str | None
    deadline_s: float
    max_episodes: int | None = None
    all_episodes: bool = True  # False: only the timed first episode (the worker's harness scores the rest)


@dataclass
class RunOutcome:
    """Everything the child reported, plus the tail of its stderr and how it ended."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    stderr_tail: str = ""
    returncode: int | None = None
    killed_after_s: float | None = None


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


def run_in_subprocess(
    request: RunRequest,
    *,
    workdir: Path,
    total_episodes: int,
    n_tasks_max: int,
    on_message: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutcome:
    """Start the child in ``workdir`` (an empty folder: ``-m`` puts it first on the child's ``sys.path``), feed it
    ``request``, relay its messages; kill it if it overruns its wall budget."""
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
    # Generous: the per-decision deadline for every task, plus import time; a hang is killed, never waited out.
    budget = IMPORT_BUDGET_S + (total_episodes + 1) * n_tasks_max * request.deadline_s * 1.5
    outcome = RunOutcome()
    started = time.monotonic()
    while True:
        remaining = budget - (time.monotonic() - started)
        try:
            line = lines.get(timeout=max(remaining, 0.01))
        except queue.Empty:
            proc.kill()
            outcome.killed_after_s = time.monotonic() - started
            break
        if line is None:
            break
        try:
            message = json.loads(line)
        except ValueError:
            continue  # cannot happen from our child; never trust it blindly anyway
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


def default_sample_path() -> Path:
    """The public sample set the server's public board scores on by default, shipped in ``layersched.sim``."""
    from layersched.sim.evalset import SAMPLE_PATH

    return SAMPLE_PATH


def sample_evalset(name_or_path: str | None) -> Any:
    """The evaluation set to validate on: a built-in set's name or a file; by default the public sample."""
    from layersched.sim.evalset import evalset_file, load_evalset

    return load_evalset(evalset_file(name_or_path if name_or_path is not None else "sample"))


def _seed_globals(seed: int) -> None:
    """As the sandbox harness does (layersched.worker.harness.seed_globals), so local runs match it."""
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


def _child_main(out: TextIO) -> int:
    from layersched.sdk.checks import check_policy
    from layersched.sdk.errors import PolicyCheckError
    from layersched.sim.env import ClusterEnv
    from layersched.sim.episode import run_episode
    from layersched.sim.episodes import policy_seed
    from layersched.sim.errors import PolicyError

    def send(**message: Any) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    req = RunRequest(**json.loads(sys.stdin.read()))
    evalset = sample_evalset(req.evalset_path)
    jobs = evalset.jobs("public")
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

    try:
        check_policy(policy, ClusterEnv(jobs[0].scenario), seed=0)
        send(kind="contract", ok=True, message="contract: policy(env, task, rng) returned valid node indices")
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

    times: list[float] = []

    def timed(env: Any, task: Any, rng: random.Random) -> Any:
        start = time.perf_counter()
        try:
            return policy(env, task, rng)
        finally:
            times.append(time.perf_counter() - start)

    def run(job: Any) -> dict[str, Any]:
        seed = policy_seed(req.bundle_sha256, job.scenario.content_hash, job.episode.id)
        _seed_globals(seed)
        times.clear()
        base = {"scenario": job.scenario_name, "episode": job.episode.id}
        try:
            # The call site to swap for layersched.worker.runner's session.run_episode(EpisodeJob) later.
            result = run_episode(ClusterEnv(job.scenario), timed, job.episode.workload_rng(), random.Random(seed))
        except PolicyError as exc:
            return {**base, "status": "invalid_action", "message": str(exc)}
        except Exception as exc:
            return {
                **base,
                "status": "crash",
                "message": f"step {len(times) - 1}: {type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(),
            }
        slowest = max(times)
        status = "timeout" if slowest > req.deadline_s else "ok"
        m = result.metrics
        return {
            **base,
            "status": status,
            "message": f"slowest decision {slowest:.3f} s > deadline {req.deadline_s:g} s" if status != "ok" else "",
            "mean_completion": m.mean_completion,
            "p95_completion": m.p95_completion,
            "cloud_share": m.cloud_share,
            "trace_hash": result.trace_hash,
            "decisions": len(times),
            "time_mean": sum(times) / len(times),
            "time_max": slowest,
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


def _child() -> int:
    fd = int(os.environ["LAYERSCHED_RESULT_FD"])
    out = os.fdopen(fd, "w", encoding="utf-8")
    # The policy's prints must not mix with our results: fd 1 becomes a copy of stderr.
    os.dup2(2, 1)
    try:
        return _child_main(out)
    finally:
        out.close()


def worker_sandbox_available() -> bool:
    """Whether the worker's sandbox runner is installed (it is part of the ``layersched`` distribution)."""
    try:
        import layersched.worker.runner  # noqa: F401
    except ImportError:
        return False
    return True


def run_in_worker_sandbox(
    bundle_path: Path,
    bundle_sha256: str,
    jobs: list[Any],
    *,
    deadline_s: float,
    on_message: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Every job through the worker's harness (process backend), then the first again; messages as the child's."""
    from layersched.sim.episodes import policy_seed
    from layersched.worker.limits import SandboxLimits
    from layersched.worker.runner import EpisodeJob, open_sandbox

    messages: list[dict[str, Any]] = []

    def emit(message: dict[str, Any]) -> None:
        messages.append(message)
        if on_message is not None:
            on_message(message)

    def run(session: Any, job: Any) -> dict[str, Any]:
        seed = policy_seed(bundle_sha256, job.scenario.content_hash, job.episode.id)
        outcome = session.run_episode(EpisodeJob(job.scenario_name, job.scenario, job.episode, seed))
        record: dict[str, Any] = {
            "scenario": outcome.scenario_name,
            "episode": outcome.episode_id,
            "status": outcome.status,
            "message": outcome.message,
            "trace_hash": outcome.trace_hash,
            "stdout": outcome.stdout,
            "stderr": outcome.stderr,
        }
        if outcome.metrics is not None:
            record.update(
                mean_completion=outcome.metrics.mean_completion,
                p95_completion=outcome.metrics.p95_completion,
                cloud_share=outcome.metrics.cloud_share,
            )
        return record

    # The process backend warns that it is weaker than docker: true, and irrelevant on the student's own machine.
    backend_log = logging.getLogger("layersched.worker.process_backend")
    level = backend_log.level
    backend_log.setLevel(logging.ERROR)
    try:
        with contextlib.closing(
            open_sandbox(
                bundle_path,
                backend="process",
                limits=SandboxLimits(decision_seconds=deadline_s),
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
