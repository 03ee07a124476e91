"""Server-rendered SVG: the leaderboard's scores with their 95% intervals, and colours for per-scenario ratios.

No JavaScript: the SVG is inline in the page, hover titles come from ``<title>`` elements.
"""

from __future__ import annotations

import math
from html import escape

from layersched.server.schemas import LeaderboardRow
from layersched.sim.tracks.drawing import ratio_colour

ROW_HEIGHT = 26
LABEL_WIDTH = 230
PLOT_WIDTH = 520
TOP = 46
BOTTOM = 30
RIGHT = 20
LOG_SPAN = 3.0  # a log axis when the largest value is more than this many times the smallest
LABEL_CHAR_WIDTH = 7.5  # an upper bound of a label character's width at the chart's font size, in pixels


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    span = high - low
    raw = span / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + 1e-12:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _log_ticks(low: float, high: float) -> list[float]:
    """1, 2 and 5 times the powers of ten between ``low`` and ``high`` (both above 0), at most about 10 of them."""
    ticks = [
        round(m * 10.0**e, 10)
        for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        for m in (1, 2, 5)
        if low <= m * 10.0**e <= high
    ]
    return ticks if len(ticks) <= 10 else [t for t in ticks if math.log10(t).is_integer()]


def score_chart(rows: list[LeaderboardRow], *, reference: str, title: str | None = None) -> str:
    """An interval plot: one line per row, a dot at the score, a whisker over its 95% interval, and a dashed line at
    1, the level of ``reference`` (the board's track's reference baseline, which every score is a ratio to)."""
    title = title if title is not None else f"Score (ratio to {reference}, lower is better)"
    height = TOP + ROW_HEIGHT * max(len(rows), 1) + BOTTOM
    width = LABEL_WIDTH + PLOT_WIDTH + RIGHT
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="score-chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="{escape(title)}">',
        f'<text x="{LABEL_WIDTH}" y="16" class="chart-title">{escape(title)}</text>',
    ]
    if not rows:
        parts.append(f'<text x="{LABEL_WIDTH}" y="{TOP + 16}" class="empty">No scored submissions yet.</text></svg>')
        return "".join(parts)
    low = min(min(r.ci_low for r in rows), 1.0)
    high = max(max(r.ci_high for r in rows), 1.0)
    # Ratios that span more than 3x (a Random baseline at 4, entries near 1) read on a log axis: on a linear one the
    # entries near 1 crowd into a few pixels. A log axis also draws 0.5 and 2 equally far from 1.
    logarithmic = low > 0 and high / low > LOG_SPAN
    if logarithmic:
        low, high = math.log(low), math.log(high)
    pad = (high - low) * 0.08 or 0.05
    low, high = low - pad, high + pad

    def x(value: float) -> float:
        position = math.log(max(value, 1e-9)) if logarithmic else value
        return float(LABEL_WIDTH + (position - low) / (high - low) * PLOT_WIDTH)

    bottom = TOP + ROW_HEIGHT * len(rows)
    ticks = _log_ticks(math.exp(low), math.exp(high)) if logarithmic else nice_ticks(low, high)
    for tick in ticks:
        parts.append(
            f'<line class="grid" x1="{x(tick):.1f}" y1="{TOP - 4}" x2="{x(tick):.1f}" y2="{bottom}" />'
            f'<text class="tick" x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle">{tick:g}</text>'
        )
    label = f"{reference} = 1"
    # Near the right edge the label goes left of its line, so that it is not cut off by the chart's border.
    right_of = x(1.0) + 4 + LABEL_CHAR_WIDTH * len(label) <= width
    anchor = f'x="{x(1.0) + 4:.1f}"' if right_of else f'x="{x(1.0) - 4:.1f}" text-anchor="end"'
    parts.append(
        f'<line class="reference" x1="{x(1.0):.1f}" y1="{TOP - 8}" x2="{x(1.0):.1f}" y2="{bottom}" />'
        f'<text class="reference-label" {anchor} y="{TOP - 10}">{escape(label)}</text>'
    )
    if logarithmic:
        parts.append(f'<text class="axis-note" x="{LABEL_WIDTH + PLOT_WIDTH}" y="{bottom + 28}" text-anchor="end">'
                     "log scale</text>")  # fmt: skip
    for i, row in enumerate(rows):
        y = TOP + ROW_HEIGHT * i + ROW_HEIGHT / 2
        kind = "baseline" if row.baseline else "entry"
        label = f"{row.rank}. {row.participant}" if row.rank is not None else f"{row.participant} (baseline)"
        tip = f"{row.participant}: {row.score:.4f} [{row.ci_low:.4f}, {row.ci_high:.4f}]"
        parts.append(
            f'<g class="row {kind}"><title>{escape(tip)}</title>'
            f'<text class="label" x="{LABEL_WIDTH - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>'
            f'<line class="ci" x1="{x(row.ci_low):.1f}" y1="{y:.1f}" x2="{x(row.ci_high):.1f}" y2="{y:.1f}" />'
            f'<line class="ci-cap" x1="{x(row.ci_low):.1f}" y1="{y - 5:.1f}" x2="{x(row.ci_low):.1f}" '
            f'y2="{y + 5:.1f}" />'
            f'<line class="ci-cap" x1="{x(row.ci_high):.1f}" y1="{y - 5:.1f}" x2="{x(row.ci_high):.1f}" '
            f'y2="{y + 5:.1f}" />'
            f'<circle class="point" cx="{x(row.score):.1f}" cy="{y:.1f}" r="5" /></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def ratio_color(ratio: float | None) -> str:
    """Green below 1 (better than the reference baseline), red above, white at 1; saturating at +-30% (the schedule
    pages' colours, ``layersched.sim.tracks.drawing.ratio_colour``)."""
    return ratio_colour(ratio)
