"""The organisers' commands for running a term (issue 32) against a live server: the roster, the users' list,
disable and enable; each refusal one clear line, nothing half-done."""

from __future__ import annotations

import csv
import json
import stat
import zipfile
from pathlib import Path

import pytest

from layersched.sdk.cli import main
from tests.sdk.conftest import LiveServer, run_sql
from tests.sdk.test_cli import error_line, login, run

ROSTER = "name,email,team\nAda,ada@uni.example,owls\nBen,ben@uni.example,owls\n@cmd,cmd@uni.example,\n"


def write(tmp_path: Path, text: str, name: str = "roster.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_roster_is_enrolled_from_the_cli_and_again_changes_nothing(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, tmp_path: Path
) -> None:
    login(capsys, live_server, "olga")
    roster = write(tmp_path, ROSTER.replace("@cmd", "-cmd"))
    tokens = tmp_path / "tokens.csv"
    code, out, err = run(capsys, "admin", "user", "import", str(roster), "--tokens-out", str(tokens))
    assert code == 0, err
    assert out == (f"created 3 users; their tokens are in {tokens} (mode 0600)\ncreated 1 teams: owls\n")
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    written = list(csv.reader(tokens.read_text().splitlines()))
    assert written[0] == ["name", "email", "token"]
    assert [r[:2] for r in written[1:]] == [["Ada", "ada@uni.example"], ["Ben", "ben@uni.example"],
                                            ["'-cmd", "cmd@uni.example"]]  # fmt: skip
    assert all(r[2].startswith("lst_") for r in written[1:])

    again = tmp_path / "again.csv"
    code, out, err = run(capsys, "admin", "user", "import", str(roster), "--tokens-out", str(again))
    assert code == 0, err
    assert out == (
        f"created 0 users; their tokens are in {again} (mode 0600)\n"
        "3 users were there already, unchanged: Ada, Ben, -cmd\n"
    )

    code, out, err = run(capsys, "admin", "user", "list", "--team", "owls")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["id", "name", "email", "role", "team", "created", "(UTC)", "last", "submission",
                                "tokens"]  # fmt: skip
    assert [line.split()[1] for line in lines[1:]] == ["Ada", "Ben"]
    code, out, _ = run(capsys, "admin", "user", "list", "--json")
    listed = json.loads(out)
    assert listed["count"] == 6 and {u["name"] for u in listed["data"]} >= {"alice", "Ada", "-cmd"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,mail\nAda,a@x.org\n", "line 1: unknown column 'mail'; the columns are name, email and optionally team, "
         "role"),
        ("name,team\nAda,owls\n", "line 1: no column 'email' (the header must name name and email)"),
        ("name,email\nAda,a@x.org,extra\n", "line 2: 3 cells where the header has 2 columns"),
        ("name,email\nAda,a@x.org\nBen,not-an-address\n", "line 3, field email: 'not-an-address' is not an e-mail "
         "address; nothing was imported"),
        ("", "the file is empty; it needs a header line: name,email[,team][,role]"),
    ],
    ids=["unknown-column", "no-email-column", "extra-cell", "bad-email", "empty"],
)  # fmt: skip
def test_a_bad_roster_is_one_line_and_imports_nothing(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, tmp_path: Path, text: str, message: str
) -> None:
    login(capsys, live_server, "olga")
    roster = write(tmp_path, text)
    tokens = tmp_path / "tokens.csv"
    code, out, err = run(capsys, "admin", "user", "import", str(roster), "--tokens-out", str(tokens))
    assert (code, out) == (1, "")
    assert message in error_line(err)
    assert not tokens.exists()  # made before the request, removed when nothing was imported
    code, out, _ = run(capsys, "admin", "user", "list", "--json")
    assert json.loads(out)["count"] == 3


