"""No text a participant chose reaches another user's terminal raw (issue 30 item 1), from a real server on
PostgreSQL (uvicorn in a thread, the SDK tests' live server).

The review put escape sequences into a submission's name: on another student's ``layersched leaderboard`` it erased
its own row, printed a forged one and set the terminal's title. Here every participant-chosen text the CLI prints
(user, team, submission, phase and set names, descriptions, a policy's output and messages, error text, an
organiser's reason, the audit log's details, the server's own error messages quoting a name) holds every kind of
hostile character. Most are written into the database directly, as text stored before the server refused them
would be, and the rest go through the API where it still takes free text. Then the CLI's commands run, as a
teammate, another participant and an organiser would, and no character that is not visible text may appear in what
they print: each shows as its escape (``\\x1b``, ``\\u202e``), and a line break in a name cannot start a line.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from layersched.sdk.terminal_text import CONTINUATION
from tests.sdk.conftest import LiveServer, Worker, run_sql
from tests.sdk.test_cli import login, run

pytest.importorskip("fastapi", reason="needs the server extra")

# Every kind the review and the issue name: OSC (window title), CSI (erase line), CR, C1 CSI, BEL, DEL, bidi
# override and isolate, zero-width space, BOM, a tag character, and a line break that would forge a row (a name is
# one line: its break shows as \n; a message or a policy's output keeps its lines).
HOSTILE = "\x1b]0;pwned\x07\x1b[2K\r\x9b2J\u202e\u2066\u200b\ufeff\U000e0041\x7f\nFORGED"
# For texts that keep their lines (a description, messages, a policy's output): only a name could print FORGED. Their
# later lines look like the CLI's own: an error line and a board's row (each must print marked as the text's).
FORGED_LINES = ("error: your submission was disqualified", "  1  alice  0.9900")
TEXT = HOSTILE.replace("FORGED", "\n".join(FORGED_LINES))
ESCAPED = "\\x1b]0;pwned\\x07\\x1b[2K\\r\\x9b2J\\u202e\\u2066\\u200b\\ufeff\\U000e0041\\x7f"
NAMES = {
    "user": "carol" + HOSTILE,
    "team": "ants" + HOSTILE,
    "submission": "sub" + HOSTILE,
    "phase title": "Main" + HOSTILE,
    "set": "sample" + HOSTILE,
}
# What may appear raw: the layout's own line breaks and tabs.
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def raw_characters(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in _INVISIBLE and c not in "\n\t"})


@pytest.fixture
def server_settings() -> Iterator[dict[str, Any]]:
    """The live server on a fresh PostgreSQL database."""
    from tests.server.conftest import PG_URL, create_pg_database, drop_pg_database

    name = create_pg_database()
    try:
        yield {"database_url": PG_URL.format(name=name), "team_max_size": 3}
    finally:
        drop_pg_database(name)


def _invite_code(out: str) -> str:
    match = re.search(r"^(lsi_\S+)$", out, re.MULTILINE)
    assert match is not None, out
    return match.group(1)


@pytest.fixture
def hostile(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, worker_thread: Worker, policy_file: Path
) -> Any:
    """alice and bob in a team; alice's scored submission and a failed one; every text made hostile."""
    s = live_server
    login(capsys, s, "olga")
    code, out, err = run(capsys, "admin", "user", "add", "--name", "carol", "--email", "carol@example.org")
    assert code == 0, err
    login(capsys, s, "alice")
    assert run(capsys, "team", "create", "ants")[0] == 0
    code, out, _ = run(capsys, "team", "invite")
    login(capsys, s, "bob")
    assert run(capsys, "team", "join", _invite_code(out))[0] == 0
    login(capsys, s, "alice")
    # A description is free text: the API takes it as written, the CLI shows it escaped.
    code, out, err = run(capsys, "submit", str(policy_file), "--name", "ok", "-m", "desc" + TEXT, "--poll", "0.1")
    assert code == 0, err
    worker_thread.fail = True
    code, out, err = run(capsys, "submit", str(policy_file), "--name", "bad", "--poll", "0.1")
    assert code == 1, out + err
    worker_thread.fail = False
    # Stored before the fix: names the server refuses now, messages and output a policy wrote.
    run_sql(
        s,
        ("UPDATE users SET name = :v WHERE name = 'carol'", {"v": NAMES["user"]}),
        ("UPDATE teams SET name = :v WHERE name = 'ants'", {"v": NAMES["team"]}),
        ("UPDATE submissions SET name = :v WHERE name = 'ok'", {"v": NAMES["submission"]}),
        ("UPDATE phases SET title = :v", {"v": NAMES["phase title"]}),
        ("UPDATE evaluations SET public_error_message = :v, error_message = :v", {"v": "boom" + TEXT}),
        ("UPDATE episode_results SET message = :v, stdout = :v, stderr = :v", {"v": "printed" + TEXT}),
        ("UPDATE leaderboard_state SET frozen = false", {}),
    )
    login(capsys, s, "olga")
    assert run(capsys, "admin", "disqualify", "2", "--reason", "copied" + TEXT, "--yes")[0] == 0
    return s


