"""The track interface is real: a track defined under tests/ only (``tests.toy_track``) runs in both sandboxes, and
nothing in worker/ knows it. Its episodes in a sandbox make exactly the actions and metrics of the in-process run."""

from __future__ import annotations

import io
import random
import tarfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from layersched.sim.episodes import EpisodeSpec, policy_seed
from layersched.sim.tracks import load_track_module
from layersched.sim.tracks.layers_v1.episode import trace_hash
from layersched.worker.sandbox.episode_process import seed_globals
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import EpisodeJob
from layersched.worker.sandbox.runner import open_sandbox
from tests.toy_track import ToyScenario

REPO = Path(__file__).resolve().parents[2]
TOY = load_track_module("tests.toy_track")
SCENARIO = ToyScenario(machines=3, jobs=12)
SCENARIO_HASH = TOY.scenario_hash(SCENARIO)
EPISODES = [EpisodeSpec(f"t{i}", seed=i) for i in range(3)]
# The image's site-packages (worker/sandbox/build_image.sh's SITE).
IMAGE_SITE = "/usr/local/lib/python3.11/dist-packages"

LEAST_LOADED = """
    def policy(loads, size, rng):
        return loads.index(min(loads))
"""
# Its view is a fresh list per decision: emptying it changes nothing it sees next.
VANDAL = """
    def policy(loads, size, rng):
        action = loads.index(min(loads))
        loads[:] = [0] * len(loads)
        return action
"""
OUT_OF_RANGE = """
    def policy(loads, size, rng):
        return len(loads)
"""


@pytest.fixture(scope="module")
def toy_image(sandbox_image: str) -> Iterator[str]:
    """The sandbox image plus the toy track's package: how an organiser ships a track defined outside layersched."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        dockerfile = f"FROM {sandbox_image}\nCOPY tests/ {IMAGE_SITE}/tests/\n".encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        for path in ("tests/__init__.py", "tests/toy_track/__init__.py"):
            tar.add(REPO / path, arcname=path)
    context.seek(0)
    client = docker.from_env()
    tag = "layersched-sandbox-toy:test"
    client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True)
    yield tag
    client.close()


@pytest.fixture(params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str | None]:
    if request.param == "process":
        monkeypatch.setenv("PYTHONPATH", str(REPO))  # the process sandbox's harness imports tests.toy_track
        return "process", None
    return "docker", request.getfixturevalue("toy_image")


def run(sandbox: tuple[str, str | None], tmp_path: Path, source: str):
    backend, image = sandbox
    bundle = tmp_path / "policy.py"
    bundle.write_text(textwrap.dedent(source))
    with open_sandbox(bundle, backend=backend, image=image, limits=SandboxLimits()) as session:  # type: ignore[arg-type]
        jobs = [
            EpisodeJob(
                "toy", SCENARIO, ep, policy_seed(session.bundle_sha256, TOY.scenario_hash(SCENARIO), ep.id), "toy-v1"
            )
            for ep in EPISODES
        ]
        return jobs, [session.run_episode(job) for job in jobs]


def in_process(job: EpisodeJob):
    seed_globals(job.policy_seed)
    return TOY.run_episode(
        SCENARIO, TOY.baseline("LeastLoaded"), job.episode.workload_rng(), random.Random(job.policy_seed)
    )


@pytest.mark.parametrize("source", [LEAST_LOADED, VANDAL], ids=["least-loaded", "vandal"])
def test_toy_episodes_in_a_sandbox_match_the_in_process_run(sandbox, tmp_path, source):
    jobs, outcomes = run(sandbox, tmp_path, source)
    for job, outcome in zip(jobs, outcomes, strict=True):
        expected = in_process(job)
        assert (outcome.status, outcome.message) == ("ok", "")
        assert outcome.trace_hash == trace_hash(expected.actions)
        assert outcome.n_actions == SCENARIO.jobs
        assert outcome.metrics == expected.metrics
    assert {o.metrics.makespan for o in outcomes} != {None}


def test_a_toy_action_out_of_range_is_the_tracks_invalid_action(sandbox, tmp_path):
    _, outcomes = run(sandbox, tmp_path, OUT_OF_RANGE)
    for outcome in outcomes:
        assert outcome.status == "invalid_action"
        assert outcome.message == "step 0: machine 3 is not one of 0..2"
        assert (outcome.step, outcome.n_actions, outcome.metrics) == (0, 0, None)


FLOAT_REPLY = """
    def policy(loads, size, rng):
        return 0.5
