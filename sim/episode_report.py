"""What the pages show of a policy's episodes whose workload is public, on the server and in ``layersched validate
--report``: one implementation of the HTML, so that the two show the same.

* ``episode_report``: one episode replayed, the policy's schedule beside the reference baseline's on the same
  episode (the baseline run as the evaluation set's reference rows run it, then replayed), its metrics with their
  ratios, each schedule's summary and the track's figures on one time axis; ``report_html`` is its HTML.
* ``episodes_html``: the per-episode table (each metric, the reference's, the paired ratio; sortable through links
  where a server sorts), the distribution of the paired ratios and how many episodes the policy won and lost.

Everything shown that a participant or a catalog chose is escaped here; the figures are the tracks' SVG.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.evalset.runs import baseline_bundle_id
from layersched.sim.tracks.drawing import ratio_colour, ratio_strip
from layersched.sim.tracks.interface import Track
from layersched.sim.tracks.schedules import Figure, ReplayError, replay_episode, schedule_views, workload_of


def reference_actions(
    track: Track, scenario: Any, episode: int | EpisodeSpec, episode_id: str, baseline: str | None = None
) -> tuple[int, ...]:
    """The actions of the track's reference baseline (or ``baseline``) on the episode of ``scenario`` (its seed, or
    its ``EpisodeSpec``) whose id is ``episode_id``, its rng seeded as the reference rows of an evaluation set seed
    it."""
    name = baseline or track.reference_baseline
    rng = random.Random(policy_seed(baseline_bundle_id(name), track.scenario_hash(scenario), episode_id))
    return tuple(track.run_episode(scenario, track.baseline(name), workload_of(episode), rng).actions)


@dataclass(frozen=True)
class MetricRow:
    name: str
    label: str
    unit: str
    policy: float | None
    reference: float | None
    primary: bool = False

    @property
    def ratio(self) -> float | None:
        if self.policy is None or self.reference is None or self.reference == 0:
            return None
        return self.policy / self.reference


@dataclass(frozen=True)
class EpisodeReport:
    """One episode, the policy's schedule beside the reference's: what ``report_html`` shows."""

    track: str
    scenario: str
    episode: str
    seed: int | None  # None: a keyed episode (drawn only where its key is)
    names: tuple[str, str]
    metrics: list[MetricRow]
    summary: list[tuple[str, str, str]]
    figures: list[Figure]
    note: str = ""


def episode_report(
    track: Track,
    scenario: Any,
    *,
    scenario_name: str,
    episode_id: str,
    seed: int | EpisodeSpec,
    actions: Sequence[int],
    trace_hash: str | None,
    names: tuple[str, str],
    against: Sequence[int] | None = None,
    against_hash: str | None = None,
    note: str = "",
) -> EpisodeReport:
    """Replay the policy's ``actions`` (checked against ``trace_hash``) and the other side's (``against``: another
    policy's actions; None: the track's reference baseline, run here, checked against ``against_hash`` when given)
    on the episode ``seed`` (or, where its key is, the keyed ``EpisodeSpec``) and build the report. ``ReplayError``
    if either cannot be replayed."""
    views = schedule_views(track)
    if views is None:
        raise ReplayError(f"track {track.id!r} draws no schedules")
    record = replay_episode(track, scenario, seed, actions, expected_hash=trace_hash)
    other_actions = against if against is not None else reference_actions(track, scenario, seed, episode_id)
    other = replay_episode(track, scenario, seed, other_actions, expected_hash=against_hash)
    metrics = [
        MetricRow(
            spec.name,
            spec.label,
            spec.unit,
            _value(record.metrics, spec.name),
            _value(other.metrics, spec.name),
            spec.name == track.primary_metric,
        )
        for spec in track.metric_specs
    ]
    mine, theirs = views.summary(record), dict(views.summary(other))
    summary = [(label, value, theirs.get(label, "")) for label, value in mine]
    figures = views.figures(record, other, names)
    shown = seed if isinstance(seed, int) else None
    return EpisodeReport(track.id, scenario_name, episode_id, shown, names, metrics, summary, figures, note)


def _value(metrics: Any, name: str) -> float | None:
    return None if metrics is None else float(getattr(metrics, name))


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.3e}"


def report_html(report: EpisodeReport) -> str:
    """The report's HTML (a fragment: the page around it is the server's template or the static report's)."""
    mine, theirs = (escape(n) for n in report.names)
    out = ['<section class="episode-report" id="report">']
    if report.note:
        out.append(f'<p class="notice" id="note">{escape(report.note)}</p>')
    out.append(
        f'<table id="metrics"><thead><tr><th>Metric</th><th>{mine}</th><th>{theirs}</th><th>ratio</th></tr></thead>'
        "<tbody>"
    )
    for m in report.metrics:
        label = f"{escape(m.label)}{f' ({escape(m.unit)})' if m.unit else ''}"
        label = f"<strong>{label}</strong> (scored)" if m.primary else label
        ratio = m.ratio
        # Only the scored metric is coloured: it is the one known to be better lower (a utilisation is not).
        colour = f' style="background: {ratio_colour(ratio)}"' if m.primary else ""
        out.append(
            f'<tr data-metric="{escape(m.name)}"><td>{label}</td><td class="num">{_number(m.policy)}</td>'
            f'<td class="num">{_number(m.reference)}</td><td class="num"{colour}>'
            f"{'–' if ratio is None else f'{ratio:.3f}'}</td></tr>"
        )
    out.append("</tbody></table>")
    out.append(
        f'<h3>What each schedule did</h3><table id="summary"><thead><tr><th></th><th>{mine}</th><th>{theirs}</th>'
        "</tr></thead><tbody>"
    )
    for label, a, b in report.summary:
        out.append(f"<tr><td>{escape(label)}</td><td>{escape(a)}</td><td>{escape(b)}</td></tr>")
    out.append("</tbody></table>")
    if report.figures:
        links = " · ".join(f'<a href="#fig-{escape(f.key)}">{escape(f.title)}</a>' for f in report.figures)
        out.append(f'<p class="figure-links">Views: {links}</p>')
    for figure in report.figures:
        out.append(
            f'<figure class="schedule" id="fig-{escape(figure.key)}"><figcaption><strong>{escape(figure.title)}'
            f"</strong>. {escape(figure.caption)}</figcaption>{figure.svg}</figure>"
        )
    out.append("</section>")
    return "".join(out)


