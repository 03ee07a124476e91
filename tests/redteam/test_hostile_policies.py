"""Hostile policies against the docker sandbox and the real evaluation pipeline (issue 8, part 1).

Every policy of ``tests/redteam/policies/`` runs in a real container of the real image. Each must end with its
status and message within its deadline, leave nothing behind on the host (``healthy_host``: no container, process
or run directory of ours, the host's /tmp not filled), and the next submission (Greedy, in a fresh sandbox) must be
evaluated exactly as before. A representative subset also goes through ``run_evaluation`` (SQLite, the bundle
store, the sample evaluation set, the docker sandbox), where what reaches the database is checked too.

The corpus, and what each one must get:

=================== ====================== ===========================================================
policy              status                 what it tries
=================== ====================== ===========================================================
import_loop         timeout                spins forever at import
import_sleep        timeout                sleeps an hour at import
decision_loop       timeout                spins forever at step 2
decision_sleep      timeout                sleeps an hour at step 2
memory_bomb         memory_exceeded        touches memory without end at step 0
import_memory_bomb  memory_exceeded        the same at import
fork_bomb           timeout                every process forks forever (pids limit, process group kill)
fork_bomb_escape    ok                     the same after setsid, outside the group: must not outlive it
thread_bomb         crash                  threads until the pids limit refuses one
disk_filler         ok                     writes to / and everywhere; fills /tmp and /dev/shm
print_gigabytes     ok                     2.4 GiB to stdout and stderr (capture bounded, rest counted)
import_print        ok                     fills /tmp at import, then prints 208 MiB (capture not in /tmp)
network             ok                     TCP, UDP, DNS, abstract Unix sockets, cloud metadata
capabilities        ok                     reports CapEff, NoNewPrivs, seccomp, uid, read-only /, sockets
replica_tamper      invalid_action         rewrites the sandbox's simulator, places where nothing fits
reply_out_of_range  invalid_action         frame says node 1000000
reply_nan           protocol_error         frame holds NaN
reply_float         protocol_error         frame holds 1.0
reply_huge_frame    protocol_error         frame announces 2 GiB, pushes 64 MiB
reply_duplicated    protocol_error         writes its action on the socket itself, then returns it
reply_ahead         protocol_error         answers step 1 before task 1 was sent
reply_early         protocol_error         the same, correctly numbered (no nonce can be right)
hash_lie            ok                     patches the harness to lie about the scenario hash (image skew)
channel_slam        ok                     patches the harness to stop reading its control channel
exception_leak      crash                  raises with every task it has seen (the message spells them out)
oversized_value     invalid_action         hand-made bad_action frame with a 3,000,000-character value
cross_episode_pipe  ok                     pipe opened at import: reads what earlier episodes wrote into it
sysv_segment        ok                     counts episodes in a System V shared memory segment
verdict_forger      ok                     replaces the harness's isolation checks, counts in mmap and /tmp
heap_scanner        ok                     searches its own memory for what earlier episodes printed
ghost_hello         ok                     a second connection greeting in advance as the next episode's process
harness_probe       ok                     tries its harness's memory, descriptors, environment and ptrace
cache_evictor       ok                     tries to drop or query cached pages of shared files (fadvise, madvise)
harness_stop        timeout                SIGSTOPs its own harness (the sandbox is replaced)
pickle_weights      ok                     unpickling its weights creates a file (inside only)
snooper             crash                  hunts canaries: host files, environments, bundles, evalset
text_poison         crash                  NUL bytes and a lone surrogate in stdout, stderr and traceback
mt_predictor        ok                     rebuilds the workload generator, predicts the next task
=================== ====================== ===========================================================
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import pickle
import re
import secrets
import shutil
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from layersched.server import storage
from layersched.server.bundles import bundle_path, store_bundle
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.models import EpisodeResult, Evaluation
from layersched.sim.episodes import EpisodeSpec
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.worker.pipeline import run_evaluation
from layersched.worker.sandbox.limits import MiB
from layersched.worker.sandbox.outcomes import EpisodeOutcome
from layersched.worker.sandbox.pool import SandboxPool
from layersched.worker.sandbox.runner import SandboxSession, open_sandbox, worker_sim_fingerprint
from tests.redteam.conftest_policies import (  # noqa: F401 - fixtures, registered by being imported
    CONTROL,
    GREEDY,
    LAB,
    LIMITS,
    POLICIES,
    ROOT,
    TIGHT,
    Run,
    healthy_host,
    make_job,
    run_sandbox,
    sandbox_image,
    worker_settings,
)
from tests.server.conftest import create_pg_database, drop_pg_database

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image", "healthy_host")]

PICKLE_MARKER = Path("/tmp/layersched-redteam-unpickled-on-this-machine")  # make_weights.MARKER
CANARY = "LSCANARY-" + secrets.token_hex(16)  # one per test run; the snooper hunts for the prefix


def last_json(text: str) -> dict[str, Any]:
    """The last line of ``text`` that is a JSON object (what a probe policy printed)."""
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)  # type: ignore[no-any-return]
    raise AssertionError(f"no JSON line in {text[:500]!r}")


# ---------------------------------------------------------------------------------------------- per-case checks


def _disk(run: Run) -> None:
    report = last_json(run.outcome.stdout)
    assert all(result in ("refused: EROFS", "refused: EACCES") for result in report["writes"].values()), report
    # /tmp is the container's tmpfs: full at its size limit, and it counts towards the memory limit, not the disk.
    assert report["tmp"] == {"mib": LIMITS.tmp_bytes // MiB, "error": "ENOSPC"}
    # Docker's default /dev/shm is also writable (64 MiB tmpfs, charged to the container's memory cgroup).
    assert report["shm"]["error"] == "ENOSPC" and report["shm"]["mib"] <= 64


def _print(run: Run) -> None:
    out, err = run.outcome.stdout, run.outcome.stderr
    assert out == "A" * LIMITS.output_bytes and err == "E" * LIMITS.output_bytes
    assert run.outcome.stdout_dropped == LAB.n_tasks * 64 * MiB - LIMITS.output_bytes
    assert run.outcome.stderr_dropped == LAB.n_tasks * 16 * MiB - LIMITS.output_bytes


def _network(run: Run) -> None:
    report = last_json(run.outcome.stdout)
    assert all(r.startswith("blocked: ") for r in report["tcp"].values()), report["tcp"]
    assert report["udp"].startswith("blocked: ")
    assert all(report["dns"][n].startswith("blocked: gaierror") for n in ("example.com", "pypi.org")), report["dns"]
    assert report["dns"]["host.docker.internal"].startswith("blocked: ")
    assert all(r.startswith("blocked: ") for r in report["abstract"].values()), report["abstract"]
    assert report["interfaces"] == ["lo"]


def _capabilities(run: Run) -> None:
    report = last_json(run.outcome.stdout)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert report[cap] == "0000000000000000", (cap, report[cap])
    assert report["NoNewPrivs"] == "1"
    assert report["Seccomp"] == "2"  # filtering mode: Docker's default profile
    assert report["uid"] == report["euid"] == 10001 and report["gid"] == 10001 and report["groups"] == [10001]
    assert report["root"] == {"statvfs_rdonly": True, "write": "Read-only file system"}
    for call in ("unshare_user", "unshare_mount", "mount_tmpfs", "chroot"):
        assert report[call] == "refused: Operation not permitted", (call, report[call])
    assert report["docker_sock"] == []
    # Not even its own channel: the channel directory cannot be listed (the harness knows the socket's name).
    assert report["unix_sockets"] == []


def _pickle(run: Run) -> None:
    # The payload is live inside (each episode imports the policy, so its import output is the episode's).
    assert run.outcome.stdout == "unpickled inside the sandbox: marker exists = True\nmarker exists at step 0 = True\n"
    assert not PICKLE_MARKER.exists()


def _import_print(run: Run) -> None:
    assert (run.outcome.stdout, run.outcome.stderr) == ("A" * LIMITS.output_bytes, "E" * LIMITS.output_bytes)


NO_SEGMENT = "segment: No space left on device; episodes before: 0\n"


def _says(run: Run, text: str) -> None:
    assert run.outcome.stdout == text, run.outcome.stdout


def _forged_in_vain(outcome: EpisodeOutcome) -> None:
    forged, counted = outcome.stdout.splitlines()
    assert forged == "forged in __main__: ['empty_scratch', 'others_alive', 'Harness._clean_up']"
    assert counted == "episodes before this one: 0"


def _found_nothing(outcome: EpisodeOutcome) -> None:
    assert outcome.stdout.startswith("found 0 markers of earlier episodes: []\n"), outcome.stdout[:200]
    assert outcome.stdout.count("\n") == 1002  # it did print its own marker


def _patched_itself(run: Run) -> None:
    """The harness patch ran (in the episode's own process) and changed nothing the worker sees."""
    assert re.fullmatch(r"patched __main__\.Harness\.send in process \d+\n", run.outcome.stdout), run.outcome.stdout


def _text(run: Run) -> None:
    assert run.outcome.stdout == "stdout nul:\ufffd:end\n"
    assert run.outcome.stderr == "stderr nul:\ufffd:end\n"


def _thread(run: Run) -> None:
    assert "RuntimeError: can't start new thread" in run.outcome.message


# (policy, scenario, status, message pattern, extra check, most seconds from container start to outcome)
CASES: list[tuple[str, Scenario, str, str, Callable[[Run], None] | None, float]] = [
    ("import_loop", LAB, "timeout", r"policy import did not finish within 6 s", None, 12),
    ("import_sleep", LAB, "timeout", r"policy import did not finish within 6 s", None, 12),
    ("decision_loop", LAB, "timeout", r"step 2: no action within the per-decision deadline of 1 s", None, 8),
    ("decision_sleep", LAB, "timeout", r"step 2: no action within the per-decision deadline of 1 s", None, 8),
    (
        "memory_bomb",
        LAB,
        "memory_exceeded",
        r"step 0: episode process ended without replying: killed by the out-of-memory killer "
        rf"\(limit {LIMITS.memory_bytes} bytes\)",
        None,
        8,
    ),
    (
        "import_memory_bomb",
        LAB,
        "memory_exceeded",
        r"policy import ran out of memory: killed by the out-of-memory killer "
        rf"\(limit {LIMITS.memory_bytes} bytes\)",
        None,
        8,
    ),
    ("fork_bomb", LAB, "timeout", r"step 0: no action within the per-decision deadline of 1 s", None, 10),
    ("thread_bomb", LAB, "crash", r"step 0: policy raised an exception\n(.|\n)*", _thread, 8),
    ("disk_filler", LAB, "ok", r"", _disk, 8),
    ("print_gigabytes", LAB, "ok", r"", _print, 15),
    ("network", LAB, "ok", r"", _network, 8),
    ("capabilities", LAB, "ok", r"", _capabilities, 10),
    (
        "replica_tamper",
        TIGHT,
        "invalid_action",
        r"step \d+: policy returned node \d+, which cannot store image \d+ \(\d+\.\d MB > \d+\.\d MB\)",
        None,
        8,
    ),
    ("reply_out_of_range", LAB, "invalid_action", r"step 1: policy returned node 1000000, outside 0\.\.9", None, 8),
    (
        "reply_nan",
        LAB,
        "protocol_error",
        r"step 1: frame is not valid JSON: non-finite number NaN is not allowed: "
        r"b'\{\"type\":\"action\",\"step\":1,\"nonce\":\d+,\"action\":NaN\}'",
        None,
        8,
    ),
    ("reply_float", LAB, "protocol_error", r"step 1: 'action' frame field 'action' must be int, got 1\.0", None, 8),
    (
        "reply_huge_frame",
        LAB,
        "protocol_error",
        r"step 1: frame announces 2147483648 bytes, more than the maximum of 4194304 bytes",
        None,
        8,
    ),
    ("reply_duplicated", LAB, "protocol_error", r"step 1: reply is for step 0, expected step 1", None, 8),
    ("reply_ahead", LAB, "protocol_error", r"step 0: reply is for step 1, expected step 0", None, 8),
    (
        "reply_early",
        LAB,
        "protocol_error",
        r"step 1: reply carries nonce \d+, not the one sent with task 1: it was written before the task arrived "
        r"\(an early reply\) or forged",
        None,
        8,
    ),
    ("hash_lie", LAB, "ok", r"", _patched_itself, 8),
    ("channel_slam", LAB, "ok", r"", _patched_itself, 8),
    # The sandbox's outcome quotes the policy (organisers read it); what participants see is test_hidden_episodes'.
    (
        "exception_leak",
        LAB,
        "crash",
        r"step 20: policy raised an exception\n(.|\n)*ValueError: LEAK \[\(.*\)\]",
        None,
        8,
    ),
    (
        "oversized_value",
        LAB,
        "invalid_action",
        r"step 1: policy returned V{200} of type V{200}, expected an int node index",
        None,
        8,
    ),
    ("cross_episode_pipe", LAB, "ok", r"", lambda run: _says(run, "from earlier episodes: 0 bytes\n"), 8),
    ("sysv_segment", LAB, "ok", r"", lambda run: _says(run, NO_SEGMENT), 8),
    ("verdict_forger", LAB, "ok", r"", lambda run: _forged_in_vain(run.outcome), 8),
    ("heap_scanner", LAB, "ok", r"", lambda run: _found_nothing(run.outcome), 8),
    ("pickle_weights", LAB, "ok", r"", _pickle, 8),
    ("import_print", LAB, "ok", r"", _import_print, 8),
    ("text_poison", LAB, "crash", "step 1: policy raised an exception\nboom \ufffd \ufffd end", _text, 8),
]


@pytest.fixture(scope="module")
def greedy_trace() -> str:
    """Greedy's trace on the control episode in a fresh sandbox: what every 'next submission' must reproduce."""
    (run,) = run_sandbox(GREEDY)
    assert run.outcome.status == "ok", run.outcome.message
    return run.outcome.trace_hash


@pytest.fixture
def no_pickle_marker() -> Iterator[None]:
    PICKLE_MARKER.unlink(missing_ok=True)  # a leftover of an interrupted run would hide nothing: it is re-checked
    yield
    assert not PICKLE_MARKER.exists(), "the weights were unpickled on the host"


@pytest.mark.slow
@pytest.mark.usefixtures("no_pickle_marker")
@pytest.mark.parametrize(
    ("policy", "scenario", "status", "pattern", "check", "seconds"), CASES, ids=[case[0] for case in CASES]
)
def test_hostile_policy_ends_with_its_status_and_the_next_submission_is_unaffected(
    policy: str,
    scenario: Scenario,
    status: str,
    pattern: str,
    check: Callable[[Run], None] | None,
    seconds: float,
    greedy_trace: str,
) -> None:
    (run,) = run_sandbox(POLICIES / policy, scenario)
    outcome = run.outcome
    assert (outcome.status, outcome.message) == (status, outcome.message)  # status first, message in the diff
    assert re.fullmatch(pattern, outcome.message), outcome.message
    assert run.seconds < seconds
    assert (outcome.metrics is not None) == (status == "ok")
    if check is not None:
        check(run)
    (after,) = run_sandbox(GREEDY)
    assert (after.outcome.status, after.outcome.trace_hash) == ("ok", greedy_trace)


def test_decision_timeouts_leave_the_accepted_actions_on_record() -> None:
    (run,) = run_sandbox(POLICIES / "decision_loop")
    assert run.outcome.n_actions == 2  # steps 0 and 1 were answered and checked before the hang


@pytest.mark.parametrize(
    ("policy", "status"), [("fork_bomb", "timeout"), ("fork_bomb_escape", "ok")], ids=["in-group", "setsid-escape"]
)
def test_a_fork_bomb_does_not_outlive_its_episode(policy: str, status: str) -> None:
    """After each episode the harness kills the episode's process group and, in the container, every process but
    init and itself: the next episode of the same sandbox forks into free pids, without a sandbox restart."""
    episodes = tuple(EpisodeSpec(f"e{i}", seed=i) for i in range(3))
    runs = run_sandbox(POLICIES / policy, episodes=episodes)
    assert [(r.outcome.status, r.restarts) for r in runs] == [(status, 0)] * 3, [r.outcome.message for r in runs]


ISOLATION: list[tuple[str, str, Callable[[EpisodeOutcome], None]]] = [
    ("cross_episode_pipe", "ok", lambda o: _ends_with(o.stdout, "from earlier episodes: 0 bytes\n")),
    (
        "sysv_segment",
        "ok",
        lambda o: _ends_with(o.stdout, NO_SEGMENT),
    ),
    ("verdict_forger", "ok", _forged_in_vain),
    ("heap_scanner", "ok", _found_nothing),
]


def _ends_with(text: str, end: str) -> None:
    assert text.endswith(end), text[-300:]


@pytest.mark.parametrize(("policy", "status", "check"), ISOLATION, ids=[case[0] for case in ISOLATION])
def test_episodes_of_one_sandbox_pass_nothing_to_each_other(
    policy: str, status: str, check: Callable[[EpisodeOutcome], None]
) -> None:
    """The same episode three times in one sandbox: each sees nothing of the others (the same actions, the same
    report), and the sandbox is never replaced. Each of these policies carried state forward on reviewed main."""
    runs = run_sandbox(POLICIES / policy, episodes=(CONTROL, CONTROL, CONTROL))
    assert [(r.outcome.status, r.restarts) for r in runs] == [(status, 0)] * 3, [r.outcome.message for r in runs]
    assert len({r.outcome.trace_hash for r in runs}) == 1
    for run in runs:
        check(run.outcome)


def test_the_harness_cannot_be_read_or_written_by_an_episode() -> None:
    """The harness is not dumpable: an episode process (same user) cannot open its memory, list its file
    descriptors or read its environment, the ways to take its channel or change what it reports; nor lower its
    resource limits (the seccomp filter refuses prlimit on another process). The episode process is the one the
    out-of-memory killer takes first."""
    (run,) = run_sandbox(POLICIES / "harness_probe")
    assert run.outcome.status == "ok", run.outcome.message
    report = last_json(run.outcome.stdout)
    assert report == {
        "mem": "refused: PermissionError",
        "fd": "refused: PermissionError",
        "environ": "refused: PermissionError",
        "ptrace": "refused: 1",
        "prlimit": "refused: PermissionError",
        "oom_score_adj": "1000",
        "own_environ_nonce": False,
    }, report


def test_an_episode_can_neither_drop_nor_query_cached_pages() -> None:
    """What the page cache of shared files holds cannot be steered from a sandbox (worker/sandbox/cache_guard.py)."""
    (run,) = run_sandbox(POLICIES / "cache_evictor")
    assert run.outcome.status == "ok", run.outcome.message
    assert last_json(run.outcome.stdout) == {
        "fadvise_bundle": "refused: EPERM",
        "fadvise_image": "refused: EPERM",
        "madvise_pageout": "refused: EPERM",
        "madvise_cold": "refused: EPERM",
        "cachestat": "refused: EPERM",
        "io_uring": "refused: EPERM",
    }


def test_a_connection_left_waiting_cannot_pose_as_the_next_episodes_process() -> None:
    runs = run_sandbox(POLICIES / "ghost_hello", episodes=(EpisodeSpec("e0", seed=1), EpisodeSpec("e1", seed=2)))
    assert [(r.outcome.status, r.restarts) for r in runs] == [("ok", 0), ("ok", 0)], [r.outcome.message for r in runs]


def test_a_replacement_sandbox_listens_where_the_replaced_one_cannot_reach() -> None:
    """Warm pool: the first sandbox is killed from outside mid-episode (as an engine restart would), replaced, and
    removed in the background. Reviewed main bound the replacement's socket again at the same path, in the directory
    the old container still had mounted, and a thread left there connected first (22 of 22 restarts). Every start
    now listens in a channel directory of its own (the old one is removed first) and wants the start's nonce
    (tests/worker/test_runner_handshake.py); the replay also runs on a fresh copy of the bundle."""
    client = docker.from_env()
    long_lab = Scenario(n_tasks=200)  # about 1 s at 5 ms a decision: the kill comes mid-episode
    pool = SandboxPool(size=1, limits=LIMITS)
    try:
        assert pool.wait_ready(60)
        with open_sandbox(GREEDY.parent / "slow_greedy", limits=LIMITS, pool=pool) as session:
            assert session.pooled
            first_channel, first_bundle = session._channel_dir, session.bundle_dir
            assert first_channel is not None

            def kill_soon() -> None:
                time.sleep(0.3)
                client.containers.get(session._backend.container.id).kill()  # type: ignore[attr-defined]

            killer = threading.Thread(target=kill_soon)
            killer.start()
            outcome = session.run_episode(make_job(session, long_lab, EpisodeSpec("a", seed=1)))
            killer.join()
            assert (outcome.status, session.restarts) == ("ok", 1), outcome.message  # replayed in a new sandbox
            assert session._channel_dir is not None and session._channel_dir != first_channel
            assert not first_channel.exists()  # nothing listens where the killed container could reach
            assert session.bundle_dir != first_bundle and session.bundle_dir.is_dir()
            assert session._sim_fingerprint == worker_sim_fingerprint()
    finally:
        pool.close()
        client.close()


def test_the_harness_cannot_be_frozen() -> None:
    """SIGSTOP to the harness, the first process of the container's PID namespace: the kernel drops it, the decision
    times out, the harness kills the episode as usual, and the next episode runs in the same sandbox. (Reviewed main
    replaced a frozen sandbox, and replayed an episode under one that had died: a second look the policy had asked
    for.)"""
    runs = run_sandbox(POLICIES / "harness_stop", episodes=(EpisodeSpec("a", seed=1), EpisodeSpec("b", seed=2)))
    assert [(r.outcome.status, r.outcome.message, r.restarts) for r in runs] == [
        ("timeout", "step 1: no action within the per-decision deadline of 1 s", 0),
        ("timeout", "step 1: no action within the per-decision deadline of 1 s", 0),
    ]


# ---------------------------------------------------------------------------------------------- the workload generator

LONG_LAB = Scenario(n_tasks=150)


def test_the_workload_generator_is_rebuilt_from_a_lab_seed_but_not_from_a_keyed_episode() -> None:
    """The control episode (Mersenne Twister, ``random.Random(13579)``) gives the policy every future task, which
    proves the probe has teeth; the keyed episode leaves it at the Zipf base rate, with no cycle count guessed."""
    control, hidden = run_sandbox(
        POLICIES / "mt_predictor",
        LONG_LAB,
        episodes=(EpisodeSpec("control", seed=13579), EpisodeSpec("hidden", key=secrets.token_bytes(16))),
    )
    assert control.outcome.status == hidden.outcome.status == "ok"
    found = last_json(control.outcome.stdout)
    n = LONG_LAB.n_tasks - 1
    assert found == {**found, "seed": 13579, "image_hits": n, "cycle_hits": n, "predictions": n}
    blind = last_json(hidden.outcome.stdout)
    assert (blind["seed"], blind["cycle_hits"], blind["predictions"]) == (None, 0, n)
    top = blind["zipf_top_share"]
    assert top == pytest.approx(0.2137, abs=1e-4)  # 1 / H(60): the lab catalog's most popular image
    # At chance: no better than always naming the most popular image, with 4 standard deviations of slack.
    assert blind["image_hits"] / n <= top + 4 * (top * (1 - top) / n) ** 0.5, blind


# ---------------------------------------------------------------------------------------------- canaries


@dataclasses.dataclass(frozen=True)
class Canaries:
    """Where the canary was planted on the host; ``targets`` is what the snooper is told to read."""

    temp_file: Path
    other_bundle: Path
    evalset: Path
    targets: list[str]


def plant(tmp_root: Path, evalset: Path, other_bundle: Path) -> Canaries:
    """The canary in a file of the worker's temporary directory, the evaluation set, another submission's
    bundle and the worker's environment (the caller sets ``REDTEAM_WORKER_SECRET``)."""
    temp_file = tmp_root / "secret.txt"
    temp_file.write_text(f"worker temp secret {CANARY}\n")
    targets = [str(temp_file), str(evalset), str(other_bundle), f"/proc/{os.getpid()}/environ", "/etc/shadow"]
    return Canaries(temp_file, other_bundle, evalset, targets)


def snooper_bundle(dest: Path, targets: list[str]) -> Path:
    shutil.copytree(POLICIES / "snooper", dest)
    (dest / "targets.txt").write_text("\n".join(targets) + "\n")
    return dest


@pytest.fixture
def worker_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDTEAM_WORKER_SECRET", CANARY)


@pytest.fixture
def planted(tmp_path: Path, worker_secret: None) -> Iterator[Canaries]:
    root = Path(tempfile.mkdtemp(prefix="layersched-redteam-canary-"))  # the worker's own temporary directory
    evalset = tmp_path / "evalset.toml"
    evalset.write_text((ROOT / "hidden_seeds" / "sample.toml").read_text() + f"# {CANARY}\n")
    other = tmp_path / "other-submission" / "policy.py"
    other.parent.mkdir()
    other.write_text(f"# another participant's secret: {CANARY}\ndef policy(env, task, rng):\n    return 0\n")
    try:
        yield plant(root, evalset, other)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def returned_text(run: Run) -> str:
    o = run.outcome
    return "\n".join([o.message, o.stdout, o.stderr, run.startup_stdout, run.startup_stderr, repr(o.metrics)])


def test_snooper_finds_no_canary_in_the_docker_sandbox(tmp_path: Path, planted: Canaries) -> None:
    bundle = snooper_bundle(tmp_path / "snooper", planted.targets)
    (run,) = run_sandbox(bundle)
    assert run.outcome.status == "crash"  # it raises its findings at step 1, to use the message channel too
    assert run.outcome.message.startswith("step 1: policy raised an exception\n")
    report = last_json(run.outcome.stdout)
    assert report["files_searched"] > 100  # it did look
    refusals = ("refused: FileNotFoundError", "refused: PermissionError")  # absent, or /etc/shadow
    assert all(result.startswith(refusals) for result in report["targets"].values()), report["targets"]
    assert report["marker_hits"] == {}
    assert "REDTEAM_WORKER_SECRET" not in report["environ"]
    assert CANARY not in returned_text(run)


def test_the_snooper_has_teeth_where_the_host_is_visible(tmp_path: Path, planted: Canaries) -> None:
    """The weaker process sandbox shares the host's filesystem: there the same snooper does read the planted file,
    so the docker test above would see a leak if the container had one."""
    bundle = snooper_bundle(tmp_path / "snooper", planted.targets)
    (run,) = run_sandbox(bundle, backend="process")
    assert f"worker temp secret {CANARY}" in returned_text(run)


# ---------------------------------------------------------------------------------------------- the real pipeline


@pytest.fixture(scope="module")
def pipeline_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pipeline")


@pytest.fixture(scope="module")
def evalset_file(pipeline_root: Path) -> Path:
    """The sample evaluation set with the canary in a comment: the file the worker reads, never the sandbox."""
    path = pipeline_root / "evalset.toml"
    path.write_text((ROOT / "hidden_seeds" / "sample.toml").read_text() + f"# organisers' note {CANARY}\n")
    return path


@pytest.fixture(scope="module")
def sqlite_settings(pipeline_root: Path, evalset_file: Path) -> Settings:
    """One worker on SQLite for the whole module: successive submissions share the database and bundle store."""
    return worker_settings(f"sqlite:///{pipeline_root / 'layersched.db'}", pipeline_root, evalset_file)


@pytest.fixture(scope="module")
def sqlite_sessions(sqlite_settings: Settings) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(sqlite_settings.database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def open_fast(*args: Any, limits: Any, **kwargs: Any) -> SandboxSession:
    """The pipeline's own sandbox, with this file's startup deadline (Settings does not carry one)."""
    fast = dataclasses.replace(
        limits, startup_seconds=LIMITS.startup_seconds, kill_grace_seconds=LIMITS.kill_grace_seconds
    )
    return open_sandbox(*args, limits=fast, **kwargs)


def submit(settings: Settings, sessions: sessionmaker[Session], files: dict[str, bytes]) -> tuple[int, int]:
    """Store a bundle (``policy.py`` alone, or a zip) as a fresh participant's submission: (submission, evaluation)."""
    if list(files) == ["policy.py"]:
        data, fmt = files["policy.py"], "py"
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, content in sorted(files.items()):
                archive.writestr(name, content)
        data, fmt = buffer.getvalue(), "zip"
    store_bundle(data, bundle_dir=settings.bundle_dir)
    with sessions() as session:
        user = storage.create_user(
            session=session, name=f"s{secrets.token_hex(4)}", email=f"{secrets.token_hex(4)}@example.org"
        )
        submission, evaluation = storage.create_submission(
            session=session,
            owner=user,
            name="redteam",
            description="",
            bundle_sha256=hashlib.sha256(data).hexdigest(),
            bundle_format=fmt,
            bundle_bytes=len(data),
            phase=storage.get_phase(session=session, name=storage.DEFAULT_PHASE),
        )
        return submission.id, evaluation.id


def folder(name: str) -> dict[str, bytes]:
    root = POLICIES / name
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def evaluate(settings: Settings, sessions: sessionmaker[Session], files: dict[str, bytes]) -> tuple[Evaluation, Any]:
    submission_id, evaluation_id = submit(settings, sessions, files)
    report = run_evaluation(
        evaluation_id, settings=settings, sessions=sessions, worker_id="redteam", open_sandbox_fn=open_fast
    )
    with sessions() as session:
        row = session.get(Evaluation, evaluation_id)
        assert row is not None
        row.episodes = list(session.scalars(select(EpisodeResult).filter_by(evaluation_id=evaluation_id)))  # type: ignore[attr-defined]
        row.charged = storage.load_submission(session=session, submission_id=submission_id).counts_against_quota  # type: ignore[attr-defined]
        session.expunge_all()
    return row, report


def assert_next_submission_is_scored(settings: Settings, sessions: sessionmaker[Session]) -> None:
    done, report = evaluate(settings, sessions, {"policy.py": (GREEDY / "policy.py").read_bytes()})
    assert (report.state, report.episodes_run, done.state, done.sandbox) == ("succeeded", 6, "succeeded", "docker")
    assert all(r.status == "ok" for r in done.episodes)  # type: ignore[attr-defined]
    assert done.score_public is not None
    assert done.score_public["overall"] == pytest.approx(1.0, abs=0.01)


PIPELINE = [
    ("import_sleep", "timeout", "policy import did not finish within 6 s"),
    ("decision_loop", "timeout", "step 2: no action within the per-decision deadline of 1 s"),
    ("memory_bomb", "memory_exceeded", "step 0: episode process ended without replying: killed by the out-of-memory"),
    ("fork_bomb", "timeout", "step 0: no action within the per-decision deadline of 1 s"),
    ("reply_nan", "protocol_error", "step 1: frame is not valid JSON: non-finite number NaN"),
    ("oversized_value", "invalid_action", "step 1: policy returned " + "V" * 200 + " of type " + "V" * 200 + ","),
]


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "category", "fragment"), PIPELINE, ids=[case[0] for case in PIPELINE])
def test_pipeline_charges_the_hostile_submission_and_scores_the_next_one(
    sqlite_settings: Settings, sqlite_sessions: sessionmaker[Session], policy: str, category: str, fragment: str
) -> None:
    done, report = evaluate(sqlite_settings, sqlite_sessions, folder(policy))
    assert (report.state, done.state, done.error_category) == ("failed", "failed", category)
    assert "scenario 'lab-300' episode '" in (done.error_message or "")
    assert fragment in (done.error_message or "")
    assert done.infrastructure_failure is False and done.charged  # type: ignore[attr-defined]
    assert [r.status for r in done.episodes] == [category]  # type: ignore[attr-defined]
    assert_next_submission_is_scored(sqlite_settings, sqlite_sessions)


