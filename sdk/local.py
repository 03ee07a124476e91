"""The commands that run on this machine and need no server: ``init`` (a track's starter kit), ``validate`` (the
checks and a score on the public sample, the policy in a separate process), ``sim`` (the simulator's own CLI) and
``evalset verify`` (a revealed set against its published commitment). A student runs them offline."""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from layersched.sdk.checks import limits_text
from layersched.sdk.commands import AddCommand, Formatter, fail
from layersched.sdk.errors import ConfigError
from layersched.sdk.evalsets_cli import add_register_parser
from layersched.sdk.kit_track import KIT_FILE, find_kit_track, kit_text
from layersched.sdk.progress import ProgressBar
from layersched.sdk.validate import DEFAULT_DEADLINE_S
from layersched.sim.arguments import positive_float, positive_int
from layersched.sim.evalset.parse import sample_set_name
from layersched.sim.tracks import DEFAULT_TRACK_ID, Track, TrackError, get_track, track_ids


def add_kit_parsers(sub: Any, add: AddCommand) -> None:
    """``init`` and ``validate``: making and checking a policy."""
    default_track = get_track(DEFAULT_TRACK_ID)
    p = add(
        sub,
        "init",
        cmd_init,
        "create a starter kit in DIR",
        f"Copy the starter kit of a track (--track NAME, default {default_track.id}). The kit of {default_track.id}\n"
        f"({default_track.title.lower()}): policy.py (the contract, a template that works as is),\n"
        "train_reinforce.py (REINFORCE as in the lab), imitation_rl.py (clone "
        f"{default_track.reference_baseline}, then policy gradient),\n"
        f"plot_curves.py, README.md. Known tracks: {', '.join(track_ids())}. Every kit gets a layersched-kit.toml\n"
        "naming its track: `validate` then scores on that track's public sample, `submit` sends to its open phase.",
        "  layersched init my_policy\n  layersched init . --force      # overwrite files of an older kit\n"
        "  layersched init my_jobs --track jobs-v1\n",
    )
    p.add_argument("dir", type=Path, help="directory to create (or fill)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.add_argument(
        "--track",
        type=_known_track,
        default=default_track,
        metavar="NAME",
        help=f"the track whose starter kit to copy (default {default_track.id})",
    )

    p = add(
        sub,
        "validate",
        cmd_validate,
        "check a policy locally and score it on the public sample",
        "Check the bundle (size, files, links), syntax, the policy contract of its track and imports the\n"
        "sandbox lacks, then run the policy on the public sample episodes in a separate process, with the\n"
        "server's per-decision deadline and budgets, and print its score next to the track's baselines. A kit\n"
        "made by `layersched init --track` (its layersched-kit.toml) is checked against its track's contract and\n"
        "scored on its track's public sample; a lone .py file against the lab's (layers-v1, sample).\n"
        f"A bundle holds {limits_text()}.\nExits 1 if something would fail on the server.",
        "  layersched validate my_policy.py\n  layersched validate my_policy/ --deadline 0.5\n"
        "  layersched validate my_policy/ --evalset sample --episodes 2\n"
        "  layersched validate . --report report/        # then open report/index.html\n",
    )
    p.add_argument("path", type=Path, help="a policy .py file or a directory with policy.py")
    p.add_argument(
        "--deadline",
        type=positive_float,
        default=DEFAULT_DEADLINE_S,
        metavar="S",
        help=f"per-decision deadline in seconds to check against (default {DEFAULT_DEADLINE_S:g}, the server's)",
    )
    p.add_argument(
        "--evalset",
        metavar="NAME|FILE",
        help="a built-in set (sample, jobs-sample, workflows-sample) or an evaluation-set file (default: the public "
        "sample of the kit's track, else sample)",
    )
    p.add_argument(
        "--episodes",
        type=positive_int,
        metavar="N",
        help="only the first N episodes (quick check; the score is then not comparable)",
    )
    p.add_argument("--static", action="store_true", help="only the checks that run nothing (no episodes)")
    p.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="also write the schedule pages of every episode to DIR (index.html; open offline)",
    )


