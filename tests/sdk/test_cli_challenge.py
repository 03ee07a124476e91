"""``layersched admin challenge apply|export`` against a live server (issue 29, item 2): one file brings the server
to its phases and rules, idempotently, through the API; a refusal changes nothing; the rules override the settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sdk.conftest import SCENARIOS, LiveServer
from tests.sdk.test_cli import error_line, login, run

CHALLENGE = """# a challenge of two phases on one set, with its rules
format = "layersched-challenge"
version = 1
submission_deadline = 2099-03-01T12:00:00Z
final_submissions = 1

[teams]
max_size = 4
invite_hours = 24
merge_deadline = 2099-02-01T00:00:00Z

[[phase]]
name = "dev"
title = "Development"
evalset = "sample"
quota = 10

[[phase]]
name = "final"
title = "Final"
evalset = "spring"
opens = 2099-01-01T00:00:00Z
closes = 2099-03-01T12:00:00Z
quota = 2
board = "organisers"
"""


@pytest.fixture
def organiser(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> LiveServer:
    from layersched.server.admin import register_evalset

    register_evalset(
        name="spring", commitment="s" * 64, path="spring.toml", scenarios=SCENARIOS, current=False,
        settings=live_server.settings,
    )  # fmt: skip
    login(capsys, live_server, "olga")
    return live_server


def write(tmp_path: Path, text: str, name: str = "challenge.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def audit_actions(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [e["action"] for e in json.loads(run(capsys, "admin", "audit-log", "--json")[1])["data"]]


def test_apply_shows_then_makes_the_changes_and_the_same_file_again_changes_nothing(
    capsys: pytest.CaptureFixture[str], organiser: LiveServer, tmp_path: Path
) -> None:
    path = write(tmp_path, CHALLENGE)
    code, out, err = run(capsys, "admin", "challenge", "apply", str(path), "--dry-run")
    assert code == 0, err
    expected = [
        "  rule submission_deadline: the setting LAYERSCHED_SUBMISSION_DEADLINE -> 2099-03-01T12:00:00+00:00",
        "  rule final_submissions: the setting LAYERSCHED_FINAL_SUBMISSIONS -> 1",
        "  rule team_max_size: the setting LAYERSCHED_TEAM_MAX_SIZE -> 4",
        "  rule team_invite_hours: the setting LAYERSCHED_TEAM_INVITE_HOURS -> 24.0",
        "  rule team_merge_deadline: the setting LAYERSCHED_TEAM_MERGE_DEADLINE -> 2099-02-01T00:00:00+00:00",
        "  create phase dev ('Development') on set sample (layers-v1): opens now, closes never, quota 10 a day, "
        "board public",
        "  create phase final ('Final') on set spring (layers-v1): opens 2099-01-01T00:00:00+00:00, closes "
        "2099-03-01T12:00:00+00:00, quota 2 a day, board organisers",
        "  (phase main: on the server, not in the file: left as is)",
    ]
    assert out.splitlines() == [
        *expected,
        f"dry run: nothing changed; `layersched admin challenge apply {path}` makes these changes",
    ]
    assert [p["name"] for p in json.loads(run(capsys, "phases", "--json")[1])] == ["main"]
    assert "apply_challenge" not in audit_actions(capsys)

    code, out, _ = run(capsys, "admin", "challenge", "apply", str(path))
    assert code == 0
    assert out.splitlines() == [*expected, f"applied {path}: 7 changes (in the audit log as apply_challenge)"]
    phases = {p["name"]: p for p in json.loads(run(capsys, "phases", "--json")[1])}
    assert (phases["final"]["evalset"], phases["final"]["daily_quota"], phases["final"]["visibility"]) == (
        "spring", 2, "organisers",
    )  # fmt: skip
    assert phases["dev"]["state"] == "open" and phases["final"]["state"] == "upcoming"
    assert audit_actions(capsys)[0] == "apply_challenge"

    code, out, _ = run(capsys, "admin", "challenge", "apply", str(path))
    assert out.splitlines() == [
        "  (phase main: on the server, not in the file: left as is)",
        f"nothing to change: the server already matches {path}",
    ]
    assert audit_actions(capsys).count("apply_challenge") == 1

    # An edit shows as the change it is.
    write(tmp_path, CHALLENGE.replace("quota = 10", "quota = 12").replace("max_size = 4", "max_size = 2"))
    code, out, _ = run(capsys, "admin", "challenge", "apply", str(path))
    assert out.splitlines()[:2] == ["  rule team_max_size: 4 -> 2", "  phase dev: daily_quota 10 -> 12"]


def test_the_applied_rules_override_the_settings(
    capsys: pytest.CaptureFixture[str], organiser: LiveServer, tmp_path: Path, policy_file: Path
) -> None:
    past = CHALLENGE.replace("submission_deadline = 2099-03-01T12:00:00Z", "")
    assert run(capsys, "admin", "challenge", "apply", str(write(tmp_path, past)))[0] == 0
    login(capsys, organiser, "alice")
    assert run(capsys, "team", "create", "ants")[0] == 0
    code, out, _ = run(capsys, "team", "show")
    assert out.splitlines()[0] == "team ants: alice (1 of at most 4)"  # LAYERSCHED_TEAM_MAX_SIZE is 3
    for _ in range(2):
        assert run(capsys, "submit", str(policy_file), "--phase", "dev", "--no-wait")[0] == 0
    organiser.worker.run_pending()
    assert run(capsys, "select", "1")[0] == 0
    code, _, err = run(capsys, "select", "2")
    assert code == 1 and "the most for the final ranking of phase 'dev'" in error_line(err)
    assert "already selected 1 submission" in error_line(err)
    # The deadline rule closes uploads, as LAYERSCHED_SUBMISSION_DEADLINE does.
    login(capsys, organiser, "olga")
    closed = past.replace("final_submissions = 1", "final_submissions = 1\nsubmission_deadline = 2020-01-01T00:00:00Z")
    assert run(capsys, "admin", "challenge", "apply", str(write(tmp_path, closed)))[0] == 0
    login(capsys, organiser, "alice")
    code, _, err = run(capsys, "submit", str(policy_file), "--phase", "dev", "--no-wait")
    assert code == 1
    assert error_line(err) == "error: the submission deadline 2020-01-01T00:00:00+00:00 has passed; uploads are closed"


def test_export_writes_a_file_that_applies_as_no_change(
    capsys: pytest.CaptureFixture[str], organiser: LiveServer, tmp_path: Path
) -> None:
    from layersched.sdk.challenge_file import read_challenge

    assert run(capsys, "admin", "challenge", "apply", str(write(tmp_path, CHALLENGE)))[0] == 0
    out_file = tmp_path / "exported.toml"
    code, out, _ = run(capsys, "admin", "challenge", "export", "--out", str(out_file))
    assert (code, out) == (0, f"wrote {out_file}\n")
    text = out_file.read_text()
    assert text.startswith(f"# The challenge of {organiser.url}, written by `layersched admin challenge export`")
    assert 'name = "final"\ntitle = "Final"\nevalset = "spring"\nopens = 2099-01-01T00:00:00Z\n' in text
    exported = read_challenge(out_file)
    assert [p["name"] for p in exported["phases"]] == ["main", "dev", "final"]
    assert exported["rules"]["team_max_size"] == 4 and exported["rules"]["submission_deadline"].startswith("2099")
    code, out, _ = run(capsys, "admin", "challenge", "apply", str(out_file))
    assert out == f"nothing to change: the server already matches {out_file}\n"
    assert run(capsys, "admin", "challenge", "export", "--out", str(out_file))[0] == 1  # exists: --force


BAD_FILES = {
    "unknown-top-key": (
        ("final_submissions = 1", "final_submision = 1"),
        "unknown key 'final_submision' in the top level",
    ),
    "unknown-teams-key": (("invite_hours = 24", "invite_days = 1"), "unknown key 'invite_days' in [teams]"),
    "unknown-phase-key": (("quota = 2", "quotas = 2"), "unknown key 'quotas' in phase 'final'"),
    "version": (("version = 1", "version = 2"), 'format = "layersched-challenge" and version = 1 are required'),
    "no-zone": (
        ("closes = 2099-03-01T12:00:00Z", "closes = 2099-03-01T12:00:00"),
        "phase 'final': closes must be a time with its zone",
    ),
    "overlapping-names": (('name = "final"', 'name = "dev"'), "phase 'dev' is named twice; phase names are unique"),
    "bad-board": (('board = "organisers"', 'board = "private"'), 'board must be "public" or "organisers"'),
    "zero-team": (("max_size = 4", "max_size = 0"), "[teams] max_size must be an integer of at least 1, got 0"),
    "no-evalset": (('evalset = "spring"\n', ""), "phase 'final': evalset is required"),
}


@pytest.mark.parametrize(("edit", "message"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_file_is_one_line_naming_it_and_nothing_is_asked(
    capsys: pytest.CaptureFixture[str], organiser: LiveServer, tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    path = write(tmp_path, CHALLENGE.replace(*edit))
    code, _, err = run(capsys, "admin", "challenge", "apply", str(path))
    assert code == 1
    line = error_line(err)
    assert line.startswith(f"error: {path}: ") and message in line, line
    assert [p["name"] for p in json.loads(run(capsys, "phases", "--json")[1])] == ["main"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('evalset = "spring"', 'evalset = "autumn"'), "error: evaluation set 'autumn' does not exist"),
        (("closes = 2099-03-01T12:00:00Z", "closes = 2098-03-01T12:00:00Z"),
         "error: phase 'final' would close at 2098-03-01T12:00:00+00:00, not after it opens at "
         "2099-01-01T00:00:00+00:00"),
    ],
    ids=["unregistered-set", "closes-before-opens"],
)  # fmt: skip
def test_what_the_api_refuses_is_refused_whole(
    capsys: pytest.CaptureFixture[str], organiser: LiveServer, tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    path = write(tmp_path, CHALLENGE.replace(*edit))
    for dry_run in (["--dry-run"], []):
        code, out, err = run(capsys, "admin", "challenge", "apply", str(path), *dry_run)
        assert (code, out) == (1, "")
        assert error_line(err) == message
    # The rules and the dev phase, fine on their own, were not applied either.
    assert [p["name"] for p in json.loads(run(capsys, "phases", "--json")[1])] == ["main"]
    assert "apply_challenge" not in audit_actions(capsys)


def test_a_set_change_on_a_phase_with_submissions_is_refused(
    capsys: pytest.CaptureFixture[str], organiser: LiveServer, tmp_path: Path, policy_file: Path
) -> None:
    path = write(tmp_path, CHALLENGE)
    assert run(capsys, "admin", "challenge", "apply", str(path))[0] == 0
    moved = write(tmp_path, CHALLENGE.replace('evalset = "sample"', 'evalset = "spring"'), "moved.toml")
    assert run(capsys, "admin", "challenge", "apply", str(moved), "--dry-run")[1].splitlines()[0] == (
        "  phase dev: evalset sample -> spring (layers-v1)"
    )  # no submission yet: it may move
    login(capsys, organiser, "alice")
    assert run(capsys, "submit", str(policy_file), "--phase", "dev", "--no-wait")[0] == 0
    login(capsys, organiser, "olga")
    code, _, err = run(capsys, "admin", "challenge", "apply", str(moved))
    assert code == 1
    assert error_line(err) == (
        "error: phase 'dev' has 1 submission scored on set 'sample'; its set cannot change to 'spring' (make a new "
        "phase for the new set)"
    )
    assert {p["name"]: p["evalset"] for p in json.loads(run(capsys, "phases", "--json")[1])}["dev"] == "sample"


def test_a_participant_cannot_apply_or_export(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, tmp_path: Path
) -> None:
    login(capsys, live_server, "alice")
    for command in (["apply", str(write(tmp_path, CHALLENGE))], ["export"]):
        code, _, err = run(capsys, "admin", "challenge", *command)
        assert code == 1
        assert error_line(err) == "error: user 'alice' is a participant; this route is for organisers"


def test_the_documented_example_reads(tmp_path: Path) -> None:
    """docs/CHALLENGE.md's example is a valid file, as the CLI reads it."""
    from layersched.sdk.challenge_file import read_challenge

    doc = (Path(__file__).resolve().parents[2] / "docs" / "CHALLENGE.md").read_text()
    example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    body = read_challenge(write(tmp_path, example))
    assert [p["name"] for p in body["phases"]] == ["dev-jobs", "final-jobs"]
    assert body["rules"]["team_merge_deadline"] == "2027-02-15T00:00:00+00:00"


def test_the_readmes_challenge_file_reads_and_names_a_dev_and_a_final_phase_per_track() -> None:
    from layersched.sdk.challenge_file import read_challenge

    body = read_challenge(Path(__file__).resolve().parents[2] / "docs" / "challenge-example.toml")
    assert [(p["name"], p["evalset"]) for p in body["phases"]] == [
        ("dev-layers", "sample"), ("final-layers", "layers-final"), ("dev-jobs", "jobs-sample"),
        ("final-jobs", "jobs-final"), ("dev-workflows", "workflows-sample"), ("final-workflows", "workflows-final"),
    ]  # fmt: skip
