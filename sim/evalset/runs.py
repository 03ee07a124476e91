"""Running a policy in-process on a set's episodes, and the baselines' records, cached by commitment."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from layersched.sim.episodes import Split, policy_seed, trace_hash
from layersched.sim.evalset.model import EvalJob, EvalSet, find_track
from layersched.sim.ordered_pool import Progress, map_ordered
from layersched.sim.scoring import ScenarioEpisodes, Score, pair_episodes, score
from layersched.sim.tracks.interface import EpisodeRun, Policy, Track
from layersched.sim.version import SIM_VERSION


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode's outcome, as stored and cached: the track's metrics, its primary one, the trace's hash.

    Each metric reads as an attribute too (``record.mean_completion`` on the lab's track), as on the track's own
    metrics record.
    """

    scenario: str
    episode: str
    split: Split
    # Every ``Track.metric_specs`` name -> its value on this episode.
    metrics: dict[str, float]
    # The track's ``primary_metric``: what scores are ratios of.
    primary: float
    trace_hash: str

    def __getattr__(self, name: str) -> float:
        # Only called for names that are not fields; never for dunders (pickle and copy probe them before the
        # fields exist, and a lookup in `metrics` would recurse).
        if name.startswith("__") or name == "metrics":
            raise AttributeError(name)
        try:
            return self.metrics[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__!r} has no field or metric {name!r}") from None


def baseline_bundle_id(name: str) -> str:
    """The stand-in for a bundle's SHA-256 that seeds a baseline's ``rng`` through ``policy_seed``."""
    return hashlib.sha256(f"layersched-baseline\0{name}".encode()).hexdigest()


def evaluate_policy(
    evalset: EvalSet, policy: Policy, *, bundle_id: str, split: Split | None = None
) -> list[EpisodeRecord]:
    """Run ``policy`` in-process on every episode (of one split); its rng is seeded by ``policy_seed``."""
    track = find_track(evalset.track)
    hashes = _scenario_hashes(track, evalset)
    return [
        _record(
            track,
            job,
            track.run_episode(
                job.scenario,
                policy,
                job.episode.workload_rng(),
                random.Random(policy_seed(bundle_id, hashes[job.scenario_name], job.episode.id)),
            ),
        )
        for job in evalset.jobs(split)
    ]


def _scenario_hashes(track: Track, evalset: EvalSet) -> dict[str, str]:
    """Each scenario's hash, computed once (the lab's serialises the whole catalog)."""
    return {sc.name: track.scenario_hash(sc.scenario) for sc in evalset.scenarios}


def _record(track: Track, job: EvalJob, result: EpisodeRun) -> EpisodeRecord:
    m = result.metrics
    return EpisodeRecord(
        job.scenario_name,
        job.episode.id,
        job.episode.split,
        {spec.name: float(getattr(m, spec.name)) for spec in track.metric_specs},
        float(getattr(m, track.primary_metric)),
        trace_hash(result.actions),
    )


def _baselines_on_job(context: tuple[EvalSet, dict[str, str]], index: int) -> list[EpisodeRecord]:
    """Every baseline's record on the set's ``index``-th episode, in ``baseline_names`` order (one piece of the
    pool)."""
    evalset, hashes = context
    track = find_track(evalset.track)
    job = evalset.jobs()[index]
    policies = [
        (
            track.baseline(name),
            random.Random(policy_seed(baseline_bundle_id(name), hashes[job.scenario_name], job.episode.id)),
        )
        for name in track.baseline_names
    ]
    return _run_job(track, job, policies)


def _run_job(track: Track, job: EvalJob, policies: Sequence[tuple[Policy, random.Random]]) -> list[EpisodeRecord]:
    results = track.run_policies(job.scenario, policies, job.episode.workload_rng())
    return [_record(track, job, result) for result in results]


def score_baselines(
    evalset: EvalSet,
    cache_dir: str | Path | None = None,
    *,
    workers: int = 1,
    progress: Progress | None = None,
) -> dict[str, list[EpisodeRecord]]:
    """Every baseline's episode records on every episode of ``evalset``, keyed by baseline name.

    Results are cached as JSON in ``cache_dir`` under the set's commitment and ``SIM_VERSION``; a cache
    written by other rules (the track's ``rules_hash``) is recomputed. Score them with ``layersched.sim.scoring``
    against the track's ``reference_baseline``.
    Episodes are independent: ``workers`` processes share them (the records are the same for any number), and
    ``progress(done, total)`` hears of each finished episode; neither is called when the cache answers.
    """
    track = find_track(evalset.track)
    path = None
    if cache_dir is not None:
        # The commitment names the track (of any but the default one), so sets of two tracks never share a file.
        path = Path(cache_dir) / f"baselines-{evalset.commitment}-{SIM_VERSION}.json"
        cached = _read_cache(path, evalset.commitment, track)
        if cached is not None:
            return cached
    context = (evalset, _scenario_hashes(track, evalset))
    per_job = map_ordered(_baselines_on_job, context, len(evalset.jobs()), workers=workers, progress=progress)
    out = {name: [records[k] for records in per_job] for k, name in enumerate(track.baseline_names)}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "sim_version": SIM_VERSION,
            "rules_hash": track.rules_hash,
            "commitment": evalset.commitment,
            "baselines": {name: [dataclasses.asdict(r) for r in recs] for name, recs in out.items()},
        }
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # one per writer: two workers may fill the cache at once
        tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
        tmp.replace(path)  # atomic: a concurrent reader sees the old file or the whole new one
    return out


def paired_scenarios(
    evalset: EvalSet,
    records: Sequence[EpisodeRecord],
    reference: Sequence[EpisodeRecord],
    split: Split | None = None,
) -> list[ScenarioEpisodes]:
    """A submission's records paired episode by episode with the reference baseline's, ready for ``scoring``.

    Only the episodes of ``split`` count (both splits if None); a missing episode raises ``ValueError``.
    """
    wanted = {(job.scenario_name, job.episode.id) for job in evalset.jobs(split)}
    paired: list[ScenarioEpisodes] = pair_episodes(
        evalset.weights,
        {(r.scenario, r.episode): r.primary for r in records if (r.scenario, r.episode) in wanted},
        {(r.scenario, r.episode): r.primary for r in reference if (r.scenario, r.episode) in wanted},
    )
    return paired


def baseline_scores(
    evalset: EvalSet, cache_dir: str | Path | None = None, split: Split | None = None
) -> dict[str, Score]:
    """The reference rows of a leaderboard: each baseline's score (ratio to the track's reference) on ``split``."""
    records = score_baselines(evalset, cache_dir)
    reference = records[find_track(evalset.track).reference_baseline]
    return {name: score(paired_scenarios(evalset, recs, reference, split)) for name, recs in records.items()}


def _read_cache(path: Path, commitment: str, track: Track) -> dict[str, list[EpisodeRecord]] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        payload.get("rules_hash") != track.rules_hash
        or payload.get("commitment") != commitment
        or set(payload.get("baselines", {})) != set(track.baseline_names)
    ):
        return None
    try:
        return {name: [EpisodeRecord(**r) for r in recs] for name, recs in payload["baselines"].items()}
    except TypeError:  # records of an older layout (the lab's three metrics as fields): recompute
        return None
