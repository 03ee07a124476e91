"""``layersched validate``: the policy runs in a child process on the public sample episodes."""

from __future__ import annotations

import contextlib
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from layersched.sdk.checks import limits_text
from layersched.sdk.cli import main
from layersched.sdk.localrun import RunRequest, run_in_subprocess
from layersched.sdk.validate import POLICY_ROW, SERVER_LIMITS, ValidationReport, _interpret, validate
from tests.sdk.conftest import needs_server
from tests.worker.sandbox_contract import VANDAL, VANDALISM

README = Path(__file__).resolve().parents[2] / "README.md"

GREEDY = """\
import numpy as np

def policy(env, task, rng):
    total = np.where(env.mask(task), env.estimate_all(task).total, np.inf)
    return int(np.argmin(total))
"""


def write(tmp_path: Path, source: str, name: str = "policy.py") -> Path:
    path = tmp_path / name
    path.write_text(source)
    return path


def errors(report: object) -> list[str]:
    return [f.message for f in report.findings if f.level == "error"]  # type: ignore[attr-defined]


def warnings_(report: object) -> list[str]:
    return [f.message for f in report.findings if f.level == "warning"]  # type: ignore[attr-defined]


def test_a_greedy_policy_scores_like_greedy(tmp_path: Path) -> None:
    report = validate(write(tmp_path, GREEDY), max_episodes=2)
    assert report.ok, report.findings
    assert warnings_(report) == []
    names = [row.name for row in report.rows]
    assert set(names) == {POLICY_ROW, "Random", "LeastLoaded", "Kube", "Dep", "LRS", "Greedy"}
    assert report.score == pytest.approx(1.0, abs=0.01)
    assert [e["status"] for e in report.episodes] == ["ok", "ok"]


def test_output_of_the_policy_does_not_disturb_the_run(tmp_path: Path) -> None:
    source = GREEDY.replace("def policy(env, task, rng):\n", "def policy(env, task, rng):\n    print('thinking')\n")
    source = "import sys\nprint('importing', file=sys.stderr)\n" + source
    report = validate(write(tmp_path, source), max_episodes=1)
    assert report.ok, report.findings
    assert "thinking" in report.stderr_tail and "importing" in report.stderr_tail


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "raise RuntimeError('no GPU here')\ndef policy(env, task, rng):\n    return 0\n",
            "importing the policy failed: RuntimeError: no GPU here",
        ),
        ("import json\npolicy = json.loads('3')\n", "policy must be a function policy(env, task, rng) -> int, got 3"),
        ("def policy(env, task, rng):\n    return 99\n", "step 0: policy returned node 99, outside 0..9"),
        ("def policy(env, task, rng):\n    return 1 / 0\n", "policy raised ZeroDivisionError: division by zero"),
        (
            "import numpy as np\ndef policy(env, task, rng):\n"
            "    return -1 if len(env.completion) == 100 else int(np.argmax(env.mask(task)))\n",
            "episode lab-300/seed0: invalid_action: step 100: policy returned node -1, outside 0..9",
        ),
        (
            "import numpy as np\ndef policy(env, task, rng):\n"
            "    if len(env.completion) == 50:\n        {}['missing']\n    return int(np.argmax(env.mask(task)))\n",
            "episode lab-300/seed0: crash: step 50: policy raised an exception: KeyError: 'missing'",
        ),
    ],
    ids=["import-error", "not-callable", "out-of-range", "raises-at-once", "invalid-later", "crash-later"],
)
def test_failures_are_named(tmp_path: Path, source: str, message: str) -> None:
    report = validate(write(tmp_path, source), max_episodes=1)
    assert not report.ok
    assert errors(report)[0] == message
    assert report.rows == []


def test_a_decision_over_the_deadline(tmp_path: Path) -> None:
    source = GREEDY.replace(
        "    total =", "    if len(env.completion) == 10:\n        import time; time.sleep(0.1)\n    total ="
    )
    report = validate(write(tmp_path, source), max_episodes=1, deadline_s=0.05)
    assert not report.ok
    first, second = errors(report)
    assert first == "episode lab-300/seed0: timeout: step 10: no action within the per-decision deadline of 0.05 s"
    assert second.startswith("decision time: mean ")
    assert second.endswith("(deadline 0.05 s): over the deadline, the server will stop the episode")


