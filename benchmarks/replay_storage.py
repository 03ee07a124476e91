"""Storage of the schedules (issue 33): the bytes a database gains when an evaluation keeps the actions of its public
episodes, per episode and for a 150-episode set.

A set of ``--episodes`` seeded episodes of a track's public sample's first scenario is evaluated twice into two
fresh SQLite databases, as the worker records episodes (``record_episode_result``, a baseline as the policy): once
keeping what ``worker.replays.PublicEpisodes`` gives (the actions, the reference baseline's record and, the first
time, its run), once keeping nothing (``replay=None``, as for hidden episodes). The difference of the two files'
sizes is what keeping costs; the payload (the deflated actions, the reference's record as JSON) is printed beside.
A second evaluation of the same set adds no reference runs (they are kept once): its cost is printed too.

Run: ``python benchmarks/replay_storage.py [--track layers-v1] [--episodes 150]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from layersched.server import storage
from layersched.server.admin import upgrade_database
from layersched.server.config import Settings
from layersched.server.db import make_engine, make_sessionmaker
from layersched.sim.episodes import EpisodeSpec, policy_seed, trace_hash
from layersched.sim.evalset import EvalScenario, EvalSet, evalset_file, load_evalset, score_baselines
from layersched.sim.evalset.parse import sample_set_name
from layersched.sim.tracks import get_track
from layersched.worker.replays import PublicEpisodes

POLICY = {"layers-v1": "Random", "jobs-v1": "Random", "workflows-v1": "FCFS"}


def seeded_set(track: str, episodes: int) -> EvalSet:
    name = sample_set_name(track)
    assert name is not None
    first = load_evalset(evalset_file(name)).scenarios[0]
    specs = tuple(EpisodeSpec(f"seed{1000 + i}", seed=1000 + i) for i in range(episodes))
    return EvalSet(f"{track}-storage", (EvalScenario(first.name, 1.0, first.scenario, specs),), track=track)


def record(db: Path, cache: Path, evalset: EvalSet, runs: list[Any], *, keep: bool, evaluations: int) -> int:
    """Record ``evaluations`` evaluations of the runs into the fresh database ``db``; its file's size in bytes."""
    url = f"sqlite:///{db}"
    upgrade_database(settings=Settings(_env_file=None, database_url=url))  # type: ignore[call-arg]
    engine = make_engine(url)
    public = PublicEpisodes(evalset, cache)
    track = get_track(evalset.track)
    with make_sessionmaker(engine)() as session:
        storage.register_evalset(session=session, name=evalset.name, commitment="c" * 64, path="x", scenarios=[])
        for n in range(evaluations):
            user = storage.create_user(session=session, name=f"u{n}", email=f"u{n}@x.org")
            phase = storage.get_phase(session=session, name=storage.DEFAULT_PHASE)
            sha = hashlib.sha256(f"{n}".encode()).hexdigest()
            _made, evaluation = storage.create_submission(
                session=session,
                owner=user,
                name=f"s{n}",
                description="",
                bundle_sha256=sha,
                bundle_format="py",
                bundle_bytes=1,
                phase=phase,
            )
            for job, run in zip(evalset.jobs(), runs, strict=True):
                metrics = {s.name: float(getattr(run.metrics, s.name)) for s in track.metric_specs}
                kept = lambda trace: storage.trace_kept(session=session, trace_hash=trace)  # noqa: E731
                storage.record_episode_result(
                    session=session,
                    evaluation_id=evaluation.id,
                    scenario=job.scenario_name,
                    episode_id=job.episode.id,
                    split="public",
                    hidden=False,
                    status="ok",
                    metrics=metrics,
                    primary_value=metrics[track.primary_metric],
                    trace_hash=trace_hash(run.actions),
                    n_actions=len(run.actions),
                    replay=public.replay_input(job, tuple(run.actions), kept) if keep else None,
                )
    engine.dispose()
    return db.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--track", default="layers-v1")
    parser.add_argument("--episodes", type=int, default=150)
    args = parser.parse_args()
    evalset = seeded_set(args.track, args.episodes)
    track = get_track(args.track)
    scenario_hash = track.scenario_hash(evalset.scenarios[0].scenario)
    policy = track.baseline(POLICY[args.track])
    runs = [
        track.run_episode(
            job.scenario,
            policy,
            job.episode.workload_rng(),
            random.Random(policy_seed("p", scenario_hash, job.episode.id)),
        )
        for job in evalset.jobs()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        score_baselines(evalset, root / "baselines", workers=2)
        public = PublicEpisodes(evalset, root / "baselines")
        inputs = [public.replay_input(job, tuple(run.actions)) for job, run in zip(evalset.jobs(), runs, strict=True)]
        actions = sum(len(i.actions) for i in inputs if i is not None)
        references = sum(len(json.dumps(i.reference)) for i in inputs if i is not None)
        runs_kept = sum(len(i.reference_actions or b"") for i in inputs if i is not None)
        wire = len(json.dumps(inputs[0].scenario_wire)) if inputs[0] is not None else 0
        sizes = {}
        for evaluations in (1, 2):
            kept = record(
                root / f"keep{evaluations}.db", root / "baselines", evalset, runs, keep=True, evaluations=evaluations
            )
            none = record(
                root / f"none{evaluations}.db", root / "baselines", evalset, runs, keep=False, evaluations=evaluations
            )
            sizes[evaluations] = kept - none
    n = args.episodes
    decisions = sum(len(r.actions) for r in runs)
    print(f"{args.track}: {n} seeded episodes, {decisions / n:.0f} decisions each on average ({POLICY[args.track]})")
    print(
        f"  payload per episode: actions {actions / n:.0f} B deflated, reference's record {references / n:.0f} B "
        f"of JSON; once per episode of a set, the reference's run {runs_kept / n:.0f} B; once, the scenario {wire} B"
    )
    print(
        f"  SQLite file, keeping minus not keeping: first evaluation {sizes[1]} B ({sizes[1] / n:.0f} B per episode); "
        f"a second evaluation of the set adds {sizes[2] - sizes[1]} B ({(sizes[2] - sizes[1]) / n:.0f} B per episode)"
    )


if __name__ == "__main__":
    main()
