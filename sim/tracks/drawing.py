"""SVG drawing that every track's renderer shares: Gantt panels on a common time axis, step lines over time,
empirical CDFs and paired dot plots. Pure strings, no dependency, no script.

Each chart is one ``<svg class="sched">`` element that carries its own ``<style>`` (so a file written alone shows
the same as the page that inlines it) and hover text in ``<title>`` elements. Times map to pixels through the
root's ``data-x0`` (the pixel of time 0) and ``data-px`` (pixels per time unit), so tests read a bar's times back
from its geometry; each lane is a ``<g class="lane" data-lane="NAME">`` of the items drawn on it, each panel a
``<g class="panel" data-panel="NAME">``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

LABEL_PX = 120  # the left margin, where lanes are named
PLOT_PX = 860
RIGHT_PX = 20
ROW_PX = 10  # one sub-row of a lane
LANE_GAP_PX = 4
PANEL_HEAD_PX = 20
AXIS_PX = 30
GROUP_COLOURS = 12  # items coloured by group cycle through this many classes (g0..g11)

CSS = (
    ".sched{font:11px system-ui,sans-serif}.sched text{fill:#333}.sched .ttl{font-size:13px;font-weight:600}"
    ".sched .grid{stroke:#e8e8e8}.sched .lane-bg{fill:#fafafa}.sched .axis{stroke:#999}"
    ".sched rect{stroke:none}.sched .run{fill:#4c78a8}.sched .dl{fill:#f58518}.sched .wait{fill:#d9d9d9}"
    ".sched .q{fill:#c6dbef}.sched .res{fill:#9ecae1}.sched .hold{fill:#e45756}.sched .hit{fill:#2ca02c}"
    ".sched .mark{fill:#2ca02c;stroke:#fff;stroke-width:.5}"
    ".sched .l0{stroke:#1f5fa8;fill:none;stroke-width:1.5}.sched .l1{stroke:#d62728;fill:none;stroke-width:1.5;"
    "stroke-dasharray:5 3}.sched .l2{stroke:#2ca02c;fill:none;stroke-width:1.2}.sched .l3{stroke:#9467bd;fill:none;"
    "stroke-width:1.2;stroke-dasharray:2 2}.sched .d0{fill:#1f5fa8}.sched .d1{fill:#d62728}.sched .drop{fill:#333}"
    ".sched .area{fill:#c6dbef;stroke:#1f5fa8;stroke-width:.8}.sched .sw0{fill:#1f5fa8}.sched .sw1{fill:#d62728}"
    ".sched .sw2{fill:#2ca02c}.sched .sw3{fill:#9467bd}"
    ".sched .g0 .run{fill:#4c78a8}.sched .g1 .run{fill:#f58518}.sched .g2 .run{fill:#54a24b}"
    ".sched .g3 .run{fill:#b279a2}.sched .g4 .run{fill:#e45756}.sched .g5 .run{fill:#72b7b2}"
    ".sched .g6 .run{fill:#eeca3b}.sched .g7 .run{fill:#ff9da6}.sched .g8 .run{fill:#9d755d}"
    ".sched .g9 .run{fill:#bab0ac}.sched .g10 .run{fill:#439894}.sched .g11 .run{fill:#83bcb6}"
)
# The segment kinds a legend may name, with the words it uses.
KIND_WORDS = {
    "run": "running",
    "dl": "downloading",
    "wait": "waiting for a slot",
    "q": "queued",
    "res": "reserved, not started",
    "hold": "held back while it fitted",
    "hit": "cache hit",
    "drop": "dropped (backlog full)",
}


def fmt(value: float) -> str:
    """A coordinate or time as short text (one decimal, no trailing zero)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def nice_ticks(low: float, high: float, count: int = 8) -> list[float]:
    """Round values from ``low`` to ``high`` for an axis, about ``count`` of them."""
    if not high > low:
        return [low]
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    return [round(first + i * step, 10) for i in range(int((high - first) / step + 1e-9) + 1)]