def test_without_the_worker_package_the_child_runs_the_episodes(tmp_path: Path) -> None:
    report = validate(write(tmp_path, GREEDY), max_episodes=1, use_worker_sandbox=False)
    assert report.ok, report.findings
    assert report.runner == "a local process (layersched.worker is not installed)"
    assert report.score == pytest.approx(1.0, abs=0.01)
    source = GREEDY.replace(
        "    total =", "    if len(env.completion) == 10:\n        import time; time.sleep(0.1)\n    total ="
    )
    report = validate(write(tmp_path, source), max_episodes=1, deadline_s=0.05, use_worker_sandbox=False)
    assert errors(report)[0] == (
        "episode lab-300/seed0: timeout: step 10: no action within the per-decision deadline of 0.05 s"
    )


GREEDY_BASELINE = (
    "from layersched.sim.tracks.layers_v1.baselines import get_baseline\n\npolicy = get_baseline('Greedy')\n"
)


@pytest.mark.parametrize("use_worker_sandbox", [True, False], ids=["worker-sandbox", "child-only"])
def test_a_policy_that_vandalises_its_view_plays_greedys_actions(tmp_path: Path, use_worker_sandbox: bool) -> None:
    """Issue 17 item 5 in validate: each decision sees the truth, whatever the policy did to its view before."""
    # The sandbox contract's vandal: Greedy, then every node's slots and download_free zeroed in its view, not undone.
    vandal = textwrap.dedent(VANDAL.format(change=VANDALISM["zeroes-slots-and-download-free"]))
    greedy = validate(
        write(tmp_path, GREEDY_BASELINE, "greedy.py"), max_episodes=2, use_worker_sandbox=use_worker_sandbox
    )
    report = validate(write(tmp_path, vandal, "vandal.py"), max_episodes=2, use_worker_sandbox=use_worker_sandbox)
    assert report.ok and greedy.ok, (report.findings, greedy.findings)
    assert [e["trace_hash"] for e in report.episodes] == [e["trace_hash"] for e in greedy.episodes]
    assert [e["mean_completion"] for e in report.episodes] == [e["mean_completion"] for e in greedy.episodes]
    assert report.score == greedy.score == 1.0


def test_a_decision_close_to_the_deadline_is_a_warning(tmp_path: Path) -> None:
    source = GREEDY.replace(
        "    total =", "    if len(env.completion) == 10:\n        import time; time.sleep(0.3)\n    total ="
    )
    report = validate(write(tmp_path, source), max_episodes=1, deadline_s=0.5)
    assert report.ok
    assert warnings_(report)[0].endswith(
        "(deadline 0.5 s): close to the deadline; the sandbox has a single CPU thread and may be slower"
    )


def test_a_policy_that_does_not_reproduce_its_actions_is_warned(tmp_path: Path) -> None:
    source = (
        "import os\nimport numpy as np\n\ndef policy(env, task, rng):\n"
        "    feasible = np.flatnonzero(env.mask(task))\n    return int(feasible[os.urandom(1)[0] % len(feasible)])\n"
    )
    report = validate(write(tmp_path, source), max_episodes=1)
    assert report.ok
    assert warnings_(report) == [
        "episode seed0 run twice with the same seeds gave different actions: the policy depends on something "
        "besides (env, task, rng) and the seeded generators (the clock, files, unseeded randomness); audits will "
        "report a mismatch"
    ]


def test_cli_validate_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GREEDY, "greedy.py")
    assert main(["validate", str(path), "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert (
        "score on 1 public episode of 'sample' (ratio to Greedy, lower is better), "
        "run in the worker's sandbox harness (process backend):" in out
    )
    assert "\n->your policy " in out
    assert out.endswith(f"{path}: ready to submit\n")


def test_cli_validate_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "def policy(env, task, rng):\n    return (\n")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert out == (
        f"  ok    bundle: 1 file, 41 B (upload 41 B); limits: {limits_text()}\n"
        "  FAIL  policy.py:2: syntax error: '(' was never closed\n\n"
        f"{path}: 1 problem to fix before submitting\n"
    )


