"""Production sandbox: one locked-down container per evaluation, kept alive for all of its episodes.

The container has no network, a read-only root, a non-root user, no capabilities, ``no-new-privileges``, the
default seccomp profile, a pids limit, memory = memory+swap (no swap), a CPU quota, a small size-limited ``/tmp``
tmpfs and no logging driver. From the host it sees only the bundle (read-only) and the directory holding the
channel's Unix socket. Its environment holds no secrets, only settings that make runs reproducible.

A worker may start containers ahead of their evaluation (``sandbox_pool``: same lockdown, the bundle copied into
the mounted directory when one is claimed); each container still serves exactly one evaluation.

Every container carries labels naming the worker that started it; ``sweep_orphans`` (run once per worker process,
on the first sandbox) removes the containers of workers that are gone, so a killed worker leaks nothing for long.
The harness also exits by itself when the worker's end of the channel closes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Literal

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.types import LogConfig, Mount

from layersched.worker.sandbox.backend import BackendUnavailable
from layersched.worker.sandbox.cache_guard import WARM_IMAGE_SCRIPT
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.memory_accounting import CgroupMemory, MemoryHit, container_cgroup
from layersched.worker.sandbox.run_dirs import SOCKET_NAME
from layersched.worker.sandbox.wire import NONCE_ENV

log = logging.getLogger(__name__)

DEFAULT_IMAGE = "layersched-sandbox:latest"
LABEL = "layersched.sandbox"
WORKER_LABEL = "layersched.worker"
SANDBOX_UID = 10001  # the image's sandbox user (and group)
BUNDLE_MOUNT = "/bundle"
CHANNEL_MOUNT = "/run/layersched"
# Kernel limits of the container's IPC namespace: no segment, queue or semaphore set can be created.
IPC_OFF = {"kernel.shmmni": "0", "kernel.msgmni": "0", "kernel.sem": "0 0 0 0", "fs.mqueue.queues_max": "0"}
# Containers older than this are removed by the sweep whoever started them: no evaluation lasts this long.
ORPHAN_MAX_AGE_SECONDS = 6 * 3600

_swept = False
_sweep_lock = threading.Lock()
_warmed: set[str] = set()  # image ids this process has read into the page cache (cache_guard)


def _process_start_ticks(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]  # field 22: start time since boot, in clock ticks
    except (OSError, IndexError):
        return None


def worker_identity() -> str:
    """``host:pid:start-ticks``: names this worker process uniquely, even across pid reuse."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_process_start_ticks(pid)}"


def _is_orphan(labels: dict[str, str], created: float, now: float) -> bool:
    if now - created > ORPHAN_MAX_AGE_SECONDS:
        return True
    host, _, rest = labels.get(WORKER_LABEL, "").partition(":")
    pid_text, _, ticks = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another machine's worker sharing this engine: only the age rule applies
    return _process_start_ticks(int(pid_text)) != ticks


def sweep_orphans(client: docker.DockerClient | None = None) -> int:
    """Remove sandbox containers whose worker is gone (or that are too old); returns how many were removed.

    Call it when a worker starts (``DockerBackend`` also runs it once per process, on its first sandbox).
    """
    client = client if client is not None else docker.from_env()
    removed: list[str] = []
    now = time.time()
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        attrs = container.attrs
        created = _parse_created(attrs.get("Created", ""))
        if _is_orphan(container.labels, created, now):
            with contextlib.suppress(NotFound, APIError):
                container.remove(force=True)
                removed.append(container.id)
    if removed:
        log.warning("removed %d orphaned sandbox container(s): %s", len(removed), ", ".join(c[:12] for c in removed))
    return len(removed)


def warm_image(client: docker.DockerClient, image: str) -> None:
    """Read every file of ``image`` into the page cache, in a throwaway container (``cache_guard`` says why): no
    network, read-only, no capabilities, the sandbox's user; no memory limit, so that it keeps every page it reads."""
    started = time.monotonic()
    client.containers.run(
        image,
        command=["python3", "-c", WARM_IMAGE_SCRIPT],
        user=f"{SANDBOX_UID}:{SANDBOX_UID}",
        network_mode="none",
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        log_config=LogConfig(type="none"),
        labels={LABEL: "1", WORKER_LABEL: worker_identity()},
        remove=True,
    )
    log.info("read image %s into the page cache in %.1f s", image, time.monotonic() - started)