@dataclass(frozen=True)
class TimeAxis:
    """Time ``0..end`` over the plot's width: one axis shared by every panel compared."""

    end: float
    unit: str

    @property
    def px(self) -> float:
        """Pixels per time unit."""
        return PLOT_PX / self.end if self.end > 0 else 1.0

    def x(self, t: float) -> float:
        return LABEL_PX + t * self.px


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    kind: str  # a class of CSS: run, dl, wait, q, res, hold


@dataclass(frozen=True)
class Item:
    """One task or job on one lane: its segments over time share one hover ``title``."""

    lane: int
    title: str
    segments: tuple[Segment, ...]
    row: float = 0.0  # where in the lane, in sub-rows from its top
    height: float = 1.0  # in sub-rows
    group: int | None = None  # colours its "run" segments (g0..g11): a workflow, a job


@dataclass(frozen=True)
class Mark:
    """A point event on a lane (a cache hit): a small triangle at ``time``."""

    lane: int
    time: float
    title: str
    row: float = 0.0


@dataclass(frozen=True)
class Lane:
    name: str
    rows: int = 1
    title: str = ""  # hover text of the lane's name


@dataclass
class Panel:
    """One schedule's Gantt: its lanes, items and marks."""

    name: str
    lanes: Sequence[Lane]
    items: Sequence[Item]
    marks: Sequence[Mark] = field(default_factory=tuple)


def _open(width: float, height: float, title: str, axis: TimeAxis | None = None) -> list[str]:
    scale = f' data-x0="{LABEL_PX}" data-px="{axis.px:.6g}"' if axis is not None else ""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sched" role="img" width="{fmt(width)}" '
        f'height="{fmt(height)}" viewBox="0 0 {fmt(width)} {fmt(height)}" aria-label="{escape(title)}"{scale}>',
        f"<style>{CSS}</style>",
        f'<text class="ttl" x="{LABEL_PX}" y="14">{escape(title)}</text>',
    ]


def _legend(parts: list[str], entries: Sequence[tuple[str, str]], y: float) -> None:
    """Swatches with their words in one line at ``y`` (entries: (class of CSS, words))."""
    x = float(LABEL_PX)
    for css, words in entries:
        parts.append(f'<rect class="{css}" x="{fmt(x)}" y="{fmt(y - 8)}" width="10" height="9"/>')
        parts.append(f'<text x="{fmt(x + 13)}" y="{fmt(y)}">{escape(words)}</text>')
        x += 22 + 6.2 * len(words)


def _time_axis(parts: list[str], axis: TimeAxis, top: float, bottom: float) -> None:
    for tick in nice_ticks(0.0, axis.end):
        x = fmt(axis.x(tick))
        parts.append(f'<line class="grid" x1="{x}" y1="{fmt(top)}" x2="{x}" y2="{fmt(bottom)}"/>')
        parts.append(f'<text x="{x}" y="{fmt(bottom + 13)}" text-anchor="middle">{tick:g}</text>')
    parts.append(
        f'<text x="{fmt(axis.x(axis.end))}" y="{fmt(bottom + 26)}" text-anchor="end">{escape(axis.unit)}</text>'
    )