def test_an_existing_tokens_file_is_refused_before_anything_is_imported(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, tmp_path: Path
) -> None:
    login(capsys, live_server, "olga")
    tokens = write(tmp_path, "keep me", "tokens.csv")
    code, _, err = run(capsys, "admin", "user", "import", str(write(tmp_path, ROSTER)), "--tokens-out", str(tokens))
    assert code == 1
    assert error_line(err) == (f"error: {tokens} exists already: name a new file for the tokens (nothing was imported)")
    assert tokens.read_text() == "keep me"
    assert json.loads(run(capsys, "admin", "user", "list", "--json")[1])["count"] == 3


def test_links_disable_and_enable(capsys: pytest.CaptureFixture[str], live_server: LiveServer, tmp_path: Path) -> None:
    login(capsys, live_server, "olga")
    links = tmp_path / "links.csv"
    code, out, err = run(capsys, "admin", "user", "import", str(write(tmp_path, ROSTER)), "--tokens-out", str(links),
                         "--links")  # fmt: skip
    assert code == 0, err
    rows = list(csv.reader(links.read_text().splitlines()))
    assert rows[0] == ["name", "email", "link"]
    assert rows[3][0] == "'@cmd"  # a spreadsheet would run @cmd as a formula
    assert all(r[2].startswith(f"{live_server.url}/signin/link/lsl_") for r in rows[1:])

    code, out, err = run(capsys, "admin", "user", "disable", "bob", "--reason", "shared a token")
    assert (code, out) == (0, "disabled bob: 1 tokens revoked, uploads refused, off the boards (undo: layersched "
                              "admin user enable bob)\n"), err  # fmt: skip
    code, _, err = run(capsys, "admin", "user", "link", "bob")
    assert code == 1
    assert error_line(err) == "error: user 'bob' is disabled: enable them first (layersched admin user enable)"
    code, out, _ = run(capsys, "admin", "user", "enable", "bob")
    assert code == 0 and out.startswith("enabled bob: back on the boards; their old tokens stay revoked")
    code, out, _ = run(capsys, "admin", "user", "link", "bob")
    assert code == 0 and f"{live_server.url}/signin/link/lsl_" in out
    code, _, err = run(capsys, "admin", "user", "disable", "nobody")
    assert code == 1 and error_line(err) == "error: user 'nobody' does not exist"


def test_a_participant_is_refused(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> None:
    login(capsys, live_server, "alice")
    code, _, err = run(capsys, "admin", "user", "list")
    assert code == 1
    assert error_line(err) == "error: user 'alice' is a participant; this route is for organisers"


def test_admin_submissions_lists_filters_and_counts_the_failures(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server, "alice")
    for _ in range(2):
        assert run(capsys, "submit", str(policy_file), "--no-wait", "--name", "wipe")[0] == 0
    # A name stored before the server refused control characters in names (it refuses this one now).
    run_sql(live_server, ("UPDATE submissions SET name = :v", {"v": "\x1b[2Jwipe"}))
    live_server.worker.fail = True
    live_server.worker.run_pending()
    login(capsys, live_server, "olga")
    code, out, err = run(capsys, "admin", "submissions", "--state", "failed", "--owner", "alice")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:9] == ["id", "name", "owner", "team", "phase", "state", "category", "wait", "run"]
    assert [line.split()[0] for line in lines[1:3]] == ["#2", "#1"]
    assert "\\x1b[2Jwipe" in lines[1] and "\x1b" not in out  # the escape sequence is shown, not obeyed
    assert "invalid_action" in lines[1] and lines[3] == "states: failed 2"
    assert lines[4] == "failures by category: invalid_action 2"
    code, out, _ = run(capsys, "admin", "submissions", "--json", "--state", "succeeded")
    assert code == 0 and json.loads(out)["count"] == 0
    code, _, err = run(capsys, "admin", "submissions", "--phase", "nope")
    assert code == 1 and error_line(err) == "error: phase 'nope' does not exist"


