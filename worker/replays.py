"""Which episodes of an evaluation keep their accepted actions, and what is kept with them (issue 33).

Only an episode whose workload anyone can regenerate (``schedules.public_workload``: seeded, in a scenario without
a secret key) keeps its actions, the scenario's wire form and its seed, from which the server replays its schedule;
with them goes the reference baseline's record on the same episode (the submission page's per-episode table). A
keyed episode keeps none, whatever its split: its schedule would show the hidden workload.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layersched.server.storage import ReplayInput
from layersched.sim.episode_report import reference_actions
from layersched.sim.episodes import trace_hash
from layersched.sim.evalset import EvalJob, EvalSet, score_baselines
from layersched.sim.tracks import get_track
from layersched.sim.tracks.schedules import encode_actions, public_workload

log = logging.getLogger(__name__)


class PublicEpisodes:
    """``replay_input(job, actions)`` for each episode of ``evalset`` an evaluation records."""

    def __init__(self, evalset: EvalSet, cache_dir: Path) -> None:
        self.evalset = evalset
        self.track = get_track(evalset.track)
        self._cache_dir = cache_dir
        self._scenarios: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> (hash, wire form)
        self._references: dict[tuple[str, str], dict[str, Any]] | None = None

    def replay_input(
        self, job: EvalJob, actions: tuple[int, ...], kept: Callable[[str], bool] = lambda _trace: False
    ) -> ReplayInput | None:
        """What to keep of ``job``'s episode played with ``actions`` (None: its workload is hidden, or its actions
        exceed what is kept per episode). ``kept(trace_hash)``: whether the reference baseline's run of the episode
        is kept already; if not, it is run here (once for every evaluation of the set), so that no page waits for it."""
        entry = self.evalset.scenario(job.scenario_name)
        if not public_workload(self.track, entry, job.episode) or job.episode.seed is None:
            return None
        try:
            blob = encode_actions(actions)
        except ValueError as exc:
            log.warning("%s/%s keeps no actions: %s", job.scenario_name, job.episode.id, exc)
            return None
        if job.scenario_name not in self._scenarios:
            self._scenarios[job.scenario_name] = (
                self.track.scenario_hash(entry.scenario),
                self.track.scenario_to_wire(entry.scenario),
            )
        scenario_hash, wire = self._scenarios[job.scenario_name]
        reference = self._reference(job)
        return ReplayInput(
            track=self.track.id,
            scenario_hash=scenario_hash,
            scenario_wire=wire,
            seed=job.episode.seed,
            actions=blob,
            reference=reference,
            reference_actions=None if reference is None or kept(reference["trace_hash"]) else self._run(job, reference),
        )

    def _run(self, job: EvalJob, reference: dict[str, Any]) -> bytes | None:
        """The reference baseline's actions on ``job``'s seeded episode, encoded; None if they are not the run the
        set's reference rows recorded (then the page runs the baseline itself, and checks the same)."""
        assert job.episode.seed is not None
        actions = reference_actions(self.track, job.scenario, job.episode.seed, job.episode.id, reference["baseline"])
        if trace_hash(actions) != reference["trace_hash"]:
            log.warning("%s/%s: the reference run is not the recorded one", job.scenario_name, job.episode.id)
            return None
        return encode_actions(actions)

    def _reference(self, job: EvalJob) -> dict[str, Any] | None:
        if self._references is None:
            # The set's baselines are scored when it is registered: this reads their cache (the evaluation's end
            # reads it too, for the scores).
            name = self.track.reference_baseline
            records = score_baselines(self.evalset, self._cache_dir)[name]
            self._references = {
                (r.scenario, r.episode): {
                    "baseline": name,
                    "metrics": r.metrics,
                    "primary": r.primary,
                    "trace_hash": r.trace_hash,
                }
                for r in records
            }
        return self._references.get((job.scenario_name, job.episode.id))
