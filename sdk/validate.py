"""``layersched validate``: everything that can be checked before an upload, and a local score.

1. Bundle limits and links (``bundle.make_bundle``), syntax, the ``policy`` entry point and imports the sandbox
   image lacks (``checks.static_findings``): nothing is executed.
2. In a child process (``localrun``): import the policy, the track's contract check on a fresh episode, and time
   every decision of the first episode, played as the sandbox plays it, against the deadline.
3. Every public episode of the sample evaluation set through the worker's own sandbox harness (process backend),
   with the seeds and deadline the server uses, and the first episode once more to check that its actions
   reproduce (audits compare action traces).
4. The track's baselines on the same episodes, in-process, and the score from ``layersched.sim.scoring``: per
   scenario the ratio of the track's primary metric to its reference baseline's (for layers-v1: mean completion
   times to Greedy's), overall their weighted geometric mean (lower is better).
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersched.sdk.bundle import Bundle, make_bundle
from layersched.sdk.checks import Finding, static_findings
from layersched.sdk.errors import BundleError
from layersched.sdk.localrun import (
    run_in_subprocess,
    run_in_worker_sandbox,
    staged_request,
    worker_sandbox_available,
)
from layersched.sim.episodes import Split
from layersched.sim.tracks import DEFAULT_TRACK_ID, Track, get_track, track_module
from layersched.worker.sandbox.limits import SandboxLimits

# The sandbox's budgets, which are the server's defaults (server/config.py; tests/sdk/test_validate.py checks it):
# validate keeps the same per-decision deadline, episode, import and whole-run budgets.
SERVER_LIMITS = SandboxLimits()
DEFAULT_DEADLINE_S = SERVER_LIMITS.decision_seconds
POLICY_ROW = "your policy"


@dataclass(frozen=True)
class ScoreRow:
    name: str
    metric: dict[str, float]  # per scenario, the mean of the track's primary metric over its episodes
    ratio: dict[str, float]  # per scenario, to the track's reference baseline
    score: float  # weighted geometric mean of the ratios


@dataclass
class ValidationReport:
    path: Path
    findings: list[Finding] = field(default_factory=list)
    bundle: Bundle | None = None
    episodes: list[dict[str, Any]] = field(default_factory=list)
    rows: list[ScoreRow] = field(default_factory=list)
    evalset_name: str = ""
    track: Track | None = None  # the evaluation set's, once it is read
    stderr_tail: str = ""
    runner: str = ""  # where the scored episodes ran
    scored: int = 0  # how many of ``episodes`` the score is of (the public split's; ``--report`` plays both)

    @property
    def ok(self) -> bool:
        return not any(f.level == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.level == "warning" for f in self.findings)

    @property
    def errors(self) -> int:
        return sum(f.level == "error" for f in self.findings)

    @property
    def score(self) -> float | None:
        return next((r.score for r in self.rows if r.name == POLICY_ROW), None)


def static_check(path: str | Path, track: Track | None = None) -> ValidationReport:
    """Step 1 only: bundle, syntax, entry point (the contract of ``track``, default the default track's),
    imports. Used by ``submit`` before it uploads."""
    report = ValidationReport(Path(path).resolve())
    try:
        report.bundle = make_bundle(path)
    except BundleError as exc:
        report.findings.extend(Finding("error", problem) for problem in exc.problems)
        return report
    report.findings.extend(static_findings(report.bundle, track or get_track(DEFAULT_TRACK_ID)))
    return report


def validate(
    path: str | Path,
    *,
    deadline_s: float = DEFAULT_DEADLINE_S,
    evalset_path: str | Path | None = None,
    max_episodes: int | None = None,
    on_message: Callable[[dict[str, Any]], None] | None = None,
    use_worker_sandbox: bool | None = None,
    every_split: bool = False,
) -> ValidationReport:
    """All steps; the report's findings say what would fail or be slow on the server.

    ``evalset_path`` is a built-in set's name or a file (default: ``sample``, the public board's episodes).
    ``every_split`` plays the private split's episodes too (``--report`` draws every episode of a sample, whose seeds
    are public in both splits); the score stays the public split's.

    ``use_worker_sandbox`` (default: whenever ``layersched.worker`` is installed) runs the scored episodes through the
    worker's harness; otherwise the child process runs them in-process.
    """
    from layersched.sim.evalset import evalset_file, load_evalset

    evalset_at = evalset_file(evalset_path if evalset_path is not None else "sample").resolve()
    evalset = load_evalset(evalset_at)
    track = get_track(evalset.track)
    report = static_check(path, track)
    report.evalset_name, report.track = evalset.name, track
    if not report.ok or report.bundle is None:
        return report
    bundle = report.bundle
    split: Split | None = None if every_split else "public"
    jobs = evalset.jobs(split)[:max_episodes] if max_episodes is not None else evalset.jobs(split)
    sandbox = worker_sandbox_available() if use_worker_sandbox is None else use_worker_sandbox
    limits = SandboxLimits(
        decision_seconds=deadline_s,
        episode_seconds=SERVER_LIMITS.episode_seconds,
        submission_seconds=SERVER_LIMITS.submission_seconds,
        startup_seconds=SERVER_LIMITS.startup_seconds,
    )
    with tempfile.TemporaryDirectory(prefix="layersched-validate-") as tmp:
        request = staged_request(
            bundle,
            Path(tmp),
            evalset_at,
            limits,
            max_episodes=max_episodes,
            all_episodes=not sandbox,
            track_module=track_module(evalset.track),
            split=split,
        )
        staged = Path(request.bundle_root)
        workdir = Path(tmp) / "work"
        workdir.mkdir()
        outcome = run_in_subprocess(request, workdir=workdir, on_message=on_message)
        report.stderr_tail = outcome.stderr_tail
        messages = outcome.messages
        stopped = any(m.get("kind") in ("import_error", "contract", "timeout") for m in messages)
        ended: Finding | None = None
        if outcome.killed_after_s is not None:
            running = [m["where"] for m in messages if m.get("kind") == "progress"]
            where = f"{running[-1]}: " if running else ""
            ended = Finding(
                "error",
                f"{where}timeout: {outcome.killed_why} (its process stopped answering and was ended after "
                f"{outcome.killed_after_s:.0f} s)",
            )
        elif not stopped and outcome.returncode:
            ended = Finding(
                "error", f"the policy's process died with exit code {outcome.returncode} (see its stderr above)"
            )
        elif sandbox and any(m.get("kind") == "timing" for m in messages):
            report.runner = "the worker's sandbox harness (process backend)"
            messages = messages + run_in_worker_sandbox(
                staged, bundle.sha256, jobs, track=track, limits=limits, on_message=on_message
            )
        else:
            report.runner = "a local process (layersched.worker is not installed)"
    _interpret(report, messages, deadline_s)
    if ended is not None:
        report.findings.append(ended)
    if report.ok and report.episodes and all(e["status"] == "ok" for e in report.episodes):
        scored = {(j.scenario_name, j.episode.id) for j in jobs if j.episode.split == "public"}
        public = [e for e in report.episodes if (e["scenario"], e["episode"]) in scored]
        report.rows = _score_rows(track, [j for j in jobs if j.episode.split == "public"], public, evalset.weights)
        report.scored = len(public)
    return report


def _interpret(report: ValidationReport, messages: list[dict[str, Any]], deadline_s: float) -> None:
    for m in messages:
        kind = m.get("kind")
        if kind == "import_error":
            report.findings.append(Finding("error", f"importing the policy failed: {m['message']}"))
            report.stderr_tail = (report.stderr_tail + "\n" + m.get("traceback", "")).strip()
        elif kind == "timeout":
            report.findings.append(Finding("error", f"{m['where']}: timeout: {m['message']}"))
        elif kind == "contract":
            report.findings.append(Finding("ok" if m["ok"] else "error", m["message"]))
            if not m["ok"] and m.get("traceback"):
                report.stderr_tail = (report.stderr_tail + "\n" + m["traceback"]).strip()
        elif kind == "timing" and m["status"] == "ok":
            pass  # its decision times are summed up below; a failure shows again in the scored run
        elif kind in ("episode", "timing"):
            if kind == "episode":
                report.episodes.append(m)
            if m["status"] != "ok" and kind == "episode":
                message = str(m["message"])
                if "\n" in message:  # the harness appends the traceback: keep its first and last lines here
                    lines = [line for line in message.splitlines() if line.strip()]
                    report.stderr_tail = (report.stderr_tail + "\n" + message).strip()
                    message = f"{lines[0].rstrip(':')}: {lines[-1].strip()}"
                report.findings.append(
                    Finding("error", f"episode {m['scenario']}/{m['episode']}: {m['status']}: {message}")
                )
                for extra in (m.get("traceback"), m.get("stderr")):
                    if extra:
                        report.stderr_tail = (report.stderr_tail + "\n" + extra).strip()
        elif kind == "repeat" and not m["same"]:
            arguments = report.track.policy_arguments if report.track is not None else "its arguments"
            report.findings.append(
                Finding(
                    "warning",
                    f"episode {m['episode']} run twice with the same seeds gave different actions: the policy depends "
                    f"on something besides {arguments} and the seeded generators (the clock, files, unseeded "
                    f"randomness); audits will report a mismatch",
                )
            )
    timed = [m for m in messages if m.get("kind") in ("episode", "timing", "timeout") and "time_max" in m]
    if timed:
        slowest = max(e["time_max"] for e in timed)
        mean = sum(e["time_mean"] * e["decisions"] for e in timed) / sum(e["decisions"] for e in timed)
        text = f"decision time: mean {mean * 1000:.2f} ms, slowest {slowest * 1000:.1f} ms (deadline {deadline_s:g} s)"
        if slowest > deadline_s:
            report.findings.append(Finding("error", text + ": over the deadline, the server will stop the episode"))
        elif slowest > 0.5 * deadline_s or mean > 0.25 * deadline_s:
            report.findings.append(
                Finding(
                    "warning", text + ": close to the deadline; the sandbox has a single CPU thread and may be slower"
                )
            )
        else:
            report.findings.append(Finding("ok", text))


def _score_rows(
    track: Track, jobs: list[Any], episodes: list[dict[str, Any]], weights: dict[str, float]
) -> list[ScoreRow]:
    """The track's baselines on the same episodes (seeded as the server seeds them), then ``layersched.sim.scoring``'s
    score of each row against the track's reference baseline."""
    from layersched.sim.episodes import policy_seed
    from layersched.sim.evalset import baseline_bundle_id
    from layersched.sim.scoring import overall_score, scenario_ratio

    primary = track.primary_metric
    hashes: dict[str, str] = {}
    per_policy: dict[str, dict[str, list[float]]] = {}
    names = track.baseline_names
    for job in jobs:
        if job.scenario_name not in hashes:  # a content hash serialises the whole catalog: once per scenario
            hashes[job.scenario_name] = track.scenario_hash(job.scenario)
        policies = [
            (
                track.baseline(name),
                random.Random(policy_seed(baseline_bundle_id(name), hashes[job.scenario_name], job.episode.id)),
            )
            for name in names
        ]
        # As the server scores its baselines (layersched.sim.evalset.runs): every one on the same episode, drawn once.
        results = track.run_policies(job.scenario, policies, job.episode.workload_rng())
        for name, result in zip(names, results, strict=True):
            per_policy.setdefault(name, {}).setdefault(job.scenario_name, []).append(getattr(result.metrics, primary))
    for e in episodes:
        per_policy.setdefault(POLICY_ROW, {}).setdefault(e["scenario"], []).append(e[primary])
    reference = per_policy[track.reference_baseline]
    rows = []
    for name, by_scenario in per_policy.items():
        ratios = {sc: scenario_ratio(values, reference[sc]) for sc, values in by_scenario.items()}
        score = overall_score(list(ratios.values()), [weights[sc] for sc in ratios])
        means = {sc: sum(values) / len(values) for sc, values in by_scenario.items()}
        rows.append(ScoreRow(name, means, ratios, score))
    return sorted(rows, key=lambda r: r.score)


