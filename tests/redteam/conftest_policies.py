"""Helpers of the hostile-policy tests (test_hostile_policies.py): limits, episodes, a docker runner and the host's
health before and after each case.

Not a conftest (pytest does not load it by itself): ``test_hostile_policies.py`` imports what it needs, fixtures
included, so that ``tests/redteam/conftest.py`` (the API red team's) stays its owner's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

from layersched.server.admin import upgrade_database
from layersched.server.config import Settings
from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.tracks.layers_v1.scenario import NodeRanges, Scenario
from layersched.worker.evalsets import register_and_score
from layersched.worker.sandbox.docker_backend import LABEL, WORKER_LABEL, worker_identity
from layersched.worker.sandbox.limits import MiB, SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob, EpisodeOutcome
from layersched.worker.sandbox.run_dirs import RUN_DIR_PREFIX
from layersched.worker.sandbox.runner import SandboxSession, open_sandbox

ROOT = Path(__file__).resolve().parents[2]
POLICIES = Path(__file__).parent / "policies"
GREEDY = ROOT / "tests" / "worker" / "policies" / "greedy"
SANDBOX_DIR = ROOT / "worker" / "sandbox"

# Small limits keep the corpus fast; the rules they enforce do not depend on the numbers.
LIMITS = SandboxLimits(
    decision_seconds=1.0,
    episode_seconds=20.0,
    submission_seconds=90.0,
    startup_seconds=6.0,
    memory_bytes=384 * MiB,
    kill_grace_seconds=3.0,
)
LAB = Scenario(n_tasks=30)
# Nodes of 0.2-2 GB: some cannot hold some images, so an infeasible action exists.
TIGHT = Scenario(n_tasks=30, nodes=NodeRanges(storage_gb=(0.2, 2.0)))
CONTROL = EpisodeSpec("control", seed=13579)  # a lab seed: Mersenne Twister, public by design


def make_job(session: SandboxSession, scenario: Scenario, episode: EpisodeSpec, name: str = "lab") -> EpisodeJob:
    return EpisodeJob(name, scenario, episode, policy_seed(session.bundle_sha256, scenario.content_hash, episode.id))


@dataclass(frozen=True)
class Run:
    """One hostile episode: its outcome, the session's startup record, how long it took (s) and how many times the
    session had replaced its sandbox by then."""

    outcome: EpisodeOutcome
    startup_stdout: str
    startup_stderr: str
    seconds: float
    restarts: int


def run_sandbox(
    bundle: Path,
    scenario: Scenario = LAB,
    episodes: tuple[EpisodeSpec, ...] = (CONTROL,),
    limits: SandboxLimits = LIMITS,
    backend: str = "docker",
) -> list[Run]:
    """Each episode of ``episodes`` through one sandbox of ``bundle``; the session is closed before returning."""
    runs = []
    started = time.monotonic()
    with open_sandbox(bundle, backend=backend, limits=limits, allow_process_for_hidden=True) as session:  # type: ignore[arg-type]
        for episode in episodes:
            outcome = session.run_episode(make_job(session, scenario, episode))
            elapsed = time.monotonic() - started
            runs.append(Run(outcome, session.startup.stdout, session.startup.stderr, elapsed, session.restarts))
            started = time.monotonic()
    return runs


def worker_settings(database_url: str, pipeline_root: Path, evalset_file: Path) -> Settings:
    """A worker's settings on ``database_url``, migrated, with the evaluation set registered and scored."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=database_url,
        broker_url="redis://127.0.0.1:6379/14",
        bundle_dir=pipeline_root / "bundles",
        baseline_cache_dir=pipeline_root / "baselines",
        evalset_path=evalset_file,
        sandbox_backend="docker",
        decision_seconds=LIMITS.decision_seconds,
        episode_seconds=LIMITS.episode_seconds,
        submission_seconds=LIMITS.submission_seconds,
        sandbox_memory_mb=LIMITS.memory_bytes // MiB,
    )
    upgrade_database(settings=settings)
    register_and_score(path=evalset_file, settings=settings)
    return settings


# ---------------------------------------------------------------------------------------------- the engine


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """The engine running and the image built from the current sources (a second when nothing changed)."""
    if os.environ.get("LAYERSCHED_SKIP_DOCKER") == "1":
        pytest.skip("LAYERSCHED_SKIP_DOCKER=1")
    subprocess.run([str(SANDBOX_DIR / "start_dockerd.sh")], check=True, capture_output=True)
    built = subprocess.run([str(SANDBOX_DIR / "build_image.sh")], check=True, capture_output=True, text=True)
    return built.stdout.strip().splitlines()[-1]


# ---------------------------------------------------------------------------------------------- host health


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children of children too), from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def our_containers(client: docker.DockerClient) -> list[str]:
    """Sandbox containers started by this process (other engineers' tests may share the engine). One list call,
    filtered by the engine: inspecting each container would race with other sessions removing theirs."""
    labels = [LABEL, f"{WORKER_LABEL}={worker_identity()}"]
    return sorted(c["Id"] for c in client.api.containers(all=True, filters={"label": labels}))


def our_run_dirs() -> list[str]:
    return sorted(p.name for p in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}{os.getpid()}-*"))


@pytest.fixture
def healthy_host(sandbox_image: str) -> Iterator[None]:
    """After the test: no container, process or run directory of ours left, the host's /tmp not filled."""
    client = docker.from_env()
    tmp_free = shutil.disk_usage(tempfile.gettempdir()).free
    assert our_containers(client) == []
    yield
    # A killed process may take a moment to be reaped by its parent; containers are removed synchronously.
    deadline = time.monotonic() + 5
    while _descendants(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _descendants(os.getpid()) == set()
    assert our_containers(client) == []
    assert our_run_dirs() == []
    # print_gigabytes writes 3 GiB, so a log driver or a capture spilling to the host's disk would show. Other
    # sessions share this disk (an image build or a second engine's data root takes about 1 GiB), hence the slack;
    # the fillers' small writes are bounded by the container's tmpfs instead (disk_filler reports ENOSPC at 64 MiB).
    assert shutil.disk_usage(tempfile.gettempdir()).free > tmp_free - 2048 * MiB
    client.close()