def test_cli_validate_static_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "try:\n    import pandas\nexcept ImportError:\n    pass\n" + GREEDY)
    assert main(["validate", str(path), "--static"]) == 0
    out = capsys.readouterr().out
    assert "  warn  policy.py:2: imports 'pandas' inside try/except ImportError: the sandbox does not have it" in out
    assert out.endswith(f"{path}: ready to submit, 1 warning\n")
    path.write_text("import pandas\n" + GREEDY)  # unguarded: the server would fail it as import_error
    assert main(["validate", str(path), "--static"]) == 1
    out = capsys.readouterr().out
    assert "  FAIL  policy.py:1: imports 'pandas', which the sandbox does not have: the server would fail" in out
    assert out.endswith(f"{path}: 1 problem to fix before submitting\n")


# ---------------------------------------------------------------------------------- the server's deadline and budgets

SLOW_FROM_STEP_40 = GREEDY.replace(
    "    total =", "    if len(env.completion) >= 40:\n        import time; time.sleep(5)\n    total ="
)


@needs_server
def test_the_default_deadline_is_the_servers(capsys: pytest.CaptureFixture[str]) -> None:
    from layersched.server.config import Settings
    from layersched.worker.sandbox.limits import SandboxLimits

    server = Settings(_env_file=None)  # type: ignore[call-arg]
    assert inspect.signature(validate).parameters["deadline_s"].default == server.decision_seconds
    assert SandboxLimits().decision_seconds == server.decision_seconds
    limits = SERVER_LIMITS
    assert (limits.episode_seconds, limits.startup_seconds, limits.submission_seconds) == (
        server.episode_seconds,
        server.startup_seconds,
        server.submission_seconds,
    )
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    assert f"(default {server.decision_seconds:g}, the server's)" in capsys.readouterr().out
    assert f"Each decision has {server.decision_seconds:g} s" in README.read_text()


# The guard is far below the minutes of slow decisions a run would take without the deadline; not a measurement.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("use_worker_sandbox", [True, False], ids=["worker-sandbox", "child-only"])
def test_a_slow_policy_gets_the_servers_timeout(tmp_path: Path, use_worker_sandbox: bool) -> None:
    report = validate(write(tmp_path, SLOW_FROM_STEP_40), use_worker_sandbox=use_worker_sandbox)
    assert not report.ok
    first, second = errors(report)
    assert first == "episode lab-300/seed0: timeout: step 40: no action within the per-decision deadline of 2 s"
    assert second.endswith("(deadline 2 s): over the deadline, the server will stop the episode")
    assert report.rows == []


@pytest.mark.timeout(120)
def test_the_timeout_reads_as_the_servers_sandbox_reports_it(tmp_path: Path) -> None:
    from layersched.sim.episodes import policy_seed
    from layersched.sim.evalset import SAMPLE_PATH, load_evalset
    from layersched.worker.sandbox.outcomes import EpisodeJob
    from layersched.worker.sandbox.runner import open_sandbox

    path = write(tmp_path, SLOW_FROM_STEP_40)
    report = validate(path, max_episodes=1)
    job = load_evalset(SAMPLE_PATH).jobs("public")[0]
    seed = policy_seed(report.bundle.sha256, job.scenario.content_hash, job.episode.id)  # type: ignore[union-attr]
    # The worker's own sandbox with the server's default limits, as an evaluation runs the same bundle.
    with contextlib.closing(open_sandbox(path, backend="process", allow_process_for_hidden=True)) as session:
        outcome = session.run_episode(EpisodeJob(job.scenario_name, job.scenario, job.episode, seed))
    assert errors(report)[0] == f"episode {job.scenario_name}/{job.episode.id}: {outcome.status}: {outcome.message}"


@pytest.mark.timeout(120)
def test_a_slow_contract_check_gets_the_servers_timeout(tmp_path: Path) -> None:
    source = GREEDY.replace("    total =", "    import time; time.sleep(5)\n    total =")
    report = validate(write(tmp_path, source))
    assert errors(report)[0] == "the contract check: timeout: step 0: no action within the per-decision deadline of 2 s"


def test_progress_moves_while_an_episode_runs(tmp_path: Path) -> None:
    source = GREEDY.replace(
        "    total =", "    if len(env.completion) == 10:\n        import time; time.sleep(2)\n    total ="
    )
    seen: list[dict[str, Any]] = []
    report = validate(write(tmp_path, source), max_episodes=1, deadline_s=10, on_message=seen.append)
    assert report.ok, report.findings
    kinds = [m["kind"] for m in seen]
    # In the child: the step of the timed first episode; in the worker's harness: the seconds of each episode.
    child = [m for m in seen[: kinds.index("timing")] if m["kind"] == "progress" and m["where"].startswith("episode")]
    assert {"kind": "progress", "where": "episode lab-300/seed0", "step": 10, "decisions": 300} in child
    harness = [m for m in seen[kinds.index("timing") : kinds.index("episode")] if m["kind"] == "progress"]
    assert harness and {m["where"] for m in harness} == {"episode lab-300/seed0"}
    assert all(m["seconds"] > 0 for m in harness)


