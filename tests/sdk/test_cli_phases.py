"""Phases from the CLI against a live server: an organiser runs dev + final, participants submit with --phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sdk.conftest import SCENARIOS, LiveServer, Worker
from tests.sdk.test_cli import error_line, login, run


@pytest.fixture
def dev_and_final(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> LiveServer:
    """``dev`` on the sample and ``final`` on a second set, made from the CLI; ``main`` closed."""
    from layersched.server.admin import register_evalset

    register_evalset(
        name="spring", commitment="s" * 64, path="spring.toml", scenarios=SCENARIOS, current=False,
        settings=live_server.settings,
    )  # fmt: skip
    login(capsys, live_server, "olga")
    code, out, err = run(capsys, "admin", "phase", "create", "dev", "--evalset", "sample", "--title", "Development")
    assert code == 0, err
    assert out.startswith("phase dev created: set sample (layers-v1), opens ") and out.endswith("; open now\n")
    code, out, err = run(
        capsys, "admin", "phase", "create", "final", "--evalset", "spring", "--closes", "2099-03-01T12:00Z",
        "--quota", "1",
    )  # fmt: skip
    assert code == 0, err
    assert ", closes 2099-03-01T12:00:00Z; open now" in out
    code, out, _ = run(capsys, "admin", "phase", "close", "main")
    assert code == 0 and out.startswith("phase main closed: ") and out.endswith("; closed now\n")
    return live_server


def test_an_organiser_runs_dev_and_final_and_students_name_their_phase(
    capsys: pytest.CaptureFixture[str], dev_and_final: LiveServer, worker_thread: Worker, policy_file: Path
) -> None:
    code, out, _ = run(capsys, "admin", "phase", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["phase", "title", "track", "set", "opens"]
    assert [line.split()[0] for line in lines[1:]] == ["main", "dev", "final"]
    assert lines[0].split()[8:10] == ["today/quota", "now"]  # with a token: what the reader used today
    assert lines[3].split()[-2:] == ["0/1", "open"]

    login(capsys, dev_and_final, "alice")
    code, out, err = run(capsys, "submit", str(policy_file), "--phase", "final", "--poll", "0.1")
    assert code == 0, err
    assert out.splitlines()[0] == "submitted #1 'first_fit' (queued)"
    assert run(capsys, "status", "1")[1].splitlines()[0].endswith(", phase final")
    code, out, err = run(capsys, "submit", str(policy_file), "--phase", "final", "--no-wait")
    assert code == 1
    assert error_line(err) == (
        "error: daily quota of 1 submissions to phase 'final' used (1 today); it resets at 00:00 UTC"
    )
    assert "upload [" not in err  # refused before the bundle is built or sent

    code, out, _ = run(capsys, "leaderboard", "--phase", "final")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "phase final: public leaderboard: score = ratio to Greedy, lower is better"
    assert lines[2].split()[:2] == ["1", "alice"]
    code, out, _ = run(capsys, "leaderboard", "--phase", "dev", "--json")
    assert [r for r in json.loads(out)["rows"] if not r["baseline"]] == []

    code, out, _ = run(capsys, "phases", "--json")
    assert code == 0
    assert {p["name"]: p["open"] for p in json.loads(out)} == {"main": False, "dev": True, "final": True}

    login(capsys, dev_and_final, "olga")
    assert run(capsys, "admin", "freeze", "--phase", "final")[1] == (
        "leaderboard of phase final frozen (evaluations go on; public ranks stay)\n"
    )
    assert (
        run(capsys, "admin", "publish", "--phase", "dev", "--yes")[1] == "private leaderboard of phase dev published\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--phase", "nope"], "error: phase 'nope' does not exist"),
        ([], "error: 2 phases are open (dev, final): name one (--phase NAME, or the form field phase)"),
        (["--phase", "main"], "error: phase 'main' closed at "),
    ],
    ids=["nonexistent", "two-open", "closed"],
)
def test_submit_refusals_are_one_line(
    capsys: pytest.CaptureFixture[str], dev_and_final: LiveServer, policy_file: Path, args: list[str], message: str
) -> None:
    login(capsys, dev_and_final, "alice")
    code, _, err = run(capsys, "submit", str(policy_file), "--no-wait", *args)
    assert code == 1
    assert error_line(err).startswith(message)
    assert "upload [" not in err


def test_leaderboard_of_a_phase_that_does_not_exist(
    capsys: pytest.CaptureFixture[str], dev_and_final: LiveServer
) -> None:
    code, _, err = run(capsys, "leaderboard", "--phase", "nope")
    assert code == 1 and error_line(err) == "error: phase 'nope' does not exist"


def test_phase_admin_by_a_participant_is_refused(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> None:
    login(capsys, live_server, "alice")
    for args in (["create", "x", "--evalset", "sample"], ["open", "main"], ["close", "main"]):
        code, _, err = run(capsys, "admin", "phase", *args)
        assert code == 1
        assert error_line(err) == "error: user 'alice' is a participant; this route is for organisers"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["submit", ".", "--phase", "Final Round"], "'Final Round' is not a phase name"),
        (["leaderboard", "--phase", "-x"], "expected one argument"),
        (["admin", "phase", "create", "dev"], "the following arguments are required: --evalset"),
        (["admin", "phase", "create", "dev", "--evalset", "s", "--closes", "friday"], "'friday' is not a time"),
        (["admin", "phase", "create", "dev", "--evalset", "s", "--quota", "0"], "expected a positive integer, got 0"),
        (["admin", "phase", "close", "dev", "--at", "2027-13-01"], "'2027-13-01' is not a time"),
        (["admin", "phase", "rename", "dev"], "invalid choice: 'rename'"),
    ],
    ids=["bad-name", "missing-value", "no-evalset", "bad-time", "zero-quota", "bad-close-time", "bad-action"],
)
def test_bad_arguments_exit_2_with_argparse_message(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        run(capsys, *args)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_organiser_edits_a_phase_from_the_cli(capsys: pytest.CaptureFixture[str], dev_and_final: LiveServer) -> None:
    code, out, err = run(capsys, "admin", "phase", "edit", "final", "--closes", "2099-04-01T12:00Z", "--quota", "3")
    assert code == 0, err
    assert out.startswith("phase final changed: set spring (layers-v1), opens ")
    assert ", closes 2099-04-01T12:00:00Z; open now" in out
    code, out, _ = run(capsys, "admin", "phase", "edit", "final", "--open-ended", "--default-quota")
    assert code == 0 and ", open-ended; open now" in out
    code, out, _ = run(capsys, "phases", "--json")
    final = {p["name"]: p for p in json.loads(out)}["final"]
    assert (final["closes_at"], final["daily_quota"]) == (None, 2)  # the live server's quota
    code, _, err = run(capsys, "admin", "phase", "edit", "final")
    assert code == 1 and error_line(err).startswith("error: nothing to change: give --title")
    code, _, err = run(capsys, "admin", "phase", "edit", "final", "--closes", "2000-01-01T00:00Z")
    assert code == 1 and error_line(err).startswith("error: phase 'final' would close at 2000-01-01T00:00:00+00:00")
    with pytest.raises(SystemExit):
        run(capsys, "admin", "phase", "edit", "final", "--quota", "3", "--default-quota")
    assert "not allowed with argument" in capsys.readouterr().err