def gantt(
    title: str,
    panels: Sequence[Panel],
    axis: TimeAxis,
    legend: Sequence[str] = (),
    *,
    row_px: int = ROW_PX,
    gap_px: int = LANE_GAP_PX,
    label_every: int = 1,
    min_lane_px: int = 0,
) -> str:
    """Panels of lanes, one above the other, on one time axis: each item's segments as bars at its lane's row.
    ``label_every``: name only every so many lanes (a lane per job is too thin for every name); ``min_lane_px``: no
    lane lower than this (thin rows of a lane with few of them, beside one with many, still show its name)."""

    def lane_px(lane: Lane) -> int:
        return max(lane.rows * row_px, min_lane_px)

    top = 22.0 + (16 if legend else 0)
    height = top + sum(PANEL_HEAD_PX + sum(lane_px(lane) + gap_px for lane in p.lanes) for p in panels)
    width = LABEL_PX + PLOT_PX + RIGHT_PX
    parts = _open(width, height + AXIS_PX, title, axis)
    if legend:
        _legend(parts, [(kind, KIND_WORDS.get(kind, kind)) for kind in legend], top - 4)
    y = top
    for panel in panels:
        parts.append(f'<g class="panel" data-panel="{escape(panel.name)}">')
        parts.append(f'<text class="ttl" x="4" y="{fmt(y + 14)}">{escape(panel.name)}</text>')
        y += PANEL_HEAD_PX
        lane_top: list[float] = []
        for lane in panel.lanes:
            lane_top.append(y)
            y += lane_px(lane) + gap_px
        by_lane: dict[int, list[str]] = {}
        for item in panel.items:
            by_lane.setdefault(item.lane, []).append(_item(item, axis, lane_top[item.lane], row_px))
        for mark in panel.marks:
            by_lane.setdefault(mark.lane, []).append(_mark(mark, axis, lane_top[mark.lane], row_px))
        for i, lane in enumerate(panel.lanes):
            h = lane_px(lane)
            label = ""
            if i % label_every == 0:
                name = (
                    escape(lane.name) if not lane.title else f"<title>{escape(lane.title)}</title>{escape(lane.name)}"
                )
                label = (
                    f'<text x="{LABEL_PX - 6}" y="{fmt(lane_top[i] + min(max(h, 8), 2 * row_px) / 2 + 4)}" '
                    f'text-anchor="end">{name}</text>'
                )
            parts.append(
                f'<g class="lane" data-lane="{escape(lane.name)}"><rect class="lane-bg" x="{LABEL_PX}" '
                f'y="{fmt(lane_top[i])}" width="{PLOT_PX}" height="{h}"/>{label}{"".join(by_lane.get(i, ()))}</g>'
            )
        parts.append("</g>")
    _time_axis(parts, axis, top, y)
    parts.append("</svg>")
    return "".join(parts)


def _item(item: Item, axis: TimeAxis, lane_top: float, row_px: int) -> str:
    y, h = fmt(lane_top + item.row * row_px), fmt(max(item.height * row_px - (1 if row_px > 4 else 0), 1))
    group = f' class="g{item.group % GROUP_COLOURS}"' if item.group is not None else ""
    # The bars' x and width with one decimal, written directly: a page's thousands of bars made fmt() (which drops
    # a ".0") a fifth of drawing it; the few bytes more are nothing beside the page.
    px, x0 = axis.px, float(LABEL_PX)
    rects = "".join(
        f'<rect class="{s.kind}" x="{x0 + s.start * px:.1f}" y="{y}" '
        f'width="{max((s.end - s.start) * px, 0.4):.1f}" height="{h}"/>'
        for s in item.segments
    )
    return f"<g{group}><title>{escape(item.title)}</title>{rects}</g>"


def _mark(mark: Mark, axis: TimeAxis, lane_top: float, row_px: int) -> str:
    x, y = axis.x(mark.time), lane_top + mark.row * row_px
    title = f"<title>{escape(mark.title)}</title>" if mark.title else ""  # none: its item's title says it
    return f'<path class="mark" d="M{fmt(x)} {fmt(y)}l3 5h-6z">{title}</path>'


@dataclass(frozen=True)
class Line:
    """A step function over time (or values of a CDF): ``points`` are (x, y), each y holding until the next x."""

    name: str
    points: Sequence[tuple[float, float]]
    style: int = 0  # l0..l3: the first compared schedule solid blue, the second dashed red


def _step_path(
    points: Sequence[tuple[float, float]], to_x: Callable[[float], float], to_y: Callable[[float], float]
) -> str:
    """An SVG path through ``points`` as steps: each y holds until the next x."""
    out = [f"M{fmt(to_x(points[0][0]))} {fmt(to_y(points[0][1]))}"]
    out.extend(f"H{fmt(to_x(px))}V{fmt(to_y(py))}" for px, py in points[1:])
    return "".join(out)


