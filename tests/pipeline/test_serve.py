"""`layersched serve --demo`, the README's first command: embedded storage and broker, a worker, a ranked demo."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.pipeline.stack import free_port, wait_for

pytestmark = pytest.mark.slow


def test_demo_serves_a_ranked_leaderboard_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAYERSCHED_")}
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        serve = subprocess.Popen(
            ["layersched", "serve", "--demo", "--port", str(port), "--data-dir", str(tmp_path / "var")],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:

        def demo_ranked() -> bool:
            try:
                rows = httpx.get(f"{url}/api/v1/leaderboard", timeout=5).json()["rows"]
            except httpx.HTTPError:
                return False
            return any(r["participant"] == "demo-student" and r["rank"] == 1 for r in rows)

        wait_for(demo_ranked, 120, "the demo submission on the leaderboard")
        text = log.read_text()
        tokens = re.findall(r"token: (lst_\S+)", text)
        assert len(tokens) == 2, text
        me = httpx.get(f"{url}/api/v1/me", headers={"Authorization": f"Bearer {tokens[1]}"}, timeout=5).json()
        assert me["name"] == "demo-student"
        board = httpx.get(f"{url}/api/v1/leaderboard", timeout=5).json()
        assert {r["participant"] for r in board["rows"] if r["baseline"]} == {
            "Random",
            "LeastLoaded",
            "Kube",
            "Dep",
            "LRS",
            "Greedy",
        }
        assert httpx.get(f"{url}/healthz", timeout=5).json() == {"database": "ok", "broker": "ok"}
        # Everything lives in the data directory: storage, broker and bundles.
        assert {p.name for p in (tmp_path / "var").iterdir()} >= {"layersched.db", "broker.db", "bundles"}
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        assert serve.wait(timeout=60) == 0, log.read_text()[-3000:]

    # The worker and its pool went with it: nothing is left in the process group.
    def group_gone() -> bool:
        try:
            os.killpg(serve.pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(group_gone, 30, "the worker processes to exit")


def test_serve_reports_a_bad_evaluation_set_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.toml"
    bad.write_text('format = "layersched-evalset"\nversion = 1\nname = "x"\n', encoding="utf-8")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LAYERSCHED_")},
        "LAYERSCHED_EVALSET_PATH": str(bad),
    }
    result = subprocess.run(
        ["layersched", "serve", "--port", str(free_port()), "--data-dir", str(tmp_path / "var")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "broken.toml" in result.stderr and "Traceback" not in result.stderr
