"""The leaderboard and submission pages in a real headless Chromium against a real uvicorn server.

Chromium loads the pages over HTTP; ``--dump-dom`` gives the DOM it built and ``--screenshot`` the pixels it drew,
which must include the chart's interval marks in their colour.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.admin import upgrade_database
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.server.models import EvalSet, Evaluation, Phase, Submission, User

from . import stand_in_track
from .conftest import register_stand_in_set, run_evaluation, score

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
POINT_RGB = (0x1F, 0x5F, 0xA8)  # .score-chart .point in base.html

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def register_sample(session: Session) -> EvalSet:
    return storage.register_evalset(
        session=session,
        name="sample",
        commitment="c" * 64,
        path="hidden_seeds/sample.toml",
        scenarios=[{"name": "lab-5", "weight": 1.0, "public_episodes": 2}],
    )


def add_submission(session: Session, owner: User, evalset: EvalSet, name: str) -> tuple[Submission, Evaluation]:
    """A one-file submission of ``owner`` to the phase on ``evalset`` and its queued evaluation, as an upload makes
    them."""
    phase = session.scalars(select(Phase).where(Phase.evalset_id == evalset.id)).one()
    return storage.create_submission(
        session=session,
        owner=owner,
        name=name,
        description="",
        bundle_sha256=hashlib.sha256(name.encode()).hexdigest(),
        bundle_format="py",
        bundle_bytes=1,
        phase=phase,
    )


def _seed(database_url: str) -> dict[str, int]:
    engine = make_engine(database_url)
    ids: dict[str, int] = {}
    with make_sessionmaker(engine)() as session:
        evalset = register_sample(session)
        for name, value in (("ada", 0.82), ("brian", 0.91), ("chen <script>", 1.07)):
            user = storage.create_user(session=session, name=name.split()[0], email=f"{name.split()[0]}@x.org")
            user.name = name  # a hostile display name must come out escaped
            session.commit()
            submission, evaluation = add_submission(session, user, evalset, f"{name.split()[0]}'s policy")
            run_evaluation(session, evaluation.id, public=value)
            ids[name] = submission.id
        # An organiser's rerun of a ranked entry fails: its error is for the owner and organisers only.
        olga = storage.create_user(session=session, name="olga", email="olga@x.org", role="organiser")
        rerun = storage.create_rerun(session=session, submission_id=ids["ada"], evalset_name=None, actor=olga)
        run_evaluation(session, rerun.id, fail=("import_error", "ModuleNotFoundError: No module named 'secret_helper'"))
        for baseline, value in (("Greedy", 1.0), ("Random", 1.6)):
            storage.upsert_baseline_result(
                session=session,
                evalset_commitment="c" * 64,
                sim_version="1.0.0",
                baseline=baseline,
                score_public=score(value),
                score_private=score(value),
            )
    engine.dispose()
    return ids


@contextmanager
def uvicorn_server(
    database_url: str, root: Path, wrapper: Sequence[str] = (), extra_env: dict[str, str] | None = None
) -> Iterator[str]:
    """A real uvicorn serving the app on ``database_url``; its base URL. ``wrapper`` prefixes the command (e.g.
    ``ip netns exec NAME``: the server then listens on that namespace's loopback); ``extra_env`` adds settings."""
    port = free_port()
    env = {
        **os.environ,
        "LAYERSCHED_DATABASE_URL": database_url,
        "LAYERSCHED_BUNDLE_DIR": str(root / "bundles"),
        "LAYERSCHED_BROKER_URL": "redis://127.0.0.1:6379/15",
        **(extra_env or {}),
    }
    command = [*wrapper, sys.executable, "-m", "uvicorn", "--factory", "layersched.server.app:create_app"]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    # The OpenAPI document needs no database row: a board asked for before any phase exists is a 409.
    probe = [*wrapper, sys.executable, "-c", _PROBE, f"{base}/openapi.json"]
    try:
        deadline = time.monotonic() + 30
        # Asked from inside the same namespace as the server (a probe process), since the test's own loopback may
        # be another one.
        while subprocess.run(probe, capture_output=True, check=False).returncode != 0:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()  # its output is read to the end: it must have ended, or the read waits for ever
                output = process.stdout.read().decode() if process.stdout else ""
                pytest.fail(f"uvicorn did not start on port {port}: {output}")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()


_PROBE = "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)"


def migrated_sqlite(root: Path) -> str:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"headless Chromium is needed at {CHROMIUM} (Debian package 'chromium')")
    database_url = f"sqlite:///{root / 'layersched.db'}"
    upgrade_database(settings=Settings(_env_file=None, database_url=database_url))  # type: ignore[call-arg]
    return database_url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, int]]]:
    root = tmp_path_factory.mktemp("browser")
    database_url = migrated_sqlite(root)
    ids = _seed(database_url)
    with uvicorn_server(database_url, root) as base:
        yield base, ids


