"""``terminal_text``: what the CLI makes of the server's text (issue 30 item 1), and that only the CLI does."""

from __future__ import annotations

import pytest

from layersched.sdk.api.decoding import decode
from layersched.sdk.api.responses import EpisodeLog, LeaderboardRow
from layersched.sdk.terminal_text import continued, for_terminal, quoted, shown, terminal_text


@pytest.mark.parametrize(
    "text,expected",
    [
        ("plain name", "plain name"),
        ("première 数据 🦉", "première 数据 🦉"),  # visible text, whatever its script, is left alone
        ("a\x1b[2Kb", "a\\x1b[2Kb"),
        ("a\rb\nc\td", "a\\rb\\nc\\td"),
        ("\x9b2J\x7f\x07", "\\x9b2J\\x7f\\x07"),
        ("a\u202eb\u2066c\u2069", "a\\u202eb\\u2066c\\u2069"),
        ("\u200b\u200d\ufeff\u00ad", "\\u200b\\u200d\\ufeff\\xad"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("\ue000\U000e0041\U0010ffff", "\\ue000\\U000e0041\\U0010ffff"),
        ("a\u00a0b", "a\u00a0b"),  # a no-break space does nothing to a terminal
    ],
    ids=[
        "plain",
        "unicode",
        "csi",
        "cr-lf-tab",
        "c1-del-bel",
        "bidi",
        "zero-width",
        "separators",
        "private-tags",
        "nbsp",
    ],
)
def test_every_invisible_character_is_shown_as_its_escape(text: str, expected: str) -> None:
    assert terminal_text(text) == expected


def test_multiline_text_keeps_its_lines_and_tabs_only() -> None:
    assert terminal_text("line 1\n\tline 2\r\x1b[1A", multiline=True) == "line 1\n\tline 2\\r\\x1b[1A"


def test_only_the_cli_escapes_what_it_decodes() -> None:
    """A script using the SDK gets the server's text as it is; under ``for_terminal`` (the CLI's main) every
    string is terminal text, a multi-line field keeping its lines, dict keys too."""
    raw = {"rank": 1, "participant": "a\x1b]0;t\x07", "submission_name": "s\nFORGED", "score": 0.9, "ci_low": 0.8,
           "ci_high": 1.0, "per_scenario": {"k\u202e": 1.0}}  # fmt: skip
    log = {"scenario": "s", "episode": "e", "status": "crash", "stdout": "one\ntwo\x1b[2J"}
    assert decode(LeaderboardRow, raw, "row").participant == "a\x1b]0;t\x07"
    assert shown("a\x1b") == "a\x1b"
    with for_terminal():
        row = decode(LeaderboardRow, raw, "row")
        assert (row.participant, row.submission_name) == ("a\\x1b]0;t\\x07", "s\\nFORGED")
        assert row.per_scenario == {"k\\u202e": 1.0}
        assert decode(EpisodeLog, log, "log").stdout == "one\ntwo\\x1b[2J"
    assert decode(LeaderboardRow, raw, "row").participant == "a\x1b]0;t\x07"


def test_every_later_line_of_a_multiline_text_is_marked_as_its_own() -> None:
    """Printed after the CLI's words or as a block, a text's later lines begin with the continuation mark: a line
    ``error: ...`` inside a description cannot pass for the CLI's (issue 30 review, item 3)."""
    text = "first\nerror: your submission was disqualified\n\n  1  alice  0.99"
    assert continued(text).split("\n") == [
        "first",
        "  | error: your submission was disqualified",
        "  | ",
        "  |   1  alice  0.99",
    ]
    assert quoted(text).split("\n")[0] == "  | first"
    assert quoted(text).split("\n")[1:] == continued(text).split("\n")[1:]
    assert continued("one line") == "one line"
