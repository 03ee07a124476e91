"""Faults under real processes (tests/pipeline/stack.py: uvicorn, a private Redis, Celery workers, the Docker sandbox).

1. The disk holding bundles turns read-only (a tmpfs remounted ``ro`` under the running API): uploads get a 503
   ``storage_unavailable`` naming the bundle store, nothing is half-written, no quota is used; once writable again,
   uploads work.
2. PostgreSQL restarts while an evaluation runs. The machine's cluster is shared with everyone's tests, so this test
   starts a private cluster (initdb as the ``postgres`` user, a free port) and restarts that one. The evaluation ends
   in a final state with a reason, counted once; the API answers again.

3. The Docker engine goes away under a running evaluation. The machine's engine is shared, so the test starts a
   private ``dockerd`` (own socket, data and exec roots, no bridge) with the sandbox image loaded into it, points the
   worker at it with ``DOCKER_HOST``, and stops that one: a crash (SIGKILL) and a clean stop (SIGTERM, what
   ``systemctl restart docker`` does), each restarted at once, end ``succeeded`` with exactly the scores and action
   traces of an undisturbed run of the same bundle; an engine that stays down ends ``failed`` as ``infrastructure``,
   blaming the engine, with the quota given back. No episode is ever charged to the policy, none is counted twice.
   (Why a killed private engine did not come back before: see ``PrivateDockerd``.)

(Worker SIGKILL and Redis restart are tests/pipeline/test_e2e.py's.)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from layersched.server import admin
from tests.conftest import SANDBOX_DIR
from tests.pipeline import stack as stack_module
from tests.pipeline.stack import Stack, free_port, running_stack, wait_for

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

GREEDY = b"""from layersched.sim.tracks.layers_v1.baselines import greedy_estimate


def policy(env, task, rng):
    return greedy_estimate(env, task, rng)
"""
# ~5 ms per decision (1800 decisions): the evaluation is still running when the fault comes.
SLOW_GREEDY = b"""import time
from layersched.sim.tracks.layers_v1.baselines import greedy_estimate


def policy(env, task, rng):
    time.sleep(0.005)
    return greedy_estimate(env, task, rng)
"""
FINAL = ("succeeded", "failed", "cancelled")
DOWN_S = 8  # how long PostgreSQL stays down


def _participant(stack: Stack, name: str) -> str:
    return admin.add_user(name=name, email=f"{name}@example.org", settings=stack.settings).token


def _me(stack: Stack, token: str) -> dict[str, Any]:
    response = httpx.get(f"{stack.api_url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


def _final(stack: Stack, token: str, submission_id: int) -> dict[str, Any] | None:
    try:
        submission = stack.submission(token, submission_id)
    except httpx.HTTPError:
        return None  # the API may fail while the database is down
    return submission if submission["state"] in FINAL else None


# ------------------------------------------------------------------------------------------- read-only bundle store


@pytest.fixture
def bundle_mount(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs for the bundle store, so it can be remounted read-only under the running API."""
    mountpoint = tmp_path / "bundle-disk"
    mountpoint.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mountpoint)], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def _remount(mountpoint: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(mountpoint)], check=True)


def test_read_only_bundle_store_gives_503_and_writes_nothing(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, bundle_mount: Path
) -> None:
    bundles = bundle_mount / "bundles"
    with running_stack(
        tmp_path,
        tmp_path_factory.getbasetemp() / "fault-baselines",
        LAYERSCHED_BUNDLE_DIR=str(bundles),
        LAYERSCHED_MAX_IN_FLIGHT="10",  # no worker runs: every upload stays queued
    ) as stack:
        token = _participant(stack, "rita")
        first = stack.upload(token, GREEDY, "before")  # a stored bundle, its folder exists
        stored = sorted(p.relative_to(bundle_mount) for p in bundle_mount.rglob("*"))
        used = _me(stack, token)["submissions_today"]

        _remount(bundle_mount, "ro")
        try:
            for content in (GREEDY + b"# new\n", GREEDY):  # a new bundle, and one already stored (deduplicated)
                response = httpx.post(
                    f"{stack.api_url}/api/v1/submissions",
                    headers={"Authorization": f"Bearer {token}"},
                    files={"file": ("policy.py", content, "text/x-python")},
                    data={"name": "during"},
                    timeout=30,
                )
                if content == GREEDY:
                    # The identical bundle is already on disk: nothing to write, the upload is accepted.
                    assert response.status_code == 201, response.text
                    continue
                assert response.status_code == 503, response.text
                assert response.json()["error"] == {
                    "code": "storage_unavailable",
                    "message": "the bundle store cannot be written (Read-only file system); "
                    "the upload was not kept, try again later",
                }
            assert sorted(p.relative_to(bundle_mount) for p in bundle_mount.rglob("*")) == stored
            assert _me(stack, token)["submissions_today"] == used + 1  # only the deduplicated one counts
            assert httpx.get(f"{stack.api_url}/healthz", timeout=10).status_code == 200
        finally:
            _remount(bundle_mount, "rw")
        after = stack.upload(token, GREEDY + b"# after\n", "after")
        assert after > first
        assert not [p for p in bundle_mount.rglob(".upload-*")]  # no temporary file left behind


