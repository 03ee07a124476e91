"""The rules names follow: visible text only, and for participants' and teams' names a plain pattern and a length.

A name (a submission's, a team's, a user's, a phase's title) is shown to other people: on boards, in pages and in
their terminals. A character that is not visible text there can act on the reader's screen instead of being read:
terminal controls (ESC sequences erase rows, forge rows, set a window's title), line breaks, bidi overrides and
isolates (U+202A-U+202E, U+2066-U+2069, which reorder what follows), zero-width and other format characters (two
names that look alike), private-use and unassigned code points (whatever a font or a later Unicode makes of them).
Names are refused at input when they hold one (``first_invisible``); free text (descriptions, messages, a policy's
output) is kept as written and escaped where the CLI prints it (``layersched.sdk.terminal_text``).

A name in which Unicode is allowed (a submission's, a phase's title) must also show as something: it holds no
character that draws as blank or as nothing (``BLANK_OR_IGNORABLE``: a name of Hangul fillers or Braille blanks is
an empty-looking cell on the board), does not start with a combining mark (which draws over the character before
it: the previous column of a table), and has a character other than spaces (``name_problem``).
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


# Code points that draw as nothing or as blank space although their category is a letter, a mark or a symbol, so
# the categories above let them through: a name made of them is an empty-looking cell on a board, and one holding
# them looks like another name. The first ranges are Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties:
# what a renderer shows as nothing when it has no glyph), all of them, so that the rule does not depend on this
# Python's Unicode version for the ones whose category is Cf or Cn; the last are blank glyphs that are not.
BLANK_OR_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # SOFT HYPHEN
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER (Mn)
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x115F, 0x1160),  # HANGUL CHOSEONG and JUNGSEONG FILLER (Lo): blank letters
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ, AA (Mn)
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    (0x200B, 0x200F),  # zero-width space, joiners, direction marks
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated format characters
    (0x3164, 0x3164),  # HANGUL FILLER (Lo): a blank letter
    (0xFE00, 0xFE0F),  # VARIATION SELECTORS 1-16 (Mn): "x" and "x\ufe0f" look alike; write an emoji without VS16
    (0xFEFF, 0xFEFF),  # ZERO WIDTH NO-BREAK SPACE (the BOM)
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER (Lo)
    (0xFFF0, 0xFFF8),  # unassigned, reserved as ignorable
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT CONTROLS
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN/END BEAM, TIE, SLUR, PHRASE (format characters)
    (0xE0000, 0xE0FFF),  # tags and VARIATION SELECTORS 17-256 (Mn)
    # Not default-ignorable, but drawn as blank space:
    (0x2800, 0x2800),  # BRAILLE PATTERN BLANK (So)
    (0x16FE4, 0x16FE4),  # KHITAN SMALL SCRIPT FILLER (Mn)
    (0x1D159, 0x1D159),  # MUSICAL SYMBOL NULL NOTEHEAD (So)
)


def is_blank_or_ignorable(char: str) -> bool:
    """Whether ``char`` is one of ``BLANK_OR_IGNORABLE``."""
    code = ord(char)
    return any(low <= code <= high for low, high in BLANK_OR_IGNORABLE)


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


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a name in which Unicode is allowed, or None: the first character that is not visible
    text, or that shows as blank or nothing, by its code point; a combining mark first; no character but spaces.
    The empty name is left to the length rule of its field (a phase's title may be empty: no title)."""
    found = first_invisible(name)
    if found is not None:
        position, char = found
        return (
            f"character {position + 1} is {describe(char)}, which is not visible text: a name may hold "
            "letters, digits, punctuation, symbols and plain spaces, no controls, line breaks, bidi or "
            "zero-width characters"
        )
    blank = next(((i, c) for i, c in enumerate(name) if is_blank_or_ignorable(c)), None)
    if blank is not None:
        position, char = blank
        return (
            f"character {position + 1} is {describe(char)}, which shows as blank or as nothing: a name may not "
            "hold fillers, variation selectors, blank symbols or other default-ignorable characters"
        )
    if name and unicodedata.category(name[0]).startswith("M"):
        return (
            f"character 1 is {describe(name[0])}, a combining mark, which would draw over whatever is printed "
            "before the name: a name may not start with one"
        )
    if name and not name.strip(" "):
        return f"the name has {len(name)} spaces and nothing else: a name must hold at least one visible character"
    return None


def visible_name(value: object) -> object:
    """A pydantic validator for a name (run before its length and pattern): ``value`` unchanged, or ValueError
    saying why it does not show as itself (``name_problem``)."""
    if isinstance(value, str):
        problem = name_problem(value)
        if problem is not None:
            raise ValueError(problem)
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
