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
    """The phases as ``layersched phases`` and ``layersched admin phase list`` print them; asked with a token, the
    quota column says what the reader (their team) used of it today."""
    used = any(p.submissions_today is not None for p in phases)
    rows = [
        [
            p.name,
            p.title,
            p.track,
            p.evalset,
            p.opens_at[:16].replace("T", " "),
            (p.closes_at or "")[:16].replace("T", " ") or "-",
            f"{p.submissions_today}/{p.daily_quota}" if used else str(p.daily_quota),
            p.status,
            "" if p.visibility == "public" else "board: organisers only",
        ]
        for p in phases
    ]
    quota = "today/quota" if used else "quota/day"
    headers = ["phase", "title", "track", "set", "opens (UTC)", "closes (UTC)", quota, "now", ""]
    return text_table(headers, rows) if rows else "(no phases yet)"


def quota_today(phases: list[Any]) -> str:
    """``today: dev 1/10, final 0/2`` over the open phases (what ``login`` prints), or that none is open."""
    open_now = [p for p in phases if p.open]
    if not open_now:
        return "no phase is open now"
    return "today: " + ", ".join(
        f"{p.name} {p.submissions_today if p.submissions_today is not None else '?'}/{p.daily_quota}" for p in open_now
    )