def add_tool_parsers(sub: Any, add: AddCommand) -> None:
    """``sim`` and ``evalset verify``."""
    p = add(
        sub,
        "sim",
        cmd_sim,
        "run the simulator's baseline table (python -m layersched.sim)",
        "Everything after `sim` goes to `python -m layersched.sim`; see `layersched sim --help`.",
        "  layersched sim\n  layersched sim --nodes 5 --rate 0.5 --json\n",
    )
    p.add_argument("sim_args", nargs=argparse.REMAINDER, help="arguments for the simulator's CLI")

    p = add(
        sub,
        "evalset",
        cmd_evalset_verify,
        "verify a revealed evaluation set, or register sets with the service",
        "After the challenge the organisers publish the evaluation-set file; `verify` checks that it matches\n"
        "the commitment (SHA-256) they published before it. `register` (organisers, on a worker host) makes\n"
        "evaluation-set files known to the service.",
        "  layersched evalset verify final.toml 9c1e...64 hex digits\n"
        "  layersched evalset register hidden_seeds/private/spring.toml sample\n",
    )
    ev = p.add_subparsers(dest="evalset_command", metavar="ACTION")
    ev.required = True
    v = ev.add_parser(
        "verify",
        help="check FILE against COMMITMENT",
        formatter_class=Formatter,
        description="Exit 0 if FILE has the published COMMITMENT, 1 otherwise.",
        epilog="examples:\n  layersched evalset verify final.toml 9c1e...\n",
    )
    v.add_argument("file", type=Path, help="the evaluation-set file")
    v.add_argument("commitment", help="the published SHA-256 (64 hex digits)")
    add_register_parser(ev, add)


def _known_track(name: str) -> Track:
    """argparse type: a track this installation knows; the error lists them (exit 2, before anything is written)."""
    try:
        return get_track(name)
    except TrackError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def starter_files(track: Track | None = None) -> list[Any]:
    """The files of ``track``'s starter kit (default: the default track's), as ``importlib.resources`` traversables.

    ``Track.starter`` names the kit's package and folder rather than holding files, so a track needs no import of
    the student's package (every built-in kit is in its track's folder: ``sim/tracks/<track>/starter``).
    """
    package, folder = (track or get_track(DEFAULT_TRACK_ID)).starter
    root = resources.files(package).joinpath(folder)
    return sorted(
        (f for f in root.iterdir() if f.is_file() and not f.name.endswith((".pyc", ".pyo"))),
        key=lambda f: f.name,
    )


def cmd_init(args: argparse.Namespace) -> int:
    target: Path = args.dir
    track: Track = args.track
    files = starter_files(track)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target} exists and is not a directory")
    clashes = [name for name in [*(f.name for f in files), KIT_FILE] if (target / name).exists()]
    if clashes and not args.force:
        raise ConfigError(f"{target} already has {', '.join(clashes)}; use --force to overwrite")
    target.mkdir(parents=True, exist_ok=True)
    for f in files:
        (target / f.name).write_bytes(f.read_bytes())
    (target / KIT_FILE).write_text(kit_text(track), encoding="utf-8")
    names = ", ".join([*(f.name for f in files), KIT_FILE])
    print(f"created the starter kit of {track.id} ({track.title}) in {target}/: {names}")
    print(
        f"{KIT_FILE} records the track: validate scores on its public sample, submit sends to its open phase "
        "(with several open, name one: --phase NAME)"
    )
    print("next:")
    print(f"  cd {target}")
    validate = "layersched validate ."
    print(f"  {validate:<45} # the template works as is")
    steps = _kit_steps_after_init(files)
    for line in steps or [f"{validate} && layersched submit . --name first-try"]:
        print(f"  {line}")
    return 0