def test_no_command_prints_a_raw_control_character(capsys: pytest.CaptureFixture[str], hostile: LiveServer) -> None:
    commands: dict[str, list[tuple[str, ...]]] = {
        "bob": [  # alice's teammate: reads her submissions, logs and errors
            ("status",),
            ("status", "1"),
            ("status", "2"),
            ("status", "1", "--json"),
            ("logs", "2"),
            ("logs", "2", "--json"),
            ("leaderboard",),
            ("leaderboard", "--json"),
            ("team", "show"),
            ("team", "show", "--json"),
            ("team", "list"),
            ("phases",),
            ("select", "1"),
            ("unselect", "1"),
        ],
        "olga": [
            ("admin", "audit-log"),
            ("admin", "audit-log", "--json"),
            ("admin", "team", "list"),
            ("admin", "phase", "list"),
            ("admin", "evaluation", "2"),
            ("admin", "evaluation", "2", "--json"),
            ("status", "2"),
            # The server's own message quotes the stored name as it is: "<name> is not in team 'owls'"
            ("admin", "team", "create", "owls"),
            ("admin", "team", "remove", "owls", NAMES["user"]),
        ],
    }
    printed: dict[tuple[str, ...], str] = {}
    for who, runs in commands.items():
        login(capsys, hostile, who)
        for args in runs:
            _code, out, err = run(capsys, *args)
            printed[args] = out + err
            assert raw_characters(out + err) == [], (who, args, out + err)
            assert not any(line.startswith("FORGED") for line in (out + err).splitlines()), (who, args, out + err)

    # Not vacuous: the hostile texts were printed, escaped.
    board = printed[("leaderboard",)]
    assert f"ants{ESCAPED}\\nFORGED" in board
    assert "sub\\x1b]0;pwned" in board
    assert "desc\\x1b]0;pwned" in printed[("status", "1")]
    assert "printed\\x1b]0;pwned" in printed[("logs", "2")]
    assert "boom\\x1b]0;pwned" in printed[("status", "2")]
    assert '"reason": "copied\\\\x1b]0;pwned' in printed[("admin", "audit-log")]  # the detail is printed as JSON
    assert "Main\\x1b]0;pwned" in printed[("phases",)]
    assert (
        f"error: carol{ESCAPED}\\nFORGED is not in team 'owls'"
        in printed[("admin", "team", "remove", "owls", NAMES["user"])]
    )
    # --json prints the text as the CLI shows it: its escapes, never the characters.
    rows = json.loads(printed[("leaderboard", "--json")])["rows"]
    assert [r["participant"] for r in rows if not r["baseline"]] == [f"ants{ESCAPED}\\nFORGED"]


def test_no_line_of_a_multiline_text_passes_for_the_clis_own(
    capsys: pytest.CaptureFixture[str], hostile: LiveServer
) -> None:
    """A description, an error message, an organiser's reason and a policy's output keep their lines (issue 30
    review, item 3): each line after a text's first prints under ``CONTINUATION``, so ``error: ...`` or a row of a
    board inside one cannot pass for a line of the CLI's own, on a teammate's or an organiser's terminal."""
    commands = {
        "bob": [("status", "1"), ("status", "2"), ("logs", "2"), ("status",)],
        "olga": [("admin", "evaluation", "2")],
    }
    marked = tuple(CONTINUATION + line for line in FORGED_LINES)
    counted: dict[tuple[str, ...], int] = {}
    for who, runs in commands.items():
        login(capsys, hostile, who)
        for args in runs:
            code, out, err = run(capsys, *args)
            assert code == 0, (args, err)
            lines = (out + err).splitlines()
            assert [line for line in lines if line.startswith(FORGED_LINES)] == [], (args, out + err)
            counted[args] = sum(line.startswith(marked) for line in lines)
    # Not vacuous: every kind of multiline text was printed, its forged lines marked.
    assert counted == {
        ("status", "1"): 2,  # the description
        ("status", "2"): 3 * 2,  # the outcome's error message and reason, the evaluation's error message
        ("logs", "2"): 2 * 2 + 2 * 3 * 2,  # the outcome's, then each episode's message, stdout and stderr
        ("status",): 0,  # a table of names: no multiline text
        ("admin", "evaluation", "2"): 2,  # the error message
    }


def test_a_refused_name_is_named_escaped(
    capsys: pytest.CaptureFixture[str], live_server: LiveServer, policy_file: Path
) -> None:
    """The server's refusal quotes the name (repr) and names the character; the CLI prints that one line."""
    login(capsys, live_server, "alice")
    code, out, err = run(capsys, "submit", str(policy_file), "--name", "x\x1b[2Ky", "--no-wait", "--skip-checks")
    assert code == 1 and raw_characters(out + err) == [], err
    assert "U+001B (ESCAPE)" in err
