"""Text from the server, made safe to print on a terminal.

Names, descriptions, messages and a policy's output are chosen by participants, and the CLI prints them on other
people's terminals (a board, a teammate's ``status`` and ``logs``). A character that is not visible text would act
there instead of being read: an escape sequence erases or forges rows and sets the window's title, a carriage
return overwrites a line, a bidi override reorders what follows it. ``terminal_text`` shows each such character as
its Python escape (``\\x1b``, ``\\u202e``), so that it is seen and does nothing.

It is applied in one place: where the client turns the server's JSON into the SDK's values (``api.decoding``) and
its error bodies into errors (``api.transport``), while ``for_terminal()`` is on, which the CLI's ``main`` turns on
for the whole command. Every string of a response is then terminal text, whichever command prints it, including
text stored before the server refused such names, and ``--json`` prints it as shown. A script that uses ``Client``
itself gets the server's text unchanged.

A field declared ``Multiline`` (a policy's output, a message, a description) keeps its line breaks and tabs; every
other string is one line, so a line break in a name is shown as ``\\n`` and cannot forge a row of a table. Where
the CLI prints a multiline text, every line of it after the first begins with ``CONTINUATION`` (``continued``, or
``quoted`` for a block of its own): a description holding ``"\\nerror: your submission was disqualified"`` then
prints that line as ``  | error: ...``, part of the description, not as a line of the CLI's own.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated

MULTILINE = "layersched.multiline"
# A response field whose text may run over several lines: line breaks and tabs are printed as they are.
Multiline = Annotated[str, MULTILINE]

# Not visible text: controls (C0 with ESC, CR and LF, DEL, C1 with CSI), format characters (bidi overrides and
# isolates, zero-width characters, the BOM, tags), surrogates, private-use and unassigned code points, line and
# paragraph separators. The server refuses them in names (server/name_rules.py); here they are made visible.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_KEPT_IN_MULTILINE = frozenset("\n\t")

# The mark of a line that continues a participant's multiline text. ASCII, as everything else the CLI prints itself
# (a Windows console's code page may have no box-drawing bar); no line of the CLI's own begins with it.
CONTINUATION = "  | "

_active: ContextVar[bool] = ContextVar("layersched_terminal_text", default=False)


_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def terminal_text(text: str, *, multiline: bool = False) -> str:
    """``text`` with every character that is not visible text shown as its escape; ``multiline`` keeps line
    breaks and tabs. Text with none is returned as it is."""
    if text.isprintable():  # the common case, in C: no control, format, separator (but space) or unassigned one
        return text
    return "".join(
        _escape(char)
        if unicodedata.category(char) in _INVISIBLE and not (multiline and char in _KEPT_IN_MULTILINE)
        else char
        for char in text
    )


def shown(text: str, *, multiline: bool = False) -> str:
    """``text`` as the SDK hands it on: ``terminal_text`` while ``for_terminal()`` is on, else unchanged."""
    return terminal_text(text, multiline=multiline) if _active.get() else text


@contextmanager
def for_terminal() -> Iterator[None]:
    """While inside, every text the client decodes from the server is terminal text (``shown``)."""
    token = _active.set(True)
    try:
        yield
    finally:
        _active.reset(token)


def continued(text: str) -> str:
    """Multiline text to print after the CLI's own words on a line: its first line as it is, every later line
    under ``CONTINUATION``, so that none can pass for a line the CLI printed."""
    return text.replace("\n", "\n" + CONTINUATION)


def quoted(text: str) -> str:
    """Multiline text printed as a block of its own (a policy's output): every line under ``CONTINUATION``."""
    return CONTINUATION + continued(text)