@pytest.mark.slow
def test_pipeline_never_returns_a_canary(
    sqlite_settings: Settings, sqlite_sessions: sessionmaker[Session], evalset_file: Path, worker_secret: None
) -> None:
    """The snooper, told where the evaluation set, another submission's stored bundle, a file in the worker's
    temporary directory and the worker's environment are, finds none of them; nothing stored holds the canary."""
    other = f"# another participant's secret: {CANARY}\ndef policy(env, task, rng):\n    return 0\n".encode()
    submit(sqlite_settings, sqlite_sessions, {"policy.py": other})
    root = Path(tempfile.mkdtemp(prefix="layersched-redteam-canary-"))
    try:
        canaries = plant(root, evalset_file, bundle_path(sqlite_settings.bundle_dir, hashlib.sha256(other).hexdigest()))
        files = folder("snooper") | {"targets.txt": "\n".join(canaries.targets).encode()}
        done, report = evaluate(sqlite_settings, sqlite_sessions, files)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert (report.state, done.error_category) == ("failed", "crash")
    (row,) = done.episodes  # type: ignore[attr-defined]
    assert '"files_searched"' in row.stdout and '"marker_hits": {}' in row.stdout  # it ran, and looked
    stored = [report.message, done.error_message, row.message, row.stdout, row.stderr]
    assert all(CANARY not in (text or "") for text in stored)
    database = Path(sqlite_settings.database_url.removeprefix("sqlite:///")).read_bytes()
    assert database.count(CANARY.encode()) == 0  # nor anywhere else the worker wrote
    assert_next_submission_is_scored(sqlite_settings, sqlite_sessions)


