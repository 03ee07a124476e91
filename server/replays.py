"""The schedules of a submission's episodes whose workload is public: the per-episode table of its page and the
replay page of one episode, drawn on the server as SVG (no script), from what the worker kept
(``storage.replays``) and the trusted simulator.

Only episodes with kept actions are drawn, and only episodes whose workload anyone can regenerate keep them: a keyed
episode has no row, so nothing here can replay or draw it (its log line stays status and step). Who may read a
submission's episodes is the submission page's rule (owners, their team, organisers).

Replaying is cheap next to playing (no policy, no sandbox), but the reference baseline's schedule needs the
baseline's run: its actions are kept in a small cache per process, by episode, and so are the finished pages.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import EpisodeResult, Evaluation
from layersched.server.tracks import metric_columns, server_track
from layersched.sim.episode_report import (
    Column,
    EpisodeRow,
    episode_report,
    episodes_html,
    reference_actions,
    report_html,
    sort_rows,
)
from layersched.sim.tracks.schedules import ReplayError, schedule_views
from layersched.sim.version import SIM_VERSION

CACHED_PAGES = 32
CACHED_REFERENCES = 256


class _Lru(OrderedDict[Any, Any]):
    """A small least-recently-used map, safe across the app's threads."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.lock = threading.Lock()

    def get_or(self, key: Any, make: Callable[[], Any]) -> Any:
        with self.lock:
            if key in self:
                self.move_to_end(key)
                return self[key]
        value = make()  # outside the lock: two threads may build the same value, never block each other for it
        with self.lock:
            self[key] = value
            while len(self) > self.size:
                self.popitem(last=False)
        return value


_pages = _Lru(CACHED_PAGES)
_references = _Lru(CACHED_REFERENCES)


class NoSchedule(Exception):
    """The episode's schedule is not drawn; ``status`` is the page's HTTP status, the message says why."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message, self.status = message, status


def episode_rows(
    session: Session, evaluation: Evaluation | None, *, href: Callable[[EpisodeResult], str]
) -> list[EpisodeRow]:
    """The evaluation's episodes whose actions are kept (a public workload), in the set's order, each linked to its
    replay page by ``href``."""
    if evaluation is None:
        return []
    references = storage.public_references(session=session, evaluation_id=evaluation.id)
    rows = []
    for episode in evaluation.episodes:
        if episode.id not in references or episode.hidden:
            continue
        reference = references[episode.id]
        rows.append(
            EpisodeRow(
                scenario=episode.scenario,
                episode=episode.episode_id,
                split=episode.split,
                status=episode.status,
                metrics=episode.metrics,
                reference=None if reference is None else reference.get("metrics"),
                href=href(episode),
            )
        )
    return rows


@dataclass(frozen=True)
class EpisodeTable:
    """What the submission page shows of its public episodes."""

    html: str
    count: int


def episode_table(
    session: Session, evaluation: Evaluation | None, track_id: str, *, base_url: str, sort: str | None
) -> EpisodeTable:
    """The per-episode table of ``evaluation`` (its public episodes), sorted by ``sort`` (a column's name, ``-`` in
    front for descending; default: the worst ratio first), each header linking to its order on ``base_url``."""
    track = server_track(track_id)
    columns = [Column(c.name, c.label, c.unit) for c in metric_columns(track_id)]
    known = {"scenario", "episode", "ratio", *(c.name for c in columns)}
    key = (sort or "-ratio").removeprefix("-")
    if key not in known:
        key, sort = "ratio", "-ratio"
    descending = (sort or "-ratio").startswith("-")

    def link(episode: EpisodeResult) -> str:
        return f"{base_url}/episodes/{episode.scenario}/{episode.episode_id}"

    rows = sort_rows(episode_rows(session, evaluation, href=link), key, descending, track.primary_metric)

    def sort_href(column: str) -> str:
        order = column if (column == key and descending) else f"-{column}"
        return f"{base_url}?{urlencode({'sort': order})}#episode-table"

    html = episodes_html(
        rows,
        columns,
        primary=track.primary_metric,
        reference=track.reference_baseline,
        sort_href=sort_href,
        sorted_by=f"-{key}" if descending else key,
    )
    return EpisodeTable(html, len(rows))


def find_episode(evaluation: Evaluation | None, scenario: str, episode_id: str) -> EpisodeResult:
    """The evaluation's episode ``scenario``/``episode_id``; ``NoSchedule`` (404) when it has none."""
    for episode in evaluation.episodes if evaluation is not None else ():
        if episode.scenario == scenario and episode.episode_id == episode_id:
            return episode
    raise NoSchedule(f"this submission's evaluation has no episode {scenario}/{episode_id}", 404)


def replay_html(session: Session, episode: EpisodeResult, *, names: tuple[str, str]) -> str:
    """The replay page's body for ``episode``: its schedule beside the reference baseline's. ``NoSchedule`` when it
    is not drawn (hidden or not kept: 404; a track without schedules: 200; not replayable: 409)."""
    if episode.hidden:
        raise NoSchedule(_NOT_KEPT, 404)
    try:
        stored = storage.episode_replay(session=session, episode_result_id=episode.id)
    except ValueError as exc:
        raise NoSchedule(f"the stored actions of this episode cannot be read: {exc}", 500) from None
    if stored is None:
        raise NoSchedule(_NOT_KEPT, 404)
    track = server_track(stored.track)
    if schedule_views(track) is None:
        raise NoSchedule(f"track {track.id} ({track.title}) draws no schedules: its episodes have no replay", 200)
    key = (episode.id, episode.trace_hash, SIM_VERSION, names)

    def build() -> str:
        scenario = track.scenario_from_wire(stored.scenario_wire)
        reference = stored.reference or {}
        scenario_hash = track.scenario_hash(scenario)
        # Kept by the worker when it recorded the episode; else (a run older than that) the baseline runs here once.
        against = stored.reference_actions or _references.get_or(
            (track.id, scenario_hash, stored.seed, episode.episode_id, track.rules_hash),
            lambda: reference_actions(track, scenario, stored.seed, episode.episode_id),
        )
        note = ""
        if episode.status != "ok":
            where = "" if episode.step is None else f" at step {episode.step}"
            note = f"The episode ended{where} ({episode.status}): this is its schedule up to there."
        report = episode_report(
            track,
            scenario,
            scenario_name=episode.scenario,
            episode_id=episode.episode_id,
            seed=stored.seed,
            actions=stored.actions,
            trace_hash=episode.trace_hash,
            names=names,
            against=against,
            against_hash=reference.get("trace_hash"),
            note=note,
        )
        return report_html(report)

    try:
        html: str = _pages.get_or(key, build)
    except ReplayError as exc:
        raise NoSchedule(f"this episode cannot be replayed: {exc}", 409) from None
    return html


_NOT_KEPT = (
    "no schedule is kept for this episode: schedules are drawn only of episodes whose workload is public (seeded), "
    "and only of those run since schedules were kept"
)
