"""Text of others' choosing made safe for where the CLI puts it: a terminal (no control characters, so no escape
sequence rewrites the screen) and a spreadsheet (no cell a spreadsheet would run as a formula)."""

from __future__ import annotations

import unicodedata

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def terminal_safe(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1: ESC starts the terminal's sequences) shown as ``\\xNN``."""
    return "".join(f"\\x{ord(c):02x}" if unicodedata.category(c) == "Cc" else c for c in text)


def spreadsheet_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: one starting like a formula (= + - @, tab, CR) gets a leading ``'``
    (OWASP's guard against CSV injection)."""
    return f"'{text}" if text.startswith(_FORMULA_START) else text