def step_lines(
    title: str, lines: Sequence[Line], axis: TimeAxis, y_label: str, y_max: float | None = None, height: float = 150
) -> str:
    """Step lines over the time axis (one per series; hover: the series' name)."""
    top, plot_h = 40.0, height
    y_top = y_max if y_max is not None else max([1.0, *(p[1] for line in lines for p in line.points)])
    width, total = LABEL_PX + PLOT_PX + RIGHT_PX, top + plot_h + AXIS_PX

    def to_y(v: float) -> float:
        return top + plot_h - (v / y_top) * plot_h if y_top > 0 else top + plot_h

    parts = _open(width, total, title, axis)
    _legend(parts, [(f"sw{line.style}", line.name) for line in lines], 32)
    for tick in nice_ticks(0.0, y_top, 5):
        parts.append(
            f'<line class="grid" x1="{LABEL_PX}" y1="{fmt(to_y(tick))}" x2="{LABEL_PX + PLOT_PX}" '
            f'y2="{fmt(to_y(tick))}"/><text x="{LABEL_PX - 6}" y="{fmt(to_y(tick) + 4)}" '
            f'text-anchor="end">{tick:g}</text>'
        )
    parts.append(f'<text x="4" y="{fmt(top + 10)}">{escape(y_label)}</text>')
    _time_axis(parts, axis, top, top + plot_h)
    for line in lines:
        if line.points:
            points = [*line.points, (axis.end, line.points[-1][1])] if line.points[-1][0] < axis.end else line.points
            parts.append(
                f'<path class="l{line.style}" data-series="{escape(line.name)}" d="{_step_path(points, axis.x, to_y)}">'
                f"<title>{escape(line.name)}</title></path>"
            )
    parts.append("</svg>")
    return "".join(parts)


def cdf(title: str, samples: Sequence[tuple[str, Sequence[float]]], x_label: str, height: float = 170) -> str:
    """Empirical CDFs of each named sample on one value axis (DeepRM's slowdown plot): the fraction of values at or
    below each x. Hover: the sample's name, its median and its maximum."""
    values = [v for _, sample in samples for v in sample]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if not high > low:
        high = low + 1.0
    axis = _ValueAxis(low, high)
    top, plot_h = 40.0, height
    width, total = LABEL_PX + PLOT_PX + RIGHT_PX, top + plot_h + AXIS_PX + 6

    def to_y(v: float) -> float:
        return top + plot_h - v * plot_h

    parts = _open(width, total, title)
    _legend(parts, [(f"sw{i}", name) for i, (name, _) in enumerate(samples)], 32)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line class="grid" x1="{LABEL_PX}" y1="{fmt(to_y(tick))}" x2="{LABEL_PX + PLOT_PX}" '
            f'y2="{fmt(to_y(tick))}"/><text x="{LABEL_PX - 6}" y="{fmt(to_y(tick) + 4)}" '
            f'text-anchor="end">{tick:g}</text>'
        )
    for tick in nice_ticks(low, high):
        parts.append(f'<text x="{fmt(axis.x(tick))}" y="{fmt(top + plot_h + 13)}" text-anchor="middle">{tick:g}</text>')
    parts.append(
        f'<text x="{fmt(axis.x(high))}" y="{fmt(top + plot_h + 26)}" text-anchor="end">{escape(x_label)}</text>'
    )
    for i, (name, sample) in enumerate(samples):
        ordered = sorted(sample)
        if not ordered:
            continue
        n = len(ordered)
        points = [(ordered[0], 0.0)] + [(v, (k + 1) / n) for k, v in enumerate(ordered)]
        tip = f"{name}: {n} values, median {ordered[(n - 1) // 2]:.3g}, max {ordered[-1]:.3g}"
        parts.append(
            f'<path class="l{i}" data-series="{escape(name)}" d="{_step_path(points, axis.x, to_y)}">'
            f"<title>{escape(tip)}</title></path>"
        )
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class _ValueAxis:
    low: float
    high: float

    def x(self, v: float) -> float:
        return LABEL_PX + (v - self.low) / (self.high - self.low) * PLOT_PX


