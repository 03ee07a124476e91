"""Which sandbox a worker uses, and why, in words a newcomer can act on.

``LAYERSCHED_SANDBOX_BACKEND=auto`` (the default) means Docker when an engine answers and holds a sandbox image built
from this worker's simulator rules (the image's label: the default track's rules hash, which build_image.sh reads from
the files it copies), and otherwise the weaker process sandbox. The reason is said in plain words
(which engine address did not answer, which image is missing and the command that builds it), not as the Docker SDK's
exception text, because ``layersched serve`` prints it on its first lines and the worker logs it.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Literal

from layersched.server.config import Settings
from layersched.sim.tracks import DEFAULT_TRACK_ID, get_track

Backend = Literal["docker", "process"]
DEFAULT_ENGINE = "unix:///var/run/docker.sock"
START_ENGINE = "bash worker/sandbox/start_dockerd.sh"
BUILD_IMAGE = "bash worker/sandbox/build_image.sh"


@dataclass(frozen=True)
class SandboxChoice:
    backend: Backend
    reason: str  # why this backend, in plain words

    def describe(self) -> str:
        """One line for a console: which sandbox, what that means, and why it was chosen."""
        if self.backend == "docker":
            return f"sandbox: Docker ({self.reason})"
        return (
            "sandbox: the PROCESS sandbox, weaker than Docker (policies run as plain processes of this machine: for "
            f"trying the service, not for a challenge; hidden evaluation sets are refused), because {self.reason}"
        )


def choose_sandbox(settings: Settings) -> SandboxChoice:
    """The configured backend, or for ``auto`` Docker when it is usable and the process sandbox otherwise."""
    if settings.sandbox_backend != "auto":
        return SandboxChoice(settings.sandbox_backend, f"LAYERSCHED_SANDBOX_BACKEND={settings.sandbox_backend}")
    problem = docker_problem(settings.sandbox_image)
    if problem is None:
        return SandboxChoice("docker", f"image {settings.sandbox_image}, engine at {engine_address()}")
    return SandboxChoice("process", problem)


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or DEFAULT_ENGINE


def docker_problem(image: str) -> str | None:
    """Why the Docker sandbox cannot run here, or None when it can."""
    try:
        import docker
        import docker.errors
    except ImportError:
        return "the docker Python package is not installed (pip install 'layersched[server]')"
    no_engine = f"no Docker engine answers at {engine_address()} (start one: {START_ENGINE})"
    if not _unix_socket_accepts(engine_address()):
        return no_engine
    try:
        client = docker.from_env(timeout=5)
    except docker.errors.DockerException:
        return no_engine
    try:
        try:
            client.ping()
        except (docker.errors.DockerException, OSError):
            return no_engine
        try:
            rules = client.images.get(image).labels.get("layersched.rules")
        except docker.errors.ImageNotFound:
            return f"the sandbox image {image} is not built (build it: {BUILD_IMAGE})"
        except (docker.errors.DockerException, OSError) as exc:
            return f"the Docker engine at {engine_address()} could not describe image {image}: {_short(exc)}"
    finally:
        client.close()
    ours = image_rules()
    if rules != ours:
        return (
            f"the sandbox image {image} holds simulator rules {rules}, this worker's are {ours} "
            f"(rebuild it: {BUILD_IMAGE})"
        )
    return None


def image_rules() -> str:
    """What a sandbox image built from this worker's simulator is labelled with (``layersched.rules``): the default
    track's rules hash. (Every track's code is also compared, file by file, by the harness's ``sim`` fingerprint.)"""
    return get_track(DEFAULT_TRACK_ID).rules_hash


def _unix_socket_accepts(address: str) -> bool:
    """False for a ``unix://`` address nobody listens on; True for one that accepts and for other schemes.

    Asked before the Docker SDK, whose client leaves its socket open when the engine is not there.
    """
    if not address.startswith("unix://"):
        return True
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(5)
        try:
            probe.connect(address.removeprefix("unix://"))
        except OSError:
            return False
    return True


def _short(exc: BaseException, keep: int = 200) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= keep else text[: keep - 3] + "..."
