"""The warm sandbox pool against the real Docker engine: one evaluation per container, the same lockdown and the same
results as a fresh container, and nothing left behind.

``TestPooledDockerSandbox`` runs the whole sandbox contract (scores, determinism, every hostile policy's status)
through containers claimed from a pool.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.errors import NotFound

from layersched.worker.sandbox import pool as sandbox_pool
from layersched.worker.sandbox.docker_backend import LABEL, WORKER_LABEL, worker_identity
from layersched.worker.sandbox.limits import MiB, SandboxLimits
from layersched.worker.sandbox.outcomes import BundleError
from layersched.worker.sandbox.pool import SandboxPool
from layersched.worker.sandbox.run_dirs import RUN_DIR_PREFIX
from layersched.worker.sandbox.runner import SandboxSession, open_sandbox
from layersched.worker.sandbox.wire import NONCE_ENV

from .sandbox_contract import EPISODES, LAB, POLICIES, SandboxContract, make_job

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]

READY_SECONDS = 120.0


@pytest.fixture
def client(sandbox_image: str) -> Iterator[docker.DockerClient]:
    c = docker.from_env()
    yield c
    c.close()


def our_containers(client: docker.DockerClient) -> list[str]:
    labels = [LABEL, f"{WORKER_LABEL}={worker_identity()}"]
    return sorted(c["Id"] for c in client.api.containers(all=True, filters={"label": labels}))


def our_run_dirs() -> list[str]:
    return sorted(p.name for p in Path(tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}{os.getpid()}-*"))


@contextlib.contextmanager
def filled_pool(size: int = 1, limits: SandboxLimits | None = None) -> Iterator[SandboxPool]:
    pool = SandboxPool(size=size, limits=limits or SandboxLimits())
    try:
        assert pool.wait_ready(READY_SECONDS), "the pool did not fill"
        yield pool
    finally:
        pool.close()


def container_id(session: SandboxSession) -> str:
    return str(session._backend.container.id)  # type: ignore[attr-defined]


class TestPooledDockerSandbox(SandboxContract):
    """The sandbox contract, every sandbox claimed from a warm pool filled for exactly the test's limits."""

    backend = "docker"

    @pytest.fixture(autouse=True)
    def _pools(self) -> Iterator[None]:
        self.pools: list[SandboxPool] = []
        yield
        for pool in self.pools:
            pool.close()

    def open(self, bundle: Path, **limits: Any) -> SandboxSession:
        pool = SandboxPool(size=1, limits=SandboxLimits(**limits))
        self.pools.append(pool)
        assert pool.wait_ready(READY_SECONDS), "the pool did not fill"
        session = open_sandbox(bundle, backend="docker", limits=SandboxLimits(**limits), pool=pool)
        assert session.pooled
        return session


def test_a_pooled_container_serves_one_evaluation(client):
    with filled_pool() as pool:
        seen = []
        for _ in range(3):
            assert pool.wait_ready(READY_SECONDS)
            with open_sandbox(POLICIES / "greedy", backend="docker", pool=pool) as session:
                assert session.pooled
                seen.append(container_id(session))
                outcome = session.run_episode(make_job(session, "lab", LAB, EPISODES[0]))
                assert (outcome.status, outcome.message) == ("ok", ""), len(seen)
            pool.drain()
            with pytest.raises(NotFound):
                client.containers.get(seen[-1])  # removed (in the background) once its evaluation ended
        assert len(set(seen)) == 3
        assert pool.wait_ready(READY_SECONDS)
        assert pool.started == 4  # three claimed, one waiting


def test_the_next_container_starts_when_the_claimed_one_is_let_go(client):
    # A container start (about 0.2 s of CPU in the harness and the engine) would compete with the evaluation that
    # claimed the pool's container: the refill waits until that evaluation's session ends.
    with filled_pool() as pool:
        with open_sandbox(POLICIES / "greedy", backend="docker", pool=pool) as session:
            assert session.pooled
            assert session.run_episode(make_job(session, "lab", LAB, EPISODES[0])).status == "ok"
            time.sleep(2.0)  # several container starts' time (about 0.3 s here): the old refill would have begun
            assert (pool.started, pool.idle()) == (1, 0)
        assert pool.wait_ready(READY_SECONDS)
        assert pool.started == 2