# ---------------------------------------------------------------------------------------------- PostgreSQL restart

PG_BIN = Path("/usr/lib/postgresql/15/bin")


class PrivatePostgres:
    """A throwaway cluster owned by the ``postgres`` user, on a free port, trust authentication."""

    def __init__(self, root: Path) -> None:
        self.root, self.port = root, free_port()
        self.data, self.sockets = root / "data", root / "sockets"

    def _as_postgres(self, *argv: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *argv], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self.root.mkdir(parents=True)
        self.sockets.mkdir()
        shutil.chown(self.root, "postgres")
        shutil.chown(self.sockets, "postgres")
        self._as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1"
        self._as_postgres(
            str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start"
        )

    def stop(self, mode: str = "fast") -> None:
        self._as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    @property
    def admin_dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"

    def url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def up(self) -> bool:
        try:
            with psycopg.connect(self.admin_dsn, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.OperationalError:
            return False


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"no PostgreSQL binaries in {PG_BIN}")
    # Not under pytest's temporary folder: that one is private to root and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="layersched-faults-pg-"))
    root.chmod(0o755)
    server = PrivatePostgres(root / "cluster")
    try:
        server.init()
        yield server
    finally:
        if server.up():
            server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_stack(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    private_postgres: PrivatePostgres,
    monkeypatch: pytest.MonkeyPatch,
    sandbox_image: str,  # the worker runs the Docker sandbox of the machine's engine
) -> Iterator[Stack]:
    """running_stack with its database in the private cluster."""
    name = "layersched_faults"

    def create() -> str:
        with psycopg.connect(private_postgres.admin_dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    monkeypatch.setattr(stack_module, "create_pg_database", create)
    monkeypatch.setattr(stack_module, "drop_pg_database", lambda _name: None)  # the cluster goes as a whole
    with running_stack(
        tmp_path,
        tmp_path_factory.getbasetemp() / "fault-baselines",
        LAYERSCHED_DATABASE_URL=private_postgres.url(name),
    ) as running:
        yield running


def test_postgres_restart_during_an_evaluation(pg_stack: Stack, private_postgres: PrivatePostgres) -> None:
    stack = pg_stack
    stack.start_worker()
    token = _participant(stack, "pat")
    submission_id = stack.upload(token, SLOW_GREEDY, "slow greedy")
    wait_for(lambda: stack.submission(token, submission_id)["progress"]["done"] >= 1, 180, "the first episode")

    running = stack.submission(token, submission_id)
    assert running["state"] == "running" and running["progress"]["done"] < running["progress"]["total"]
    private_postgres.stop("fast")  # disconnects every session, like a restart or a fail-over
    down = httpx.get(f"{stack.api_url}/healthz", timeout=10)
    assert (down.status_code, down.json()) == (503, {"status": "unavailable"})  # the error text is the log's
    time.sleep(DOWN_S)  # the worker goes on deciding episodes meanwhile and must keep their results
    private_postgres.start()
    wait_for(private_postgres.up, 60, "PostgreSQL back")
    wait_for(lambda: httpx.get(f"{stack.api_url}/healthz", timeout=10).status_code == 200, 60, "the API healthy")

    done = wait_for(lambda: _final(stack, token, submission_id), 300, "the evaluation to end")
    evaluation = done["evaluations"][0]
    print(f"after the PostgreSQL restart: {done['state']}, error {done['error']}, attempts {evaluation['attempts']}")
    if done["state"] == "succeeded":
        assert done["progress"] == {"done": 6, "total": 6}
        assert done["score"] is not None
    else:  # a failure must say why, and a failure of the service gives the submission back
        assert done["error"] and done["error"]["category"] and done["error"]["message"], done
        assert _me(stack, token)["submissions_today"] == 0, done
    assert len(done["evaluations"]) == 1 and evaluation["state"] == done["state"]
    # Counted once: one submission, one evaluation, at most one row per episode.
    organiser = admin.add_user(name="olga", email="olga@example.org", role="organiser", settings=stack.settings).token
    detail = httpx.get(
        f"{stack.api_url}/api/v1/admin/evaluations/{evaluation['id']}",
        headers={"Authorization": f"Bearer {organiser}"},
        timeout=10,
    ).json()
    keys = [(e["scenario"], e["episode_id"]) for e in detail["episodes"]]
    assert len(keys) == len(set(keys)) <= 6
    # The next submission is evaluated normally.
    second = stack.upload(token, GREEDY, "after the restart")
    after = wait_for(lambda: _final(stack, token, second), 300, "the next evaluation")
    assert after["state"] == "succeeded", after["error"]
    stack.stop("worker", signal.SIGTERM)


# ------------------------------------------------------------------------------------------- Docker engine restart


PR_SET_CHILD_SUBREAPER = 36  # prctl(2)
# Command names (/proc/PID/comm, cut at 15 characters) of the engine's helpers: containerd, its shims, runc.
ENGINE_HELPERS = ("containerd", "runc", "docker-init")


def _set_child_subreaper(on: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl(PR_SET_CHILD_SUBREAPER, {int(on)}) failed")


def _children() -> dict[int, tuple[str, str]]:
    """This process's children: pid -> (command name, state letter)."""
    me, found = os.getpid(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == me:
            found[int(entry.name)] = (comm, fields[0])
    return found


class PrivateDockerd:
    """A second Docker engine this test starts, owns and may kill (the machine's engine is left alone).

    Why a killed engine would not come back, and what this class does about it: dockerd runs its containerd in a
    session of its own with a parent-death signal, so killing dockerd kills containerd, which becomes a zombie of its
    new parent. A restarted dockerd reads the old containerd's pid file, finds the pid still there (a zombie answers
    ``kill(pid, 0)``), takes containerd as "still running", waits for its socket and gives up ("timeout waiting for
    containerd to start"). On this machine PID 1 reaps orphans only every second or two, so a restart a second after
    the kill loses that race. The test process therefore makes itself a child subreaper while the engine exists:
    containerd and the shims (which outlive their containerd) become its children, and it reaps them itself, waits
    for the old containerd to be gone before a restart, and leaves no engine process behind.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.socket = root / "docker.sock"
        self.process: subprocess.Popen[bytes] | None = None
        self.image = ""  # the sandbox image, by the tag the machine's engine gave it

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"

    @property
    def log(self) -> Path:
        return self.root / "dockerd.log"

    def start(self) -> None:
        argv = [
            "/usr/sbin/dockerd",
            "-H",
            self.host,
            "--data-root",
            str(self.root / "data"),
            "--exec-root",
            str(self.root / "exec"),
            "--pidfile",
            str(self.root / "dockerd.pid"),
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-masq=false",
        ]
        with self.log.open("ab") as log:
            log.write(f"=== {time.strftime('%H:%M:%S')} start\n".encode())
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        started = time.monotonic()
        wait_for(self._up_or_exited, 60, "the private Docker engine")
        if not self.up():
            raise AssertionError(f"the private dockerd exited with {self.process.returncode}:\n{self._log_tail()}")
        print(f"private dockerd up in {time.monotonic() - started:.1f} s")

    def _up_or_exited(self) -> bool:
        assert self.process is not None
        return self.process.poll() is not None or self.up()

    def _log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])

    def up(self) -> bool:
        env = {**os.environ, "DOCKER_HOST": self.host}
        return subprocess.run(["docker", "info"], env=env, capture_output=True, check=False).returncode == 0

    def stop(self, sig: int) -> None:
        """SIGKILL: the engine crashes (its containerd dies with it, the shims and containers live on). SIGTERM: a
        clean stop, as ``systemctl restart docker`` does (dockerd stops its containers and its containerd)."""
        assert self.process is not None
        containerd = self._containerd_pid()
        os.killpg(self.process.pid, sig)  # dockerd's group; containerd has its own session
        self.process.wait(timeout=90)
        self.process = None
        if containerd is not None:
            self._wait_gone(containerd)

    def _containerd_pid(self) -> int | None:
        try:
            return int((self.root / "exec" / "containerd" / "containerd.pid").read_text())
        except (OSError, ValueError):
            return None

    def _wait_gone(self, pid: int) -> None:
        """Until ``pid`` is gone for good (reaped, not a zombie): after 10 s it is killed."""
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists():
            self.reap()
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 10
            time.sleep(0.05)

    def helpers(self) -> dict[int, tuple[str, str]]:
        """The engine's processes this test process adopted (containerd, shims), alive or zombie."""
        return {pid: c for pid, c in _children().items() if c[0].startswith(ENGINE_HELPERS)}

    def reap(self) -> None:
        for pid, (_, state) in self.helpers().items():
            if state == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)

    def reap_all(self, timeout: float) -> None:
        """Wait for the adopted helpers to end (shims end once their containers are stopped); kill the rest."""
        deadline = time.monotonic() + timeout
        while self.helpers() and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.1)
        for pid in self.helpers():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        while self.helpers():
            self.reap()
            time.sleep(0.05)

    def load_image(self, image: str) -> None:
        env = {**os.environ, "DOCKER_HOST": self.host}
        with subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE) as save:
            subprocess.run(["docker", "load"], stdin=save.stdout, env=env, check=True, capture_output=True, timeout=600)
        assert save.returncode == 0
        self.image = image


