"""Writing exports as they are read: CSV (every text cell guarded against formula injection) or a JSON array, one
row at a time, and a zip of files, one chunk at a time. Nothing here holds more than a row or a chunk.

Participant-chosen text (names, submission names, a policy's messages) reaches spreadsheets through these files: a
cell that starts with ``=``, ``+``, ``-``, ``@`` (or a tab or carriage return) would be run as a formula, so it gets
a leading ``'`` (OWASP's guard); numbers are written as numbers and never changed.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, cast

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CHUNK = 1 << 20


def spreadsheet_text(text: str) -> str:
    """A text cell a spreadsheet shows as text, never runs."""
    return f"'{text}" if text.startswith(_FORMULA_START) else text


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).isoformat()
    if isinstance(value, list | tuple):
        return spreadsheet_text(";".join(str(v) for v in value))
    return spreadsheet_text(str(value))


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).isoformat()
    return value


def csv_lines(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """The header, then one CSV line per row (the row's values for ``columns``), each as UTF-8 bytes."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")

    def line(cells: Iterable[str]) -> bytes:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(cells)
        return buffer.getvalue().encode()

    yield line(columns)
    for row in rows:
        yield line(_cell(row.get(column)) for column in columns)


def json_lines(rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """A JSON array written one element per line (the whole output is one JSON document)."""
    yield b"["
    first = True
    for row in rows:
        text = json.dumps({k: _json_value(v) for k, v in row.items()}, ensure_ascii=False, allow_nan=False)
        yield (b"\n" if first else b",\n") + text.encode()
        first = False
    yield b"\n]\n"


def chunked(lines: Iterable[bytes], size: int = 1 << 16) -> Iterator[bytes]:
    """``lines`` joined into chunks of about ``size`` bytes: a response streamed line by line spent more time handing
    each line to the server's event loop (a thread hop each) than making it."""
    parts: list[bytes] = []
    held = 0
    for line in lines:
        parts.append(line)
        held += len(line)
        if held >= size:
            yield b"".join(parts)
            parts, held = [], 0
    if parts:
        yield b"".join(parts)


class _Spool:
    """Where ``zipfile`` writes: it keeps what was written until it is taken (zipfile needs no seeking to write)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._position = 0

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data, self._parts = b"".join(self._parts), []
        return data


def zip_stream(files: Iterable[tuple[str, Path | bytes]]) -> Iterator[bytes]:
    """A zip of ``(name in the zip, file on disk or bytes)``, deflated, yielded about a megabyte at a time."""
    spool = _Spool()
    with zipfile.ZipFile(cast(IO[bytes], spool), mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, source in files:
            with archive.open(name, mode="w", force_zip64=True) as member:
                if isinstance(source, bytes):
                    member.write(source)
                else:
                    with source.open("rb") as handle:
                        while chunk := handle.read(CHUNK):
                            member.write(chunk)
                            if written := spool.take():
                                yield written
            if written := spool.take():
                yield written
    yield spool.take()  # the central directory