def _parse_created(text: str) -> float:
    # Docker reports RFC 3339 with nanoseconds: 2026-11-29T10:00:00.123456789Z
    from datetime import datetime, timezone

    try:
        base = text.split(".")[0].rstrip("Z")
        return datetime.strptime(base, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return time.time()


class DockerBackend:
    """The harness in a container of the sandbox image."""

    name: Literal["docker"] = "docker"
    sandbox_uid: int | None = SANDBOX_UID
    memory_accounted = True  # the container's memory cgroup, or the engine's record of an out-of-memory kill

    def __init__(
        self, limits: SandboxLimits, *, image: str | None = None, client: docker.DockerClient | None = None
    ) -> None:
        global _swept
        self.limits = limits
        self.image = image or DEFAULT_IMAGE
        self.image_digest = ""
        self.container: Any = None
        # The container's memory accounting: its cgroup on the host, or, where this process cannot see it, whether
        # the engine saw an out-of-memory kill when last asked (memory_window_end).
        self._memory: CgroupMemory | None = None
        self._engine_oom_seen = False
        self._error: Exception | None = None
        try:
            self.client = client if client is not None else docker.from_env()
            self.image_digest = self.client.images.get(self.image).id
            with _sweep_lock:
                if not _swept:
                    sweep_orphans(self.client)
                    _swept = True
                if self.image_digest not in _warmed:
                    warm_image(self.client, self.image)
                    _warmed.add(self.image_digest)
        except ImageNotFound:
            self._error = RuntimeError(
                f"sandbox image {self.image!r} not found; build it with worker/sandbox/build_image.sh"
            )
        except (DockerException, requests.RequestException) as exc:  # the transport's errors are not wrapped
            self._error = RuntimeError(f"Docker engine unavailable: {exc}")

    def start(self, channel_dir: Path, bundle_dir: Path, *, nonce: str, await_load: bool = False) -> None:
        """Start the container. ``await_load``: for a warm pool, ``bundle_dir`` is still empty and the harness waits
        for a ``load`` frame (sent once the bundle has been copied in) before it imports anything of a participant."""
        if self._error is not None:
            raise self._error
        lim = self.limits
        self.container = self.client.containers.run(
            self.image,
            command=[
                "python3",
                "-P",  # no working directory on sys.path: the container's /tmp is the policy's to write
                "-m",
                "layersched.worker.sandbox.harness",
                "--socket",
                f"{CHANNEL_MOUNT}/{SOCKET_NAME}",
                "--bundle",
                BUNDLE_MOUNT,
                "--output-bytes",
                str(lim.output_bytes),
                "--poll-us",
                str(round(lim.poll_seconds * 1e6)),
                "--container",  # its own PID namespace (the harness is PID 1) and tmpfs scratch space
                *(["--await-load"] if await_load else []),
            ],
            detach=True,
            # No docker-init: the harness is PID 1 itself, which no process of its namespace can kill or stop (the
            # kernel drops their signals to it), so a policy cannot end its own sandbox to have an episode replayed.
            # The harness reaps what the policy leaves behind.
            init=False,
            # The harness ignores every signal (see above), SIGTERM too: the engine must stop it with SIGKILL at once
            # (docker stop, an engine shutting down or restarting) instead of waiting out a stop timeout.
            stop_signal="SIGKILL",
            user=f"{SANDBOX_UID}:{SANDBOX_UID}",
            working_dir="/tmp",
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=lim.pids,
            mem_limit=lim.memory_bytes,
            memswap_limit=lim.memory_bytes,
            nano_cpus=int(lim.cpus * 1e9),
            tmpfs={"/tmp": f"rw,nosuid,nodev,noexec,size={lim.tmp_bytes},mode=1777"},
            # An IPC namespace of its own in which System V shared memory, message queues and semaphores and POSIX
            # message queues cannot be created at all: none of them can carry anything from one episode to the next
            # (they outlive processes). /dev/shm is sized like /tmp and emptied between episodes like it.
            ipc_mode="private",
            sysctls=IPC_OFF,
            shm_size=lim.tmp_bytes,
            log_config=LogConfig(type="none"),
            mounts=[
                Mount(BUNDLE_MOUNT, str(bundle_dir), type="bind", read_only=True),
                Mount(CHANNEL_MOUNT, str(channel_dir), type="bind", read_only=True),
            ],
            environment={
                "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONUNBUFFERED": "1",
                "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "HOME": "/tmp",
                "LANG": "C.UTF-8",
                NONCE_ENV: nonce,
            },
            labels={LABEL: "1", WORKER_LABEL: worker_identity()},
        )
        directory = container_cgroup(self.container.id)
        self._memory, self._engine_oom_seen = None, False
        with contextlib.suppress(OSError, ValueError):  # unreadable: the engine is asked instead
            self._memory = None if directory is None else CgroupMemory(directory)

    def _state(self) -> dict[str, Any]:
        """The container's ``State`` from the engine; {} if the container is gone.

        Raises ``BackendUnavailable`` when the engine itself does not answer (down, restarting, failing): then
        nothing is known about the container, and what happened to it must not be charged to the policy.
        """
        if self.container is None:
            return {}
        try:
            self.container.reload()
        except NotFound:
            return {}
        except APIError as exc:
            if exc.is_server_error():  # 5xx: the engine failed, not the request
                raise BackendUnavailable(f"the Docker engine failed to report on the sandbox: {exc}") from exc
            return {}
        except (DockerException, requests.RequestException) as exc:
            # docker-py lets the transport's errors through (connection refused, socket missing, read timeout).
            raise BackendUnavailable(f"the Docker engine is unreachable: {exc}") from exc
        return dict(self.container.attrs.get("State", {}))

    def alive(self) -> bool:
        return self._state().get("Status") == "running"

    def memory_window_end(self, *, verdict: bool = True) -> MemoryHit | None:
        """How the container's memory limit was hit since the last call (or its start), read on the host
        (``memory_accounting``); None if it was not, or cannot be told. Starts the next window.

        Where this process cannot see the container's cgroup, the engine's ``OOMKilled`` flag is asked instead; it
        stays set from the first out-of-memory kill on, so it tells of the first one only (and is set a moment after
        the kill: weaker). The engine is asked only for a ``verdict`` (a request per episode would slow them all)."""
        if self.container is None:
            return None
        if self._memory is not None:
            try:
                return self._memory.window_end()
            except OSError:
                pass  # the container stopped and its cgroup went with it: the engine's record is what is left
        if not verdict:
            return None
        try:
            killed = bool(self._state().get("OOMKilled"))
        except BackendUnavailable:
            return None  # unknown: the caller then asks alive(), which says the engine is away
        if not killed or self._engine_oom_seen:
            return None
        self._engine_oom_seen = True
        return MemoryHit(1, source="engine")

    def describe_exit(self) -> str:
        try:
            state = self._state()
        except BackendUnavailable as exc:
            return str(exc)
        if not state:
            return "container gone"
        if state.get("Status") == "running":
            return "container running"
        parts = [f"container {state.get('Status')}", f"exit code {state.get('ExitCode')}"]
        if state.get("OOMKilled"):
            parts.append("OOM-killed")
        if state.get("Error"):
            parts.append(str(state["Error"]))
        return ", ".join(parts)

    def killed_from_outside(self) -> bool:
        try:
            state = self._state()
        except BackendUnavailable:
            return False
        if not state:
            return True  # removed: only the engine, an operator or another worker does that
        return state.get("Status") in ("exited", "dead") and state.get("ExitCode") == 137 and not state.get("OOMKilled")

    def detach(self) -> Any:
        """Hand the container over (to be removed elsewhere, e.g. in the background) and forget it; None if none."""
        container, self.container = self.container, None
        return container

    def close(self) -> None:
        if self.container is not None:
            try:
                self.container.remove(force=True)
            except (NotFound, APIError):
                pass
            except (DockerException, requests.RequestException) as exc:
                # The engine is away: closing must not raise over the reason the sandbox is being closed. An engine
                # that comes back stops the container (no live-restore); the next worker's sweep removes it.
                # str(exc): a log record keeping the exception would keep docker-py's unclosed socket alive with it.
                log.warning("could not remove sandbox container %s: %s", self.container.id[:12], str(exc))
            self.container = None
