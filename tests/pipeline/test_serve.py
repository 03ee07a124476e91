"""`layersched serve --demo`, the README's first command: embedded storage and broker, a worker, a ranked demo."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.pipeline.stack import free_port, wait_for

pytestmark = pytest.mark.slow

# What a newcomer should not meet in the demo's console (issue 16, item 16): Celery's banner and its warning
# against root, the Docker SDK's raw exception text, pool children reported dead by signal, tracebacks.
NOISE = (
    "-------------- celery@",
    "SecurityWarning",
    "superuser privileges",
    "Error while fetching server API version",
    "FileNotFoundError",
    "exited with signal",
    "Traceback",
)


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The baselines' rows of the three samples, scored once for the demos of this module that share them."""
    return str(tmp_path_factory.mktemp("serve-baselines"))


def start_demo(
    tmp_path: Path, port: int, *, log_name: str = "serve.log", demo: bool = True, **extra_env: str
) -> tuple[subprocess.Popen[bytes], Path]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAYERSCHED_")} | extra_env
    log = tmp_path / log_name
    with log.open("wb") as out:
        serve = subprocess.Popen(
            [
                "layersched",
                "serve",
                *(["--demo"] if demo else []),
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path / "var"),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return serve, log


def demo_ranked(url: str) -> bool:
    try:
        rows = httpx.get(f"{url}/api/v1/leaderboard", params={"phase": "layers"}, timeout=5).json()["rows"]
    except httpx.HTTPError:
        return False
    return any(r["participant"] == "demo-student" and r["rank"] == 1 for r in rows)


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children of children included), from /proc."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except (FileNotFoundError, ProcessLookupError):
                continue
            todo.extend(children - found)
            found |= children
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_demo_serves_a_ranked_leaderboard_and_stops_cleanly(tmp_path: Path, baselines: str) -> None:
    port = free_port()
    serve, log = start_demo(tmp_path, port, LAYERSCHED_BASELINE_CACHE_DIR=baselines)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: demo_ranked(url), 120, "the demo submission on the leaderboard")
        text = log.read_text()
        tokens = re.findall(r"token: (lst_\S+)", text)
        assert len(tokens) == 2, text
        me = httpx.get(f"{url}/api/v1/me", headers={"Authorization": f"Bearer {tokens[1]}"}, timeout=5).json()
        assert me["name"] == "demo-student"
        # The platform as it is (issue 29): a phase on each track's public sample, three boards, each with its
        # track's reference and baselines, so that a kit of any track submits to it as it is.
        phases = {p["name"]: p for p in httpx.get(f"{url}/api/v1/phases", timeout=5).json()["data"]}
        assert {n: (p["evalset"], p["track"], p["state"]) for n, p in phases.items()} == {
            "layers": ("sample", "layers-v1", "open"),
            "jobs": ("jobs-sample", "jobs-v1", "open"),
            "workflows": ("workflows-sample", "workflows-v1", "open"),
        }
        boards = {n: httpx.get(f"{url}/api/v1/leaderboard", params={"phase": n}, timeout=5).json() for n in phases}
        assert {n: (b["reference_baseline"], {r["participant"] for r in b["rows"] if r["baseline"]})
                for n, b in boards.items()} == {
            "layers": ("Greedy", {"Random", "LeastLoaded", "Kube", "Dep", "LRS", "Greedy"}),
            "jobs": ("SJF", {"SJF", "Packer", "Tetris*", "Random"}),
            "workflows": ("HEFT", {"FCFS", "HEFT", "MinMin", "Random"}),
        }  # fmt: skip
        # A kit of another track submits to the demo as it is: its kit file names the track, which has one phase.
        env = {
            **os.environ, "LAYERSCHED_SERVER": url, "LAYERSCHED_TOKEN": tokens[1],
            "LAYERSCHED_CONFIG": str(tmp_path / "cli.json"),
        }  # fmt: skip
        kit = tmp_path / "jobs-kit"
        made = subprocess.run(["layersched", "init", str(kit), "--track", "jobs-v1"], env=env, capture_output=True)
        assert made.returncode == 0, made.stderr
        sent = subprocess.run(
            ["layersched", "submit", str(kit), "--no-wait"], env=env, capture_output=True, text=True, timeout=120
        )
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert sent.stdout.startswith("submitted #2 'jobs-kit' (queued)")
        organiser = {"Authorization": f"Bearer {tokens[0]}"}
        assert httpx.get(f"{url}/healthz", timeout=5).json() == {"status": "ok"}
        detailed = httpx.get(f"{url}/healthz", headers=organiser, timeout=5).json()
        assert detailed == {"status": "ok", "database": "ok", "broker": "ok"}
        # An organiser's token reads the metrics too (Prometheus has a metrics token: README, Production); anyone
        # else is refused.
        assert httpx.get(f"{url}/metrics", timeout=5).status_code == 401
        scraped = httpx.get(f"{url}/metrics", headers=organiser, timeout=5)
        assert scraped.status_code == 200 and 'layersched_submissions{state="succeeded"} 1.0' in scraped.text
        # Everything lives in the data directory: storage, broker and bundles.
        assert {p.name for p in (tmp_path / "var").iterdir()} >= {"layersched.db", "broker.db", "bundles"}
        # The first lines say which sandbox runs (this machine has the engine and the image).
        head = text.split("token:")[0]
        assert "layersched: sandbox: Docker (image layersched-sandbox:latest, engine at " in head, head
        workers = descendants(serve.pid)
        assert workers, "serve started no worker"
    finally:
        os.killpg(serve.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        assert serve.wait(timeout=60) == 0, log.read_text()[-3000:]

    # The worker and its pool went with it, and the console stayed readable from start to stop.
    wait_for(lambda: not any(alive(pid) for pid in workers), 30, "the worker processes to exit")
    text = log.read_text()
    assert [noise for noise in NOISE if noise in text] == [], text
    assert text.rstrip().endswith("layersched: stopped"), text[-2000:]

    # A second demo on the same data directory changes no phase and queues no other starter submission: the demo
    # student's quota stays as it was (issue 29).
    again, second_log = start_demo(tmp_path, port, log_name="again.log", LAYERSCHED_BASELINE_CACHE_DIR=baselines)
    try:
        wait_for(lambda: "from an earlier run" in second_log.read_text(), 120, "the second demo's submission line")
        text = second_log.read_text()
        assert "layersched: demo: create phase" not in text
        assert "layersched: the demo student has 2 submission(s) from an earlier run: none is queued now" in text
        student_token = re.findall(r"token: (lst_\S+)", text)[1]
        student = {"Authorization": f"Bearer {student_token}"}
        mine = httpx.get(f"{url}/api/v1/submissions", headers=student, timeout=5).json()
        assert mine["count"] == 2  # the starter and the jobs kit of the first run: none queued by this one
        quota = {p["name"]: p["submissions_today"] for p in httpx.get(
            f"{url}/api/v1/phases", headers=student, timeout=5).json()["data"]}  # fmt: skip
        assert quota == {"layers": 1, "jobs": 1, "workflows": 0}
    finally:
        os.killpg(again.pid, signal.SIGINT)
        assert again.wait(timeout=60) == 0, second_log.read_text()[-3000:]


def test_demo_without_an_engine_says_in_plain_words_that_it_uses_the_process_sandbox(tmp_path: Path) -> None:
    port = free_port()
    nowhere = f"unix://{tmp_path}/no-engine.sock"
    serve, log = start_demo(tmp_path, port, DOCKER_HOST=nowhere)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: demo_ranked(url), 120, "the demo submission on the leaderboard")
        head = log.read_text().split("token:")[0]
        assert "layersched: sandbox: the PROCESS sandbox, weaker than Docker" in head, head
        # Which database it opens, before it opens it (issue 16, item 10).
        assert f"layersched: database sqlite:///{tmp_path / 'var' / 'layersched.db'} (schema brought up" in head, head
        assert f"no Docker engine answers at {nowhere} (start one: bash worker/sandbox/start_dockerd.sh)" in head
        # Scoring the baselines says how far it is (issue 16, item 13): the sample set has 6 episodes.
        assert "layersched: baselines 6/6 episodes\n" in head, head
        evaluation = httpx.get(f"{url}/api/v1/leaderboard", params={"phase": "layers"}, timeout=5).json()
        assert any(r["participant"] == "demo-student" for r in evaluation["rows"])
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        assert serve.wait(timeout=60) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert [noise for noise in NOISE if noise in text] == [], text