def _kit_steps_after_init(files: list[Any]) -> list[str]:
    """The steps that the kit's README.md gives after ``layersched init`` in its first ``bash`` block (what to run
    next is the kit's to say: each track's kit holds other scripts); none when it has no such block."""
    readme = next((f for f in files if f.name == "README.md"), None)
    if readme is None:
        return []
    text = readme.read_text(encoding="utf-8")
    _, fence, rest = text.partition("```bash\n")
    lines = rest.partition("```")[0].splitlines() if fence else []
    after = [i for i, line in enumerate(lines) if line.startswith("layersched init")]
    return [line for line in lines[after[0] + 1 :] if line.strip()] if after else []


def cmd_validate(args: argparse.Namespace) -> int:
    from layersched.sdk.validate import format_report, static_check, validate

    evalset = _validation_set(args.path, args.evalset)
    if args.static:
        report = static_check(args.path, _evalset_track(evalset))
    else:
        bar = ProgressBar("episodes")

        def on_message(message: dict[str, Any]) -> None:
            if message.get("kind") == "plan":
                bar.update(0, message["episodes"])
            elif message.get("kind") == "episode":
                bar.update(bar.done + 1, note=f"{message['scenario']}/{message['episode']} {message['status']}")
            elif message.get("kind") == "progress":  # while an episode runs, twice a second
                done = f"step {message['step']}/{message['decisions']}" if "step" in message else ""
                took = f"{message['seconds']:.0f} s" if "seconds" in message else ""
                bar.update(bar.done, note=f"{message['where']} {done or took}")

        print(f"validating {args.path} (policy runs in a separate process)", file=sys.stderr)
        report = validate(
            args.path,
            deadline_s=args.deadline,
            evalset_path=evalset,
            max_episodes=args.episodes,
            on_message=on_message,
            every_split=args.report is not None,
        )
        bar.close()
    if not report.ok and report.stderr_tail.strip():
        print("--- policy output (last lines) ---", file=sys.stderr)
        print("\n".join(report.stderr_tail.strip().splitlines()[-25:]), file=sys.stderr)
        print("---", file=sys.stderr)
    print(format_report(report))
    if args.report is not None and not args.static:
        _write_report(report, evalset, args.report)
    return 0 if report.ok else 1


def _write_report(report: Any, evalset: str | None, out: Path) -> None:
    from layersched.sdk.report import write_report

    written = write_report(report, evalset, out)
    for why in written.skipped:
        print(f"  no replay of {why}", file=sys.stderr)
    print(f"wrote {written.index} ({written.episodes} episode pages): open it in a browser, offline")


def _validation_set(path: Path, named: str | None) -> str | None:
    """The set ``validate`` scores on: ``--evalset``, else the public sample of the kit's track (its
    ``layersched-kit.toml``), else the default (the lab's ``sample``). A named set of another track than the kit's
    is refused: the policy would be checked against another contract."""
    kit = find_kit_track(path)
    if kit is None:
        return named
    if named is not None:
        track = _evalset_track(named)
        if track.id != kit.track.id:
            raise ConfigError(
                f"--evalset {named} is a set of track {track.id}, but the kit is for track {kit.track.id} ({kit.file})"
            )
        return named
    sample = sample_set_name(kit.track.id)
    if sample is None:
        raise ConfigError(f"track {kit.track.id} ({kit.file}) ships no public sample set: name one with --evalset FILE")
    return sample


def _evalset_track(name: str | None) -> Track:
    """The track of the evaluation set ``validate --evalset`` names (default: the sample's)."""
    from layersched.sim.evalset import evalset_file, load_evalset

    return get_track(load_evalset(evalset_file(name if name is not None else "sample")).track)


def cmd_sim(args: argparse.Namespace) -> int:
    return run_sim(list(args.sim_args))


def run_sim(argv: list[str]) -> int:
    from layersched.sim.cli import main as sim_main

    return sim_main(argv)


def cmd_evalset_verify(args: argparse.Namespace) -> int:
    from layersched.sim.evalset import verify_evalset

    if verify_evalset(args.file, args.commitment):
        print(f"{args.file}: matches commitment {args.commitment.strip().lower()}")
        return 0
    return fail(f"{args.file} does NOT match commitment {args.commitment.strip()}: the set was changed")