def paired_dots(
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    y_label: str,
    tips: Sequence[str] = (),
    height: float = 170,
) -> str:
    """One column per label, a dot per series in it (the policy's beside the reference's), on one value axis; hover:
    ``tips[i]`` (else the label and the values)."""
    values = [v for _, vs in series for v in vs]
    y_top = max([1.0, *values]) * 1.05
    top, plot_h = 40.0, height
    width, total = LABEL_PX + PLOT_PX + RIGHT_PX, top + plot_h + AXIS_PX
    step = PLOT_PX / max(len(labels), 1)

    def to_y(v: float) -> float:
        return top + plot_h - v / y_top * plot_h

    parts = _open(width, total, title)
    _legend(parts, [(f"sw{i}", name) for i, (name, _) in enumerate(series)], 32)
    for tick in nice_ticks(0.0, y_top, 5):
        parts.append(
            f'<line class="grid" x1="{LABEL_PX}" y1="{fmt(to_y(tick))}" x2="{LABEL_PX + PLOT_PX}" '
            f'y2="{fmt(to_y(tick))}"/><text x="{LABEL_PX - 6}" y="{fmt(to_y(tick) + 4)}" '
            f'text-anchor="end">{tick:g}</text>'
        )
    parts.append(f'<text x="4" y="{fmt(top + 10)}">{escape(y_label)}</text>')
    every = max(1, math.ceil(len(labels) / 40))  # at most about 40 labels under the axis
    for i, label in enumerate(labels):
        cx = LABEL_PX + step * (i + 0.5)
        tip = tips[i] if i < len(tips) else f"{label}: " + ", ".join(f"{n} {vs[i]:.4g}" for n, vs in series)
        dots = "".join(
            f'<circle class="d{k}" cx="{fmt(cx + (k - (len(series) - 1) / 2) * min(4.0, step / 4))}" '
            f'cy="{fmt(to_y(vs[i]))}" r="3"/>'
            for k, (_, vs) in enumerate(series)
            if i < len(vs)
        )
        parts.append(f'<g data-label="{escape(label)}"><title>{escape(tip)}</title>{dots}</g>')
        if i % every == 0:
            parts.append(
                f'<text x="{fmt(cx)}" y="{fmt(top + plot_h + 13)}" text-anchor="middle">{escape(label)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def lane_areas(
    title: str,
    panels: Sequence[tuple[str, Sequence[tuple[str, Sequence[tuple[float, float]]]]]],
    axis: TimeAxis,
    lane_px: int = 24,
) -> str:
    """Small multiples on one time axis: per panel, per lane, a filled step area of a share in [0, 1] (a VM's
    cores busy); hover: the lane's name and its time-averaged share."""
    top = 22.0
    height = top + sum(PANEL_HEAD_PX + len(lanes) * (lane_px + LANE_GAP_PX) for _, lanes in panels) + AXIS_PX
    parts = _open(LABEL_PX + PLOT_PX + RIGHT_PX, height, title, axis)
    y = top
    for name, lanes in panels:
        parts.append(f'<g class="panel" data-panel="{escape(name)}">')
        parts.append(f'<text class="ttl" x="4" y="{fmt(y + 14)}">{escape(name)}</text>')
        y += PANEL_HEAD_PX
        for lane, points in lanes:
            base = y + lane_px

            def to_y(v: float, base: float = base) -> float:
                return base - min(max(v, 0.0), 1.0) * lane_px

            mean = _time_mean(points, axis.end)
            closed = [*points, (axis.end, points[-1][1])] if points else [(0.0, 0.0), (axis.end, 0.0)]
            path = _step_path(closed, axis.x, to_y) + f"V{fmt(base)}H{fmt(axis.x(closed[0][0]))}Z"
            parts.append(
                f'<g class="lane" data-lane="{escape(lane)}"><rect class="lane-bg" x="{LABEL_PX}" y="{fmt(y)}" '
                f'width="{PLOT_PX}" height="{lane_px}"/><text x="{LABEL_PX - 6}" y="{fmt(y + lane_px / 2 + 4)}" '
                f'text-anchor="end">{escape(lane)}</text><path class="area" d="{path}"><title>'
                f"{escape(lane)}: {mean:.0%} busy on average</title></path></g>"
            )
            y += lane_px + LANE_GAP_PX
        parts.append("</g>")
    _time_axis(parts, axis, top, y)
    parts.append("</svg>")
    return "".join(parts)