def test_admin_export_streams_to_a_private_file_or_stdout(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path, tmp_path: Path
) -> None:
    login(capsys, live_server, "alice")
    assert run(capsys, "submit", str(policy_file), "--no-wait", "--name", "=1+1")[0] == 0
    live_server.worker.run_pending()
    login(capsys, live_server, "olga")
    grades = tmp_path / "grades.csv"
    code, out, err = run(capsys, "admin", "export", "board", "--phase", "main", "--out", str(grades))
    assert (code, out) == (0, ""), err
    assert err.startswith(f"wrote {grades} (") and err.endswith(" csv): the board of phase main\n")
    assert stat.S_IMODE(grades.stat().st_mode) == 0o600
    rows = list(csv.DictReader(grades.read_text().splitlines()))
    assert [(r["rank"], r["competitor"], r["final_submission_name"]) for r in rows] == [
        ("1", "alice", "'=1+1"), ("", "bob", ""),
    ]  # fmt: skip
    code, out, _ = run(capsys, "admin", "export", "submissions", "--phase", "main", "--format", "json")
    assert code == 0 and [s["name"] for s in json.loads(out)] == ["=1+1"]

    code, _, err = run(capsys, "admin", "export", "episodes", "--phase", "nope", "--out", str(tmp_path / "e.csv"))
    assert code == 1 and error_line(err) == "error: phase 'nope' does not exist"
    assert not list(tmp_path.glob(".*.part")) and not (tmp_path / "e.csv").exists()  # no half file
    code, _, err = run(capsys, "admin", "export", "bundles", "--phase", "main")
    assert code == 1 and error_line(err) == "error: the bundles' export is a zip: name a file with --out"
    archive = tmp_path / "bundles.zip"
    assert run(capsys, "admin", "export", "bundles", "--phase", "main", "--out", str(archive))[0] == 0
    with zipfile.ZipFile(archive) as opened:
        assert opened.namelist() == ["manifest.csv", "bundles/1.py"]


