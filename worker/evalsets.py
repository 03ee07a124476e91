"""Registering evaluation sets with the service, and scoring the track's baselines on each once.

Run where the sets' files (their keys) are: a worker host or container (``layersched evalset register``), or
``layersched serve``; the API never reads them. The baselines run in-process on the trusted simulator (they are our
code, not untrusted), are cached on disk by (commitment, simulator version) by ``score_baselines``, and land in
``baseline_results`` as the leaderboard's reference rows. The row of the set's track's reference baseline is 1.0 by
construction: every score is a ratio to it.

Registering is idempotent: the same file again writes nothing; a changed file under a registered name is refused
with both commitments, before anything is written (for every file named at once).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from sqlalchemy.orm import Session

from layersched.server import admin, storage
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker, session_scope
from layersched.server.errors import Conflict
from layersched.server.storage.evalsets import changed_set_message
from layersched.server.tracks import load_tracks
from layersched.sim.errors import EvalSetError
from layersched.sim.evalset import EpisodeRecord, EvalSet, load_evalset, score_baselines
from layersched.sim.ordered_pool import Progress
from layersched.sim.tracks import get_track
from layersched.sim.version import SIM_VERSION
from layersched.worker.pipeline import episode_values, split_score


@dataclass(frozen=True)
class Registration:
    """One set as registered: what ``evalset register`` prints for it."""

    name: str
    track: str
    commitment: str
    path: Path
    outcome: str  # admin.RegisteredEvalSet.outcome: registered, unchanged, moved, made current
    baselines_written: int  # reference rows written (0: they were there already, with the same scores)


def register_sets(
    paths: Sequence[Path],
    *,
    settings: Settings,
    current: bool = False,
    workers: int = 1,
    progress: Callable[[EvalSet], Progress | None] = lambda _evalset: None,
) -> list[Registration]:
    """Register every file of ``paths`` with its baselines' rows, in order; ``current`` (one file only) makes it
    the set of the default phase ``main``.

    Every file is read and checked first, against each other (two files, one name) and against the registered sets
    (another commitment under a registered name): a refusal (``EvalSetError``, ``Conflict``) changes nothing.
    ``progress(evalset)`` gives the callback that hears of the episodes scored for its baselines.
    """
    if current and len(paths) != 1:
        raise EvalSetError(f"only one set can be current, got {len(paths)} files")
    load_tracks(settings.track_modules)  # a file may be on a track the settings add
    evalsets = [(path.resolve(), load_evalset(path)) for path in paths]
    seen: dict[str, Path] = {}
    for path, evalset in evalsets:
        if evalset.name in seen:
            raise EvalSetError(f"{seen[evalset.name]} and {path} are both evaluation set {evalset.name!r}")
        seen[evalset.name] = path
    _refuse_changed_sets(evalsets, settings)
    registered = []
    for path, evalset in evalsets:
        registered.append(
            register_and_score(
                path=path,
                evalset=evalset,
                settings=settings,
                current=current,
                workers=workers,
                progress=progress(evalset),
            )
        )
    return registered


def _refuse_changed_sets(evalsets: list[tuple[Path, EvalSet]], settings: Settings) -> None:
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            for path, evalset in evalsets:
                row = storage.find_evalset(session=session, name=evalset.name)
                if row is not None and row.commitment != evalset.commitment:
                    raise Conflict(
                        changed_set_message(
                            name=evalset.name, registered=row.commitment, given=evalset.commitment, path=str(path)
                        )
                    )
    finally:
        engine.dispose()


def register_and_score(
    *,
    path: Path,
    settings: Settings,
    evalset: EvalSet | None = None,
    current: bool = True,
    workers: int = 1,
    progress: Progress | None = None,
) -> Registration:
    """Register the set at ``path`` (current for new submissions unless ``current=False``) and write the baselines'
    reference rows that are missing or differ.

    ``workers`` processes share the episodes when the rows are not cached yet; ``progress(done, total)`` hears of each.
    """
    path = path.resolve()
    evalset = evalset or load_evalset(path)
    registered = admin.register_evalset(path=path, current=current, settings=settings)
    # Scored before the database session opens: the session would otherwise sit idle in a transaction for as long.
    records = score_baselines(evalset, settings.baseline_cache_dir, workers=workers, progress=progress)
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            written = write_reference_rows(session=session, evalset=evalset, records=records)
    finally:
        engine.dispose()
    return Registration(registered.name, registered.track, registered.commitment, path, registered.outcome, written)


def write_reference_rows(*, session: Session, evalset: EvalSet, records: dict[str, list[EpisodeRecord]]) -> int:
    """Upsert one ``baseline_results`` row per baseline with its public and private scores, where it is missing or
    holds other scores; returns how many were written."""
    reference = episode_values(records[get_track(evalset.track).reference_baseline])
    written = 0
    for name, recs in records.items():
        values = episode_values(recs)
        metrics = {(r.scenario, r.episode): r.metrics for r in recs}
        public = split_score(evalset, values, reference, "public", metrics)
        private = split_score(evalset, values, reference, "private", metrics)
        per_scenario = {sc.name: [v for (s, _), v in values.items() if s == sc.name] for sc in evalset.scenarios}
        row = storage.get_baseline_result(
            session=session, evalset_commitment=evalset.commitment, sim_version=SIM_VERSION, baseline=name
        )
        if row is not None and (row.score_public, row.score_private, row.per_scenario) == (
            public,
            private,
            per_scenario,
        ):
            continue
        storage.upsert_baseline_result(
            session=session,
            evalset_commitment=evalset.commitment,
            sim_version=SIM_VERSION,
            baseline=name,
            score_public=public,
            score_private=private,
            per_scenario=per_scenario,
        )
        written += 1
    return written


class BaselineProgress:
    """Prints ``layersched: baselines 45/150 episodes`` each time another tenth of the episodes is scored."""

    def __init__(self, lines: int = 10, workers: int = 1, baselines: int = 6, stream: TextIO | None = None) -> None:
        self.lines = lines
        self.workers = workers
        self.baselines = baselines
        self.stream = stream  # None: stdout (serve's lines); `evalset register` keeps stdout for its results
        self.printed = 0

    def __call__(self, done: int, total: int) -> None:
        if done == 1:  # the rows were not cached: say what the wait is for
            print(
                f"layersched: scoring the {self.baselines} baselines on the {total} episodes "
                f"({min(self.workers, total)} processes; once per evaluation set and simulator version)",
                file=self.stream,
                flush=True,
            )
        if done * self.lines >= (self.printed + 1) * total:
            self.printed = done * self.lines // total
            print(f"layersched: baselines {done}/{total} episodes", file=self.stream, flush=True)


def progress_for(workers: int, stream: TextIO | None = None) -> Callable[[EvalSet], Progress]:
    """``register_sets``'s ``progress``: a ``BaselineProgress`` per set, counting its track's baselines."""
    return lambda evalset: BaselineProgress(
        workers=workers, baselines=len(get_track(evalset.track).baseline_names), stream=stream
    )


OUTCOMES = {
    "registered": "registered",
    "unchanged": "already registered, unchanged",
    "moved": "already registered; now read from this path",
    "made current": "already registered; now the current set (phase main)",
}


def registration_line(registration: Registration) -> str:
    """``evaluation set 'spring' (track layers-v1, commitment 9c1e...): registered`` and where it is read from."""
    rows = f"; {registration.baselines_written} baseline rows written" if registration.baselines_written else ""
    return (
        f"evaluation set {registration.name!r} (track {registration.track}, commitment {registration.commitment}, "
        f"file {registration.path}): {OUTCOMES[registration.outcome]}{rows}"
    )
