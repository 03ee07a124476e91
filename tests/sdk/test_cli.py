"""The ``layersched`` command against the real app on a live server (uvicorn in a thread, SQLite)."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from layersched.sdk.cli import main
from layersched.sim.tracks import track_ids
from tests.sdk.conftest import LiveServer, Worker, needs_server
from tests.server import stand_in_track

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_TEMPLATE = REPO / "hidden_seeds" / "challenge-example.toml"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def login(capsys: pytest.CaptureFixture[str], server: LiveServer, user: str = "alice") -> None:
    code, _, err = run(capsys, "login", "--server", server.url, "--token", server.tokens[user])
    assert code == 0, err


def error_line(err: str) -> str:
    """The one line an error prints; also asserts there is no traceback."""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    return lines[0]


# ---------------------------------------------------------------------------------------------- login


def test_login_saves_the_token_with_mode_0600(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, isolated_config: Path
) -> None:
    code, out, _ = run(capsys, "login", "--server", live_server.url + "/", "--token", live_server.tokens["alice"])
    assert code == 0
    assert out == (
        f"logged in to {live_server.url} as alice (participant; today: main 0/2); saved to {isolated_config}\n"
    )
    assert stat.S_IMODE(isolated_config.stat().st_mode) == 0o600
    assert json.loads(isolated_config.read_text()) == {"server": live_server.url, "token": live_server.tokens["alice"]}


def test_login_with_a_wrong_token_fails_in_one_line(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, isolated_config: Path
) -> None:
    code, out, err = run(capsys, "login", "--server", live_server.url, "--token", "not-a-token")
    assert code == 1
    assert out == ""
    assert error_line(err).startswith("error: ")
    assert "layersched login --server URL --token TOKEN" in err
    assert not isolated_config.exists()


def test_a_revoked_or_wrong_env_token_is_reported(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    login(capsys, live_server)
    monkeypatch.setenv("LAYERSCHED_TOKEN", "wrong")  # the environment overrides the saved token
    code, _, err = run(capsys, "status")
    assert code == 1
    assert "LAYERSCHED_TOKEN" in error_line(err)


def test_login_with_the_api_path_in_the_url_saves_the_server(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, isolated_config: Path
) -> None:
    code, out, err = run(
        capsys, "login", "--server", live_server.url + "/api/v1", "--token", live_server.tokens["alice"]
    )
    assert code == 0, err
    assert out.startswith(f"logged in to {live_server.url} as alice ")  # the server as saved, not as typed
    assert json.loads(isolated_config.read_text())["server"] == live_server.url
    assert run(capsys, "status")[:2] == (0, "no submissions yet: layersched submit PATH\n")


def test_https_against_a_plain_http_server_says_so(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> None:
    https = live_server.url.replace("http://", "https://")
    code, _, err = run(capsys, "login", "--server", https, "--token", live_server.tokens["alice"])
    assert code == 1
    # Not error_line(err): the server's own log of the TLS hello it could not read ends up on this stderr too.
    assert [line for line in err.splitlines() if line.startswith("error: ")] == [
        f"error: cannot reach the server at {https}: it answers in plain HTTP, not HTTPS (TLS); "
        f"use --server {live_server.url} if that is the right server"
    ]


def test_leaderboard_into_a_pipe_whose_reader_has_gone_exits_quietly(live_server: LiveServer, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    # The reader (as `head` does after its lines) exits without reading; once it and our copy of the read end are
    # closed, every write to the pipe fails with EPIPE.
    reader = subprocess.Popen(["true"], stdin=read_end)
    os.close(read_end)
    reader.wait(timeout=60)
    env = dict(os.environ, LAYERSCHED_CONFIG=str(tmp_path / "c.json"), LAYERSCHED_SERVER=live_server.url)
    env.pop("LAYERSCHED_TOKEN", None)
    try:
        result = subprocess.run(
            [*_console_script(), "leaderboard"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (141, "")


def test_server_down(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.sdk.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("LAYERSCHED_SERVER", url)
    monkeypatch.setenv("LAYERSCHED_TOKEN", "t")
    code, _, err = run(capsys, "status")
    assert code == 1
    assert error_line(err).startswith(f"error: cannot reach the server at {url}: ")


def test_not_logged_in(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "status")
    assert code == 1
    assert error_line(err) == (
        "error: no server configured: run `layersched login --server URL --token TOKEN` "
        "or set LAYERSCHED_SERVER and LAYERSCHED_TOKEN"
    )


# ---------------------------------------------------------------------------------------------- submit


def test_submit_waits_for_score_and_rank(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, worker_thread: Worker, policy_file: Path
) -> None:
    login(capsys, live_server)
    code, out, err = run(capsys, "submit", str(policy_file), "--name", "first fit", "-m", "hello", "--poll", "0.1")
    assert code == 0, err
    assert out.splitlines() == [
        "submitted #1 'first fit' (queued)",
        "queue: position 1 of 1 (1 worker); no estimate yet (too few recent runs)",
        f"page: {live_server.url}/submissions/1 (sign in there with your token)",
        "#1 succeeded: score 0.9800 (95% CI 0.9500-1.0100, ratio to Greedy, lower is better), rank 1",
        "  per scenario: lab-300 0.970, official-5n 0.990",
    ]
    assert "upload [" in err and "100%" in err
    assert "evaluation [" in err and "2/2" in err
    assert worker_thread.calls == [("layersched.evaluate", [1], "evaluations")]

    code, out, _ = run(capsys, "status", "1")
    assert code == 0
    assert out.startswith("#1 'first fit' by alice, created ")
    assert "  hello\nstate: succeeded, episodes 2/2\n" in out
    assert "sandbox process, image sha256:abababab" in out
    assert f"\npage: {live_server.url}/submissions/1 (sign in there with your token)\n" in out

    code, out, _ = run(capsys, "logs", "1")
    assert code == 0
    assert "lab-300/seed0: ok\n  --- stdout ---\n  | hello from lab-300\n" in out

    code, out, _ = run(capsys, "leaderboard")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "phase main: public leaderboard: score = ratio to Greedy, lower is better"
    assert lines[1].split() == ["rank", "participant", "submission", "score", "95%", "CI", "subs", "date"]
    assert lines[2].split()[:6] == ["1", "alice", "first", "fit", "0.9800", "0.9500-1.0100"]

    code, out, _ = run(capsys, "leaderboard", "--json")
    board = json.loads(out)
    assert board["split"] == "public"
    assert [(r["rank"], r["participant"]) for r in board["rows"] if not r["baseline"]] == [(1, "alice")]


def register_stand_in_set(live_server: LiveServer) -> None:
    """The server's current set is now one on the stand-in track (two policy arguments, reference FirstFit)."""
    from layersched.server.admin import register_evalset

    stand_in_track.register()
    register_evalset(
        name="toy",
        commitment="t" * 64,
        path="toy.toml",
        scenarios=[],
        track="standin-v1",
        settings=live_server.settings,
    )