def test_a_claim_while_the_next_container_starts_waits_for_it(client):
    # Back-to-back evaluations: the second claim comes while the refill started by the first's release is under
    # way. It waits for that container (as far along as a fresh start would be) instead of starting one more.
    with filled_pool() as pool:
        with open_sandbox(POLICIES / "greedy", backend="docker", pool=pool) as first:
            assert first.pooled
        with open_sandbox(POLICIES / "greedy", backend="docker", pool=pool) as second:
            assert second.pooled
            assert second.run_episode(make_job(second, "lab", LAB, EPISODES[0])).status == "ok"
        assert pool.started == 2
        assert pool.wait_ready(READY_SECONDS)
        assert pool.started == 3


def test_a_claim_never_let_go_holds_the_refill_off_only_for_a_while(client, monkeypatch):
    # A session that is never closed (a bug, a worker stuck elsewhere) must not leave the pool empty for good.
    monkeypatch.setattr(sandbox_pool, "REFILL_DEFER_SECONDS", 1.0)
    with filled_pool() as pool:
        warm = pool.claim(SandboxLimits())
        assert warm is not None
        try:
            assert pool.wait_ready(READY_SECONDS)  # started once the claim was older than the deferral
            assert pool.started == 2
        finally:
            warm.discard()


def test_pooled_container_is_locked_down_like_a_fresh_one(client):
    limits = SandboxLimits(memory_bytes=768 * MiB, pids=48, cpus=0.5, tmp_bytes=16 * MiB)

    def config(session: SandboxSession) -> dict[str, Any]:
        attrs = client.api.inspect_container(container_id(session))
        host = {k: v for k, v in attrs["HostConfig"].items() if k not in ("Mounts", "Binds")}
        mounts = sorted((m["Destination"], m["RW"], m["Type"], Path(m["Source"]).name) for m in attrs["Mounts"])
        # The start nonce is each container's own; everything else must be the same.
        env = sorted(e if not e.startswith(f"{NONCE_ENV}=") else NONCE_ENV for e in attrs["Config"]["Env"])
        return {"host": host, "env": env, "user": attrs["Config"]["User"], "mounts": mounts}

    with open_sandbox(POLICIES / "greedy", backend="docker", limits=limits) as fresh:
        expected = config(fresh)
    with (
        filled_pool(limits=limits) as pool,
        open_sandbox(POLICIES / "greedy", backend="docker", limits=limits, pool=pool) as pooled,
    ):
        assert pooled.pooled
        assert config(pooled) == expected
        assert pooled.run_episode(make_job(pooled, "lab", LAB, EPISODES[0])).status == "ok"


def test_probes_from_inside_a_pooled_container_are_blocked():
    with filled_pool() as pool, open_sandbox(POLICIES / "tamperer", backend="docker", pool=pool) as session:
        assert session.pooled
        outcome = session.run_episode(make_job(session, "lab", LAB, EPISODES[0]))
    lines = outcome.stdout.splitlines()
    assert lines[:8] == [
        "uid: 10001",
        "network: blocked (OSError: [Errno 101] Network is unreachable)",
        "write bundle: blocked (OSError: [Errno 30] Read-only file system: '/bundle/owned.txt')",
        "write root: blocked (OSError: [Errno 30] Read-only file system: '/owned.txt')",
        "write channel dir: blocked (OSError: [Errno 30] Read-only file system: '/run/layersched/owned.txt')",
        "write tmp: allowed ('/tmp/scratch.txt')",
        "setuid root: blocked (PermissionError: [Errno 1] Operation not permitted)",
        "list channel dir: blocked (PermissionError: [Errno 13] Permission denied: '/run/layersched')",
    ]