@pytest.mark.slow
@pytest.mark.usefixtures("no_pickle_marker")
def test_pipeline_never_unpickles_the_weights_outside_the_sandbox(
    sqlite_settings: Settings, sqlite_sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []

    def refuse(name: str) -> Callable[..., Any]:
        def spy(*args: Any, **kwargs: Any) -> Any:
            loads.append(name)
            raise AssertionError(f"pickle.{name} called by the worker")

        return spy

    for name in ("load", "loads"):
        monkeypatch.setattr(pickle, name, refuse(name))
    done, report = evaluate(sqlite_settings, sqlite_sessions, folder("pickle_weights"))
    monkeypatch.undo()
    assert (report.state, done.state) == ("succeeded", "succeeded")
    expected = "unpickled inside the sandbox: marker exists = True\nmarker exists at step 0 = True\n"
    assert all(r.stdout == expected for r in done.episodes)  # type: ignore[attr-defined]
    assert loads == []
    assert not PICKLE_MARKER.exists()
    assert_next_submission_is_scored(sqlite_settings, sqlite_sessions)


@pytest.mark.slow
@pytest.mark.postgres
def test_pipeline_records_unstorable_text_on_postgres(pipeline_root: Path, evalset_file: Path) -> None:
    """PostgreSQL refuses NUL in text: a policy printing one must not make recording its result fail (which left the
    evaluation ``running`` and uncharged before the runner replaced such characters)."""
    name = create_pg_database()
    try:
        settings = worker_settings(f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", pipeline_root, evalset_file)
        engine = make_engine(settings.database_url)
        sessions = make_sessionmaker(engine)
        done, report = evaluate(settings, sessions, folder("text_poison"))
        assert (report.state, done.state, done.error_category, done.charged) == ("failed", "failed", "crash", True)  # type: ignore[attr-defined]
        (row,) = done.episodes  # type: ignore[attr-defined]
        assert (row.stdout, row.stderr) == ("stdout nul:\ufffd:end\n", "stderr nul:\ufffd:end\n")
        assert row.message == "step 1: policy raised an exception\nboom \ufffd \ufffd end"
        assert_next_submission_is_scored(settings, sessions)
        engine.dispose()
    finally:
        drop_pg_database(name)
