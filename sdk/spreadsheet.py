"""Cells of the CSV files the CLI writes (a roster's tokens) made safe for a spreadsheet: no cell it would run as a
formula. Text for the terminal needs nothing here: the client escapes every server text it decodes for the CLI
(``terminal_text``)."""

from __future__ import annotations

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: one starting like a formula (= + - @, tab, CR) gets a leading ``'``
    (OWASP's guard against CSV injection)."""
    return f"'{text}" if text.startswith(_FORMULA_START) else text