def chromium(tmp_path: Path, *args: str, wrapper: Sequence[str] = ()) -> str:
    profile = tmp_path / "profile"  # fresh user data dir per run
    result = subprocess.run(
        [*wrapper, CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def read_png(path: Path) -> np.ndarray:
    """Decode an 8-bit, non-interlaced RGB(A) PNG (what Chromium writes) into an array of shape (h, w, channels)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, color, _c, _f, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    out = np.zeros((height, stride), dtype=np.int32)
    previous = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], np.frombuffer(raw[start + 1 : start + 1 + stride], dtype=np.uint8).astype(np.int32)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + previous) % 256
        else:  # 1 Sub, 3 Average, 4 Paeth depend on the pixel to the left: decode sequentially
            row = np.zeros(stride, dtype=np.int32)
            for i in range(stride):
                left = row[i - channels] if i >= channels else 0
                up = previous[i]
                up_left = previous[i - channels] if i >= channels else 0
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + up) // 2
                else:
                    p = left + up - up_left
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                    predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else up_left)
                row[i] = (line[i] + predictor) % 256
        out[y] = row
        previous = row
    return out.reshape(height, width, channels)


def test_leaderboard_page(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, ids = server
    dom = chromium(tmp_path, "--dump-dom", f"{base}/")
    assert "<h2>Public leaderboard</h2>" in dom
    table = dom[dom.index('<table id="leaderboard">') : dom.index("</table>", dom.index('<table id="leaderboard">'))]
    assert table.count('<tr class="entry">') == 3 and table.count('<tr class="baseline">') == 2
    order = [table.index(name) for name in ("ada", "brian", "Greedy", "chen &lt;script&gt;", "Random")]
    assert order == sorted(order), "rows are sorted by score with baselines among them"
    assert "<script>" not in dom  # the hostile name is text, not markup; the page has no script at all
    assert f'href="/submissions/{ids["ada"]}"' in table
    chart = dom[dom.index('<svg xmlns="http://www.w3.org/2000/svg" class="score-chart"') : dom.index("</svg>")]
    assert chart.count('<circle class="point"') == 5 and chart.count('<line class="ci"') == 5
    assert "Greedy = 1" in chart
    assert '<table id="per-scenario">' in dom


def test_chart_is_drawn(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, _ids = server
    shot = tmp_path / "leaderboard.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1100,1400", "--hide-scrollbars", f"{base}/")
    pixels = read_png(shot)
    assert pixels.shape[0] == 1400 and pixels.shape[1] == 1100
    rgb = pixels[..., :3]
    blue = np.all(np.abs(rgb - np.array(POINT_RGB)) <= 8, axis=-1)
    # Three participant points (r=5, about 78 px each) and their whiskers; baselines are grey.
    assert blue.sum() > 3 * 60, f"only {blue.sum()} pixels in the chart's colour"
    rows = np.nonzero(blue.any(axis=1))[0]
    clusters = np.count_nonzero(np.diff(rows) > 3) + 1
    assert clusters == 3, f"expected 3 separate chart rows in blue, found {clusters}"


def test_submission_page(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, ids = server
    dom = chromium(tmp_path, "--dump-dom", f"{base}/submissions/{ids['brian']}")
    assert "brian's policy" in dom and "rank <strong>2</strong>" in dom
    assert 'id="state"' not in dom  # others see what the leaderboard row carries: no evaluation's state
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="score-chart"' in dom
    assert '<table id="per-scenario">' in dom
    assert '<table id="evaluations">' not in dom  # details are for the owner and organisers only
    unshown = chromium(tmp_path, "--dump-dom", f"{base}/submissions/999")
    assert "<h2>Sign in</h2>" in unshown and "does not exist" not in unshown


def test_public_submission_page_shows_no_error(server: tuple[str, dict[str, int]], tmp_path: Path) -> None:
    base, ids = server
    dom = chromium(tmp_path, "--dump-dom", f"{base}/submissions/{ids['ada']}")
    assert "ada's policy" in dom and "rank <strong>1</strong>" in dom
    assert "secret_helper" not in dom and "import_error" not in dom


@pytest.fixture(scope="module")
def stand_in_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A server whose current set is on the stand-in track, which it knows from LAYERSCHED_TRACK_MODULES alone."""
    root = tmp_path_factory.mktemp("browser-stand-in")
    database_url = migrated_sqlite(root)
    engine = make_engine(database_url)
    with make_sessionmaker(engine)() as session:
        evalset = register_stand_in_set(session)
        user = storage.create_user(session=session, name="ada", email="ada@x.org")
        submission, evaluation = add_submission(session, user, evalset, "ada's packer")
        run_evaluation(session, evaluation.id, public=0.8)
        submission_id = submission.id
    engine.dispose()
    repo = str(Path(__file__).resolve().parents[2])  # where ``tests`` is importable from, whatever the cwd
    extra = {
        "LAYERSCHED_TRACK_MODULES": f'["{stand_in_track.__name__}"]',
        "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p),
    }
    with uvicorn_server(database_url, root, extra_env=extra) as base:
        yield base, submission_id


def test_a_board_on_another_track_shows_its_reference(stand_in_server: tuple[str, int], tmp_path: Path) -> None:
    base, submission_id = stand_in_server
    for url in (f"{base}/", f"{base}/submissions/{submission_id}"):
        dom = chromium(tmp_path, "--dump-dom", url)
        chart = dom[dom.index('<svg xmlns="http://www.w3.org/2000/svg" class="score-chart"') : dom.index("</svg>")]
        assert 'aria-label="Score (ratio to FirstFit, lower is better)"' in chart, url
        assert '<text class="reference-label"' in chart and "FirstFit = 1</text>" in chart, url
        assert "greedy" not in dom.lower(), url
    board = chromium(tmp_path, "--dump-dom", f"{base}/")
    assert "Track <strong>Stand-in bin packing</strong> (<code>standin-v1</code>)" in board
    assert "1.0 is FirstFit's level" in board


@contextmanager
def loopback_namespace(prefix: str) -> Iterator[list[str]]:
    """A network namespace with only a loopback (no route out); the command prefix that runs a program in it."""
    if shutil.which("ip") is None:
        pytest.fail("the 'ip' command (Debian package iproute2) is needed to make a network namespace")
    namespace = f"{prefix}-{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        wrapper = ["ip", "netns", "exec", namespace]
        subprocess.run([*wrapper, "ip", "link", "set", "lo", "up"], check=True)
        routes = subprocess.run([*wrapper, "ip", "route", "show"], capture_output=True, text=True, check=True)
        assert routes.stdout.strip() == "", f"the namespace must have no route out: {routes.stdout}"
        yield wrapper
    finally:
        subprocess.run(["ip", "netns", "del", namespace], check=False)


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """The server and Chromium in a network namespace of their own with only a loopback: no internet, no CDN."""
    root = tmp_path_factory.mktemp("offline")
    database_url = migrated_sqlite(root)
    with loopback_namespace("layersched-offline") as wrapper, uvicorn_server(database_url, root, wrapper) as base:
        yield base, wrapper


# Swagger UI and ReDoc fetch the OpenAPI document after the page has loaded: Chromium waits this long (of virtual
# time, which skips idle waits) before it dumps the DOM.
RENDER_BUDGET = ["--virtual-time-budget=20000", "--run-all-compositor-stages-before-draw"]


def test_swagger_ui_shows_the_operations_offline(offline: tuple[str, list[str]], tmp_path: Path) -> None:
    base, wrapper = offline
    dom = chromium(tmp_path, *RENDER_BUDGET, "--dump-dom", f"{base}/docs", wrapper=wrapper)
    assert 'class="swagger-ui' in dom, "Swagger UI did not start"
    assert dom.count('class="opblock-summary-path"') >= 10, "the operations are not listed"
    assert 'data-path="/api/v1/submissions"' in dom and 'data-path="/api/v1/leaderboard"' in dom


def test_redoc_shows_the_operations_offline(offline: tuple[str, list[str]], tmp_path: Path) -> None:
    base, wrapper = offline
    dom = chromium(tmp_path, *RENDER_BUDGET, "--dump-dom", f"{base}/redoc", wrapper=wrapper)
    assert "/api/v1/submissions" in dom and "/api/v1/leaderboard" in dom, "ReDoc did not render the operations"
    assert "Create Submission" in dom
