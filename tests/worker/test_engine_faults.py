"""An engine that is down, restarting or failing is the service's fault (``infrastructure_error``), never the policy's.

Two levels:

* ``DockerBackend``'s classification against a small fake engine on a Unix socket, which answers what the test
  asks: the container's state, 404 (the container is gone), 500 (the engine fails), nothing at all (hung), or no
  socket (the engine is down). Only "gone" is about the container; the rest raise ``BackendUnavailable``.
* The runner with the real engine behind a relay the test can cut: the sandbox is killed while the relay is down,
  as when the engine dies and comes back (it stops its containers at start). The episode must end as
  ``infrastructure_error`` (the pipeline retries it, nothing recorded), never as the policy's crash or import error,
  and once the engine answers again the next episode runs in a new sandbox with the reference's actions.
"""

from __future__ import annotations

import contextlib
import gc
import http.server
import json
import os
import socket
import socketserver
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.errors import APIError, NotFound

from layersched.worker.sandbox.backend import BackendUnavailable
from layersched.worker.sandbox.docker_backend import WORKER_LABEL, DockerBackend, worker_identity
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.runner import open_sandbox

from .sandbox_contract import EPISODES, LAB, POLICIES, make_job, write_policy

CONTAINER_ID = "f" * 64

# ------------------------------------------------------------------------------------------ a fake engine


class _FakeEngine(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Answers container inspections and removals with ``reply``: (status, body), or None to hang."""

    daemon_threads = True

    def __init__(self, path: Path) -> None:
        self.reply: tuple[int, dict[str, Any]] | None = (200, {})
        self.release = threading.Event()  # ends the hung requests at shutdown
        super().__init__(str(path), _FakeEngineHandler)


class _FakeEngineHandler(http.server.BaseHTTPRequestHandler):
    server: _FakeEngine

    def _answer(self) -> None:
        if "/images/" in self.path:  # DockerBackend's constructor: no such image, so no orphan sweep either
            reply: tuple[int, dict[str, Any]] | None = (404, {"message": "No such image"})
        else:
            reply = self.server.reply
        if reply is None:
            self.server.release.wait(30)
            return
        status, body = reply
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_DELETE = do_POST = _answer

    def address_string(self) -> str:  # a Unix socket's peer has no address
        return "fake-engine-client"

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def fake_engine(tmp_path: Path) -> Iterator[_FakeEngine]:
    server = _FakeEngine(tmp_path / "engine.sock")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


@contextlib.contextmanager
def _docker_py_leaks_sockets() -> Iterator[None]:
    """docker-py's UnixHTTPConnection.connect does not close its socket when the connection fails (docker 7.1):
    the ResourceWarning of those sockets is docker-py's, not the backend's, so it is collected here and ignored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        yield
        gc.collect()


def _backend(socket_path: Path) -> DockerBackend:
    client = docker.DockerClient(base_url=f"unix://{socket_path}", version="1.41", timeout=1)
    backend = DockerBackend(SandboxLimits(), client=client)
    backend.container = client.containers.prepare_model({"Id": CONTAINER_ID})
    return backend


def _state(status: str, exit_code: int = 0, **extra: Any) -> tuple[int, dict[str, Any]]:
    return 200, {"Id": CONTAINER_ID, "State": {"Status": status, "ExitCode": exit_code, **extra}}


@pytest.mark.parametrize(
    ("reply", "alive", "description"),
    [
        (_state("running"), True, "container running"),
        (_state("exited", 137), False, "container exited, exit code 137"),
        (_state("exited", 137, OOMKilled=True), False, "container exited, exit code 137, OOM-killed"),
        ((404, {"message": "No such container"}), False, "container gone"),
    ],
    ids=["running", "exited", "oom-killed", "gone"],
)
def test_what_the_engine_says_about_the_container(
    fake_engine: _FakeEngine, reply: tuple[int, dict[str, Any]], alive: bool, description: str
) -> None:
    fake_engine.reply = reply
    backend = _backend(Path(fake_engine.server_address))  # type: ignore[arg-type]
    assert backend.alive() is alive
    assert backend.describe_exit() == description


def _no_socket(tmp_path: Path, engine: _FakeEngine) -> Path:
    return tmp_path / "gone.sock"  # the engine is down and removed its socket


def _stale_socket(tmp_path: Path, engine: _FakeEngine) -> Path:
    path = tmp_path / "stale.sock"  # a killed engine's socket file: nobody listens (connection refused)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
    return path


def _hung(tmp_path: Path, engine: _FakeEngine) -> Path:
    engine.reply = None  # accepts, never answers (an engine busy restoring its containers)
    return Path(engine.server_address)  # type: ignore[arg-type]


def _server_error(tmp_path: Path, engine: _FakeEngine) -> Path:
    engine.reply = (500, {"message": "containerd: connection error"})
    return Path(engine.server_address)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (_no_socket, "the Docker engine is unreachable"),
        (_stale_socket, "the Docker engine is unreachable"),
        (_hung, "the Docker engine is unreachable"),
        (_server_error, "the Docker engine failed to report on the sandbox: 500 Server Error"),
    ],
    ids=["down", "stale-socket", "hung", "server-error"],
)
def test_an_engine_that_cannot_answer_is_never_the_containers_end(
    tmp_path: Path, fake_engine: _FakeEngine, engine: Callable[[Path, _FakeEngine], Path], message: str
) -> None:
    with _docker_py_leaks_sockets():
        backend = _backend(engine(tmp_path, fake_engine))
        with pytest.raises(BackendUnavailable, match=message):
            backend.alive()
        assert backend.describe_exit().startswith(message)  # describes, never raises
        assert backend.memory_window_end() is None  # unknown (the cgroup is read first; this container has none)
        backend.close()  # must not raise over the reason the sandbox is being closed
        assert backend.container is None
        del backend


