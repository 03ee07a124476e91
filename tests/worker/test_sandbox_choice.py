"""Which sandbox `auto` picks, and the plain words that say why, against the real Docker engine (issue 16, item 16)."""

from __future__ import annotations

import io
from pathlib import Path

import docker
import pytest

from layersched.server.config import Settings
from layersched.sim.tracks import DEFAULT_TRACK_ID, get_track
from layersched.worker.sandbox.choice import choose_sandbox, image_rules

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("sandbox_image")]


def settings(**overrides: object) -> Settings:
    return Settings(database_url="sqlite://", **overrides)  # type: ignore[arg-type]


def test_docker_when_the_engine_answers_and_the_image_holds_these_rules() -> None:
    choice = choose_sandbox(settings())
    assert choice.backend == "docker"
    assert choice.describe() == (
        "sandbox: Docker (image layersched-sandbox:latest, engine at unix:///var/run/docker.sock)"
    )


def test_no_engine_is_said_with_its_address_and_how_to_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    choice = choose_sandbox(settings())
    assert choice.backend == "process"
    assert choice.reason == (
        f"no Docker engine answers at unix://{tmp_path}/none.sock (start one: bash worker/sandbox/start_dockerd.sh)"
    )
    assert choice.describe().startswith("sandbox: the PROCESS sandbox, weaker than Docker (")
    assert "Error while fetching" not in choice.describe()


def test_a_missing_image_is_said_with_the_command_that_builds_it() -> None:
    choice = choose_sandbox(settings(sandbox_image="layersched-sandbox:never-built"))
    assert (choice.backend, choice.reason) == (
        "process",
        "the sandbox image layersched-sandbox:never-built is not built (build it: bash worker/sandbox/build_image.sh)",
    )


def test_an_image_of_other_rules_is_refused_with_both_hashes() -> None:
    client = docker.from_env()
    tag = "layersched-sandbox:test-other-rules"
    dockerfile = b"FROM layersched-sandbox:latest\nLABEL layersched.rules=0123456789abcdef\n"
    client.images.build(fileobj=io.BytesIO(dockerfile), tag=tag, rm=True)
    try:
        choice = choose_sandbox(settings(sandbox_image=tag))
    finally:
        client.images.remove(tag, force=True)
        client.close()
    assert choice.backend == "process"
    assert choice.reason == (
        f"the sandbox image {tag} holds simulator rules 0123456789abcdef, this worker's are {image_rules()} "
        "(rebuild it: bash worker/sandbox/build_image.sh)"
    )
    assert image_rules() == get_track(DEFAULT_TRACK_ID).rules_hash


@pytest.mark.parametrize("backend", ["docker", "process"])
def test_a_configured_backend_is_taken_as_it_is(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")  # not even asked
    choice = choose_sandbox(settings(sandbox_backend=backend))
    assert (choice.backend, choice.reason) == (backend, f"LAYERSCHED_SANDBOX_BACKEND={backend}")