def test_serve_registers_the_extra_sets_for_phases_with_their_baselines(tmp_path: Path, baselines: str) -> None:
    """LAYERSCHED_EXTRA_EVALSET_PATHS (issue 18): each set is registered beside the current one, not current, with its
    baselines' rows, so that an organiser can open a phase on it at once; here the jobs-v1 sample beside the lab's.
    The organiser is the README's first one: `admin user add --bootstrap --data-dir` before the first serve."""
    var = str(tmp_path / "var")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAYERSCHED_")}
    made = subprocess.run(
        ["layersched", "admin", "user", "add", "--bootstrap", "--data-dir", var, "--name", "olga", "--email",
         "olga@example.org", "--role", "organiser"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    organiser = {"Authorization": f"Bearer {made.stdout.rsplit(': ', 1)[1].strip()}"}
    port = free_port()
    jobs = Path(__file__).resolve().parents[2] / "hidden_seeds" / "jobs-sample.toml"
    serve, log = start_demo(
        tmp_path, port, demo=False, LAYERSCHED_EXTRA_EVALSET_PATHS=json.dumps([str(jobs)]),
        LAYERSCHED_BASELINE_CACHE_DIR=baselines,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: "Ctrl-C stops" in log.read_text(), 120, "serve to start")
        wait_for(lambda: _healthy(url), 60, "the API")
        text = log.read_text()
        assert "layersched: evaluation set 'jobs-sample' (track jobs-v1, commitment " in text, text
        assert httpx.get(f"{url}/api/v1/evalsets/current", timeout=5).json()["track"] == "layers-v1"  # still current
        assert [p["name"] for p in httpx.get(f"{url}/api/v1/phases", timeout=5).json()["data"]] == ["main"]
        created = httpx.post(
            f"{url}/api/v1/admin/phases", headers=organiser, json={"name": "jobs", "evalset": "jobs-sample"}, timeout=5
        )
        assert created.status_code == 201, created.text
        assert created.json()["track"] == "jobs-v1"
        board = httpx.get(f"{url}/api/v1/leaderboard", params={"phase": "jobs"}, timeout=5).json()
        assert (board["track"], board["reference_baseline"]) == ("jobs-v1", "SJF")
        assert {r["participant"] for r in board["rows"] if r["baseline"]} == {"SJF", "Packer", "Tetris*", "Random"}
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        assert serve.wait(timeout=60) == 0, log.read_text()[-3000:]


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_killed_serve_takes_its_worker_with_it(tmp_path: Path, baselines: str) -> None:
    port = free_port()
    serve, log = start_demo(tmp_path, port, LAYERSCHED_BASELINE_CACHE_DIR=baselines)
    try:
        wait_for(lambda: "Ctrl-C stops" in log.read_text(), 120, "serve to start")
        workers = wait_for(lambda: descendants(serve.pid), 30, "the worker to start")
    finally:
        serve.kill()  # SIGKILL to serve alone: no chance to stop the worker itself
        serve.wait(timeout=30)
    wait_for(lambda: not any(alive(pid) for pid in workers), 60, "the orphaned worker processes to exit")


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