@pytest.fixture(scope="module")
def private_dockerd(sandbox_image: str) -> Iterator[PrivateDockerd]:
    if not Path("/usr/sbin/dockerd").exists():
        pytest.skip("no /usr/sbin/dockerd")
    root = Path(tempfile.mkdtemp(prefix="layersched-faults-dockerd-"))
    engine = PrivateDockerd(root)
    _set_child_subreaper(True)
    try:
        engine.start()
        engine.load_image(sandbox_image)  # about 25 s
        yield engine
    finally:
        if engine.process is not None:
            engine.stop(signal.SIGTERM)  # stops its containers and its containerd
        engine.reap_all(timeout=30)
        _set_child_subreaper(False)
        for sub in ("exec", "data"):  # dockerd bind-mounts its roots; a crashed one leaves layers and netns
            subprocess.run(["umount", "-R", "-l", str(root / sub)], check=False, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def engine(private_dockerd: PrivateDockerd) -> PrivateDockerd:
    """The private engine holding the sandbox image of the code on disk now.

    The session's ``sandbox_image`` is built once, but the worker started by each test imports the simulator as it
    is then: if someone changed its inputs meanwhile, the build script (a second when nothing changed) rebuilds it.
    """
    built = subprocess.run(
        [str(SANDBOX_DIR / "build_image.sh")], check=True, capture_output=True, text=True, timeout=900
    )
    image = built.stdout.strip().splitlines()[-1]
    if image != private_dockerd.image:
        private_dockerd.load_image(image)
    return private_dockerd


def _evaluation_detail(stack: Stack, organiser: str, evaluation_id: int) -> dict[str, Any]:
    response = httpx.get(
        f"{stack.api_url}/api/v1/admin/evaluations/{evaluation_id}",
        headers={"Authorization": f"Bearer {organiser}"},
        timeout=10,
    )
    response.raise_for_status()
    data: dict[str, Any] = response.json()
    return data


def _episodes(detail: dict[str, Any]) -> list[tuple[Any, ...]]:
    fields = ("scenario", "episode_id", "status", "trace_hash", "n_actions", "metrics")
    return sorted(tuple(e[f] for f in fields) for e in detail["episodes"])


@pytest.mark.parametrize(
    ("sig", "restart"),
    [(signal.SIGKILL, True), (signal.SIGTERM, True), (signal.SIGTERM, False)],
    ids=["crash-and-restart", "clean-restart", "stays-down"],
)
def test_docker_engine_restart_during_an_evaluation(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    engine: PrivateDockerd,
    sig: int,
    restart: bool,
) -> None:
    """The engine goes away under a running evaluation: never the policy's fault, nothing lost or counted twice.

    crash-and-restart: dockerd is SIGKILLed and restarted at once. Its containers outlive it, and the restarted
    engine stops them (no live-restore), so the sandbox dies mid-episode. clean-restart: SIGTERM, as ``systemctl
    restart docker`` does; the engine stops the sandbox as it goes. In both the evaluation must succeed (the episode
    is replayed, or the evaluation retried as the service's failure) with exactly the scores and action traces of an
    undisturbed run of the same bundle. stays-down: the engine stops and is not back before the retries run out:
    the evaluation fails as ``infrastructure``, blaming the engine, and the quota is given back.
    """
    attempts = "6" if restart else "2"  # retries back off 1, 2, 4, 8, 16 s: room for the engine to come back
    with running_stack(
        tmp_path,
        tmp_path_factory.getbasetemp() / "fault-baselines",
        DOCKER_HOST=engine.host,
        LAYERSCHED_SANDBOX_IMAGE=engine.image,
        LAYERSCHED_MAX_ATTEMPTS=attempts,
    ) as stack:
        stack.start_worker()
        token = _participant(stack, "dora")
        organiser = admin.add_user(
            name="olga", email="olga@example.org", role="organiser", settings=stack.settings
        ).token
        submission_id = stack.upload(token, SLOW_GREEDY, "slow greedy")
        wait_for(lambda: stack.submission(token, submission_id)["progress"]["done"] >= 1, 180, "the first episode")
        running = stack.submission(token, submission_id)
        assert running["state"] == "running" and running["progress"]["done"] < running["progress"]["total"]

        engine.stop(sig)
        if restart:
            engine.start()
        done = wait_for(lambda: _final(stack, token, submission_id), 600, "the evaluation to end")
        if not restart:
            engine.start()  # for the next submission, and the next test
        evaluation = done["evaluations"][0]
        used = _me(stack, token)["submissions_today"]
        worker_log = stack.log("worker")
        print(
            f"after the Docker engine {signal.Signals(sig).name} (restarted: {restart}): {done['state']}, "
            f"error {done['error']}, attempts {evaluation['attempts']}, submissions_today {used}, "
            f"replayed in the session: {'replaying it in a new sandbox' in worker_log}"
        )
        # The fault hit the evaluation: it was retried, or an episode replayed in a new sandbox.
        assert evaluation["attempts"] > 1 or "replaying it in a new sandbox" in worker_log, worker_log[-3000:]
        assert len(done["evaluations"]) == 1 and evaluation["state"] == done["state"]
        detail = _evaluation_detail(stack, organiser, evaluation["id"])
        keys = [(e["scenario"], e["episode_id"]) for e in detail["episodes"]]
        assert len(keys) == len(set(keys)) <= 6  # counted once
        assert all(e["status"] == "ok" for e in detail["episodes"]), detail["episodes"]  # none charged to the policy

        # The worker and the engine are healthy again: the same bundle, undisturbed, is the reference.
        second = stack.upload(token, SLOW_GREEDY, "after the restart")
        after = wait_for(lambda: _final(stack, token, second), 300, "the next evaluation")
        assert after["state"] == "succeeded", after["error"]
        reference = _evaluation_detail(stack, organiser, after["evaluations"][0]["id"])
        if restart:
            assert done["state"] == "succeeded", done["error"]
            assert done["progress"] == {"done": 6, "total": 6}
            assert _episodes(detail) == _episodes(reference)
            assert (detail["score_public"], detail["score_private"]) == (
                reference["score_public"],
                reference["score_private"],
            )
            assert used == 1  # counted once (the reference is uploaded after this was read)
        else:
            # The engine's failure is the service's: the participant reads that, the organisers the reason that
            # names it, and the submission is given back.
            assert done["state"] == "failed"
            assert done["error"]["category"] == "infrastructure", done["error"]
            assert "does not count against your quota" in done["error"]["message"], done["error"]
            assert "Docker engine" in detail["error"]["message"], detail["error"]
            assert detail["infrastructure_failure"] is True
            assert used == 0  # given back
        stack.stop("worker", signal.SIGTERM)
