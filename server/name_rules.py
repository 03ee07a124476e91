"""The rules names follow: visible text only, and for participants' and teams' names a plain pattern and a length.

A name (a submission's, a team's, a user's, a phase's title) is shown to other people: on boards, in pages and in
their terminals. A character that is not visible text there can act on the reader's screen instead of being read:
terminal controls (ESC sequences erase rows, forge rows, set a window's title), line breaks, bidi overrides and
isolates (U+202A-U+202E, U+2066-U+2069, which reorder what follows), zero-width and other format characters (two
names that look alike), private-use and unassigned code points (whatever a font or a later Unicode makes of them).
Names are refused at input when they hold one (``first_invisible``); free text (descriptions, messages, a policy's
output) is kept as written and escaped where the CLI prints it (``layersched.sdk.terminal_text``).
"""

from __future__ import annotations

import re
import unicodedata

from layersched.server.models import NAME_LENGTH

# Names shown on the boards as a competitor's: a participant's and a team's follow one rule (ASCII words between
# single spaces), so that two of them that look alike are alike (storage.names compares them case-insensitively).
DISPLAY_NAME = r"^[A-Za-z0-9_.@+-]+( [A-Za-z0-9_.@+-]+)*$"

# Unicode's general categories of what is not visible text: controls (Cc: C0, DEL, C1), format characters (Cf:
# bidi controls, zero-width joiners and spaces, the BOM, soft hyphen, tags), surrogates (Cs), private use (Co),
# unassigned (Cn), line and paragraph separators (Zl, Zp). Spaces (Zs) other than U+0020 look like it and are not it.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

# Names of the characters the Unicode database names only by their alias, for the messages.
_CONTROL_NAMES = {
    0x00: "NULL",
    0x07: "BELL",
    0x08: "BACKSPACE",
    0x09: "TAB",
    0x0A: "LINE FEED",
    0x0D: "CARRIAGE RETURN",
    0x1B: "ESCAPE",
    0x7F: "DELETE",
    0x9B: "CONTROL SEQUENCE INTRODUCER",
}


def _is_invisible(char: str) -> bool:
    category = unicodedata.category(char)
    return category in _INVISIBLE_CATEGORIES or (category == "Zs" and char != " ")


def describe(char: str) -> str:
    """``U+001B (ESCAPE)``: a character by code point and name."""
    name = _CONTROL_NAMES.get(ord(char)) or unicodedata.name(char, "") or f"category {unicodedata.category(char)}"
    return f"U+{ord(char):04X} ({name})"


def first_invisible(text: str) -> tuple[int, str] | None:
    """The position and character of the first character of ``text`` that is not visible text, or None."""
    for position, char in enumerate(text):
        if _is_invisible(char):
            return position, char
    return None


def visible_name(value: object) -> object:
    """A pydantic validator for a name (run before its length and pattern): ``value`` unchanged, or ValueError
    naming the first character that is not visible text by its code point."""
    if isinstance(value, str):
        found = first_invisible(value)
        if found is not None:
            position, char = found
            raise ValueError(
                f"character {position + 1} is {describe(char)}, which is not visible text: a name may hold "
                "letters, digits, punctuation, symbols and plain spaces, no controls, line breaks, bidi or "
                "zero-width characters"
            )
    return value


def display_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a participant's or a team's name, or None: the request schemas' rule, for the callers
    that do not go through them (``layersched admin user add --bootstrap`` writes to the database itself)."""
    found = first_invisible(name)
    if found is not None:
        return f"character {found[0] + 1} of the name is {describe(found[1])}, which is not visible text"
    if not 1 <= len(name) <= NAME_LENGTH:
        return f"a name has 1 to {NAME_LENGTH} characters, got {len(name)} (at most {NAME_LENGTH} characters)"
    if re.fullmatch(DISPLAY_NAME, name) is None:
        return f"{name!r} is not a name: letters, digits and _ . @ + - in words separated by single spaces"
    return None
