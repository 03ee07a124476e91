"""The production deployment files: docker-compose.yml is valid and wires the services the README describes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _compose_argv(file: Path = ROOT / "docker-compose.yml") -> list[str]:
    # Debian's engine has no `docker compose` plugin; its docker-compose package (v1.29) validates the same file.
    if shutil.which("docker-compose"):
        return ["docker-compose", "-f", str(file), "config"]
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose", "-f", str(file), "config", "--format", "json"]
    pytest.fail("neither docker-compose nor the docker compose plugin is installed (scripts/bootstrap --system)")


def _compose_env(**values: str) -> dict[str, str]:
    """The environment without any POSTGRES_PASSWORD of the caller's, and from an empty folder: no .env is read."""
    return {**{k: v for k, v in os.environ.items() if k != "POSTGRES_PASSWORD"}, **values}


def _compose_config() -> dict[str, object]:
    argv = _compose_argv()
    env = _compose_env(POSTGRES_PASSWORD="s3cret")
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT, env=env).stdout
    if out.lstrip().startswith("{"):
        return json.loads(out)  # type: ignore[no-any-return]
    import yaml

    return yaml.safe_load(out)  # type: ignore[no-any-return]


def test_compose_config_is_valid_and_complete() -> None:
    config = _compose_config()
    services = config["services"]
    assert isinstance(services, dict)
    assert {"postgres", "redis", "migrate", "api", "worker", "sandbox-image"} <= set(services)
    assert "--appendonly" in services["redis"]["command"]
    assert services["worker"]["command"] == ["layersched", "worker"]
    assert services["worker"]["environment"]["LAYERSCHED_BROKER_URL"] == "redis://redis:6379/0"
    assert services["migrate"]["command"] == ["alembic", "upgrade", "head"]
    assert any("docker.sock" in str(v) for v in services["worker"]["volumes"])
    # The evaluation sets hold the hidden episodes' keys: only the worker, which runs the simulator, mounts them.
    assert [v for v in map(str, services["worker"]["volumes"]) if "/srv/evalsets" in v] != []
    for name in ("api", "migrate"):
        assert [v for v in map(str, services[name]["volumes"]) if "evalsets" in v or "hidden_seeds" in v] == []

    # Issue 29: nothing names one current set any more (sets are registered with `layersched evalset register`).
    for name in ("api", "worker", "migrate"):
        assert "LAYERSCHED_EVALSET_PATH" not in services[name]["environment"]
    assert "s3cret@postgres:5432" in services["api"]["environment"]["LAYERSCHED_DATABASE_URL"]


def test_compose_refuses_to_run_without_a_postgres_password(tmp_path: Path) -> None:
    """Issue 29: no silent default password; the refusal says what to set."""
    (tmp_path / "docker-compose.yml").write_text((ROOT / "docker-compose.yml").read_text())
    argv = [
        a if a != str(ROOT / "docker-compose.yml") else str(tmp_path / "docker-compose.yml") for a in _compose_argv()
    ]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=_compose_env())
    assert result.returncode != 0
    assert "set POSTGRES_PASSWORD in .env" in result.stdout + result.stderr