"""


def test_a_reply_of_the_wrong_type_is_said_in_the_tracks_words(sandbox, tmp_path):
    """The wire carries ints only; the message names what this track's replies are, not the lab's node index."""
    _, outcomes = run(sandbox, tmp_path, FLOAT_REPLY)
    for outcome in outcomes:
        assert (outcome.status, outcome.step) == ("invalid_action", 0)
        assert outcome.message == "step 0: policy returned 0.5 of type float, expected an int machine index"


def one_process_episode(tmp_path: Path, track_id: str):
    """LeastLoaded's first toy episode in the process sandbox, on the toy scenario of track ``track_id``."""
    bundle = tmp_path / "policy.py"
    bundle.write_text(textwrap.dedent(LEAST_LOADED))
    with open_sandbox(bundle, backend="process") as session:
        return session.run_episode(EpisodeJob("toy", SCENARIO, EPISODES[0], 1, track_id))


def test_a_track_that_fails_on_a_reply_is_the_services_fault(monkeypatch, tmp_path):
    load_track_module("tests.toy_track.broken")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    outcome = one_process_episode(tmp_path, "toy-broken-v1")
    assert outcome.status == "infrastructure_error"
    assert outcome.message == "track toy-broken-v1: step 2: the check failed: KeyError('a bug in the track')"


def test_a_sandbox_without_the_tracks_module_is_the_services_fault(monkeypatch, tmp_path):
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the process sandbox's harness cannot import tests.toy_track
    outcome = one_process_episode(tmp_path, "toy-v1")
    assert outcome.status == "infrastructure_error"
    assert outcome.message.startswith(
        "the sandbox cannot build scenario 'toy' of track 'toy-v1' (module 'tests.toy_track'): TrackError("
    )


def test_a_track_whose_metrics_fail_is_the_services_fault(monkeypatch, tmp_path):
    load_track_module("tests.toy_track.unmeasurable")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    outcome = one_process_episode(tmp_path, "toy-unmeasurable-v1")
    assert outcome.status == "infrastructure_error"
    assert outcome.message == "track toy-unmeasurable-v1: the metrics failed: ZeroDivisionError('a bug in the metrics')"


# Red team, 2026-12-01: the harness imported a track's module when the first scenario frame came, after the first
# episode process had imported the policy, with its working directory (the policy's to write) first on sys.path.
PLANT = """
    import os

    # The harness's working directory (inherited): /tmp in a container, the channel directory in the process sandbox.
    os.makedirs(os.path.join(os.getcwd(), "tests", "toy_track"), exist_ok=True)
    open(os.path.join(os.getcwd(), "tests", "__init__.py"), "w").close()
    with open(os.path.join(os.getcwd(), "tests", "toy_track", "__init__.py"), "w") as planted:
        planted.write("raise RuntimeError('participant code running as the harness')")

    def policy(loads, size, rng):
        return loads.index(min(loads))
"""
# An honest bundle that happens to hold a package of the track module's name.
HOMONYM = {
    "policy.py": LEAST_LOADED,
    "tests/__init__.py": "",
    "tests/toy_track/__init__.py": "raise RuntimeError('the bundle's own tests package, never the track')",
}


def test_a_module_planted_where_the_harness_starts_is_never_imported_as_the_track(sandbox, tmp_path):
    jobs, outcomes = run(sandbox, tmp_path, PLANT)
    for job, outcome in zip(jobs, outcomes, strict=True):
        assert (outcome.status, outcome.message) == ("ok", "")
        assert outcome.metrics == in_process(job).metrics


def test_a_bundle_holding_a_package_of_the_tracks_name_plays_as_any_other(sandbox, tmp_path):
    backend, image = sandbox
    bundle = tmp_path / "bundle"
    for name, text in HOMONYM.items():
        (bundle / name).parent.mkdir(parents=True, exist_ok=True)
        (bundle / name).write_text(textwrap.dedent(text))
    with open_sandbox(bundle, backend=backend, image=image, limits=SandboxLimits()) as session:  # type: ignore[arg-type]
        job = EpisodeJob(
            "toy", SCENARIO, EPISODES[0], policy_seed(session.bundle_sha256, SCENARIO_HASH, "t0"), "toy-v1"
        )
        outcome = session.run_episode(job)
    assert (outcome.status, outcome.message) == ("ok", "")
    assert outcome.metrics == in_process(job).metrics
