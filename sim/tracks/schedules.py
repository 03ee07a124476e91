"""Schedules: an episode turned back into what happened on the machines, by replaying its accepted actions on the
track's trusted simulator, and what the shared code (pages, CLI, Gymnasium renders) needs to ask a track for it.

kaggle-environments gives every game a renderer beside its rules and has the runner only ask for it; evalys draws
views of one schedule record and compares two on one time axis. Here a track that can show its schedules has a
``schedules`` attribute, a ``ScheduleViews``: ``replay`` builds the track's own record from (scenario, workload,
actions) with the same simulator that scored the episode, and ``figures`` draws it (SVG, beside another record on
the same time axis), ``summary`` says it in a few figures, ``ansi`` and ``rgb_array`` render it for a terminal and
for Gymnasium. A track without one still works: ``schedule_views`` returns None and the pages say so.

What may be replayed is the shared code's rule (``public_workload``): an episode whose workload anyone can
regenerate (a seed, in a scenario with no secret key). A keyed episode is never stored, replayed or drawn for a
participant: its schedule would show the hidden workload.

Actions are stored compact (``encode_actions``: zigzag varints, deflated), within ``MAX_STORED_ACTIONS`` and
``MAX_STORED_BYTES`` per episode.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from layersched.sim.episodes import EpisodeSpec, SeededRandom, trace_hash
from layersched.sim.errors import PolicyError, SimError
from layersched.sim.tracks.interface import ScenarioEntry, Track

# The bounds of one stored episode's actions. The largest scenario of the shipped sets and templates takes a few
# thousand (tests/sim/test_schedules.py checks each track's); a 2,000-task workflows episode about 4,000.
MAX_STORED_ACTIONS = 200_000
MAX_STORED_BYTES = 512 * 1024


class ReplayError(SimError):
    """An episode cannot be replayed: its track draws no schedules, its actions do not match the recorded trace, or
    the simulator refuses one of them (its rules changed since the episode ran)."""


@dataclass(frozen=True)
class Figure:
    """One drawn view of a schedule: ``key`` is its anchor on a page (``gantt``), ``svg`` a whole ``<svg>`` element
    (script-free, hover text in ``<title>``), ``caption`` one sentence on how to read it."""

    key: str
    title: str
    svg: str
    caption: str = ""


class ScheduleRecord(Protocol):
    """What the shared code reads of a track's record (the rest is the track's)."""

    @property
    def actions(self) -> tuple[int, ...]: ...

    @property
    def metrics(self) -> Any:
        """The track's metrics record of the replayed episode (None when the actions stop before its end)."""
        ...

    @property
    def end(self) -> float:
        """The last time anything happens in the schedule (the time axis ends there)."""
        ...


class ScheduleViews(Protocol):
    """A track's replay and renderer (``Track.schedules``)."""

    # The unit of the schedule's times, as axes say it ("steps", "s").
    time_unit: str

    def replay(self, scenario: Any, workload: random.Random, actions: Sequence[int]) -> ScheduleRecord:
        """The record of the episode drawn from ``workload`` in which ``actions`` were accepted, replayed on the
        trusted simulator (the same actions give the same record); ``PolicyError`` if the simulator refuses one.
        Fewer actions than the episode takes give the record of the episode so far (``metrics`` None)."""
        ...

    def summary(self, record: Any) -> list[tuple[str, str]]:
        """A few figures that say what the schedule did (label, value as text), in an order to show them."""
        ...

    def figures(
        self, record: Any, reference: Any | None = None, names: tuple[str, str] = ("policy", "reference")
    ) -> list[Figure]:
        """The track's views of ``record``; with ``reference`` (another record of the same episode) each view shows
        both, named by ``names``, on one time axis."""
        ...

    def ansi(self, record: Any, width: int = 80) -> str:
        """The schedule as text for a terminal (Gymnasium's ``render_mode="ansi"``)."""
        ...

    def rgb_array(self, record: Any) -> Any:
        """The schedule as an image, a ``uint8`` array (height, width, 3) (Gymnasium's ``"rgb_array"``)."""
        ...


def schedule_views(track: Track) -> ScheduleViews | None:
    """The track's ``schedules`` (None: it draws none; everything else about it works as before)."""
    views: ScheduleViews | None = getattr(track, "schedules", None)
    return views


