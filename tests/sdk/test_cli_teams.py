"""Teams from the CLI against a live server (issue 18): an organiser runs dev + final for the lab track with teams,
from the CLI alone; students form a team with an invite code, share its quota and its leaderboard row; every
refusal is one clear line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.sdk.conftest import SCENARIOS, LiveServer, Worker
from tests.sdk.test_cli import error_line, login, run


def _invite_code(out: str) -> str:
    match = re.search(r"^(lsi_\S+)$", out, re.MULTILINE)
    assert match is not None, out
    return match.group(1)


@pytest.fixture
def challenge(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> LiveServer:
    """``dev`` on the sample, ``final`` (quota 1) on a second set, ``main`` closed, and a third participant."""
    from layersched.server.admin import register_evalset

    register_evalset(
        name="spring", commitment="s" * 64, path="spring.toml", scenarios=SCENARIOS, current=False,
        settings=live_server.settings,
    )  # fmt: skip
    login(capsys, live_server, "olga")
    for args in (
        ("admin", "phase", "create", "dev", "--evalset", "sample", "--title", "Development"),
        ("admin", "phase", "create", "final", "--evalset", "spring", "--quota", "1"),
        ("admin", "phase", "close", "main"),
    ):
        code, _, err = run(capsys, *args)
        assert code == 0, err
    code, out, err = run(capsys, "admin", "user", "add", "--name", "carol", "--email", "carol@example.org")
    assert code == 0, err
    live_server.tokens["carol"] = out.split("store it now): ")[1].strip()
    return live_server


def test_students_form_a_team_and_share_its_quota_and_row(
    capsys: pytest.CaptureFixture[str], challenge: LiveServer, worker_thread: Worker, policy_file: Path
) -> None:
    login(capsys, challenge, "alice")
    code, out, err = run(capsys, "team", "create", "ants")
    assert (code, out) == (0, "team ants: alice (1 of at most 3)\n"), err
    code, out, err = run(capsys, "team", "invite")
    assert code == 0, err
    invite = _invite_code(out)
    assert out.splitlines()[0].startswith("invite code for team ants (one use, until ")
    assert out.splitlines()[-1] == f"your teammate runs: layersched team join {invite}"

    login(capsys, challenge, "bob")
    assert run(capsys, "team", "join", invite)[:2] == (0, "joined team ants: alice, bob (2 of at most 3)\n")
    code, _, err = run(capsys, "team", "join", invite)
    assert code == 1 and error_line(err) == "error: bob is already in team 'ants'"
    code, out, _ = run(capsys, "team", "show", "--json")
    assert json.loads(out)["members"] == ["alice", "bob"]

    # One quota of 1 a day in final for the team: bob's upload is the team's, alice's is then refused.
    code, out, err = run(capsys, "submit", str(policy_file), "--phase", "final", "--poll", "0.1")
    assert code == 0, err
    login(capsys, challenge, "alice")
    code, _, err = run(capsys, "submit", str(policy_file), "--phase", "final", "--no-wait")
    assert code == 1
    assert error_line(err) == (
        "error: daily quota of 1 submissions to phase 'final' used (1 today by team 'ants'); it resets at 00:00 UTC"
    )
    # alice reads bob's submission, as a member does.
    code, out, err = run(capsys, "status", "1")
    assert code == 0, err
    # The board has one row for the team, named with its members.
    code, out, _ = run(capsys, "leaderboard", "--phase", "final")
    assert out.splitlines()[2].split()[:4] == ["1", "ants", "(alice,", "bob)"]

    # carol, alone, is refused the used code and cannot see the team's submission.
    login(capsys, challenge, "carol")
    code, _, err = run(capsys, "team", "join", invite)
    assert code == 1 and error_line(err).startswith("error: this invite code was used already, by bob at ")
    code, _, err = run(capsys, "status", "1")
    assert code == 1 and error_line(err) == "error: submission 1 does not exist"
    code, _, err = run(capsys, "team", "leave")
    assert code == 1 and error_line(err) == "error: carol is in no team"
    code, out, _ = run(capsys, "team", "list")
    assert out.splitlines()[1].split() == ["ants", "alice,", "bob", "2/3"]

    login(capsys, challenge, "bob")
    assert run(capsys, "team", "leave")[:2] == (0, "left team ants; your submissions count for you alone again\n")
    code, out, _ = run(capsys, "leaderboard", "--phase", "final")
    assert out.splitlines()[2].split()[:2] == ["1", "bob"]


def test_an_organiser_assigns_and_removes_members(capsys: pytest.CaptureFixture[str], challenge: LiveServer) -> None:
    login(capsys, challenge, "olga")
    assert run(capsys, "admin", "team", "create", "owls")[:2] == (0, "created team owls: no members (0 of at most 3)\n")
    assert run(capsys, "admin", "team", "assign", "owls", "carol")[:2] == (
        0,
        "assigned carol: team owls: carol (1 of at most 3)\n",
    )
    code, _, err = run(capsys, "admin", "team", "assign", "owls", "olga")
    assert code == 1
    assert error_line(err) == "error: olga is an organiser: organisers do not compete, so they are in no team"
    code, _, err = run(capsys, "admin", "team", "assign", "elks", "carol")
    assert code == 1 and error_line(err) == "error: team 'elks' does not exist"
    assert run(capsys, "admin", "team", "remove", "owls", "carol")[:2] == (
        0,
        "removed carol: team owls: no members (0 of at most 3)\n",
    )
    code, out, _ = run(capsys, "admin", "team", "list", "--json")
    assert [(t["name"], t["members"]) for t in json.loads(out)] == [("owls", [])]
    code, out, _ = run(capsys, "admin", "audit-log")
    assert "remove_from_team" in out and "assign_team" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("team", "create", " ants"), "is not a team name"),
        (("team", "create", "a  b"), "is not a team name"),
        (("team", "join"), "the following arguments are required: code"),
        (("admin", "team", "assign", "owls"), "the following arguments are required: user"),
    ],
)
def test_bad_arguments_are_refused_before_any_request(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run(capsys, *args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_code_that_is_not_one_is_refused(capsys: pytest.CaptureFixture[str], challenge: LiveServer) -> None:
    login(capsys, challenge, "carol")
    code, _, err = run(capsys, "team", "join", "lsi_not-a-code")
    assert code == 1
    assert error_line(err) == "error: this invite code is not one the server made: check that it was copied whole"
    code, _, err = run(capsys, "team", "show")
    assert code == 1
    assert error_line(err) == (
        "error: carol is in no team: create one (layersched team create NAME) or join one with a code"
    )


def test_the_team_list_is_paged(capsys: pytest.CaptureFixture[str], challenge: LiveServer) -> None:
    login(capsys, challenge, "olga")
    for name in ("owls", "elks", "emus"):
        assert run(capsys, "admin", "team", "create", name)[0] == 0
    code, out, err = run(capsys, "admin", "team", "list", "--limit", "2")
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == ["team", "owls", "elks", "(teams"]
    assert out.splitlines()[-1] == "(teams 1-2 of 3; --offset N for more)"
    code, out, _ = run(capsys, "team", "list", "--offset", "2", "--json")
    assert [t["name"] for t in json.loads(out)] == ["emus"]


def test_a_team_named_after_its_founder_who_left_says_so(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer
) -> None:
    """Review of issue 30, item 6: the server renames the team; the CLI tells the one who left and those who stay."""
    login(capsys, live_server, "alice")
    assert run(capsys, "team", "create", "alice")[:2] == (0, "team alice: alice (1 of at most 3)\n")
    invite = _invite_code(run(capsys, "team", "invite")[1])
    login(capsys, live_server, "bob")
    assert run(capsys, "team", "join", invite)[0] == 0
    login(capsys, live_server, "alice")
    assert run(capsys, "team", "leave")[:2] == (
        0,
        "left team team-1 (named alice until that member left it); your submissions count for you alone again\n",
    )
    login(capsys, live_server, "bob")
    assert run(capsys, "team", "show")[:2] == (
        0,
        "team team-1 (named alice until that member left it): bob (1 of at most 3)\n",
    )