def test_the_cli_shows_the_running_episode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(write(tmp_path, SLOW_FROM_STEP_40)), "--episodes", "1"]) == 1
    captured = capsys.readouterr()
    assert "episodes [" in captured.err and "  episode lab-300/seed0 step " in captured.err
    assert "  FAIL  episode lab-300/seed0: timeout: step 40: no action within the per-decision deadline of 2 s\n" in (
        captured.out
    )


def test_an_import_over_the_startup_budget_is_ended(tmp_path: Path) -> None:
    staged = tmp_path / "bundle"
    staged.mkdir()
    (staged / "policy.py").write_text("import time\ntime.sleep(600)\n")
    (tmp_path / "work").mkdir()
    request = RunRequest(
        entry_point=str(staged / "policy.py"),
        bundle_root=str(staged),
        bundle_sha256="0" * 64,
        evalset_path=None,
        deadline_s=2.0,
        episode_s=300.0,
        startup_s=1.0,
        submission_s=1800.0,
    )
    outcome = run_in_subprocess(request, workdir=tmp_path / "work")
    assert outcome.killed_why == "policy import did not finish within 1 s"
    assert "imported" not in [m["kind"] for m in outcome.messages]


@pytest.mark.slow
def test_a_policy_that_starves_the_watchdog_is_ended_by_the_parent(tmp_path: Path) -> None:
    # sum() over a huge range runs in C and never lets another thread of its process run.
    source = GREEDY.replace("    total =", "    if len(env.completion) >= 40:\n        sum(range(10**13))\n    total =")
    report = validate(write(tmp_path, source), max_episodes=1, deadline_s=0.5)
    (only,) = errors(report)
    assert re.fullmatch(
        r"timeout: no action within the per-decision deadline of 0\.5 s \(its process stopped answering and was "
        r"ended after \d+ s\)",
        only,
    )


# ---------------------------------------------------------------------------------- what lies beside a bundle


def test_a_module_beside_a_single_file_does_not_shadow_the_cli(tmp_path: Path) -> None:
    write(tmp_path, "raise ImportError('the folder shadowed the CLI')\n", "string.py")
    write(tmp_path, "raise ImportError('the folder shadowed the CLI')\n", "json.py")
    report = validate(write(tmp_path, GREEDY, "greedy.py"), max_episodes=1)
    assert report.ok, report.findings
    assert [e["status"] for e in report.episodes] == ["ok"]


def test_a_single_file_that_imports_a_sibling_gets_one_line(tmp_path: Path) -> None:
    write(tmp_path, "def best(env, task):\n    return int(env.mask(task).argmax())\n", "helper.py")
    path = write(
        tmp_path, "import helper\n\ndef policy(env, task, rng):\n    return helper.best(env, task)\n", "mine.py"
    )
    report = validate(path, max_episodes=1)
    assert errors(report) == [
        f"mine.py:1: imports 'helper' from {tmp_path / 'helper.py'}, which is not in the bundle: a single .py file "
        f"is bundled alone; submit the directory instead, with this file as its policy.py"
    ]
    assert [f.level for f in report.findings] == ["ok", "ok", "error"]  # bundle, entry point: nothing was run


def test_a_single_file_that_imports_a_sibling_at_run_time_is_told_so(tmp_path: Path) -> None:
    write(tmp_path, "def best(env, task):\n    return int(env.mask(task).argmax())\n", "helper.py")
    source = (
        "import importlib\nhelper = importlib.import_module('helper')\n\ndef policy(env, task, rng):\n    return 0\n"
    )
    report = validate(write(tmp_path, source, "mine.py"), max_episodes=1)
    assert errors(report) == ["importing the policy failed: ModuleNotFoundError: No module named 'helper'"]