def test_a_board_on_another_track_reads_as_ratios_to_its_reference(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, worker_thread: Worker, tmp_path: Path
) -> None:
    register_stand_in_set(live_server)
    login(capsys, live_server)
    packer = tmp_path / "packer.py"
    packer.write_text("def policy(bins, rng):\n    return 0\n")  # the stand-in's contract: two arguments
    code, out, err = run(capsys, "submit", str(packer), "--name", "packer", "--poll", "0.1")
    assert code == 0, err
    assert "#1 succeeded: score 0.9800 (95% CI 0.9500-1.0100, ratio to FirstFit, lower is better), rank 1" in out
    outputs = [out, run(capsys, "status", "1")[1], run(capsys, "leaderboard")[1]]
    assert outputs[2].splitlines()[0] == "phase main: public leaderboard: score = ratio to FirstFit, lower is better"
    assert "ratio to FirstFit, lower is better), rank 1" in outputs[1]
    assert all("Greedy" not in text for text in outputs), outputs
    board = json.loads(run(capsys, "leaderboard", "--json")[1])
    assert (board["track"], board["track_title"], board["reference_baseline"]) == (
        "standin-v1",
        "Stand-in bin packing",
        "FirstFit",
    )


def test_a_policy_for_another_track_is_refused_by_the_boards_contract(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    """The lab's three-argument policy on a board whose track takes two: the CLI's check and, past it, the
    upload's both read the contract from the server's track, and nothing is queued."""
    register_stand_in_set(live_server)
    login(capsys, live_server)
    code, out, err = run(capsys, "submit", str(policy_file))
    assert (code, out) == (1, "")
    assert error_line(err) == (
        "error: not uploaded: first_fit.py:4: policy(env, task, rng) must accept two positional arguments "
        "(bins, rng) (track standin-v1)"
    )
    code, _, err = run(capsys, "submit", str(policy_file), "--skip-checks", "--no-wait")
    assert code == 1
    assert "first_fit.py line 4: policy(env, task, rng) must accept two positional arguments (bins, rng)" in (
        error_line(err)
    )
    assert live_server.worker.calls == []


def test_submit_of_a_failing_policy_exits_1_with_the_reason(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, worker_thread: Worker, policy_file: Path
) -> None:
    worker_thread.fail = True
    login(capsys, live_server)
    code, out, _ = run(capsys, "submit", str(policy_file), "--poll", "0.1")
    assert code == 1
    assert out.splitlines()[-1] == (
        "#1 failed: invalid_action: step 3: policy returned node 11, outside 0..9 (details: layersched logs 1)"
    )


def test_submit_no_wait_then_status_list(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server)
    code, out, _ = run(capsys, "submit", str(policy_file), "--no-wait")
    assert code == 0
    assert out.splitlines() == [
        "submitted #1 'first_fit' (queued)",
        "queue: position 1 of 1 (1 worker); no estimate yet (too few recent runs)",
        f"page: {live_server.url}/submissions/1 (sign in there with your token)",
        "follow it with: layersched status 1",
    ]
    code, out, _ = run(capsys, "status")
    assert code == 0
    header, row = out.splitlines()  # nothing scored yet: no line of what the scores are ratios to
    assert header.split() == ["id", "name", "phase", "state", "episodes", "score", "rank", "selected", "created"]
    assert row.split()[:8] == ["#1", "first_fit", "main", "queued", "0/0", "-", "-", "-"]


def test_the_page_that_submit_prints_shows_the_submission_to_its_owner_signed_in(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server)
    code, out, err = run(capsys, "submit", str(policy_file), "--name", "queued-one", "--no-wait")
    assert code == 0, err
    page_line = next(line for line in out.splitlines() if line.startswith("page: "))
    url = page_line.split()[1]
    with httpx.Client() as browser:
        anonymous = browser.get(url)
        assert anonymous.status_code == 401 and 'name="token"' in anonymous.text  # the sign-in page, not a 404
        signed_in = browser.post(
            f"{live_server.url}/signin",
            data={"token": live_server.tokens["alice"], "next": url.removeprefix(live_server.url)},
            follow_redirects=True,
        )
    assert signed_in.status_code == 200
    assert str(signed_in.url) == url
    assert "queued-one" in signed_in.text


@pytest.mark.parametrize(
    ("image", "shown"),
    [
        ("process:python-3.11.9", "process:python-3.11.9"),
        ("sha256:" + "0123456789" * 6 + "abcd", "sha256:012345678901"),
    ],
    ids=["process-sandbox", "docker-digest"],
)
def test_status_shows_the_whole_image_name_and_a_short_digest(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path, image: str, shown: str
) -> None:
    live_server.worker.image_digest = image
    login(capsys, live_server)
    assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.run_pending()
    _code, out, _ = run(capsys, "status", "1")
    assert f"sandbox process, image {shown}\n" in out


# ---------------------------------------------------------------------------------------------- final selection


@pytest.mark.parametrize("server_settings", [{"daily_quota": 3, "max_in_flight": 3}], ids=["quota-3"])
def test_select_unselect_and_status_shows_the_selection(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server)
    for _ in range(2):
        assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.run_pending()
    assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0  # #3 stays queued

    assert run(capsys, "select", "1") == (
        0,
        "selected #1 'first_fit' for the final ranking of phase main (your selection there: #1)\n",
        "",
    )
    code, out, _ = run(capsys, "status")
    header, *rows, ratios = out.splitlines()
    assert header.split() == ["id", "name", "phase", "state", "episodes", "score", "rank", "selected", "created"]
    assert [(r.split()[0], r.split()[7]) for r in rows] == [("#3", "-"), ("#2", "-"), ("#1", "yes")]
    assert (
        ratios == "score: ratio to the phase's reference baseline (main: Greedy), lower is better; rank: on its board"
    )
    code, out, _ = run(capsys, "status", "1")
    assert "selected: yes, it counts for the final ranking\n" in out
    code, out, _ = run(capsys, "status", "1", "--json")
    assert json.loads(out)["selected"] is True

    code, _, err = run(capsys, "select", "3")
    assert code == 1
    assert error_line(err) == (
        "error: submission 3 has no score on the evaluation set 'sample' (it is queued); "
        "only a scored submission can be selected"
    )
    assert run(capsys, "unselect", "1") == (
        0,
        "unselected #1 'first_fit' of phase main (your selection there: none)\n",
        "",
    )
    code, out, _ = run(capsys, "status", "1")
    assert (
        "selected: no; you have selected none, so your best public submissions count for the final ranking; "
        "layersched select 1 makes this one count\n"
    ) in out
    assert run(capsys, "select", "2")[0] == 0
    code, out, _ = run(capsys, "status", "1")
    assert (
        "selected: no, it does not count for the final ranking (your selection: #2); layersched select 1 adds it\n"
    ) in out
    code, out, _ = run(capsys, "status", "3")
    assert "selected: no; only a scored submission can be selected (this one is queued)\n" in out


@pytest.mark.parametrize("server_settings", [{"daily_quota": 4, "max_in_flight": 4}], ids=["quota-4"])
def test_select_failure_paths(capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path) -> None:
    login(capsys, live_server)
    for _ in range(3):
        assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.run_pending()
    assert run(capsys, "select", "1")[0] == 0
    assert run(capsys, "select", "2")[0] == 0
    code, _, err = run(capsys, "select", "3")
    assert code == 1
    assert error_line(err) == (
        "error: alice has already selected 2 submissions (#1, #2), the most for the final ranking of phase 'main'; "
        "unselect one first"
    )
    login(capsys, live_server, "bob")
    for command in ("select", "unselect"):
        code, _, err = run(capsys, command, "3")
        assert code == 1
        assert error_line(err) == "error: submission 3 does not exist"
    login(capsys, live_server, "alice")
    live_server.settings.submission_deadline = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)  # the deadline passes
    for command, verb in (("select", "selected"), ("unselect", "unselected")):
        code, _, err = run(capsys, command, "1")
        assert code == 1
        assert error_line(err) == (
            f"error: the submission deadline 2020-01-01T00:00:00+00:00 has passed; submission 1 cannot be {verb}"
        )