def format_report(report: ValidationReport) -> str:
    """The human-readable report the CLI prints."""
    marks = {"ok": "  ok  ", "warning": "  warn", "error": "  FAIL"}
    lines = [f"{marks[f.level]}  {f.message}" for f in report.findings]
    if report.rows:
        assert report.track is not None  # rows are scored against the set's track
        reference = report.track.reference_baseline
        scenarios = list(report.rows[0].metric)
        n = report.scored or len(report.episodes)
        lines.append("")
        lines.append(
            f"score on {n} public episode{'s' if n != 1 else ''} of {report.evalset_name!r} "
            f"(ratio to {reference}, lower is better), run in {report.runner}:"
        )
        primary = report.track.primary_metric
        unit = next((f" ({m.unit})" for m in report.track.metric_specs if m.name == primary and m.unit), "")
        header = f"  {'policy':<13} {'score':>7}" + "".join(f" {sc[:14] + unit:>19}" for sc in scenarios)
        lines.append(header)
        for row in report.rows:
            mark = "->" if row.name == POLICY_ROW else "  "
            cells = "".join(f" {row.metric[sc]:19.1f}" for sc in scenarios)
            lines.append(f"{mark}{row.name:<13} {row.score:7.3f}{cells}")
    lines.append("")
    if report.ok:
        warn = f", {report.warnings} warning{'s' if report.warnings != 1 else ''}" if report.warnings else ""
        lines.append(f"{report.path}: ready to submit{warn}")
    else:
        lines.append(
            f"{report.path}: {report.errors} problem{'s' if report.errors != 1 else ''} to fix before submitting"
        )
    return "\n".join(lines)
