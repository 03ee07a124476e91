"""What is kept of episodes whose workload is public, so that their schedules can be replayed and drawn: the accepted
actions, the workload's seed, the scenario (once per content hash) and the reference baseline's record on the
same episode.

The worker decides which episodes qualify (``layersched.sim.tracks.schedules.public_workload``: seeded, in a
scenario without secret keys) and hands ``record_episode_result`` a ``ReplayInput`` for those only; this module
refuses to keep one of an episode recorded as hidden whatever it is given, as ``record_episode_result`` drops a
hidden episode's output. Nothing of a keyed episode is ever written here, so no page can draw it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from layersched.server.models import ActionTrace, EpisodeActions, EpisodeResult, ReplayScenario
from layersched.sim.tracks.schedules import decode_actions


@dataclass(frozen=True)
class ReplayInput:
    """What the worker keeps of one public episode: its track and scenario (hash and wire form), the seed of its
    workload, its accepted actions encoded (``schedules.encode_actions``) and the reference baseline's record on it
    (``{"baseline", "metrics", "primary", "trace_hash"}``, None if unknown)."""

    track: str
    scenario_hash: str
    scenario_wire: dict[str, Any]
    seed: int
    actions: bytes
    reference: dict[str, Any] | None = None
    # The reference baseline's actions on the episode, encoded (None: kept already, or not known).
    reference_actions: bytes | None = None


@dataclass(frozen=True)
class StoredReplay:
    """An episode's replay input as stored: what the pages replay from."""

    track: str
    scenario_wire: dict[str, Any]
    seed: int
    actions: tuple[int, ...]
    reference: dict[str, Any] | None
    # The reference baseline's actions on the episode (None: not kept; the page runs the baseline).
    reference_actions: tuple[int, ...] | None = None


def _insert(session: Session) -> Any:
    dialect = session.get_bind().dialect.name
    if dialect not in ("postgresql", "sqlite"):  # pragma: no cover - the two supported backends
        raise NotImplementedError(f"episode actions have no upsert for dialect {dialect!r}")
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def write_episode_actions(*, session: Session, episode_result_id: int, hidden: bool, replay: ReplayInput) -> bool:
    """Keep ``replay`` for the episode result ``episode_result_id`` in the caller's transaction (no commit: the
    result and its actions are one write); an episode recorded as ``hidden`` keeps nothing. Returns whether kept."""
    if hidden:
        return False
    insert = _insert(session)
    scenario = insert(ReplayScenario).values(
        scenario_hash=replay.scenario_hash, track=replay.track, wire=replay.scenario_wire
    )
    session.execute(scenario.on_conflict_do_nothing(index_elements=["scenario_hash"]))
    values = {
        "episode_result_id": episode_result_id,
        "scenario_hash": replay.scenario_hash,
        "seed": str(replay.seed),
        "actions": replay.actions,
        "reference": replay.reference,
    }
    if replay.reference_actions is not None and replay.reference is not None:
        trace = insert(ActionTrace).values(trace_hash=replay.reference["trace_hash"], actions=replay.reference_actions)
        session.execute(trace.on_conflict_do_nothing(index_elements=["trace_hash"]))
    statement = insert(EpisodeActions).values(**values)
    statement = statement.on_conflict_do_update(
        index_elements=["episode_result_id"],
        set_={k: statement.excluded[k] for k in values if k != "episode_result_id"},
    )
    session.execute(statement)
    return True


def episode_replay(*, session: Session, episode_result_id: int) -> StoredReplay | None:
    """The stored replay input of an episode result (None: its workload is hidden, or it was recorded before
    actions were kept); ``ValueError`` if the stored actions are damaged."""
    row = session.execute(
        select(EpisodeActions, ReplayScenario, EpisodeResult.hidden)
        .join(ReplayScenario, ReplayScenario.scenario_hash == EpisodeActions.scenario_hash)
        .join(EpisodeResult, EpisodeResult.id == EpisodeActions.episode_result_id)
        .where(EpisodeActions.episode_result_id == episode_result_id)
    ).one_or_none()
    if row is None or row[2]:  # a hidden row with actions cannot be written here; never read one either
        return None
    actions, scenario = row[0], row[1]
    reference = actions.reference
    against = None
    if reference is not None and "trace_hash" in reference:
        blob = session.scalar(select(ActionTrace.actions).where(ActionTrace.trace_hash == reference["trace_hash"]))
        against = None if blob is None else decode_actions(blob)
    return StoredReplay(
        scenario.track, scenario.wire, int(actions.seed), decode_actions(actions.actions), reference, against
    )


def trace_kept(*, session: Session, trace_hash: str) -> bool:
    """Whether the actions of the trace ``trace_hash`` are kept (a reference run, once for every evaluation)."""
    return session.scalar(select(ActionTrace.trace_hash).where(ActionTrace.trace_hash == trace_hash)) is not None


def public_references(*, session: Session, evaluation_id: int) -> dict[int, dict[str, Any] | None]:
    """Per episode result of the evaluation that has its actions kept (a public workload): the reference baseline's
    record on it (None if unknown). Episodes without kept actions are absent."""
    rows = session.execute(
        select(EpisodeActions.episode_result_id, EpisodeActions.reference)
        .join(EpisodeResult, EpisodeResult.id == EpisodeActions.episode_result_id)
        .where(EpisodeResult.evaluation_id == evaluation_id, EpisodeResult.hidden.is_(False))
    )
    return {episode_id: reference for episode_id, reference in rows}


def stored_bytes(*, session: Session, evaluation_id: int) -> int:
    """The bytes of actions kept for an evaluation's episodes (README's storage figures)."""
    rows = session.execute(
        select(EpisodeActions.actions)
        .join(EpisodeResult, EpisodeResult.id == EpisodeActions.episode_result_id)
        .where(EpisodeResult.evaluation_id == evaluation_id)
    )
    return sum(len(blob) for (blob,) in rows)