def test_the_harness_import_failure_reads_as_one_sentence(tmp_path: Path) -> None:
    report = ValidationReport(tmp_path)
    message = (
        "policy import failed:\nTraceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'x'"
    )
    episode = {"kind": "episode", "scenario": "lab-300", "episode": "seed0", "status": "import_error"}
    _interpret(report, [{**episode, "message": message}], 2.0)
    assert errors(report) == [
        "episode lab-300/seed0: import_error: policy import failed: ModuleNotFoundError: No module named 'x'"
    ]


# ---------------------------------------------------------------------------------- the public sample set

REPO = README.parent


def test_the_public_sample_ships_in_the_package(tmp_path: Path) -> None:
    """What a ``pip install`` gets: setuptools' own copy of the packages with their package data."""
    from layersched.sim.evalset import SAMPLE_PATH, load_evalset

    command = [sys.executable, "-c", "from setuptools import setup; setup()", "build_py", "--build-lib", str(tmp_path)]
    subprocess.run(command, cwd=REPO, check=True, capture_output=True)
    shipped = tmp_path / "layersched" / "sim" / "data" / "sample.toml"
    assert shipped.read_bytes() == SAMPLE_PATH.read_bytes() == (REPO / "hidden_seeds" / "sample.toml").read_bytes()
    assert load_evalset(shipped).commitment == load_evalset(REPO / "hidden_seeds" / "sample.toml").commitment


@pytest.mark.parametrize(
    "evalset", ["sample", str(REPO / "hidden_seeds" / "sample.toml")], ids=["built-in-name", "path"]
)
def test_cli_validate_takes_a_built_in_name_or_a_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], evalset: str
) -> None:
    path = write(tmp_path, GREEDY, "greedy.py")
    assert main(["validate", str(path), "--evalset", evalset, "--episodes", "1"]) == 0
    assert "score on 1 public episode of 'sample' " in capsys.readouterr().out


def test_cli_validate_names_an_unknown_evalset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GREEDY, "greedy.py")
    assert main(["validate", str(path), "--evalset", "hidden_seeds/nope.toml"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: no evaluation set 'hidden_seeds/nope.toml': not a file, and not a built-in set "
        "(jobs-sample, sample, workflows-sample)"
    )


@needs_server
@pytest.mark.postgres
def test_validates_baselines_are_the_public_boards_rows(tmp_path: Path) -> None:
    """The server registers its default set as ``layersched serve`` does; validate's reference rows are its rows."""
    from layersched.server import storage
    from layersched.server.admin import upgrade_database
    from layersched.server.config import Settings
    from layersched.server.db import make_engine, make_sessionmaker, session_scope
    from layersched.sim.evalset import SAMPLE_PATH, load_evalset
    from layersched.worker.evalsets import register_and_score
    from tests.server.conftest import PG_URL, create_pg_database, drop_pg_database

    name = create_pg_database()
    try:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=PG_URL.format(name=name), baseline_cache_dir=tmp_path / "baselines"
        )
        assert settings.evalset_path.resolve() == SAMPLE_PATH
        upgrade_database(settings=settings)
        register_and_score(path=settings.evalset_path, settings=settings)
        engine = make_engine(settings.database_url)
        try:
            with session_scope(make_sessionmaker(engine)) as session:
                board = {
                    row.baseline: row.score_public["overall"]
                    for row in storage.list_baseline_results(
                        session=session, evalset_commitment=load_evalset(SAMPLE_PATH).commitment
                    )
                }
        finally:
            engine.dispose()
    finally:
        drop_pg_database(name)
    report = validate(write(tmp_path, GREEDY))
    assert report.ok, report.findings
    local = {row.name: row.score for row in report.rows if row.name != POLICY_ROW}
    assert local == pytest.approx(board, rel=1e-12)
    assert set(local) == {"Random", "LeastLoaded", "Kube", "Dep", "LRS", "Greedy"}


# ---------------------------------------------------------------------------------- what the track decides