def test_admin_quota_grant_and_list(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> None:
    login(capsys, live_server, "olga")
    code, out, err = run(capsys, "admin", "quota", "grant", "--phase", "main", "--user", "alice", "--extra", "2",
                         "--reason", "outage")  # fmt: skip
    assert code == 0, err
    today = out.split(" on ")[1].strip()
    assert out == f"granted 2 extra submissions to user alice in phase main on {today}\n"
    code, out, _ = run(capsys, "admin", "quota", "list")
    assert code == 0 and out.splitlines()[1].split()[1:5] == ["main", "user", "alice", "2"]
    code, _, err = run(capsys, "admin", "quota", "grant", "--phase", "main", "--team", "nope", "--extra", "1")
    assert code == 1 and error_line(err) == "error: team 'nope' does not exist"
    with pytest.raises(SystemExit) as exc:
        main(["admin", "quota", "grant", "--phase", "main", "--extra", "1"])
    assert exc.value.code == 2 and "one of the arguments --user --team is required" in capsys.readouterr().err


def test_bulk_rerun_and_disqualify_list_first_ask_then_act(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server, "alice")
    for _ in range(2):
        assert run(capsys, "submit", str(policy_file), "--no-wait")[0] == 0
    live_server.worker.fail = True
    live_server.worker.run_pending()
    login(capsys, live_server, "olga")
    code, out, err = run(capsys, "admin", "rerun", "--state", "failed", "--owner", "alice", "--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["id", "name", "owner", "phase", "state", "category"]
    assert [line.split()[0] for line in lines[1:3]] == ["#1", "#2"]
    assert lines[3] == "would rerun these 2 submissions (dry run: nothing was done)"
    code, _, err = run(capsys, "admin", "rerun", "--state", "failed")
    assert code == 1 and error_line(err) == (
        "error: not done: rerun these 2 submissions asks for confirmation; pass --yes to do it without a terminal"
    )
    code, out, _ = run(capsys, "admin", "submissions", "--json")
    assert {s["state"] for s in json.loads(out)["data"]} == {"failed"}  # nothing was rerun
    code, out, err = run(capsys, "admin", "rerun", "--state", "failed", "--yes")
    assert code == 0, err
    assert out.splitlines()[-1] == "queued 2 reruns (evaluations #3, #4)"
    code, out, _ = run(capsys, "admin", "rerun", "1", "2", "--yes")
    assert out.splitlines()[-3:] == [
        "queued 0 reruns (evaluations none)",
        "skipped #1: evaluation 3 is queued or running already",
        "skipped #2: evaluation 4 is queued or running already",
    ]
    code, out, err = run(capsys, "admin", "disqualify", "1", "2", "--reason", "copied", "--yes")
    assert (code, out.splitlines()[-1]) == (0, "disqualified 2 submissions: copied"), err
    code, _, err = run(capsys, "admin", "rerun", "1", "--owner", "alice")
    assert code == 1 and error_line(err) == "error: name submissions by ids or by filter options, not both"
    code, _, err = run(capsys, "admin", "disqualify", "--reason", "x")
    assert code == 1 and error_line(err) == (
        "error: name a submission id, several, or filter options (--owner, --phase, --state, ...)"
    )
    code, out, _ = run(capsys, "admin", "disqualify", "--owner", "bob", "--reason", "x", "--yes")
    assert (code, out) == (0, "no submissions match: nothing to do\n")


def test_submit_and_status_show_the_place_in_the_queue(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    login(capsys, live_server, "alice")
    code, out, err = run(capsys, "submit", str(policy_file), "--no-wait")
    assert code == 0, err
    assert "queue: position 1 of 1 (1 worker); no estimate yet (too few recent runs)\n" in out
    login(capsys, live_server, "bob")
    run(capsys, "submit", str(policy_file), "--no-wait")
    code, out, _ = run(capsys, "status", "2")
    assert "\nqueue: position 2 of 2 (1 worker); no estimate yet (too few recent runs)\n" in out
    live_server.worker.run_pending()
    code, out, _ = run(capsys, "status", "2")
    assert "queue:" not in out


def test_admin_webhook_add_list_test_remove(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> None:
    login(capsys, live_server, "olga")
    code, out, err = run(capsys, "admin", "webhook", "add", "https://hooks.example/T/B/X", "--slack")
    assert (code, out) == (0, "webhook #1 (slack) for alert, evaluation events: https://hooks.example/T/B/X\n"), err
    code, out, _ = run(capsys, "admin", "webhook", "test", "1")
    assert out == "queued a test notification to webhook #1 (1 pending); see: layersched admin webhook list\n"
    code, out, _ = run(capsys, "admin", "webhook", "list")
    assert out.splitlines()[1].split()[:6] == ["#1", "slack", "alert,evaluation", "1", "0", "0"]
    code, _, err = run(capsys, "admin", "webhook", "add", "ftp://x.org/hook")
    assert code == 1 and error_line(err) == (
        "error: 'ftp://x.org/hook' is not an http(s) URL with a host: a webhook must be one (e.g. https://...)"
    )
    assert run(capsys, "admin", "webhook", "remove", "1")[1] == "removed webhook #1\n"
    code, _, err = run(capsys, "admin", "webhook", "remove", "1")
    assert code == 1 and error_line(err) == "error: webhook 1 does not exist"


ORGANISER_COMMANDS = [
    ["admin", "user", "import"],
    ["admin", "user", "list"],
    ["admin", "user", "disable"],
    ["admin", "user", "enable"],
    ["admin", "user", "link"],
    ["admin", "submissions"],
    ["admin", "export"],
    ["admin", "quota"],
    ["admin", "quota", "grant"],
    ["admin", "quota", "list"],
    ["admin", "webhook"],
    ["admin", "webhook", "add"],
    ["admin", "webhook", "list"],
    ["admin", "webhook", "remove"],
    ["admin", "webhook", "test"],
    ["admin", "token", "metrics"],
]


@pytest.mark.parametrize("command", ORGANISER_COMMANDS, ids=["-".join(c[1:]) for c in ORGANISER_COMMANDS])
def test_every_new_command_has_help_with_examples(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    assert "examples:\n  layersched " + " ".join(command) in capsys.readouterr().out