def public_workload(track: Track, scenario: ScenarioEntry, episode: EpisodeSpec) -> bool:
    """Whether anyone can regenerate the episode's workload: it is seeded, not keyed, and its scenario's own part
    depends on no secret key (a hidden catalog). Only such an episode's actions are kept and its schedule drawn."""
    return not episode.hidden and not any(True for _ in track.secret_keys(scenario))


def actions_left(step: int, actions: Sequence[int]) -> PolicyError:
    """What a replay raises when its episode ended at decision ``step`` with ``actions`` left to apply."""
    return PolicyError(
        f"step {step}: the episode ended after {step} decisions, {len(actions)} actions were given",
        step=step,
        value=actions[step],
    )


def workload_of(episode: int | EpisodeSpec) -> random.Random:
    """A fresh generator of an episode's workload: of the seed ``episode``, or of the episode itself (a keyed one's:
    only where its key is, an organiser's host)."""
    return SeededRandom(episode) if isinstance(episode, int) else episode.workload_rng()


def replay_episode(
    track: Track, scenario: Any, episode: int | EpisodeSpec, actions: Sequence[int], *, expected_hash: str | None
) -> ScheduleRecord:
    """The schedule of the episode of ``scenario`` (its seed, or the ``EpisodeSpec``) in which ``actions`` were
    accepted; their trace hash must be ``expected_hash`` (the stored run's), else ``ReplayError`` (so a page never
    draws a schedule that is not the one scored). ``ReplayError`` too if the track draws no schedules or its
    simulator refuses an action."""
    views = schedule_views(track)
    if views is None:
        raise ReplayError(f"track {track.id!r} draws no schedules")
    if expected_hash is not None and trace_hash(actions) != expected_hash:
        raise ReplayError(
            f"the {len(actions)} stored actions hash to {trace_hash(actions)[:12]}, not to the recorded trace "
            f"{expected_hash[:12]}"
        )
    try:
        return views.replay(scenario, workload_of(episode), actions)
    except PolicyError as exc:
        raise ReplayError(f"the simulator refuses a stored action ({exc}): its rules changed since the run") from exc


# ------------------------------------------------------------------------------------------ compact actions


def encode_actions(actions: Sequence[int]) -> bytes:
    """``actions`` as deflated zigzag varints (a node index or slot is one byte before deflating); ``ValueError``
    beyond ``MAX_STORED_ACTIONS`` or ``MAX_STORED_BYTES``."""
    if len(actions) > MAX_STORED_ACTIONS:
        raise ValueError(f"{len(actions)} actions exceed the {MAX_STORED_ACTIONS} kept per episode")
    out = bytearray()
    for action in actions:
        value = (action << 1) ^ (action >> 63) if -(1 << 63) <= action < 1 << 63 else None
        if value is None:
            raise ValueError(f"action {action} is outside the 64-bit range kept")
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
    blob = zlib.compress(bytes(out), 9)
    if len(blob) > MAX_STORED_BYTES:
        raise ValueError(f"{len(actions)} actions take {len(blob)} bytes, over the {MAX_STORED_BYTES} kept per episode")
    return blob


def decode_actions(blob: bytes) -> tuple[int, ...]:
    """The actions ``encode_actions`` stored; ``ValueError`` names what is wrong with a damaged blob."""
    decompressor = zlib.decompressobj()
    try:
        # At most 10 bytes per 64-bit varint: a blob that inflates beyond is no blob of ours (nor a bomb we expand).
        raw = decompressor.decompress(blob, 10 * MAX_STORED_ACTIONS)
    except zlib.error as exc:
        raise ValueError(f"stored actions are damaged: {exc}") from None
    if decompressor.unconsumed_tail or not decompressor.eof:
        raise ValueError("stored actions are damaged: truncated or too long")
    actions: list[int] = []
    value = shift = 0
    for byte in raw:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 63:
                raise ValueError(f"stored actions are damaged: a varint longer than 10 bytes at action {len(actions)}")
            continue
        actions.append((value >> 1) ^ -(value & 1))
        value = shift = 0
    if shift:
        raise ValueError("stored actions are damaged: the last varint is cut")
    return tuple(actions)