def test_status_of_a_disqualified_submission_says_so_and_why(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server)
    assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.run_pending()
    login(capsys, live_server, "olga")
    assert run(capsys, "admin", "disqualify", "1", "--reason", "reads the evaluation-set file", "--yes")[0] == 0
    login(capsys, live_server)
    code, out, _ = run(capsys, "status", "1")
    assert code == 0
    assert (
        "#1 succeeded: score 0.9800 (95% CI 0.9500-1.0100, ratio to Greedy, lower is better), "
        "not ranked: disqualified by the organisers: reads the evaluation-set file\n"
    ) in out
    assert "selected: no; a disqualified submission cannot count for the final ranking\n" in out
    _code, out, _ = run(capsys, "status")
    assert out.splitlines()[1].split()[:7] == [
        "#1", "first_fit", "main", "succeeded", "2/2", "0.9800", "disqualified",
    ]  # fmt: skip


@pytest.mark.parametrize("server_settings", [{"daily_quota": 3, "max_in_flight": 3}], ids=["quota-3"])
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("not-best", "not ranked: not your best; the board shows one submission per participant, your #1 at rank 1"),
        ("frozen", "not ranked: the board is frozen; results since the freeze rank when an organiser unfreezes it"),
        ("organiser", "not ranked: organisers' submissions never rank"),
    ],
    ids=["not-your-best", "board-frozen", "organiser"],
)
def test_status_says_why_a_succeeded_submission_has_no_rank(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path, case: str, expected: str
) -> None:
    live_server.worker.overall[:] = [0.95, 0.99]  # the second is worse than the first
    user = "olga" if case == "organiser" else "alice"
    login(capsys, live_server, user)
    assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.run_pending()
    if case == "frozen":
        login(capsys, live_server, "olga")
        assert run(capsys, "admin", "freeze")[0] == 0
        login(capsys, live_server, user)
        live_server.worker.overall[:] = [0.90]  # better, but after the freeze
    assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.run_pending()
    code, out, _ = run(capsys, "status", "2")
    assert code == 0
    assert out.splitlines()[2].endswith(f"lower is better), {expected}"), out
    if case == "organiser":  # nor is it told that its best public submissions count for a final ranking
        assert "selected: no; organisers' submissions take no part in the final ranking\n" in out


