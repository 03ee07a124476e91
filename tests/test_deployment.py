"""The production deployment files: docker-compose.yml is valid and wires the services the README describes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _compose_config() -> dict[str, object]:
    # Debian's engine has no `docker compose` plugin; its docker-compose package (v1.29) validates the same file.
    if shutil.which("docker-compose"):
        argv = ["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config"]
    elif subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        argv = ["docker", "compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--format", "json"]
    else:
        pytest.fail("neither docker-compose nor the docker compose plugin is installed (scripts/bootstrap --system)")
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT).stdout
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
