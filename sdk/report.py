"""``layersched validate . --report DIR``: the server's schedule pages as static files, for a local run.

``DIR/index.html`` holds the score beside the baselines, the checks' findings and the per-episode table (each
metric beside the reference baseline's, the paired ratio, the ratios' distribution, won and lost); each episode
links to ``DIR/episodes/SCENARIO--EPISODE.html``, its replay: the policy's schedule beside the reference
baseline's, on one time axis, with the track's views. The HTML is the server's (``layersched.sim.episode_report``),
the pages are script-free and load nothing: they open offline, from disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from layersched.sim.episode_report import (
    Column,
    EpisodeReport,
    EpisodeRow,
    episode_report,
    episodes_html,
    report_html,
    sort_rows,
)
from layersched.sim.tracks import Track
from layersched.sim.tracks.schedules import ReplayError, schedule_views

PAGE_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #ddd; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.notice { background: #fff6d6; border: 1px solid #e6cf7a; padding: .5rem 1rem; }
.finding-error { color: #a00; } .finding-warning { color: #8a6d00; }
figure { margin: 1.5rem 0; } small { color: #666; }
"""


def page(title: str, body: str) -> str:
    """A whole static page: no script, no request (its styles inline, its figures inline SVG)."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{escape(title)}</title>'
        f"<style>{PAGE_CSS}</style></head><body>{body}</body></html>\n"
    )


def episode_file(scenario: str, episode: str) -> str:
    """The replay page's file name (scenario names and episode ids are letters, digits, '.', '_' and '-')."""
    return f"{scenario}--{episode}.html"


@dataclass(frozen=True)
class Written:
    index: Path
    episodes: int
    skipped: list[str]  # episodes without a replay, with why


def write_report(report: Any, evalset_path: str | Path | None, out: Path, *, name: str = "your policy") -> Written:
    """Write ``report``'s pages (a ``validate.ValidationReport`` whose episodes carry their actions) into ``out``."""
    from layersched.sim.evalset import evalset_file, load_evalset

    evalset = load_evalset(evalset_file(evalset_path if evalset_path is not None else "sample"))
    track: Track = report.track
    reference = track.reference_baseline
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    jobs = {(j.scenario_name, j.episode.id): j for j in evalset.jobs()}
    rows: list[EpisodeRow] = []
    skipped: list[str] = []
    for episode in report.episodes:
        key = (episode["scenario"], episode["episode"])
        job = jobs[key]
        where = f"{key[0]}/{key[1]}"
        metrics = {s.name: float(episode[s.name]) for s in track.metric_specs if s.name in episode}
        built: EpisodeReport | None = None
        if schedule_views(track) is None:
            skipped.append(f"{where}: track {track.id} draws no schedules")
        elif job.episode.seed is None:
            skipped.append(f"{where}: its workload is keyed")
        elif "actions" not in episode:
            skipped.append(f"{where}: its run kept no actions")
        else:
            note = ""
            if episode["status"] != "ok":
                note = f"The episode ended ({episode['status']}): this is its schedule up to there."
            try:
                built = episode_report(
                    track,
                    job.scenario,
                    scenario_name=key[0],
                    episode_id=key[1],
                    seed=job.episode.seed,
                    actions=episode["actions"],
                    trace_hash=episode.get("trace_hash"),
                    names=(name, reference),
                    note=note,
                )
            except ReplayError as exc:
                skipped.append(f"{where}: {exc}")
        href = None
        if built is not None:
            href = f"episodes/{episode_file(*key)}"
            title = f"{name}: {where}"
            back = '<p><a href="../index.html#episode-table">&larr; all episodes</a></p>'
            about = f"{escape(track.id)}, seed {job.episode.seed}, {job.episode.split} split"
            heading = f"<h1>{escape(where)}</h1><p>{about}.</p>"
            (out / href).write_text(page(title, back + heading + report_html(built)), encoding="utf-8")
        theirs = {m.name: m.reference for m in built.metrics if m.reference is not None} if built else None
        status = str(episode["status"])
        rows.append(EpisodeRow(key[0], key[1], job.episode.split, status, metrics or None, theirs, href))
    columns = [Column(s.name, s.label, s.unit) for s in track.metric_specs]
    table = episodes_html(
        sort_rows(rows, "ratio", True, track.primary_metric), columns, primary=track.primary_metric, reference=reference
    )
    index = out / "index.html"
    index.write_text(page(f"layersched report: {report.path.name}", _index_body(report, evalset.name, table)), "utf-8")
    return Written(index, sum(r.href is not None for r in rows), skipped)


def _index_body(report: Any, evalset_name: str, table: str) -> str:
    track: Track = report.track
    parts = [
        f"<h1>{escape(str(report.path))}</h1>",
        f"<p>Track <strong>{escape(track.title)}</strong> (<code>{escape(track.id)}</code>), evaluation set "
        f"<strong>{escape(evalset_name)}</strong>, run in {escape(report.runner or 'a local process')}.</p>",
        "<h2>Checks</h2><ul>",
        *(
            f'<li class="finding-{escape(f.level)}">{escape(f.level)}: {escape(f.message)}</li>'
            for f in report.findings
        ),
        "</ul>",
    ]
    if report.rows:
        parts.append(
            f"<h2>Score</h2><p>The public split's episodes, ratio to {escape(track.reference_baseline)} (lower is "
            "better):</p><table><thead><tr><th>Policy</th><th>Score</th></tr></thead><tbody>"
        )
        parts += [f'<tr><td>{escape(r.name)}</td><td class="num">{r.score:.4f}</td></tr>' for r in report.rows]
        parts.append("</tbody></table>")
    parts.append(f"<h2>Episodes</h2><p>Worst ratio first; each links to both schedules.</p>{table}")
    return "".join(parts)
