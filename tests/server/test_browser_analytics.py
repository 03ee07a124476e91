"""The organisers' analytics page in a real headless Chromium against a real uvicorn, both in a network namespace
with only a loopback (issue 32, item 4): it renders whole from the server alone (no CDN, no script), its charts are
drawn, and the text of participants' choosing in it is text."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from layersched.server import storage
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.models import utcnow
from layersched.server.storage.queue_view import beat

from .conftest import run_evaluation
from .test_browser import (
    add_submission,
    loopback_namespace,
    migrated_sqlite,
    read_png,
    register_sample,
    uvicorn_server,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
BAR_RGB = (0x1F, 0x5F, 0xA8)  # analytics_charts.PALETTE[0], the first phase's bars


@pytest.fixture(scope="module")
def offline_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str], str]]:
    """An organiser's token and a server with a day of submissions (one failed), in a namespace of its own."""
    root = tmp_path_factory.mktemp("analytics")
    database_url = migrated_sqlite(root)
    engine = make_engine(database_url)
    with make_sessionmaker(engine)() as session:
        evalset = register_sample(session)
        olga = storage.create_user(session=session, name="olga", email="olga@x.org", role="organiser")
        _token, token = storage.issue_token(session=session, user_id=olga.id)
        ada = storage.create_user(session=session, name="ada", email="ada@x.org")
        for i, value in enumerate((0.9, 0.85, None)):
            _submission, evaluation = add_submission(session, ada, evalset, f"<b>try {i}</b>")
            if value is None:
                run_evaluation(session, evaluation.id, fail=("timeout", "decision took 2.1 s"))
            else:
                run_evaluation(session, evaluation.id, public=value)
        beat(session=session, worker_id="<img src=x>:1", now=utcnow())
    engine.dispose()
    # The worker's heartbeat above is the only one: the page asks the broker too, which does not answer there.
    with loopback_namespace("layersched-analytics") as wrapper, uvicorn_server(database_url, root, wrapper) as base:
        yield base, wrapper, token


def test_the_analytics_page_renders_offline(offline_site: tuple[str, list[str], str], tmp_path: Path) -> None:
    base, wrapper, token = offline_site
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    drive = [
        *wrapper,
        sys.executable,
        "-m",
        "tests.server.drive_chromium",
        base,
        token,
        "/admin/analytics",
        str(tmp_path),
    ]
    result = subprocess.run(drive, capture_output=True, text=True, env=env, timeout=300, check=False, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    page = (tmp_path / "page.html").read_text()
    assert "<h2>Analytics</h2>" in page and "Signed in as <strong>olga</strong>" in page
    assert 'id="queued">0<' in page and 'id="workers-alive">1<' in page
    assert "the broker did not answer" in page  # no broker in the namespace: said, not a failed page
    assert "<code>&lt;img src=x&gt;:1</code>" in page and "<img" not in page  # a worker's name is text
    assert '<a href="/admin/submissions?state=failed&amp;category=timeout">timeout</a>' in page
    chart = page[
        page.index('class="submissions-chart"') : page.index("</svg>", page.index('class="submissions-chart"'))
    ]
    assert chart.count('<rect class="bar"') == 1 and "main: 3</title>" in chart
    best = page[page.index('class="best-chart"') :]
    assert best.count('<polyline class="best"') == 1 and "main " in best and ": 0.8500</title>" in best
    assert "<script" not in page

    pixels = read_png(tmp_path / "page.png")[..., :3]
    bars = np.all(np.abs(pixels - np.array(BAR_RGB)) <= 8, axis=-1)
    assert bars.sum() > 300, f"the bar of the day is not drawn ({bars.sum()} pixels in its colour)"