@pytest.mark.parametrize("how", ["kill", "pause", "remove"])
def test_claim_after_the_pooled_container_died_starts_a_fresh_one(client, how):
    with filled_pool() as pool:
        (idle,) = our_containers(client)
        container = client.containers.get(idle)
        if how == "kill":
            container.kill()
        elif how == "pause":
            container.pause()  # alive to the engine, but its harness cannot answer
        else:
            container.remove(force=True)
        deadline = time.monotonic() + 10
        while how == "kill" and client.containers.get(idle).status == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        with open_sandbox(POLICIES / "greedy", backend="docker", pool=pool) as session:
            assert container_id(session) != idle
            # A dead harness is seen at once, a frozen one after the ping's deadline; either is discarded, and the
            # claim takes the container the pool starts in its place (one start, as a fresh sandbox would cost).
            assert session.pooled
            assert session.run_episode(make_job(session, "lab", LAB, EPISODES[0])).status == "ok"
        pool.drain()
        with pytest.raises(NotFound):
            client.containers.get(idle)  # the dead one was discarded, not left behind


def test_a_bad_bundle_uses_up_the_claimed_container(client, tmp_path):
    with filled_pool() as pool:
        (idle,) = our_containers(client)
        with pytest.raises(BundleError, match=r"has no policy\.py"):
            open_sandbox(tmp_path, backend="docker", pool=pool)
        pool.drain()
        with pytest.raises(NotFound):
            client.containers.get(idle)


def test_pool_is_emptied_on_shutdown(client):
    before = our_run_dirs()
    pool = SandboxPool(size=2)
    try:
        assert pool.wait_ready(READY_SECONDS)
        assert len(our_containers(client)) == 2
        with open_sandbox(POLICIES / "greedy", backend="docker", pool=pool) as session:
            assert session.pooled
            assert session.run_episode(make_job(session, "lab", LAB, EPISODES[0])).status == "ok"
    finally:
        pool.close()
    assert our_containers(client) == []
    assert our_run_dirs() == before
    assert pool.claim(SandboxLimits()) is None  # a closed pool hands out nothing


def test_other_limits_or_image_are_not_served_from_the_pool():
    pool = SandboxPool(size=0, limits=SandboxLimits(memory_bytes=512 * MiB))
    assert pool.matches(SandboxLimits(memory_bytes=512 * MiB, decision_seconds=1.0), None)  # a session setting
    assert not pool.matches(SandboxLimits(), None)
    assert not pool.matches(SandboxLimits(memory_bytes=512 * MiB), "layersched-sandbox:other")
    assert pool.claim(SandboxLimits(memory_bytes=512 * MiB)) is None
    with pytest.raises(ValueError, match="size must be an int >= 0, got -1"):
        SandboxPool(size=-1)


def test_the_installed_pool_serves_open_sandbox(client):
    pool = SandboxPool(size=1)
    sandbox_pool.install(pool)
    try:
        assert pool.wait_ready(READY_SECONDS)
        with open_sandbox(POLICIES / "greedy", backend="docker") as session:
            assert session.pooled
        with open_sandbox(POLICIES / "greedy", backend="docker", limits=SandboxLimits(pids=32)) as session:
            assert not session.pooled  # other container limits: a fresh one
    finally:
        assert sandbox_pool.uninstall() is pool
        pool.close()
    assert our_containers(client) == []


@pytest.mark.parametrize("bundle", ["greedy", "torch_mlp"])
def test_trace_hashes_are_identical_pooled_and_fresh(bundle):
    def run(pool: SandboxPool | None) -> list[tuple[str, str, Any]]:
        with open_sandbox(POLICIES / bundle, backend="docker", pool=pool) as session:
            assert session.pooled == (pool is not None)
            outcomes = [session.run_episode(make_job(session, "lab", LAB, ep)) for ep in EPISODES]
        return [(o.status, o.trace_hash, o.metrics) for o in outcomes]

    fresh = run(None)
    with filled_pool() as pool:
        pooled = run(pool)
    assert [status for status, _, _ in fresh] == ["ok"] * len(EPISODES)
    assert pooled == fresh
