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

from layersched.sim.baselines import BASELINES, Policy
from layersched.sim.env import ClusterEnv
from layersched.sim.episode import run_episode
from layersched.sim.episodes import Split, policy_seed
from layersched.sim.evalset.model import EvalJob, EvalSet
from layersched.sim.ordered_pool import Progress, map_ordered
from layersched.sim.replay import ReplayEnv
from layersched.sim.scoring import REFERENCE, ScenarioEpisodes, Score, pair_episodes, score
from layersched.sim.version import RULES_HASH, SIM_VERSION


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode's outcome, as stored and cached: the lab's metric plus the tail and the cloud share."""

    scenario: str
    episode: str
    split: Split
    mean_completion: float
    p95_completion: float
    cloud_share: float
    trace_hash: str


def baseline_bundle_id(name: str) -> str:
    """The stand-in for a bundle's SHA-256 that seeds a baseline's ``rng`` through ``policy_seed``."""
    return hashlib.sha256(f"layersched-baseline\0{name}".encode()).hexdigest()


def evaluate_policy(
    evalset: EvalSet, policy: Policy, *, bundle_id: str, split: Split | None = None
) -> list[EpisodeRecord]:
    """Run ``policy`` in-process on every episode (of one split); its rng is seeded by ``policy_seed``."""
    envs: dict[str, ClusterEnv] = {}
    hashes = _scenario_hashes(evalset)
    return [
        _run_job(
            envs.setdefault(job.scenario_name, ClusterEnv(job.scenario)),
            policy,
            job,
            job.episode.workload_rng(),
            policy_seed(bundle_id, hashes[job.scenario_name], job.episode.id),
        )
        for job in evalset.jobs(split)
    ]


def _scenario_hashes(evalset: EvalSet) -> dict[str, str]:
    """Each scenario's ``content_hash``, computed once (it serialises the whole catalog)."""
    return {sc.name: sc.scenario.content_hash for sc in evalset.scenarios}


def _run_job(env: ClusterEnv, policy: Policy, job: EvalJob, workload: random.Random, seed: int) -> EpisodeRecord:
    result = run_episode(env, policy, workload, random.Random(seed))
    m = result.metrics
    return EpisodeRecord(
        job.scenario_name,
        job.episode.id,
        job.episode.split,
        m.mean_completion,
        m.p95_completion,
        m.cloud_share,
        result.trace_hash,
    )


def _baselines_on_job(context: tuple[EvalSet, dict[str, str]], index: int) -> list[EpisodeRecord]:
    """Every baseline's record on the set's ``index``-th episode, in ``BASELINES`` order (one piece of the pool)."""
    evalset, hashes = context
    job = evalset.jobs()[index]
    env = ReplayEnv(job.scenario)
    workload = job.episode.workload_rng()  # drawn by the first baseline, replayed for the others
    return [
        _run_job(
            env, policy, job, workload, policy_seed(baseline_bundle_id(name), hashes[job.scenario_name], job.episode.id)
        )
        for name, policy in BASELINES.items()
    ]


def score_baselines(
    evalset: EvalSet,
    cache_dir: str | Path | None = None,
    *,
    workers: int = 1,
    progress: Progress | None = None,
) -> dict[str, list[EpisodeRecord]]:
    """Every baseline's episode records on every episode of ``evalset``, keyed by baseline name.

    Results are cached as JSON in ``cache_dir`` under the set's commitment and ``SIM_VERSION``; a cache
    written by other rules (``RULES_HASH``) is recomputed. Score them with ``layersched.sim.scoring`` against Greedy.
    Episodes are independent: ``workers`` processes share them (the records are the same for any number), and
    ``progress(done, total)`` hears of each finished episode; neither is called when the cache answers.
    """
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"baselines-{evalset.commitment}-{SIM_VERSION}.json"
        cached = _read_cache(path, evalset.commitment)
        if cached is not None:
            return cached
    context = (evalset, _scenario_hashes(evalset))
    per_job = map_ordered(_baselines_on_job, context, len(evalset.jobs()), workers=workers, progress=progress)
    out = {name: [records[k] for records in per_job] for k, name in enumerate(BASELINES)}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "sim_version": SIM_VERSION,
            "rules_hash": RULES_HASH,
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
    """A submission's records paired episode by episode with Greedy's (``reference``), ready for ``scoring``.

    Only the episodes of ``split`` count (both splits if None); a missing episode raises ``ValueError``.
    """
    wanted = {(job.scenario_name, job.episode.id) for job in evalset.jobs(split)}
    paired: list[ScenarioEpisodes] = pair_episodes(
        evalset.weights,
        {(r.scenario, r.episode): r.mean_completion for r in records if (r.scenario, r.episode) in wanted},
        {(r.scenario, r.episode): r.mean_completion for r in reference if (r.scenario, r.episode) in wanted},
    )
    return paired


def baseline_scores(
    evalset: EvalSet, cache_dir: str | Path | None = None, split: Split | None = None
) -> dict[str, Score]:
    """The reference rows of a leaderboard: each baseline's score (ratio to Greedy) on ``split``."""
    records = score_baselines(evalset, cache_dir)
    return {name: score(paired_scenarios(evalset, recs, records[REFERENCE], split)) for name, recs in records.items()}


def _read_cache(path: Path, commitment: str) -> dict[str, list[EpisodeRecord]] | None:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        payload.get("rules_hash") != RULES_HASH
        or payload.get("commitment") != commitment
        or set(payload.get("baselines", {})) != set(BASELINES)
    ):
        return None
    return {name: [EpisodeRecord(**r) for r in recs] for name, recs in payload["baselines"].items()}