# ------------------------------------------------------------------------------------------- the episode table


@dataclass(frozen=True)
class EpisodeRow:
    """One episode with a public workload, as the per-episode table shows it."""

    scenario: str
    episode: str
    split: str
    status: str
    metrics: dict[str, float] | None  # the policy's (None: the episode did not finish)
    reference: dict[str, float] | None  # the reference baseline's on the same episode
    href: str | None = None  # its replay page

    def ratio(self, primary: str) -> float | None:
        if not self.metrics or not self.reference or not self.reference.get(primary):
            return None
        return self.metrics[primary] / self.reference[primary]


@dataclass(frozen=True)
class Column:
    """A metric as a column: headed by its name (short), its label and unit on hover."""

    name: str
    label: str
    unit: str = ""


def sort_rows(rows: Sequence[EpisodeRow], key: str, descending: bool, primary: str) -> list[EpisodeRow]:
    """``rows`` by a column: ``scenario``, ``episode``, ``ratio`` or a metric's name (the policy's value); rows
    without a value last, whatever the order."""

    def value(row: EpisodeRow) -> Any:
        if key == "scenario":
            return (row.scenario, row.episode)
        if key == "episode":
            return (row.episode, row.scenario)
        if key == "ratio":
            return row.ratio(primary)
        return None if row.metrics is None else row.metrics.get(key)

    present = [r for r in rows if value(r) is not None]
    missing = [r for r in rows if value(r) is None]
    return sorted(present, key=value, reverse=descending) + missing


def outcome_counts(rows: Sequence[EpisodeRow], primary: str) -> tuple[int, int, int]:
    """(won, lost, tied) against the reference: the primary metric is lower is better."""
    ratios = [r.ratio(primary) for r in rows]
    return (
        sum(1 for x in ratios if x is not None and x < 1),
        sum(1 for x in ratios if x is not None and x > 1),
        sum(1 for x in ratios if x == 1),
    )


def episodes_html(
    rows: Sequence[EpisodeRow],
    columns: Sequence[Column],
    *,
    primary: str,
    reference: str,
    sort_href: Callable[[str], str] | None = None,
    sorted_by: str = "",
) -> str:
    """The per-episode table, with the distribution of the paired ratios (each episode's primary metric over the
    reference's on the same episode) and the count of episodes won and lost. ``sort_href(column)`` links each
    header to that order (None: a static page, shown in the order given)."""
    won, lost, tied = outcome_counts(rows, primary)
    ratios = [(f"{r.scenario}/{r.episode}", x) for r in rows if (x := r.ratio(primary)) is not None]
    out = [
        f'<p id="won-lost">Against {escape(reference)} on the same episodes: <strong>won {won}</strong>, '
        f"<strong>lost {lost}</strong>{f', tied {tied}' if tied else ''} of {len(ratios)} finished "
        f"episode{'s' * (len(ratios) != 1)} (lower is better).</p>"
    ]
    if ratios:
        out.append(f'<figure id="ratios">{ratio_strip(ratios, reference)}</figure>')

    def header(name: str, label: str, title: str = "") -> str:
        hover = f' title="{escape(title)}"' if title else ""
        if sort_href is None:
            return f"<th{hover}>{escape(label)}</th>"
        mark = " ▲" if sorted_by == name else " ▼" if sorted_by == f"-{name}" else ""
        return f'<th{hover}><a href="{escape(sort_href(name))}">{escape(label)}</a>{mark}</th>'

    heads = [header("scenario", "Scenario"), header("episode", "Episode"), "<th>Split</th>", "<th>Status</th>"]
    heads.append(header("ratio", f"Ratio to {reference}", f"{primary} / {reference}'s on the same episode"))
    heads.extend(
        header(c.name, c.name.replace("_", " "), c.label + (f" ({c.unit})" if c.unit else "")) for c in columns
    )
    heads.append("<th>Schedule</th>")
    out.append(f'<table id="episode-table"><thead><tr>{"".join(heads)}</tr></thead><tbody>')
    for row in rows:
        ratio = row.ratio(primary)
        cells = [
            escape(row.scenario),
            escape(row.episode),
            escape(row.split),
            escape(row.status),
        ]
        html = "".join(f"<td>{c}</td>" for c in cells)
        html += (
            f'<td class="num" style="background: {ratio_colour(ratio)}">{"–" if ratio is None else f"{ratio:.3f}"}</td>'
        )
        for c in columns:
            mine = None if row.metrics is None else row.metrics.get(c.name)
            theirs = None if row.reference is None else row.reference.get(c.name)
            html += f'<td class="num">{_number(mine)}<br><small>{escape(reference)} {_number(theirs)}</small></td>'
        link = f'<a href="{escape(row.href)}">replay</a>' if row.href else ""
        out.append(f'<tr data-episode="{escape(row.scenario)}/{escape(row.episode)}">{html}<td>{link}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)