def test_the_rows_are_the_tracks_baselines_scored_against_its_reference(tmp_path: Path) -> None:
    """Baselines, reference and metric come from the set's track: here layers-v1 with LRS as reference and the
    95th percentile as primary metric, as a track that chose them would have."""
    import random

    from layersched.sdk.validate import _score_rows, format_report
    from layersched.sim.episodes import policy_seed
    from layersched.sim.evalset import SAMPLE_PATH, baseline_bundle_id, load_evalset
    from layersched.sim.tracks.layers_v1 import LayersTrack

    class TailTrack(LayersTrack):
        baseline_names = ("Greedy", "LRS")
        reference_baseline = "LRS"
        primary_metric = "p95_completion"

    track = TailTrack()
    evalset = load_evalset(SAMPLE_PATH)
    jobs = evalset.jobs("public")

    def p95(name: str) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for job in jobs:
            seed = policy_seed(baseline_bundle_id(name), job.scenario.content_hash, job.episode.id)
            policy, rng = track.baseline(name), random.Random(seed)
            result = track.run_episode(job.scenario, policy, job.episode.workload_rng(), rng)
            out.setdefault(job.scenario_name, []).append(result.metrics.p95_completion)
        return out

    greedy, lrs = p95("Greedy"), p95("LRS")
    mine = [  # the policy's episodes as the child reports them: Greedy's tail, 10% longer
        {"scenario": job.scenario_name, "episode": job.episode.id, "p95_completion": 1.1 * value}
        for job, value in zip(jobs, [v for sc in greedy.values() for v in sc], strict=True)
    ]

    class AsTheServer(TailTrack):  # which plays its baselines together on each drawn episode
        def run_episode(self, *args: Any) -> Any:
            raise AssertionError("baselines are scored with run_policies, as layersched.sim.evalset.runs does")

    rows = {row.name: row for row in _score_rows(AsTheServer(), jobs, mine, evalset.weights)}
    assert set(rows) == {"Greedy", "LRS", POLICY_ROW}
    assert rows["LRS"].score == 1.0
    for sc in evalset.weights:
        assert rows["Greedy"].metric[sc] == pytest.approx(sum(greedy[sc]) / len(greedy[sc]), rel=1e-12)
        assert rows["Greedy"].ratio[sc] == pytest.approx(sum(greedy[sc]) / sum(lrs[sc]), rel=1e-12)
        assert rows[POLICY_ROW].ratio[sc] == pytest.approx(1.1 * rows["Greedy"].ratio[sc], rel=1e-12)
    report = ValidationReport(tmp_path, rows=list(rows.values()), evalset_name="sample", track=track)
    report.episodes = mine
    assert "(ratio to LRS, lower is better)" in format_report(report)


@pytest.mark.parametrize("module", ["localrun", "validate"])
def test_validate_knows_no_problem_but_through_the_track(module: str) -> None:
    """Nothing of the lab's simulator, baselines or scenarios is imported or named: it all comes from the track
    (``get_track(evalset.track)``). The action trace's hash is shared by every track (actions are ints)."""
    import ast

    import layersched.sdk

    source = (Path(layersched.sdk.__file__).parent / f"{module}.py").read_text()
    lab = {"env", "baselines", "scenario", "workload", "view", "gym_env", "replay", "catalog", "tracks.layers_v1"}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            name = node.module.removeprefix("layersched.sim.")
            if name in lab or (name == "episode" and [a.name for a in node.names] != ["trace_hash"]):
                found.append(f"from {node.module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.removeprefix("layersched.sim.") in lab]
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name in {"ClusterEnv", "BASELINES", "content_hash", "mean_completion"}:
                found.append(name)
    assert found == []


@pytest.mark.parametrize("change", ["pass", *VANDALISM.values()], ids=["clean", *VANDALISM])
def test_an_episode_played_as_the_sandbox_plays_it_is_greedys(change: str) -> None:
    """``play_episode`` (the track's simulator and replica) gives a clean Greedy the in-process run's actions and
    metrics, and every vandal of the sandbox contract the same: whatever it did to its view, it sees the truth."""
    import random

    from layersched.sdk.localrun import _Sides
    from layersched.sim.evalset import SAMPLE_PATH, load_evalset
    from layersched.sim.tracks import get_track
    from layersched.sim.tracks.layers_v1.episode import trace_hash
    from layersched.sim.tracks.play import play_episode

    evalset = load_evalset(SAMPLE_PATH)
    track = get_track(evalset.track)
    greedy = track.baseline(track.reference_baseline)
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(VANDAL.format(change=change)), namespace)  # the sandbox contract's own source
    sides = _Sides(track)
    for job in evalset.jobs("public"):
        expected = track.run_episode(job.scenario, greedy, job.episode.workload_rng(), random.Random(7))
        simulator, replica = sides.of(job.scenario, job.scenario_name)
        actions, metrics = play_episode(
            simulator, replica, namespace["policy"], job.episode.workload_rng(), random.Random(7)
        )
        assert trace_hash(actions) == trace_hash(expected.actions)
        assert metrics == expected.metrics


