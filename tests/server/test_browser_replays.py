"""The schedule pages in a real headless Chromium, signed in, with only a loopback (issue 33): the submission page's
per-episode table and the replay pages of a jobs-v1 and a workflows-v1 episode render their SVG, ask nothing of
anyone but the server, break no rule of the Content-Security-Policy, and draw bars in their colours.

The server, chromedriver and Chromium run in a network namespace of their own whose only interface is its loopback
(``visit_pages`` records what the browser asked for and what its console said). Set
``LAYERSCHED_SCREENSHOTS=DIR`` to keep the full-page screenshots for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from layersched.server import storage
from layersched.server.db import make_engine, make_sessionmaker
from layersched.sim.evalset import evalset_file, score_baselines
from layersched.sim.tracks import get_track
from layersched.worker.evalsets import write_reference_rows

from . import public_runs
from .test_browser import loopback_namespace, migrated_sqlite, read_png, uvicorn_server
from .test_replays import jobs_set

pytestmark = [pytest.mark.browser, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
RUN_RGB = (0x4C, 0x78, 0xA8)  # .sched .run (and group 0)
HOLD_RGB = (0xE4, 0x57, 0x56)  # .sched .hold


def _seed(database_url: str, root: Path) -> dict[str, Any]:
    engine = make_engine(database_url)
    out: dict[str, Any] = {}
    with make_sessionmaker(engine)() as session:
        alice = storage.create_user(session=session, name="alice", email="alice@x.org")
        out["token"] = storage.issue_token(session=session, user_id=alice.id)[1]
        for path, phase, baseline in (
            (jobs_set(root / "jobs-mixed.toml"), None, "Random"),
            (evalset_file("workflows-sample"), "flows", "FCFS"),
            (evalset_file("sample"), "lab", "Dep"),
        ):
            row, evalset = public_runs.register(session, path, current=phase is None)
            if phase is not None:
                storage.create_phase(
                    session=session, name=phase, title=phase.title(), evalset_name=row.name, actor=None
                )
            records = score_baselines(evalset, root / "baselines")
            write_reference_rows(session=session, evalset=evalset, records=records)
            made, evaluation_id = public_runs.submission(session, alice, row, f"alice {baseline}")
            policy = get_track(evalset.track).baseline(baseline)
            public_runs.evaluate(
                session, evaluation_id, evalset, policy, bundle_sha256=made.bundle_sha256, cache_dir=root / "baselines"
            )
            out[evalset.track] = made.id
    engine.dispose()
    return out


@pytest.fixture(scope="module")
def visits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    root = tmp_path_factory.mktemp("replays")
    database_url = migrated_sqlite(root)
    seeded = _seed(database_url, root)
    with loopback_namespace("layersched-replays") as wrapper, uvicorn_server(database_url, root, wrapper) as base:
        jobs, flows, lab = seeded["jobs-v1"], seeded["workflows-v1"], seeded["layers-v1"]
        urls = [
            f"{base}/submissions/{jobs}",
            f"{base}/submissions/{jobs}/episodes/small/seed3",
            f"{base}/submissions/{flows}?sort=-makespan",
            f"{base}/submissions/{flows}/episodes/mixed/seed0",
            f"{base}/?phase=flows&sort=-makespan",
            f"{base}/submissions/{lab}/episodes/lab-300/seed0",
        ]
        out = root / "visits"
        out.mkdir()
        request = {"base": base, "token": seeded["token"], "out": str(out), "urls": urls}
        request["element"] = "figure.schedule svg"
        (root / "request.json").write_text(json.dumps(request))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        }
        subprocess.run(
            [*wrapper, sys.executable, "-m", "tests.server.visit_pages", str(root / "request.json")],
            check=True,
            env=env,
            cwd=REPO,
            timeout=600,
        )
        record = json.loads((out / "visits.json").read_text())
        keep = os.environ.get("LAYERSCHED_SCREENSHOTS")
        if keep:
            for visit in record:
                shutil.copy(visit["screenshot"], Path(keep) / f"{Path(visit['screenshot']).name}")
        yield base, record


def test_every_page_asks_only_the_server_and_breaks_no_rule_of_its_policy(
    visits: tuple[str, list[dict[str, Any]]],
) -> None:
    base, record = visits
    for visit in record:
        assert visit["requests"] and all(url.startswith(base + "/") for url in visit["requests"]), visit["requests"]
        assert visit["console"] == [], (visit["url"], visit["console"])
        assert "<script" not in visit["dom"], visit["url"]


def test_the_submission_page_lists_its_public_episodes(visits: tuple[str, list[dict[str, Any]]]) -> None:
    _base, record = visits
    jobs, flows = record[0]["dom"], record[2]["dom"]
    assert 'data-episode="small/seed3"' in jobs and 'data-episode="small/seed4"' in jobs
    assert 'hidden-pub <span class="badge">hidden</span>' in jobs, "the log lists it, status and step only"
    table = jobs[jobs.index('<table id="episode-table">') : jobs.index("</table>", jobs.index('id="episode-table"'))]
    assert "hidden" not in table
    assert flows.count("data-episode=") == 11 and '<figure id="ratios">' in flows


def _share(png: str, rgb: tuple[int, int, int]) -> float:
    pixels = read_png(Path(png))[..., :3]
    return float(np.all(np.abs(pixels - np.array(rgb)) <= 6, axis=-1).mean())


def test_the_replay_pages_draw_both_schedules_in_their_colours(visits: tuple[str, list[dict[str, Any]]]) -> None:
    _base, record = visits
    for visit, keys, lanes in (
        (record[1], ("occupancy", "jobs", "queue", "slowdown"), 2),
        (record[3], ("vms", "busy", "completion"), 2),
        (record[5], ("nodes", "downloads", "storage", "completion"), 3),
    ):
        dom = visit["dom"]
        assert all(f'id="fig-{key}"' in dom for key in keys), visit["url"]
        assert dom.count('<g class="panel"') == 2 * lanes, "each view of lanes with both schedules"
        assert visit["element"] is not None
        assert _share(visit["element"], RUN_RGB) > 0.002, f"{visit['url']}: no bar in the running colour"
    jobs_life = record[1]["dom"]
    assert 'class="hold"' in jobs_life, "Random holds jobs back: red bars on the jobs' lives"
    lab = record[5]["dom"]
    assert 'class="mark"' in lab and 'class="dl"' in lab and 'data-panel="Greedy"' in lab


def test_the_board_sorts_by_a_metric(visits: tuple[str, list[dict[str, Any]]]) -> None:
    _base, record = visits
    board = record[4]["dom"]
    assert "Makespan" in board or "last finish minus first arrival" in board
    assert 'class="metric"' in board and "▼" in board
