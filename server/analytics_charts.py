"""The analytics page's SVG charts (no script, hover text from ``<title>``, as the board's chart): submissions per
day stacked by phase, and each phase's best public score over time."""

from __future__ import annotations

from html import escape

from layersched.server.charts import nice_ticks

PALETTE = ("#1f5fa8", "#d9822b", "#3a8f3a", "#a83232", "#7a4fa8", "#4f9fa8", "#a8a04f", "#666666")
WIDTH, HEIGHT, LEFT, TOP, BOTTOM, RIGHT = 760, 260, 50, 30, 46, 150


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _frame(kind: str, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{kind}" role="img" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" aria-label="{escape(title)}">',
        f'<text x="{LEFT}" y="16" class="chart-title">{escape(title)}</text>',
    ]


def _legend(phases: list[str]) -> list[str]:
    parts = []
    for i, phase in enumerate(phases):
        y = TOP + 16 * i
        parts.append(
            f'<rect x="{WIDTH - RIGHT + 14}" y="{y}" width="10" height="10" fill="{colour(i)}" />'
            f'<text class="legend" x="{WIDTH - RIGHT + 30}" y="{y + 9}">{escape(phase)}</text>'
        )
    return parts


def _day_axis(days: list[str], x_of: list[float], bottom: float) -> list[str]:
    every = max(1, len(days) // 7)
    return [
        f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{escape(day[5:])}</text>'
        for i, (day, x) in enumerate(zip(days, x_of, strict=True))
        if i % every == 0 or i == len(days) - 1
    ]


def submissions_chart(days: list[str], phases: list[str], counts: dict[str, dict[str, int]]) -> str:
    """Bars of the submissions made each day, one segment per phase."""
    parts = _frame("submissions-chart", "Submissions per day (UTC)")
    plot_w, bottom = WIDTH - LEFT - RIGHT, HEIGHT - BOTTOM
    top_count = max([sum(counts.get(d, {}).values()) for d in days] + [1])
    ticks = [t for t in nice_ticks(0, top_count, 5) if t == int(t)]
    step = plot_w / len(days)
    for tick in ticks:
        y = bottom - tick / top_count * (bottom - TOP)
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" />'
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{int(tick)}</text>'
        )
    for i, day in enumerate(days):
        base = float(bottom)
        for j, phase in enumerate(phases):
            count = counts.get(day, {}).get(phase, 0)
            if not count:
                continue
            height = count / top_count * (bottom - TOP)
            base -= height
            parts.append(
                f'<rect class="bar" x="{LEFT + i * step + step * 0.15:.1f}" y="{base:.1f}" width="{step * 0.7:.1f}" '
                f'height="{height:.1f}" fill="{colour(j)}"><title>{escape(f"{day} {phase}: {count}")}</title></rect>'
            )
    parts += _day_axis(days, [LEFT + (i + 0.5) * step for i in range(len(days))], bottom)
    parts += _legend(phases)
    parts.append("</svg>")
    return "".join(parts)


def best_chart(days: list[str], phases: list[str], best: dict[str, list[tuple[str, float | None]]]) -> str:
    """Each phase's best public score made by each day (a ratio: lower is better; 1 is the reference baseline)."""
    parts = _frame("best-chart", "Best public score by day (lower is better)")
    values = [v for series in best.values() for _d, v in series if v is not None]
    if not values:
        parts.append(f'<text x="{LEFT}" y="{TOP + 20}" class="empty">No scored submissions yet.</text></svg>')
        return "".join(parts)
    low, high = min([*values, 1.0]), max([*values, 1.0])
    pad = (high - low) * 0.1 or 0.05
    low, high = low - pad, high + pad
    plot_w, bottom = WIDTH - LEFT - RIGHT, HEIGHT - BOTTOM
    step = plot_w / max(len(days) - 1, 1)

    def y(value: float) -> float:
        return bottom - (value - low) / (high - low) * (bottom - TOP)

    for tick in nice_ticks(low, high, 5):
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y(tick):.1f}" x2="{LEFT + plot_w}" y2="{y(tick):.1f}" />'
            f'<text class="tick" x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
    parts.append(f'<line class="reference" x1="{LEFT}" y1="{y(1.0):.1f}" x2="{LEFT + plot_w}" y2="{y(1.0):.1f}" />')
    for j, phase in enumerate(phases):
        points = [(LEFT + i * step, y(v), day, v) for i, (day, v) in enumerate(best.get(phase, [])) if v is not None]
        if not points:
            continue
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _d, _v in points)
        parts.append(f'<polyline class="best" points="{path}" fill="none" stroke="{colour(j)}" stroke-width="2" />')
        for px, py, day, value in points:
            tip = escape(f"{phase} {day}: {value:.4f}")
            parts.append(
                f'<circle class="best-point" cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour(j)}">'
                f"<title>{tip}</title></circle>"
            )
    parts += _day_axis(days, [LEFT + i * step for i in range(len(days))], bottom)
    parts += _legend(phases)
    parts.append("</svg>")
    return "".join(parts)