LEAST_LOADED_TOY = "def policy(loads, size, rng):\n    return loads.index(min(loads))\n"


def test_validates_pieces_play_a_track_they_do_not_know(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy track of tests/ (its reference is Random, its metric the makespan): validate's child loop, the
    worker's sandbox as validate drives it, and the score rows all take what they need from the track."""
    import random
    from types import SimpleNamespace

    from layersched.sdk.bundle import make_bundle
    from layersched.sdk.localrun import _Sides, run_in_worker_sandbox
    from layersched.sdk.validate import _score_rows, format_report
    from layersched.sim.episodes import EpisodeSpec
    from layersched.sim.tracks import load_track_module
    from layersched.sim.tracks.layers_v1.episode import trace_hash
    from layersched.sim.tracks.play import play_episode
    from layersched.worker.sandbox.limits import SandboxLimits
    from tests.toy_track import ToyScenario

    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the process sandbox's harness imports tests.toy_track
    toy = load_track_module("tests.toy_track")
    scenario = ToyScenario(machines=3, jobs=12)
    jobs = [
        SimpleNamespace(scenario_name="toy", scenario=scenario, episode=EpisodeSpec(f"t{i}", seed=i)) for i in (0, 1)
    ]
    path = write(tmp_path, LEAST_LOADED_TOY)
    namespace: dict[str, Any] = {}
    exec(LEAST_LOADED_TOY, namespace)
    sides = _Sides(toy)
    played = [
        play_episode(*sides.of(scenario, "toy"), namespace["policy"], job.episode.workload_rng(), random.Random(0))
        for job in jobs
    ]
    messages = run_in_worker_sandbox(path, make_bundle(path).sha256, jobs, track=toy, limits=SandboxLimits())
    episodes = [m for m in messages if m["kind"] == "episode"]
    assert [(e["status"], e["message"]) for e in episodes] == [("ok", "")] * len(jobs)
    assert [e["trace_hash"] for e in episodes] == [trace_hash(actions) for actions, _ in played]
    assert [e["makespan"] for e in episodes] == [metrics.makespan for _, metrics in played]
    rows = {row.name: row for row in _score_rows(toy, jobs, episodes, {"toy": 1.0})}
    assert set(rows) == {"Random", "LeastLoaded", POLICY_ROW}
    assert rows["Random"].score == 1.0
    assert rows[POLICY_ROW].score == rows["LeastLoaded"].score < 1.0
    report = ValidationReport(path, episodes=episodes, rows=list(rows.values()), evalset_name="toy", track=toy)
    text = format_report(report)
    assert "(ratio to Random, lower is better)" in text
    assert f"\n  {'policy':<13} {'score':>7} {'toy':>19}\n" in text  # the makespan has no unit to show


@pytest.mark.parametrize("use_worker_sandbox", [True, False], ids=["worker-sandbox", "child-only"])
def test_validate_runs_a_set_of_another_track(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, use_worker_sandbox: bool
) -> None:
    """A set of the toy track (registered by the organiser's own module, which the child imports too): the contract,
    the episodes and the rows are the track's, with nothing in sdk/ knowing it."""
    from layersched.sdk.validate import format_report
    from layersched.sim.tracks import load_track_module
    from tests.sim.test_evalset_track import TOY_SET  # two scenarios, a keyed episode

    monkeypatch.setenv("PYTHONPATH", str(REPO))  # where tests.toy_track is, for the child and the sandbox's harness
    load_track_module("tests.toy_track")
    evalset = write(tmp_path, TOY_SET, "toys.toml")
    report = validate(write(tmp_path, LEAST_LOADED_TOY), evalset_path=evalset, use_worker_sandbox=use_worker_sandbox)
    assert report.ok, (report.findings, report.stderr_tail)
    assert "contract: policy(loads, size, rng) returned valid actions" in [f.message for f in report.findings]
    assert [(e["scenario"], e["episode"], e["status"]) for e in report.episodes] == [
        ("small", "seed0", "ok"),
        ("wide", "seed0", "ok"),
        ("wide", "h", "ok"),
    ]
    rows = {row.name: row for row in report.rows}
    assert rows[POLICY_ROW].score == rows["LeastLoaded"].score < rows["Random"].score == 1.0
    assert "(ratio to Random, lower is better)" in format_report(report)
