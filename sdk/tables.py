"""The plain-text tables the CLI prints (submissions, boards, phases)."""

from __future__ import annotations

from typing import Any


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned columns as wide as their widest cell, two spaces apart, no trailing blanks."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def phases_table(phases: list[Any]) -> str:
    """The phases as ``layersched phases`` and ``layersched admin phase list`` print them."""
    rows = [
        [
            p.name,
            p.title,
            p.track,
            p.evalset,
            p.opens_at[:16].replace("T", " "),
            (p.closes_at or "")[:16].replace("T", " ") or "-",
            str(p.daily_quota),
            "open" if p.open else "closed",
            "" if p.visibility == "public" else "board: organisers only",
        ]
        for p in phases
    ]
    headers = ["phase", "title", "track", "set", "opens (UTC)", "closes (UTC)", "quota/day", "now", ""]
    return text_table(headers, rows) if rows else "(no phases yet)"