def _time_mean(points: Sequence[tuple[float, float]], end: float) -> float:
    """The time average over 0..``end`` of the step function through ``points``."""
    if end <= 0 or not points:
        return 0.0
    total = 0.0
    for (t, v), (t_next, _) in zip(points, [*points[1:], (end, 0.0)], strict=True):
        total += v * (min(t_next, end) - min(t, end))
    return total / end


def ratio_colour(ratio: float | None) -> str:
    """Green below 1 (better than the reference baseline), red above, white at 1; saturating at +-30%."""
    if ratio is None or not math.isfinite(ratio):
        return "#eeeeee"
    strength = min(abs(math.log(max(ratio, 1e-9))) / math.log(1.3), 1.0)
    fade = round(255 - 130 * strength)
    return f"rgb({fade},255,{fade})" if ratio < 1 else f"rgb(255,{fade},{fade})"


_RATIO_TICKS = (0.1, 0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 4.0, 10.0)


def ratio_strip(ratios: Sequence[tuple[str, float]], reference: str) -> str:
    """The distribution of paired ratios on a log axis: a dot per episode (stacked where they meet), green left of
    1 (won against ``reference``), red right of it; hover: the episode and its ratio."""
    values = [r for _, r in ratios if r > 0 and math.isfinite(r)]
    low = min([*values, 0.9]) / 1.05
    high = max([*values, 1.1]) * 1.05
    span = math.log(high) - math.log(low)

    def x(v: float) -> float:
        return LABEL_PX + (math.log(v) - math.log(low)) / span * PLOT_PX

    stacks: dict[int, int] = {}
    dots = []
    for name, r in sorted(ratios, key=lambda e: e[1]):
        if not (r > 0 and math.isfinite(r)):
            continue
        column = round(x(r) / 7)
        level = stacks.get(column, 0)
        stacks[column] = level + 1
        css = "d0" if r < 1 else "d1" if r > 1 else "sw2"
        dots.append((x(r), level, css, f"{name}: {r:.3f}"))
    top_level = max((level for _, level, _, _ in dots), default=0)
    base = 40 + 7 * (top_level + 1)
    title = f"Paired ratios per episode (yours / {reference}; left of 1: won)"
    parts = _open(LABEL_PX + PLOT_PX + RIGHT_PX, base + AXIS_PX, title)
    for tick in _RATIO_TICKS:
        if low <= tick <= high:
            parts.append(
                f'<line class="grid" x1="{fmt(x(tick))}" y1="24" x2="{fmt(x(tick))}" y2="{fmt(base)}"/>'
                f'<text x="{fmt(x(tick))}" y="{fmt(base + 13)}" text-anchor="middle">{tick:g}</text>'
            )
    parts.append(f'<line class="l1" x1="{fmt(x(1.0))}" y1="22" x2="{fmt(x(1.0))}" y2="{fmt(base)}"/>')
    for cx, level, css, tip in dots:
        parts.append(
            f'<circle class="{css}" cx="{fmt(cx)}" cy="{fmt(base - 4 - 7 * level)}" r="3.2">'
            f"<title>{escape(tip)}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


_SIZE = re.compile(r'^<svg [^>]*?width="([0-9.]+)" height="([0-9.]+)"')


def stacked(svgs: Sequence[str], gap: float = 16.0) -> str:
    """Several of these charts as one SVG file, one below the other (each keeps its own coordinates)."""
    width, y, inner = 0.0, 0.0, []
    for svg in svgs:
        size = _SIZE.match(svg)
        if size is None:
            raise ValueError(f"not a chart of this module: {svg[:80]!r}")
        w, h = float(size.group(1)), float(size.group(2))
        inner.append(svg.replace("<svg ", f'<svg y="{fmt(y)}" ', 1))
        width, y = max(width, w), y + h + gap
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{fmt(width)}" height="{fmt(y)}" '
        f'viewBox="0 0 {fmt(width)} {fmt(y)}">{"".join(inner)}</svg>\n'
    )
