"""``layersched replay``: one episode of a local run drawn to an SVG or HTML file, the policy's schedule beside the
reference baseline's (or another policy's: ``--against``) on one time axis. Needs no server.

Each policy plays the episode as ``validate`` plays it: in a process of its own, with the server's seeds (its rng
from the bundle's hash, the scenario and the episode), checked by the track's trusted simulator; the accepted
actions are then replayed here and drawn by the track (``layersched.sim.episode_report``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from html import escape
from pathlib import Path
from typing import Any

from layersched.sdk.commands import AddCommand
from layersched.sdk.errors import ConfigError


def add_replay_parser(sub: Any, add: AddCommand) -> None:
    p = add(
        sub,
        "replay",
        cmd_replay,
        "draw one episode's schedule beside the reference baseline's",
        "Play POLICY on one episode of an evaluation set (default: the track's public sample, its first episode)\n"
        "in a separate process, as `validate` plays it, then draw its schedule beside the track's reference\n"
        "baseline on the same episode (or beside another policy of yours: --against), on one time axis: the\n"
        "track's views (Gantt charts, queues, CDFs) with their metrics. Writes an .html page or an .svg file;\n"
        "both open offline. Only seeded episodes (public workloads) can be drawn.",
        "  layersched replay .\n"
        "  layersched replay . --episode lab-300/seed1 -o lab.html\n"
        "  layersched replay my_policy/ --against ../older_policy/ -o diff.svg\n",
    )
    p.add_argument("policy", type=Path, help="a policy .py file or a directory with policy.py")
    p.add_argument("--evalset", metavar="NAME|FILE", help="a built-in set (default: sample) or an evaluation-set file")
    p.add_argument("--episode", metavar="SCENARIO/EPISODE", help="which episode (default: the set's first)")
    p.add_argument("--against", type=Path, metavar="OTHER_POLICY", help="draw beside this policy, not the reference")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="an .html or .svg file (default: replay-*.html)")
    p.add_argument(
        "--keyed",
        action="store_true",
        help="organisers, on a host that holds the set's keys (a worker's): also draw a keyed episode; nothing of it "
        "leaves this machine",
    )


def _episode(evalset: Any, wanted: str | None) -> Any:
    jobs = evalset.jobs()
    if wanted is None:
        return jobs[0]
    for job in jobs:
        if f"{job.scenario_name}/{job.episode.id}" == wanted:
            return job
    known = ", ".join(f"{j.scenario_name}/{j.episode.id}" for j in jobs)
    raise ConfigError(f"no episode {wanted!r} in evaluation set {evalset.name!r} (its episodes: {known})")


def play(policy: Path, evalset_at: Path, job: Any, track_module: str) -> tuple[tuple[int, ...], str]:
    """``policy``'s accepted actions on ``job`` and their trace hash, played in a child process as ``validate``
    plays an episode; ``ConfigError`` naming why when it does not finish."""
    from layersched.sdk.bundle import make_bundle
    from layersched.sdk.localrun import run_in_subprocess, staged_request
    from layersched.sdk.validate import SERVER_LIMITS

    with tempfile.TemporaryDirectory(prefix="layersched-replay-") as tmp:
        only = [job.scenario_name, job.episode.id]
        request = staged_request(
            make_bundle(policy), Path(tmp), evalset_at, SERVER_LIMITS, track_module=track_module, split=None, only=only
        )
        workdir = Path(tmp) / "work"
        workdir.mkdir()
        outcome = run_in_subprocess(request, workdir=workdir)
    episodes = [m for m in outcome.messages if m.get("kind") == "episode"]
    if not episodes or episodes[0]["status"] != "ok":
        why = [
            str(m.get("message")) for m in outcome.messages if m.get("kind") in ("import_error", "contract", "timeout")
        ]
        if episodes:
            why.append(f"{episodes[0]['status']}: {episodes[0]['message']}")
        tail = outcome.stderr_tail.strip().splitlines()[-5:]
        raise ConfigError(
            f"{policy} did not finish the episode: {'; '.join(why) or 'its process ended'}"
            + ("\n" + "\n".join(tail) if tail and not why else "")
        )
    return tuple(episodes[0]["actions"]), str(episodes[0]["trace_hash"])


def cmd_replay(args: argparse.Namespace) -> int:
    from layersched.sdk.report import page
    from layersched.sim.episode_report import episode_report, report_html
    from layersched.sim.evalset import evalset_file, load_evalset
    from layersched.sim.tracks import get_track, track_module
    from layersched.sim.tracks.drawing import stacked
    from layersched.sim.tracks.schedules import ReplayError

    evalset_at = evalset_file(args.evalset if args.evalset is not None else "sample").resolve()
    evalset = load_evalset(evalset_at)
    track = get_track(evalset.track)
    job = _episode(evalset, args.episode)
    if job.episode.seed is None and not args.keyed:
        raise ConfigError(
            f"episode {job.scenario_name}/{job.episode.id} is keyed: only seeded episodes are drawn (organisers, on a "
            "host that holds the keys: --keyed)"
        )
    output: Path = args.output or Path(f"replay-{job.scenario_name}-{job.episode.id}.html")
    if output.suffix not in (".html", ".svg"):
        raise ConfigError(f"--output must end in .html or .svg, got {str(output)!r}")
    where = f"{job.scenario_name}/{job.episode.id}"
    print(f"playing {args.policy} on {where} (a separate process)", file=sys.stderr)
    actions, hashed = play(args.policy, evalset_at, job, track_module(track.id))
    against = against_hash = None
    names = (_name(args.policy), track.reference_baseline)
    if args.against is not None:
        print(f"playing {args.against} on {where}", file=sys.stderr)
        against, against_hash = play(args.against, evalset_at, job, track_module(track.id))
        names = (_name(args.policy), _name(args.against))
        if names[0] == names[1]:
            names = (str(args.policy), str(args.against))
    try:
        report = episode_report(
            track,
            job.scenario,
            scenario_name=job.scenario_name,
            episode_id=job.episode.id,
            seed=job.episode.seed if job.episode.seed is not None else job.episode,
            actions=actions,
            trace_hash=hashed,
            names=names,
            against=against,
            against_hash=against_hash,
        )
    except ReplayError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if output.suffix == ".svg":
        output.write_text(stacked([f.svg for f in report.figures]), encoding="utf-8")
    else:
        source = f"seed {job.episode.seed}" if job.episode.seed is not None else "a keyed episode: keep it private"
        sides = f"{escape(names[0])} beside {escape(names[1])}"
        heading = f"<h1>{escape(where)}</h1><p>{escape(track.id)}, {source}: {sides}.</p>"
        output.write_text(page(f"{names[0]}: {where}", heading + report_html(report)), encoding="utf-8")
    primary = next(m for m in report.metrics if m.primary)
    ratio = f"{primary.ratio:.3f}" if primary.ratio is not None else "-"
    print(f"{where}: {primary.name} {primary.policy:.4g} vs {names[1]}'s {primary.reference:.4g} (ratio {ratio})")
    print(f"wrote {output}")
    return 0


def _name(policy: Path) -> str:
    """A policy's name as the figures show it: its folder's, or its file's."""
    path = policy.resolve()
    if path.is_file():
        return path.parent.name if path.name == "policy.py" else path.stem
    return path.name
