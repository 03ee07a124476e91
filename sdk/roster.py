"""Reading a roster file for ``layersched admin user import``: a CSV with a header row, columns ``name`` and
``email`` and optionally ``team`` and ``role``, one user a line. Errors name the line and the column; the values
themselves are checked by the server, whose messages name the line too."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from layersched.sdk.errors import LayerschedError

REQUIRED, OPTIONAL = ("name", "email"), ("team", "role")
MAX_LINES = 5000  # the server's limit of one import


def read_roster(path: Path) -> list[dict[str, Any]]:
    """The roster's rows as the import route takes them (``line``, ``name``, ``email``, ``team``, ``role``)."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's UTF-8 export starts with a BOM
    except UnicodeDecodeError as exc:
        raise LayerschedError(f"{path}: not UTF-8 text (byte {exc.start}); export the roster as CSV UTF-8") from None
    reader = csv.reader(text.splitlines(keepends=True), strict=True)
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        raise LayerschedError(f"{path}: the file is empty; it needs a header line: name,email[,team][,role]") from None
    except csv.Error as exc:
        raise LayerschedError(f"{path}, line 1: {exc}") from None
    unknown = [h for h in header if h not in REQUIRED + OPTIONAL]
    if unknown:
        raise LayerschedError(
            f"{path}, line 1: unknown column {unknown[0]!r}; the columns are name, email and optionally team, role"
        )
    missing = [h for h in REQUIRED if h not in header]
    if missing:
        raise LayerschedError(f"{path}, line 1: no column {missing[0]!r} (the header must name name and email)")
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise LayerschedError(f"{path}, line 1: the column {repeated[0]!r} is named twice")
    rows: list[dict[str, Any]] = []
    try:
        for cells in reader:
            number = reader.line_num
            if not any(c.strip() for c in cells):
                continue  # blank lines (a trailing one, a spacer) carry no user
            if len(cells) != len(header):
                raise LayerschedError(
                    f"{path}, line {number}: {len(cells)} cells where the header has {len(header)} columns"
                )
            values = dict(zip(header, (c.strip() for c in cells), strict=True))
            rows.append(
                {
                    "line": number,
                    "name": values["name"],
                    "email": values["email"],
                    "team": values.get("team") or None,
                    "role": values.get("role") or "participant",
                }
            )
            if len(rows) > MAX_LINES:
                raise LayerschedError(f"{path}: more than {MAX_LINES} users; split the roster into several files")
    except csv.Error as exc:
        raise LayerschedError(f"{path}, line {reader.line_num}: {exc}") from None
    return rows