@pytest.mark.parametrize("server_settings", [{"public_ladder_step": 0.05}], ids=["ladder-0.05"])
def test_status_shows_the_laddered_score(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    live_server.worker.overall[:] = [0.95, 0.93]  # the second is within the step of the first
    login(capsys, live_server)
    for _ in range(2):
        assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.run_pending()
    _code, out, _ = run(capsys, "status")
    assert [line.split()[5] for line in out.splitlines()[1:3]] == ["0.9500", "0.9500"]
    _code, out, _ = run(capsys, "status", "2")
    assert "#2 succeeded: score 0.9500 (95% CI 0.9200-0.9800" in out
    assert "0.93" not in out
    assert "the Ladder: this submission did not beat your best shown public score by more than its step" in out


def test_submit_gives_up_following_after_timeout(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server)  # no worker runs: the evaluation stays queued
    code, out, err = run(capsys, "submit", str(policy_file), "--timeout", "0.3", "--poll", "0.1")
    assert code == 1
    assert out == (
        "submitted #1 'first_fit' (queued)\nqueue: position 1 of 1 (1 worker); no estimate yet (too few recent runs)\n"
        f"page: {live_server.url}/submissions/1 (sign in there with your token)\n"
    )
    assert error_line(err) == (
        f"error: gave up waiting after 0.3 s; the evaluation goes on at {live_server.url}; "
        "follow it with: layersched status 1"
    )


def test_quota_exceeded(capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path) -> None:
    login(capsys, live_server)
    for _ in range(2):  # daily_quota=2 and max_in_flight=2: the third is refused, whichever limit bites first
        assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    code, out, err = run(capsys, "submit", str(policy_file), "--no-wait")
    assert code == 1
    assert "submitted" not in out
    assert error_line(err).startswith("error: daily quota of 2 submissions to phase 'main' used (2 today)")
    assert "upload [" not in err  # refused before a byte of the bundle was sent
    assert "bundle first_fit.py" not in err  # and before the bundle was even made


def test_a_wrong_token_is_refused_before_the_upload(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAYERSCHED_SERVER", live_server.url)
    monkeypatch.setenv("LAYERSCHED_TOKEN", "lst_0000_nope")
    code, out, err = run(capsys, "submit", str(policy_file), "--no-wait")
    assert (code, out) == (1, "")
    assert error_line(err) == (
        "error: the bearer token is unknown or revoked (run `layersched login --server URL --token TOKEN` "
        "or set LAYERSCHED_SERVER and LAYERSCHED_TOKEN)"
    )
    assert "upload [" not in err and "bundle first_fit.py" not in err
    assert live_server.worker.calls == []


def test_closed_uploads_are_refused_before_the_upload(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server)
    live_server.settings.submission_deadline = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    code, _, err = run(capsys, "submit", str(policy_file), "--no-wait")
    assert code == 1
    assert error_line(err) == "error: the submission deadline 2020-01-01T00:00:00+00:00 has passed; uploads are closed"
    assert "upload [" not in err and "bundle first_fit.py" not in err


def test_syntax_error_is_refused_before_upload(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, tmp_path: Path
) -> None:
    login(capsys, live_server)
    bad = tmp_path / "policy.py"
    bad.write_text("def policy(env, task, rng):\n    return (\n")
    code, out, err = run(capsys, "submit", str(bad))
    assert code == 1
    assert out == ""
    assert error_line(err) == "error: not uploaded: policy.py:2: syntax error: '(' was never closed"
    assert live_server.worker.calls == []


def test_syntax_error_is_refused_by_the_server_too(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, tmp_path: Path
) -> None:
    login(capsys, live_server)
    bad = tmp_path / "policy.py"
    bad.write_text("def policy(env, task, rng):\n    return (\n")
    code, _, err = run(capsys, "submit", str(bad), "--skip-checks", "--no-wait")
    assert code == 1
    line = error_line(err)
    assert "line 2" in line or ":2" in line, line
    assert live_server.worker.calls == []


def test_someone_elses_submission_is_not_found(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server, "alice")
    assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    login(capsys, live_server, "bob")
    code, _, err = run(capsys, "status", "1")
    assert code == 1
    assert error_line(err).startswith("error: ")


# ---------------------------------------------------------------------------------------------- admin


def test_admin_commands_as_organiser(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path, worker_thread: Worker
) -> None:
    login(capsys, live_server, "alice")
    assert run(capsys, "submit", str(policy_file), "--poll", "0.1")[0] == 0
    login(capsys, live_server, "olga")

    code, out, _ = run(capsys, "admin", "user", "add", "--name", "carol", "--email", "carol@example.org")
    assert code == 0
    first, second = out.splitlines()
    assert first.startswith("created participant #") and first.endswith(" carol <carol@example.org>")
    token = second.split(": ", 1)[1]
    assert token

    assert run(capsys, "admin", "freeze")[1] == (
        "leaderboard of phase main frozen (evaluations go on; public ranks stay)\n"
    )
    assert run(capsys, "admin", "freeze", "--off")[1] == "leaderboard of phase main unfrozen\n"
    assert run(capsys, "admin", "disqualify", "1", "--reason", "reads files", "--yes")[1] == (
        "disqualified submission #1: reads files\n"
    )
    code, out, _ = run(capsys, "admin", "rerun", "1", "--no-wait")
    assert code == 0
    assert out.startswith("queued evaluation #2 (rerun on 'sample') of submission #1")
    code, out, _ = run(capsys, "admin", "audit", "1", "--no-wait")
    assert code == 0
    # #1 or the rerun #2, whichever is the newest succeeded by now (the worker runs beside): see the next test.
    assert out.startswith("queued audit #3 of submission #1: it replays evaluation #"), out
    code, out, _ = run(capsys, "admin", "evaluation", "3", "--json")
    assert code == 0
    assert json.loads(out)["kind"] == "audit"

    code, out, _ = run(capsys, "admin", "token", "new", str(live_server.user_ids["bob"]))
    assert code == 0
    token_id, token = out.split("token #", 1)[1].split(" ", 1)[0], out.rsplit(": ", 1)[1].strip()
    assert main(["login", "--server", live_server.url, "--token", token, "--no-verify"]) == 0
    assert run(capsys, "status")[0] == 0  # bob's new token works
    login(capsys, live_server, "olga")
    assert run(capsys, "admin", "token", "revoke", token_id)[1] == f"revoked token #{token_id}\n"
    assert main(["login", "--server", live_server.url, "--token", token]) == 1  # revoked
    capsys.readouterr()
    code, out, _ = run(capsys, "admin", "audit-log", "--json")
    actions = [entry["action"] for entry in json.loads(out)["data"]]
    assert {"freeze", "disqualify"} <= {a.split("_")[0] for a in actions} | set(actions), actions

    code, out, err = run(capsys, "admin", "publish")  # no terminal, no --yes: not done
    assert code == 1
    assert error_line(err) == (
        "error: not done: publish the private leaderboard (the final ranking) of the only open phase asks for "
        "confirmation; pass --yes to do it without a terminal"
    )
    assert json.loads(run(capsys, "phases", "--json")[1])[0]["state"] == "open"  # still unpublished
    code, out, err = run(capsys, "admin", "publish", "--yes")
    assert code == 0, err
    code, out, _ = run(capsys, "leaderboard", "--split", "private")
    assert code == 0, out
    assert json.loads(run(capsys, "phases", "--json")[1])[0]["state"] == "published"


def test_audit_says_which_evaluation_it_replays(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server, "alice")
    assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.run_pending()
    login(capsys, live_server, "olga")
    code, out, _ = run(capsys, "admin", "audit", "1", "--no-wait")
    assert (code, out) == (
        0,
        "queued audit #2 of submission #1: it replays evaluation #1 (initial on 'sample', the newest succeeded) "
        "and compares with it\n",
    )
    assert run(capsys, "admin", "rerun", "1", "--no-wait")[0] == 0  # evaluation #3
    live_server.worker.run_pending()
    code, out, _ = run(capsys, "admin", "audit", "1", "--no-wait")
    assert out == (
        "queued audit #4 of submission #1: it replays evaluation #3 (rerun on 'sample', the newest succeeded) "
        "and compares with it\n"
    )
    code, out, _ = run(capsys, "admin", "evaluation", "4")
    assert out.startswith("evaluation #4 audit of evaluation #3 queued 0/0\n")
    code, out, _ = run(capsys, "status", "1")
    assert "  evaluation #4 audit of #3 queued 0/0:" in out
    assert "  evaluation #2 audit of #1 " in out


def test_admin_as_participant_is_forbidden(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> None:
    login(capsys, live_server, "alice")
    code, _, err = run(capsys, "admin", "freeze")
    assert code == 1
    line = error_line(err)
    assert "layersched login" not in line  # a 403 is not a login problem


def test_admin_bootstrap_uses_the_server_function(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAYERSCHED_DATABASE_URL", live_server.settings.database_url)
    from layersched.server.config import get_settings

    get_settings.cache_clear()
    try:
        code, out, err = run(
            capsys,
            "admin",
            "user",
            "add",
            "--name",
            "root",
            "--email",
            "r@example.org",
            "--role",
            "organiser",
            "--bootstrap",
        )
    finally:
        get_settings.cache_clear()
    assert code == 0, err
    token = out.splitlines()[1].split(": ", 1)[1]
    login_code, login_out, _ = run(capsys, "login", "--server", live_server.url, "--token", token)
    assert login_code == 0
    assert " as root (organiser;" in login_out


@pytest.fixture
def fresh_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder with no database and no LAYERSCHED_DATABASE_URL: the server's settings read afresh."""
    pytest.importorskip("fastapi", reason="needs the server extra")
    from layersched.server.config import get_settings

    host = tmp_path / "host"
    host.mkdir()
    monkeypatch.chdir(host)
    monkeypatch.delenv("LAYERSCHED_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    yield host
    get_settings.cache_clear()


def bootstrap(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return run(
        capsys, "admin", "user", "add", "--name", "root", "--email", "r@example.org", "--role", "organiser",
        "--bootstrap", *extra,
    )  # fmt: skip


def token_owner(database: Path, token: str) -> str:
    from layersched.server import storage
    from layersched.server.db import make_engine, make_sessionmaker, session_scope

    engine = make_engine(f"sqlite:///{database}")
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            found = storage.authenticate(session=session, token=token)
            assert found is not None
            return str(found.name)
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("extra", "where", "source"),
    [
        ([], "var", "the default: `layersched serve`'s ./var in this folder; choose with --data-dir DIR or "
         "LAYERSCHED_DATABASE_URL"),
        (["--data-dir", "srv"], "srv", "--data-dir srv, as `layersched serve --data-dir srv` uses"),
    ],
    ids=["default-var", "data-dir"],
)  # fmt: skip
def test_bootstrap_on_a_fresh_host_creates_the_schema_and_names_the_database(
    capsys: pytest.CaptureFixture[str], fresh_host: Path, extra: list[str], where: str, source: str
) -> None:
    code, out, err = bootstrap(capsys, *extra)
    assert code == 0, err
    database = fresh_host / where / "layersched.db"
    assert err.splitlines() == [
        f"database: sqlite:///{database} ({source})",
        "database schema up to date (alembic upgrade head)",
    ]
    token = out.splitlines()[1].split(": ", 1)[1]
    assert token_owner(database, token) == "root"
    code, _, err = run(
        capsys, "admin", "user", "add", "--name", "ada", "--email", "a@example.org", "--bootstrap", *extra
    )  # the second run finds the schema in place
    assert code == 0, err


def test_bootstrap_refuses_two_databases(
    capsys: pytest.CaptureFixture[str], fresh_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAYERSCHED_DATABASE_URL", f"sqlite:///{fresh_host / 'a.db'}")
    code, _, err = bootstrap(capsys, "--data-dir", "b")
    assert code == 1
    assert error_line(err) == (
        f"error: LAYERSCHED_DATABASE_URL (sqlite:///{fresh_host / 'a.db'}) and --data-dir b name two databases; "
        "give one of them"
    )
    assert list(fresh_host.iterdir()) == []


def test_bootstrap_names_an_unreachable_database_without_its_password(
    capsys: pytest.CaptureFixture[str], fresh_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAYERSCHED_DATABASE_URL", "postgresql+psycopg://olga:s3cret@127.0.0.1:1/layersched")
    code, _, err = bootstrap(capsys)
    assert code == 1
    assert err.splitlines()[0] == (
        "database: postgresql+psycopg://olga:***@127.0.0.1:1/layersched (from LAYERSCHED_DATABASE_URL)"
    )
    assert error_line(err).startswith(
        "error: cannot bring the database postgresql+psycopg://olga:***@127.0.0.1:1/layersched up to date: "
    )
    assert "s3cret" not in err


def test_data_dir_goes_with_bootstrap(capsys: pytest.CaptureFixture[str], fresh_host: Path) -> None:
    code, _, err = run(capsys, "admin", "user", "add", "--name", "a", "--email", "a@x.org", "--data-dir", "srv")
    assert code == 1
    assert error_line(err) == (
        "error: --data-dir goes with --bootstrap (without it, the user is created through the API)"
    )
    assert list(fresh_host.iterdir()) == []


@needs_server
def test_worker_names_its_database_and_refuses_a_bad_celery_argument_in_one_line(tmp_path: Path) -> None:
    database = tmp_path / "w.db"
    env = dict(os.environ, LAYERSCHED_DATABASE_URL=f"sqlite:///{database}", LAYERSCHED_CONFIG=str(tmp_path / "c.json"))
    result = subprocess.run(
        [*_console_script(), "worker", "--", "--no-such-flag"],
        capture_output=True, text=True, env=env, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"layersched: database sqlite:///{database} (its schema is brought up to date by `layersched serve`, "
        "`layersched admin user add --bootstrap` or `alembic upgrade head`, not by a worker)",
        "error: celery worker: No such option '--no-such-flag'.",
    ]


# ---------------------------------------------------------------------------------------------- local commands


def test_init_copies_the_starter_kit_and_refuses_to_overwrite(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "kit"
    assert run(capsys, "init", str(target))[0] == 0
    names = sorted(p.name for p in target.iterdir())
    assert names == [
        "README.md", "imitation_rl.py", "layersched-kit.toml", "plot_curves.py", "policy.py", "train_reinforce.py",
    ]  # fmt: skip
    code, _, err = run(capsys, "init", str(target))
    assert code == 1
    assert error_line(err) == (
        f"error: {target} already has README.md, imitation_rl.py, plot_curves.py, policy.py, train_reinforce.py, "
        "layersched-kit.toml; use --force to overwrite"
    )
    assert run(capsys, "init", str(target), "--force")[0] == 0


def test_init_copies_the_kit_of_the_track_it_is_given(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    stand_in_track.register()
    target = tmp_path / "kit"
    code, out, err = run(capsys, "init", str(target), "--track", "standin-v1")
    assert code == 0, err
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "layersched-kit.toml", "policy.py"]
    kit = REPO / "tests" / "server" / "stand_in_starter"
    assert (target / "policy.py").read_bytes() == (kit / "policy.py").read_bytes()
    assert out.splitlines()[0] == (
        f"created the starter kit of standin-v1 (Stand-in bin packing) in {target}/: README.md, policy.py, "
        "layersched-kit.toml"
    )
    # Its README gives no steps (no bash block), so none of the lab kit's scripts is named.
    assert out.splitlines()[-1] == "  layersched validate . && layersched submit . --name first-try"
    assert "imitation_rl" not in out
    layers = tmp_path / "layers"
    assert run(capsys, "init", str(layers), "--track", "layers-v1")[0] == 0
    assert (layers / "policy.py").read_bytes() == (
        REPO / "sim" / "tracks" / "layers_v1" / "starter" / "policy.py"
    ).read_bytes()


def test_the_cli_knows_the_tracks_layersched_track_modules_names(tmp_path: Path) -> None:
    """A fresh process, as a student's shell: the organisers' track module named in LAYERSCHED_TRACK_MODULES (the
    server's and the worker's variable) is known to `init --track` and to `validate --static --evalset`; a bad value
    is one error line."""

    def cli(*args: str, modules: str) -> subprocess.CompletedProcess[str]:
        env = dict(
            os.environ,
            LAYERSCHED_TRACK_MODULES=modules,
            LAYERSCHED_CONFIG=str(tmp_path / "c.json"),
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
        )
        return subprocess.run(
            [*_console_script(), *args], capture_output=True, text=True, env=env, timeout=120, check=False, cwd=REPO
        )

    made = cli("init", str(tmp_path / "kit"), "--track", "standin-v1", modules='["tests.server.stand_in_track"]')
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "kit" / "policy.py").read_text().count("def policy(bins, rng)") == 1
    lab_policy = tmp_path / "lab.py"
    lab_policy.write_text("def policy(env, task, rng):\n    return 0\n")
    toy_set = str(REPO / "tests" / "toy_track" / "evalset.toml")
    checked = cli("validate", str(lab_policy), "--static", "--evalset", toy_set, modules='["tests.toy_track"]')
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "entry point: policy(loads, size, rng) defined in lab.py:1" in checked.stdout
    for modules, message in [
        ("tests.toy_track", "error: LAYERSCHED_TRACK_MODULES must be a JSON list of module names"),
        ('["no_such_tracks"]', "error: track module 'no_such_tracks' cannot be imported: No module named"),
    ]:
        refused = cli("init", str(tmp_path / "other"), modules=modules)
        assert refused.returncode == 1
        assert refused.stderr.startswith(message), refused.stderr
        assert "Traceback" not in refused.stderr and not (tmp_path / "other").exists()


def test_init_of_a_track_with_its_own_sample_says_to_validate_on_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A kit of another track than the lab's validates on that track's public sample, not the lab's default: its
    layersched-kit.toml says which track it is (issue 29, item 3)."""
    kit = tmp_path / "kit"
    code, out, err = run(capsys, "init", str(kit), "--track", "jobs-v1")
    assert code == 0, err
    assert out.splitlines()[1] == (
        "layersched-kit.toml records the track: validate scores on its public sample, submit sends to its open phase "
        "(with several open, name one: --phase NAME)"
    )
    assert out.splitlines()[4].split("#")[0].rstrip() == "  layersched validate ."
    assert 'track = "jobs-v1"\n' in (kit / "layersched-kit.toml").read_text()
    code, out, err = run(capsys, "validate", str(kit), "--static")
    assert code == 0, out + err
    assert "entry point: policy(env, rng) defined in policy.py:" in out


def test_init_of_an_unknown_track_lists_the_known_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "kit"
    with pytest.raises(SystemExit) as exc:
        main(["init", str(target), "--track", "packing-v9"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    known = ", ".join(track_ids())
    assert err.splitlines()[-1] == (
        f"layersched init: error: argument --track: unknown track 'packing-v9'; known tracks: {known}"
    )
    assert "layers-v1" in known and not target.exists()


def test_evalset_verify(capsys: pytest.CaptureFixture[str]) -> None:
    from layersched.sdk.localrun import default_sample_path
    from layersched.sim.evalset import load_evalset

    path = default_sample_path()
    if path is None:
        pytest.skip("no sample set in this installation")
    commitment = load_evalset(path).commitment
    code, out, _ = run(capsys, "evalset", "verify", str(path), commitment)
    assert (code, out) == (0, f"{path}: matches commitment {commitment}\n")
    code, _, err = run(capsys, "evalset", "verify", str(path), "0" * 64)
    assert code == 1
    assert error_line(err) == f"error: {path} does NOT match commitment {'0' * 64}: the set was changed"
    code, _, err = run(capsys, "evalset", "verify", str(path), "abc")
    assert code == 1
    assert error_line(err) == "error: a commitment is 64 hex digits (SHA-256), got 'abc'"


def test_admin_evalset_new_prints_a_commitment_that_verifies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    template = tmp_path / "template.toml"
    template.write_text(
        'format = "layersched-evalset"\nversion = 1\nname = "final"\ntemplate = true\n\n'
        '[[scenario]]\nname = "lab-50"\ncatalog = "lab"\nn_tasks = 50\ngenerate = { public = 1, private = 2 }\n'
    )
    out_path = tmp_path / "private" / "final.toml"
    code, out, err = run(capsys, "admin", "evalset", "new", "--from", str(template), "--out", str(out_path))
    assert code == 0, err
    first, second, third = out.splitlines()
    assert first == f"wrote {out_path} (mode 0600): evaluation set 'final', 1 scenarios, 3 episodes"
    commitment = second.rsplit(": ", 1)[1]
    assert third == (
        "at the end: `layersched admin evalset reveal final` and publish final.toml; then anyone checks it with "
        f"`layersched evalset verify final.toml {commitment}`"
    )
    assert stat.S_IMODE(out_path.stat().st_mode) == 0o600
    assert run(capsys, "evalset", "verify", str(out_path), commitment)[0] == 0
    code, _, err = run(capsys, "admin", "evalset", "new", "--from", str(template), "--out", str(out_path))
    assert code == 1
    assert error_line(err) == f"error: {out_path} already exists; refusing to overwrite an evaluation set"


@pytest.mark.parametrize(
    ("out_name", "options", "expected"),
    [("spring.toml", [], "spring"), ("s.toml", ["--name", "spring-2027"], "spring-2027")],
    ids=["file-stem", "name-option"],
)
def test_admin_evalset_new_names_the_set_after_the_file_or_the_option(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, out_name: str, options: list[str], expected: str
) -> None:
    from layersched.sim.evalset import load_evalset

    out_path = tmp_path / "private" / out_name
    code, out, err = run(
        capsys, "admin", "evalset", "new", "--from", str(EXAMPLE_TEMPLATE), "--out", str(out_path), *options
    )
    assert code == 0, err
    assert load_evalset(out_path).name == expected
    assert f"evaluation set {expected!r}, 5 scenarios, 150 episodes" in out.splitlines()[0]


def test_admin_evalset_new_refuses_a_name_that_is_not_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_path = tmp_path / "private" / "my set.toml"
    code, _, err = run(capsys, "admin", "evalset", "new", "--from", str(EXAMPLE_TEMPLATE), "--out", str(out_path))
    assert code == 1
    assert error_line(err) == (
        f"error: {EXAMPLE_TEMPLATE}: evaluation set name must be 1-64 letters, digits, '.', '_' or '-', starting "
        "with a letter or digit, got 'my set' (name it with --name)"
    )
    assert not out_path.exists()


def test_admin_evalset_help_cites_a_template_that_exists(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["admin", "evalset"], ["admin", "evalset", "new"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        cited = {
            word
            for word in capsys.readouterr().out.split()
            if word.startswith("hidden_seeds/") and "private" not in word
        }
        assert cited == {"hidden_seeds/challenge-example.toml"}, command
        assert (REPO / "hidden_seeds" / "challenge-example.toml").is_file()


def test_unwritable_directory_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    code, _, err = run(capsys, "init", str(blocked / "kit"))
    assert code == 1
    assert error_line(err).startswith(f"error: {blocked / 'kit'}: ")


def test_sim_is_dispatched_to_the_simulator_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sim", "--seeds", "0", "--tasks", "50", "--baselines", "Greedy", "--json")
    assert code == 0
    assert list(json.loads(out)["baselines"]) == ["Greedy"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["submit"], "the following arguments are required: path"),
        (["leaderboard", "--split", "secret"], "argument --split: invalid choice: 'secret'"),
        (["status", "abc"], "argument id: expected a positive integer, got 'abc'"),
        (["validate", "x.py", "--deadline", "0"], "argument --deadline: expected a positive number, got '0'"),
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
        (["admin"], "the following arguments are required: ACTION"),
        ([], "the following arguments are required: COMMAND"),
    ],
    ids=["missing-path", "bad-split", "bad-id", "bad-deadline", "unknown-command", "admin-no-action", "nothing"],
)
def test_argument_errors_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_every_command_has_help_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    commands: list[list[str]] = [
        ["login"],
        ["serve"],
        ["init"],
        ["validate"],
        ["submit"],
        ["status"],
        ["select"],
        ["unselect"],
        ["logs"],
        ["leaderboard"],
        ["evalset"],
        ["admin"],
        ["admin", "user", "add"],
        ["admin", "token", "new"],
        ["admin", "token", "revoke"],
        ["admin", "evalset", "new"],
        ["admin", "evalset", "reveal"],
        ["admin", "rerun"],
        ["admin", "audit"],
        ["admin", "cancel"],
        ["admin", "disqualify"],
        ["admin", "freeze"],
        ["admin", "publish"],
        ["admin", "audit-log"],
        ["admin", "evaluation"],
        ["evalset", "register"],
        ["admin", "challenge"],
        ["admin", "challenge", "apply"],
        ["admin", "challenge", "export"],
    ]
    for command in commands:
        with pytest.raises(SystemExit) as exc:
            main([*command, "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert "examples:\n  layersched " + " ".join(command) in out, command


def test_console_script_runs_without_traceback(tmp_path: Path) -> None:
    env = dict(os.environ, LAYERSCHED_CONFIG=str(tmp_path / "c.json"))
    env.pop("LAYERSCHED_SERVER", None)
    env.pop("LAYERSCHED_TOKEN", None)
    result = subprocess.run(
        [*_console_script(), "status"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: no server configured")
    assert "Traceback" not in result.stderr


def _console_script() -> list[Any]:
    script = Path(sys.executable).with_name("layersched")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from layersched.sdk.cli import main; raise SystemExit(main())"]
