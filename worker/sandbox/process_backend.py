"""Development sandbox: the harness as a local subprocess with rlimits and, where the kernel allows, new network
and PID namespaces (``unshare``).

It is much weaker than the docker backend: the policy shares the host's filesystem view and user, and memory is
bounded by address space (``RLIMIT_AS``), not by a cgroup. It says so when used and the runner refuses hidden
evaluation sets on it unless an organiser explicitly allows them.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import platform
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Literal

from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.memory_accounting import MemoryHit
from layersched.worker.sandbox.run_dirs import SOCKET_NAME
from layersched.worker.sandbox.wire import NONCE_ENV

log = logging.getLogger(__name__)

# Torch reserves address space it never touches; this much on top of the memory limit keeps its import working.
ADDRESS_SPACE_HEADROOM = 1024 * 1024 * 1024


@functools.lru_cache(maxsize=1)
def unshare_prefix() -> tuple[str, ...]:
    """The ``unshare`` command line that works here (new net + PID namespaces), or () if none does."""
    candidates: list[tuple[str, ...]] = [("unshare", "--net", "--pid", "--fork", "--kill-child")]
    if os.geteuid() != 0:
        candidates.insert(0, ("unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child"))
    for prefix in candidates:
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return prefix
    return ()


class ProcessBackend:
    """The harness as a subprocess of the worker."""

    name: Literal["process"] = "process"
    sandbox_uid: int | None = None  # the worker's own user
    memory_accounted = False  # RLIMIT_AS refuses allocations (MemoryError) and counts nothing

    def __init__(self, limits: SandboxLimits) -> None:
        self.limits = limits
        self.image_digest = f"process:python-{platform.python_version()}"
        self.namespaces = unshare_prefix()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._stderr_path: Path | None = None
        log.warning(
            "process sandbox in use: development only, weaker isolation than docker "
            "(rlimits%s; no filesystem isolation, no memory cgroup)",
            ", new network and PID namespaces" if self.namespaces else ", NO namespaces (unshare not permitted)",
        )

    def start(self, channel_dir: Path, bundle_dir: Path, *, nonce: str) -> None:
        command = [
            *self.namespaces,
            sys.executable,
            *(["-P"] if sys.version_info >= (3, 11) else []),  # no working directory (the policy's) on sys.path
            "-m",
            "layersched.worker.sandbox.harness",
            "--socket",
            str(channel_dir / SOCKET_NAME),
            "--bundle",
            str(bundle_dir),
            "--output-bytes",
            str(self.limits.output_bytes),
            "--poll-us",
            str(round(self.limits.poll_seconds * 1e6)),
        ]
        env = {  # nothing of the worker's environment (no secrets), only what makes runs reproducible
            "PATH": os.defpath,
            "HOME": str(channel_dir),
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            NONCE_ENV: nonce,
        }
        # The harness is this worker's own interpreter: with the worker's import path it finds the same modules,
        # among them a track defined outside layersched (a test's, an organiser's) that a scenario frame names.
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        self._stderr_path = channel_dir.parent / f"harness-{channel_dir.name}.stderr"
        self._stderr = open(self._stderr_path, "wb")  # noqa: SIM115  (closed in close())
        self._proc = subprocess.Popen(
            command,
            env=env,
            cwd=channel_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            start_new_session=True,
            preexec_fn=self._apply_rlimits,
        )

    def _apply_rlimits(self) -> None:  # runs in the child between fork and exec
        lim = self.limits
        memory = lim.memory_bytes + ADDRESS_SPACE_HEADROOM
        for which, value in (
            (resource.RLIMIT_AS, memory),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_FSIZE, lim.tmp_bytes),
            (resource.RLIMIT_NOFILE, 256),
            (resource.RLIMIT_CPU, int(lim.submission_seconds) + 1),
        ):
            resource.setrlimit(which, (value, value))
        if os.geteuid() != 0:  # root ignores RLIMIT_NPROC; it counts all of the user's processes anyway
            resource.setrlimit(resource.RLIMIT_NPROC, (lim.pids, lim.pids))

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def memory_window_end(self, *, verdict: bool = True) -> MemoryHit | None:
        # No memory cgroup: running out of address space (RLIMIT_AS) raises MemoryError in the policy instead, which
        # its episode process reports as an allocation refused (memory_exceeded; a MemoryError the policy raises
        # itself is its exception). A process that catches it and then overruns its deadline is a timeout here:
        # nothing on the host counted the limit.
        return None

    def killed_from_outside(self) -> bool:
        # unshare --fork ends with its child's signal; without it the harness is this process itself.
        return self._proc is not None and self._proc.poll() == -signal.SIGKILL

    def describe_exit(self) -> str:
        if self._proc is None:
            return "harness not started"
        code = self._proc.poll()
        tail = ""
        if self._stderr_path is not None and self._stderr_path.exists():
            tail = self._stderr_path.read_bytes()[-2000:].decode(errors="replace").strip()
        state = "harness still running" if code is None else f"harness exited with code {code}"
        return f"{state}; stderr: {tail}" if tail else state

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=10)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
