"""``name_rules``: a name in which Unicode is allowed shows as itself (issue 30 review, item 4): no character that
draws as blank or as nothing, no combining mark first, at least one visible character."""

from __future__ import annotations

import unicodedata

import pytest

from layersched.server.name_rules import BLANK_OR_IGNORABLE, is_blank_or_ignorable, name_problem

# Names that look empty, or like another, on a board; each refused naming the problem.
BLANK = {
    "hangul-filler": ("\u3164", "character 1 is U+3164 (HANGUL FILLER), which shows as blank or as nothing"),
    "hangul-fillers-between": ("a\u3164\u3164b", "character 2 is U+3164 (HANGUL FILLER), which shows as blank"),
    "choseong-filler": ("\u115f", "character 1 is U+115F (HANGUL CHOSEONG FILLER), which shows as blank"),
    "jungseong-filler": ("\u1160x", "character 1 is U+1160 (HANGUL JUNGSEONG FILLER), which shows as blank"),
    "halfwidth-filler": ("\uffa0", "character 1 is U+FFA0 (HALFWIDTH HANGUL FILLER), which shows as blank"),
    "braille-blank": ("\u2800\u2800", "character 1 is U+2800 (BRAILLE PATTERN BLANK), which shows as blank"),
    "null-notehead": ("\U0001d159", "character 1 is U+1D159 (MUSICAL SYMBOL NULL NOTEHEAD), which shows as blank"),
    "grapheme-joiner": ("a\u034fb", "character 2 is U+034F (COMBINING GRAPHEME JOINER), which shows as blank"),
    "variation-selector": ("alice\ufe0f", "character 6 is U+FE0F (VARIATION SELECTOR-16), which shows as blank"),
    "variation-selector-17": ("x\U000e0100", "character 2 is U+E0100 (VARIATION SELECTOR-17), which shows as blank"),
    "khmer-inherent": ("\u17b4", "character 1 is U+17B4 (KHMER VOWEL INHERENT AQ), which shows as blank"),
    "mongolian-fvs": ("a\u180bb", "character 2 is U+180B (MONGOLIAN FREE VARIATION SELECTOR ONE), which shows"),
    "spaces": ("   ", "the name has 3 spaces and nothing else: a name must hold at least one visible character"),
    "one-space": (" ", "the name has 1 spaces and nothing else: a name must hold at least one visible character"),
    "combining-acute": ("\u0301alice", "character 1 is U+0301 (COMBINING ACUTE ACCENT), a combining mark, which"),
    "combining-enclosing": ("\u20ddx", "character 1 is U+20DD (COMBINING ENCLOSING CIRCLE), a combining mark"),
    "spacing-mark": ("\u0903a", "character 1 is U+0903 (DEVANAGARI SIGN VISARGA), a combining mark"),
    # What the first rule already refused keeps its message: the category's, by code point.
    "other-space": ("\u2003", "character 1 is U+2003 (EM SPACE), which is not visible text"),
    "zero-width": ("\u200b", "character 1 is U+200B (ZERO WIDTH SPACE), which is not visible text"),
}


@pytest.mark.parametrize("name,message", BLANK.values(), ids=BLANK.keys())
def test_a_name_that_does_not_show_as_itself_is_refused_naming_why(name: str, message: str) -> None:
    problem = name_problem(name)
    assert problem is not None and problem.startswith(message), problem


SHOWN = {
    "accented": "première",
    "decomposed-accent": "pre\u0301mie\u0300re",  # a combining mark after its letter draws on that letter
    "devanagari": "\u0928\u092e\u0938\u094d\u0924\u0947",  # नमस्ते: virama and vowel signs inside the word
    "cjk": "数据 policy",
    "emoji": "🦉 owl",
    "inner-spaces": "a  b ",
    "empty": "",  # left to the field's length rule: a phase may have no title
}


@pytest.mark.parametrize("name", SHOWN.values(), ids=SHOWN.keys())
def test_a_name_that_shows_as_itself_is_accepted(name: str) -> None:
    assert name_problem(name) is None


def test_every_default_ignorable_code_point_is_refused() -> None:
    """Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties 15.1), written out here as the standard lists
    it, is inside the rule's explicit list."""
    default_ignorable = [
        (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
        (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
        (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
    ]  # fmt: skip
    missing = [
        f"U+{code:04X}"
        for low, high in default_ignorable
        for code in range(low, high + 1)
        if not is_blank_or_ignorable(chr(code))
    ]
    assert missing == []
    for low, high in BLANK_OR_IGNORABLE:
        for code in range(low, high + 1):
            assert name_problem(f"a{chr(code)}b") is not None, f"U+{code:04X}"


def test_no_visible_letter_of_a_common_script_is_taken_for_blank() -> None:
    """The explicit list holds only what draws as nothing: every letter and digit of the Basic Multilingual Plane
    outside it is accepted (a list that grew too wide would refuse real names)."""
    wrongly = [
        f"U+{code:04X}"
        for code in range(0x20, 0x10000)
        if unicodedata.category(chr(code))[0] in "LN" and is_blank_or_ignorable(chr(code))
    ]
    assert wrongly == ["U+115F", "U+1160", "U+3164", "U+FFA0"]  # the Hangul fillers: letters drawn blank