def test_a_backend_created_while_the_engine_is_down_fails_to_start_as_the_engines_fault(tmp_path: Path) -> None:
    with _docker_py_leaks_sockets():
        client = docker.DockerClient(base_url=f"unix://{tmp_path / 'gone.sock'}", version="1.41", timeout=1)
        backend = DockerBackend(SandboxLimits(), client=client)
        with pytest.raises(RuntimeError, match="Docker engine unavailable"):
            backend.start(tmp_path, tmp_path, nonce="n")
        del backend, client


# ------------------------------------------------------------------------ the real engine, behind a relay


class EngineRelay:
    """A Unix-socket relay to the machine's engine that the test can cut.

    Cutting it is the engine going away for this test's clients only: the real engine, which other tests share,
    keeps running. ``down()`` closes the listener, removes the socket file and resets every open connection.
    """

    def __init__(self, path: Path, target: str) -> None:
        self.path, self.target = path, target
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def up(self) -> None:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(self.path))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        self.path.unlink(missing_ok=True)
        with self._lock:
            for conn in self._conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            upstream = socket.socket(socket.AF_UNIX)
            try:
                upstream.connect(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


@pytest.fixture
def engine(sandbox_image: str) -> Iterator[docker.DockerClient]:
    client = docker.from_env()
    yield client
    # Sandboxes whose removal failed while the relay was down are this test's to remove.
    for container in client.containers.list(all=True, filters={"label": f"{WORKER_LABEL}={worker_identity()}"}):
        with contextlib.suppress(NotFound, APIError):
            container.remove(force=True)
    client.close()


@pytest.fixture
def relay(tmp_path: Path, engine: docker.DockerClient, monkeypatch: pytest.MonkeyPatch) -> Iterator[EngineRelay]:
    target = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    relay = EngineRelay(tmp_path / "relay.sock", target)
    relay.up()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{relay.path}")  # docker.from_env() in DockerBackend uses it
    yield relay
    relay.down()


def _mine(engine: docker.DockerClient) -> list[Any]:
    return list(engine.containers.list(filters={"label": f"{WORKER_LABEL}={worker_identity()}"}))


def _engine_dies_after(engine: docker.DockerClient, relay: EngineRelay, seconds: float) -> threading.Thread:
    """In ``seconds``, the engine goes away and its sandbox dies (a restarted engine stops what it finds)."""

    def crash() -> None:
        deadline = time.monotonic() + 30
        while not _mine(engine) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(seconds)
        relay.down()
        for container in _mine(engine):
            container.kill()

    thread = threading.Thread(target=crash)
    thread.start()
    return thread


@pytest.mark.docker
def test_sandbox_dying_while_the_engine_is_away_is_an_infrastructure_error(
    engine: docker.DockerClient, relay: EngineRelay
) -> None:
    with _docker_py_leaks_sockets(), open_sandbox(POLICIES / "slow_greedy", backend="docker") as session:
        job = make_job(session, "lab", LAB, EPISODES[0])
        reference = session.run_episode(job)
        assert reference.status == "ok", reference.message

        crash = _engine_dies_after(engine, relay, 0.15)  # the episode takes about 60 x 5 ms: half-way
        outcome = session.run_episode(job)
        crash.join()
        assert outcome.status == "infrastructure_error", outcome.message
        assert "the Docker engine is unreachable" in outcome.message
        assert session.restarts == 0  # not replayed while the engine is away: the pipeline retries later

        relay.up()  # the engine is back: the next episode gets a new sandbox and plays as if nothing happened
        again = session.run_episode(job)
        assert (again.status, again.trace_hash) == ("ok", reference.trace_hash), again.message
        assert session.restarts == 1


@pytest.mark.docker
def test_sandbox_dying_during_the_import_while_the_engine_is_away_is_not_an_import_error(
    tmp_path: Path, engine: docker.DockerClient, relay: EngineRelay
) -> None:
    bundle = write_policy(
        tmp_path,
        """
        import time

        time.sleep(1.5)  # the engine goes away during the import


        def policy(env, task, rng):
            return 0
        """,
    )
    crash = _engine_dies_after(engine, relay, 0.5)
    with _docker_py_leaks_sockets(), open_sandbox(bundle, backend="docker") as session:
        crash.join()
        assert session.startup.status == "infrastructure_error", session.startup.message
        assert "Docker engine" in session.startup.message
        outcome = session.run_episode(make_job(session, "lab", LAB, EPISODES[0]))
        assert outcome.status == "infrastructure_error", outcome.message
