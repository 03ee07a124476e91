"""The ``layersched`` command: what students and organisers type.

Every command prints one clear ``error: ...`` line and exits non-zero when something fails (1 for a failure,
2 for a usage error, 130 when interrupted); no traceback reaches the terminal. Progress goes to stderr, results to
stdout, so ``--json`` output can be piped.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layersched.sdk.arguments import phase_name
from layersched.sdk.checks import limits_text
from layersched.sdk.commands import Handler
from layersched.sdk.config import LOGIN_HINT, load_config, normalise_server, save_config, track_modules
from layersched.sdk.errors import AuthError, ConfigError, Forbidden, LayerschedError, WaitTimeout
from layersched.sdk.progress import ProgressBar, format_bytes
from layersched.sdk.tables import phases_table, text_table
from layersched.sdk.validate import DEFAULT_DEADLINE_S
from layersched.sim.arguments import positive_float, positive_int
from layersched.sim.errors import SimError
from layersched.sim.evalset.parse import sample_set_name
from layersched.sim.tracks import DEFAULT_TRACK_ID, Track, TrackError, get_track, load_track_module, track_ids

if TYPE_CHECKING:  # imported where used: `layersched --help` need not load httpx
    from layersched.sdk.client import Client


STUDENT_EPILOG = """\
first steps:
  pip install "layersched[torch]"
  layersched login --server https://challenge.example.org --token YOUR_TOKEN
  layersched init my_policy && cd my_policy
  layersched validate .
  layersched submit . --name first-try

Run `layersched COMMAND --help` for the options and examples of each command.
"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples in epilogs as written."""


def _add(
    sub: Any, name: str, handler: Handler, help_text: str, description: str, examples: str
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        description=description,
        epilog="examples:\n" + examples,
        formatter_class=_Formatter,
    )
    parser.set_defaults(handler=handler)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="layersched",
        description="Layer-aware container scheduling challenge: validate, submit and follow your policies.",
        epilog=STUDENT_EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = _add(
        sub,
        "login",
        cmd_login,
        "save the server URL and your token",
        "Check the token against the server and save it (mode 0600) in the user config directory.\n"
        "LAYERSCHED_SERVER and LAYERSCHED_TOKEN override the saved values.",
        "  layersched login --server https://challenge.example.org --token 3f9c...\n"
        "  layersched login --server http://127.0.0.1:8000          # asks for the token\n",
    )
    p.add_argument("--server", help="the service's URL (default: the saved one or $LAYERSCHED_SERVER)")
    p.add_argument("--token", help="your API token (asked for when omitted)")
    p.add_argument("--no-verify", action="store_true", help="save without asking the server who you are")

    default_track = get_track(DEFAULT_TRACK_ID)
    p = _add(
        sub,
        "init",
        cmd_init,
        "create a starter kit in DIR",
        f"Copy the starter kit of a track (--track NAME, default {default_track.id}). The kit of {default_track.id}\n"
        f"({default_track.title.lower()}): policy.py (the contract, a template that works as is),\n"
        "train_reinforce.py (REINFORCE as in the lab), imitation_rl.py (clone "
        f"{default_track.reference_baseline}, then policy gradient),\n"
        f"plot_curves.py, README.md. Known tracks: {', '.join(track_ids())}.",
        "  layersched init my_policy\n  layersched init . --force      # overwrite files of an older kit\n"
        f"  layersched init my_policy --track {default_track.id}\n",
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

    p = _add(
        sub,
        "validate",
        cmd_validate,
        "check a policy locally and score it on the public sample",
        "Check the bundle (size, files, links), syntax, the policy(env, task, rng) contract and imports the\n"
        "sandbox lacks, then run the policy on the public sample episodes in a separate process, with the\n"
        "server's per-decision deadline and budgets, and print its score next to the six baselines.\n"
        f"A bundle holds {limits_text()}.\nExits 1 if something would fail on the server.",
        "  layersched validate my_policy.py\n  layersched validate my_policy/ --deadline 0.5\n"
        "  layersched validate my_policy/ --evalset sample --episodes 2\n",
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
        help="a built-in set (sample: the public board's episodes, the default) or an evaluation-set file",
    )
    p.add_argument(
        "--episodes",
        type=positive_int,
        metavar="N",
        help="only the first N episodes (quick check; the score is then not comparable)",
    )
    p.add_argument("--static", action="store_true", help="only the checks that run nothing (no episodes)")

    p = _add(
        sub,
        "submit",
        cmd_submit,
        "upload a policy and follow its evaluation",
        "Bundle PATH (a .py file, or a directory with policy.py), run the static checks, upload it with a\n"
        "progress bar, then follow the evaluation until its score and rank are known.\n"
        f"A bundle holds {limits_text()}.",
        "  layersched submit my_policy.py\n"
        '  layersched submit my_policy/ --name mlp-v2 --message "imitation + 200 PG episodes"\n'
        "  layersched submit my_policy/ --no-wait      # then: layersched status ID\n"
        "  layersched submit . --phase final            # when several phases are open\n",
    )
    p.add_argument("path", type=Path, help="a policy .py file or a directory with policy.py")
    p.add_argument(
        "--phase", type=phase_name, help="the phase to submit to (default: the only open one; see layersched phases)"
    )
    p.add_argument("--name", help="submission name, 1-100 characters (default: the file or directory name)")
    p.add_argument("--message", "-m", default="", help="a description for you and the organisers")
    p.add_argument(
        "--wait",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="follow the evaluation until it ends (default: --wait)",
    )
    p.add_argument("--skip-checks", action="store_true", help="upload even if the local static checks fail")
    p.add_argument("--poll", type=positive_float, default=2.0, metavar="S", help="seconds between status checks")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="stop following after S seconds")

    p = _add(
        sub,
        "status",
        cmd_status,
        "show one submission, or list yours",
        "Without ID: your submissions, newest first. With ID: state, progress, score, rank and the provenance\n"
        "of every evaluation (evaluation set, simulator version, sandbox image, bundle hash).",
        "  layersched status\n  layersched status 12\n  layersched status 12 --json\n",
    )
    p.add_argument("id", nargs="?", type=positive_int, help="submission id")
    p.add_argument("--limit", type=positive_int, default=20, help="how many to list (default 20)")
    p.add_argument("--json", action="store_true", help="print JSON")

    for name, handler, help_text, description in (
        (
            "select",
            cmd_select,
            "choose a submission for the final ranking",
            "Add a scored submission of yours to your final selection. Your final score is the best private score\n"
            "among the submissions you select (the server sets how many, 2 by default); with none selected your\n"
            "best public ones count. Selections close at the submission deadline and when the private\n"
            "leaderboard is published. `layersched status` shows which are selected.",
        ),
        (
            "unselect",
            cmd_unselect,
            "take a submission out of your final selection",
            "Take a submission out of your final selection, to make room for another. Closed, like selecting,\n"
            "at the submission deadline and at publication.",
        ),
    ):
        p = _add(sub, name, handler, help_text, description, f"  layersched {name} 12\n  layersched status\n")
        p.add_argument("id", type=positive_int, help="submission id")

    p = _add(
        sub,
        "logs",
        cmd_logs,
        "show the per-episode log of a submission",
        "Status and message of every episode; output and tracebacks for public sample episodes only.",
        "  layersched logs 12\n  layersched logs 12 --json\n",
    )
    p.add_argument("id", type=positive_int, help="submission id")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _add(
        sub,
        "leaderboard",
        cmd_leaderboard,
        "show the leaderboard",
        "Rank, score (ratio to the reference baseline of the board's track, lower is better) with its 95%\n"
        "interval, and the baseline rows.",
        "  layersched leaderboard\n  layersched leaderboard --split private      # once published\n"
        "  layersched leaderboard --phase dev\n  layersched leaderboard --json | jq '.rows[0]'\n",
    )
    p.add_argument("--split", choices=("public", "private"), default="public", help="which split (default public)")
    p.add_argument("--phase", type=phase_name, help="whose board (default: the open phase's)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _add(
        sub,
        "phases",
        cmd_phases,
        "list the challenge's phases",
        "Each phase: its name (for --phase), title, track, evaluation set, when it opens and closes, your daily\n"
        "quota in it, and whether it is open now.",
        "  layersched phases\n  layersched phases --json\n",
    )
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _add(
        sub,
        "sim",
        cmd_sim,
        "run the simulator's baseline table (python -m layersched.sim)",
        "Everything after `sim` goes to `python -m layersched.sim`; see `layersched sim --help`.",
        "  layersched sim\n  layersched sim --nodes 5 --rate 0.5 --json\n",
    )
    p.add_argument("sim_args", nargs=argparse.REMAINDER, help="arguments for the simulator's CLI")

    p = _add(
        sub,
        "evalset",
        cmd_evalset_verify,
        "verify a revealed evaluation set",
        "After the challenge the organisers publish the evaluation-set file; check that it matches the\n"
        "commitment (SHA-256) they published before it.",
        "  layersched evalset verify final.toml 9c1e...64 hex digits\n",
    )
    ev = p.add_subparsers(dest="evalset_command", metavar="ACTION")
    ev.required = True
    v = ev.add_parser(
        "verify",
        help="check FILE against COMMITMENT",
        formatter_class=_Formatter,
        description="Exit 0 if FILE has the published COMMITMENT, 1 otherwise.",
        epilog="examples:\n  layersched evalset verify final.toml 9c1e...\n",
    )
    v.add_argument("file", type=Path, help="the evaluation-set file")
    v.add_argument("commitment", help="the published SHA-256 (64 hex digits)")

    p = _add(
        sub,
        "serve",
        cmd_serve,
        "run the whole service on this machine (organisers, demos)",
        "Start the API, the leaderboard pages and a worker with SQLite storage and an embedded broker; the\n"
        "Docker sandbox when an engine is reachable, the process sandbox otherwise. Needs the server extra:\n"
        "pip install 'layersched[server]'.",
        "  layersched serve --demo                    # prints a demo organiser's and student's tokens\n"
        "  layersched serve --host 0.0.0.0 --port 8080 --data-dir /srv/layersched\n",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=positive_int, default=8000, help="port (default 8000)")
    p.add_argument("--data-dir", type=Path, default=Path("var"), help="database, broker and bundles (default ./var)")
    p.add_argument("--demo", action="store_true", help="create demo users, print their tokens, submit a policy")

    p = _add(
        sub,
        "worker",
        cmd_worker,
        "run an evaluation worker (production: one per core or host)",
        "Start a Celery worker on the `evaluations` and `audits` queues, with the reconciler beside it. Reads the\n"
        "LAYERSCHED_* settings (database, broker, sandbox). Needs the server extra. Arguments after `--` go to\n"
        "Celery.",
        "  LAYERSCHED_BROKER_URL=redis://127.0.0.1:6379/0 layersched worker\n"
        "  layersched worker -- --hostname worker2@%h\n",
    )
    p.add_argument("celery_args", nargs="*", help="extra Celery worker arguments (after --)")

    from layersched.sdk.admin import add_admin_parser
    from layersched.sdk.teams import add_team_parser

    add_team_parser(sub, _add)
    add_admin_parser(sub, _add)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``layersched`` console script; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:  # before parsing: `init --track` and the checks must know an organiser's own tracks
        for module in track_modules():
            load_track_module(module)
    except (LayerschedError, SimError) as exc:
        return _fail(str(exc))
    if args_list[:1] == ["sim"]:  # everything after `sim` belongs to the simulator's own parser
        return _run_sim(args_list[1:])
    parser = build_parser()
    args = parser.parse_args(args_list)
    handler: Handler = args.handler
    try:
        code = handler(args)
        sys.stdout.flush()  # a reader that went away shows here, not as a traceback in the interpreter's exit
        return code
    except AuthError as exc:
        hint = "" if isinstance(exc, Forbidden) else f" ({LOGIN_HINT})"
        return _fail(f"{exc}{hint}")
    except LayerschedError as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        return _reader_went_away()
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except SimError as exc:  # evalset verify, sim: bad files or parameters, already one clear sentence
        return _fail(str(exc))
    except OSError as exc:  # unreadable policy, unwritable starter directory, full disk
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}")


def _reader_went_away() -> int:
    """``layersched leaderboard | head``: the reader closed the pipe, which is not an error to report.

    Later writes (the interpreter flushes stdout at exit) go to /dev/null, so Python prints nothing either; the exit
    code is that of a Unix tool ended by SIGPIPE (128 + 13), as the shell's ``pipefail`` expects.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("layersched")
    except PackageNotFoundError:
        return "unknown"


# ---------------------------------------------------------------------------------------------- commands


def cmd_login(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    config = load_config()
    server = args.server or config.server
    if not server:
        raise ConfigError("no server given: layersched login --server URL --token TOKEN")
    token = args.token
    if not token:
        if not sys.stdin.isatty():
            raise ConfigError("no token given: pass --token TOKEN (or set LAYERSCHED_TOKEN)")
        token = getpass.getpass("token: ").strip()
        if not token:
            raise ConfigError("no token entered")
    who = ""
    if not args.no_verify:
        with Client(server, token) as client:
            me = client.me()
        who = f" as {me.name} ({me.role}; {me.submissions_today}/{me.daily_quota} submissions today)"
    path = save_config(server, token)
    # The server as saved (normalised: no trailing slash or /api/v1), which every later command talks to.
    print(f"logged in to {normalise_server(server)}{who}; saved to {path}")
    return 0


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
    clashes = [f.name for f in files if (target / f.name).exists()]
    if clashes and not args.force:
        raise ConfigError(f"{target} already has {', '.join(clashes)}; use --force to overwrite")
    target.mkdir(parents=True, exist_ok=True)
    for f in files:
        (target / f.name).write_bytes(f.read_bytes())
    print(f"created the starter kit of {track.id} ({track.title}) in {target}/: {', '.join(f.name for f in files)}")
    print("next:")
    print(f"  cd {target}")
    sample = sample_set_name(track.id)
    validate = "layersched validate ." if sample in (None, "sample") else f"layersched validate . --evalset {sample}"
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

    if args.static:
        report = static_check(args.path, _evalset_track(args.evalset))
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
            evalset_path=args.evalset,
            max_episodes=args.episodes,
            on_message=on_message,
        )
        bar.close()
    if not report.ok and report.stderr_tail.strip():
        print("--- policy output (last lines) ---", file=sys.stderr)
        print("\n".join(report.stderr_tail.strip().splitlines()[-25:]), file=sys.stderr)
        print("---", file=sys.stderr)
    print(format_report(report))
    return 0 if report.ok else 1


def _evalset_track(name: str | None) -> Track:
    """The track of the evaluation set ``validate --evalset`` names (default: the sample's)."""
    from layersched.sim.evalset import evalset_file, load_evalset

    return get_track(load_evalset(evalset_file(name if name is not None else "sample")).track)


def cmd_submit(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client, Submission

    config = load_config()
    config.require_server()
    config.require_token()
    with Client.from_config(config) as client:
        # The server's refusals first (token, no such phase, quota, closed uploads): they need no bundle, and
        # bundling a large policy takes seconds.
        phase_track = _check_allowance(client, args.phase)
        track = _server_track(client, phase_track)
        bundle = _checked_bundle(args.path, skip_checks=args.skip_checks, track=track)
        name = args.name or _default_name(args.path)
        with ProgressBar("upload", len(bundle.data), unit="bytes") as bar:
            submission = client.submit(
                bundle,
                name=name,
                description=args.message,
                phase=args.phase,
                # Checked for this track: should the phase change track meanwhile, the server refuses, naming both.
                track=track.id if phase_track is not None else None,
                on_progress=lambda sent, total: bar.update(sent, total),
            )
        print(f"submitted #{submission.id} {submission.name!r} ({submission.state})")
        print(_page_line(client, submission.id))
        if not args.wait:
            print(f"follow it with: layersched status {submission.id}")
            return 0
        print("following the evaluation (Ctrl-C stops watching, not the evaluation)", file=sys.stderr)
        bar = ProgressBar("evaluation")

        def on_update(sub: Submission) -> None:
            bar.update(sub.progress.done, sub.progress.total or None, note=sub.state)

        try:
            final = client.wait(submission.id, on_update=on_update, poll_interval=args.poll, timeout=args.timeout)
        except WaitTimeout as exc:
            raise WaitTimeout(f"{exc}; follow it with: layersched status {submission.id}") from None
        finally:
            bar.close()
        rank, reference = _rank_text(client, final), _score_reference(client, final)
    print(_outcome_line(final, rank, reference))
    return 0 if final.state == "succeeded" else 1


def _server_track(client: Any, track_id: str | None) -> Track:
    """The track of the phase submitted to (``track_id``, as the allowance named it); from a server older than
    phases, that of its current set."""
    track_id = track_id or client.current_evalset().track
    try:
        return get_track(track_id)
    except TrackError:
        raise LayerschedError(
            f"the server scores track {track_id!r}, which this installation does not know (known: "
            f"{', '.join(track_ids())}); install the organisers' track module and name it in LAYERSCHED_TRACK_MODULES"
        ) from None


def _checked_bundle(path: Path, *, skip_checks: bool, track: Track) -> Any:
    """The bundle of ``path`` once the local static checks of ``track``'s contract pass (or are skipped); their
    warnings go to stderr."""
    from layersched.sdk.validate import static_check

    report = static_check(path, track)
    if report.bundle is None:  # bundling itself failed: nothing to upload
        raise LayerschedError(report.findings[-1].message)
    bundle = report.bundle
    problems = [f.message for f in report.findings if f.level == "error"]
    for f in report.findings:
        if f.level == "warning":
            print(f"warning: {f.message}", file=sys.stderr)
    if problems and not skip_checks:
        more = f" (and {len(problems) - 1} more; run layersched validate)" if len(problems) > 1 else ""
        raise LayerschedError(f"not uploaded: {problems[0]}{more}")
    print(
        f"bundle {bundle.filename}: {len(bundle.files)} file(s), {format_bytes(bundle.unpacked_bytes)}, "
        f"sha256 {bundle.sha256[:12]}",
        file=sys.stderr,
    )
    return bundle


def _check_allowance(client: Any, phase: str | None) -> str | None:
    """A wrong token, no such phase (or several open and none named), a used-up quota or closed uploads, told
    before the upload rather than after it; the track of the phase it would go to (None: an older server)."""
    from layersched.sdk.errors import NotFound

    try:
        allowance = client.allowance(phase)
    except NotFound:  # a server older than GET /me/allowance: at least the token is checked first
        client.me()
        return None
    allowance.raise_if_refused()
    track: str | None = allowance.track
    return track


def _default_name(path: Path) -> str:
    resolved = path.resolve()
    name = resolved.stem if resolved.is_file() else resolved.name
    return (name or "policy")[:100]


LADDER_NOTE = (
    "  the Ladder: this submission did not beat your best shown public score by more than its step; that score is shown"
)


def _rank_text(client: Any, sub: Any) -> str:
    """The rank, or why there is none; asks the server for the board (and who you are) only when that is needed."""
    from layersched.sdk.standing import rank_text

    if sub.rank is not None or sub.disqualified is not None or sub.state != "succeeded":
        return rank_text(sub, board=None)
    board = client.leaderboard("public")
    if board.frozen or any(r.is_for(sub.owner) for r in board.rows):
        return rank_text(sub, board=board)
    me = client.me()
    return rank_text(sub, board=board, owner_is_organiser=me.role == "organiser" and me.name == sub.owner)


def _selection_text(client: Any, sub: Any) -> str:
    from layersched.sdk.standing import selection_text

    needs_list = not sub.selected and sub.disqualified is None and sub.score is not None
    if not needs_list:
        return selection_text(sub, mine=[])
    me = client.me()
    if me.role == "organiser" and me.name == sub.owner:
        return selection_text(sub, mine=[], owner_is_organiser=True)
    return selection_text(sub, mine=[s for s in client.submissions(limit=200).data if s.owner == sub.owner])


def _shows_score(sub: Any) -> bool:
    return bool(sub.state == "succeeded" and sub.score is not None)


def _score_reference(client: Any, sub: Any) -> str:
    """The baseline ``sub``'s score is a ratio to: that of the current set's track, as the server names it (asked
    only when there is a score to show). The current set is the one a submission is scored on for the board."""
    return str(client.current_evalset().reference) if _shows_score(sub) else ""


def _outcome_line(sub: Any, rank: str, reference: str) -> str:
    if _shows_score(sub):
        per = ", ".join(f"{k} {v:.3f}" for k, v in sub.score.per_scenario.items())
        score = sub.score
        return (
            f"#{sub.id} succeeded: score {score.overall:.4f} (95% CI {score.ci_low:.4f}-{score.ci_high:.4f},"
            f" ratio to {reference}, lower is better), {rank}"
            + (f"\n  per scenario: {per}" if per else "")
            + (f"\n{LADDER_NOTE}" if sub.score_revealed is False else "")
        )
    dq = f", disqualified by the organisers: {sub.disqualified}" if sub.disqualified is not None else ""
    if sub.error is not None:
        return (
            f"#{sub.id} {sub.state}: {sub.error.category}: {sub.error.message}{dq} (details: layersched logs {sub.id})"
        )
    return f"#{sub.id} {sub.state}{dq}"


def cmd_status(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config() as client:
        if args.id is None:
            page = client.submissions(limit=args.limit)
            if args.json:
                _print_json({"data": [asdict(s) for s in page.data], "count": page.count})
                return 0
            if not page.data:
                print("no submissions yet: layersched submit PATH")
                return 0
            rows = [
                [
                    f"#{s.id}",
                    s.name,
                    s.state,
                    f"{s.progress.done}/{s.progress.total}",
                    f"{s.score.overall:.4f}" if s.score else "-",
                    str(s.rank) if s.rank is not None else "disqualified" if s.disqualified is not None else "-",
                    "yes" if s.selected else "-",
                    s.created_at[:19].replace("T", " "),
                ]
                for s in page.data
            ]
            print(text_table(["id", "name", "state", "episodes", "score", "rank", "selected", "created"], rows))
            if page.count > len(page.data):
                print(f"({len(page.data)} of {page.count}; --limit N for more)")
            return 0
        sub = client.submission(args.id)
        if args.json:
            _print_json(asdict(sub))
            return 0
        rank, selection = _rank_text(client, sub), _selection_text(client, sub)
        reference = _score_reference(client, sub)
    print(
        f"#{sub.id} {sub.name!r} by {sub.owner}, created {sub.created_at}"
        + (f", phase {sub.phase}" if sub.phase else "")
    )
    if sub.description:
        print(f"  {sub.description}")
    print(f"state: {sub.state}, episodes {sub.progress.done}/{sub.progress.total}")
    print(_outcome_line(sub, rank, reference))
    print(selection)
    print(f"bundle sha256: {sub.bundle_sha256}")
    print(_page_line(client, sub.id))
    for e in sub.evaluations:
        of = f" of #{e.audit_of}" if e.audit_of is not None else ""
        print(
            f"  evaluation #{e.id} {e.kind}{of} {e.state} {e.progress.done}/{e.progress.total}:"
            f" set {e.evalset_commitment[:12]}, sim {e.sim_version or '-'}, sandbox {e.sandbox or '-'},"
            f" image {_short_image(e.image_digest)}"
            + (f", error {e.error.category}: {e.error.message}" if e.error else "")
            + (f", audit {e.audit.verdict}" if e.audit else "")
        )
    return 0


def _page_line(client: Client, submission_id: int) -> str:
    return f"page: {client.page_url(submission_id)} (sign in there with your token)"


def _short_image(image: str | None) -> str:
    """A digest's first 12 hex digits, as ``docker images`` shows it; any other image name (the process sandbox's
    ``process:python-3.11.9``) in full, since cutting it changes what it says."""
    if not image:
        return "-"
    algorithm, _, digest = image.partition(":")
    if algorithm == "sha256" and len(digest) == 64:
        return f"sha256:{digest[:12]}"
    return image


def cmd_select(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config() as client:
        sub = client.select(args.id)
    print(f"selected #{sub.id} {sub.name!r} for the final ranking")
    return 0


def cmd_unselect(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config() as client:
        sub = client.unselect(args.id)
    print(f"unselected #{sub.id} {sub.name!r}")
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config() as client:
        logs = client.logs(args.id)
    if args.json:
        _print_json([asdict(entry) for entry in logs])
        return 0
    if not logs:
        print(f"no episode has run yet for #{args.id}")
    for entry in logs:
        print(f"{entry.scenario}/{entry.episode}: {entry.status}" + (f": {entry.message}" if entry.message else ""))
        for label, text in (("stdout", entry.stdout), ("stderr", entry.stderr)):
            if text:
                print(f"  --- {label} ---")
                print("\n".join("  " + line for line in text.rstrip().splitlines()))
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config(require_token=False) as client:
        board = client.leaderboard(args.split, phase=args.phase)
    if args.json:
        _print_json(asdict(board))
        return 0
    flags = [word for word, on in (("frozen", board.frozen), ("published", board.published)) if on]
    print(
        (f"phase {board.phase}: " if board.phase else "")
        + f"{board.split} leaderboard"
        + (f" ({', '.join(flags)})" if flags else "")
        + f": score = ratio to {board.reference}, lower is better"
    )
    rows = [
        [
            str(r.rank) if r.rank is not None else "-",
            f"({r.participant})" if r.baseline else _competitor(r),
            r.submission_name,
            f"{r.score:.4f}",
            f"{r.ci_low:.4f}-{r.ci_high:.4f}",
            str(r.submissions) if not r.baseline else "",
            (r.submitted_at or "")[:10],
        ]
        for r in board.rows
    ]
    print(
        text_table(["rank", "participant", "submission", "score", "95% CI", "subs", "date"], rows)
        if rows
        else "(empty)"
    )
    return 0


def _competitor(row: Any) -> str:
    """A board row's name: a team's with its members, a participant's alone."""
    return f"{row.participant} ({', '.join(row.members)})" if row.members else row.participant


def cmd_phases(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config(require_token=False) as client:
        phases = client.phases()
    if args.json:
        _print_json([asdict(p) for p in phases])
        return 0
    print(phases_table(phases))
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    return _run_sim(list(args.sim_args))


def _run_sim(argv: list[str]) -> int:
    from layersched.sim.cli import main as sim_main

    return sim_main(argv)


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from layersched.worker.serve import serve
    except ImportError as exc:
        raise ConfigError(
            f"layersched serve needs the server extra (missing module {exc.name!r}): pip install 'layersched[server]'"
        ) from None
    return serve(host=args.host, port=args.port, data_dir=args.data_dir, demo=args.demo)


def cmd_worker(args: argparse.Namespace) -> int:
    try:
        from layersched.worker.service import run_worker
    except ImportError as exc:
        raise ConfigError(
            f"layersched worker needs the server extra (missing module {exc.name!r}): pip install 'layersched[server]'"
        ) from None
    from click.exceptions import ClickException

    from layersched.server.config import get_settings
    from layersched.server.db import display_url

    # A worker never migrates (several may start at once, on several hosts); it says which database it uses and who
    # brings that database's schema up to date.
    print(
        f"layersched: database {display_url(get_settings().database_url)} (its schema is brought up to date by "
        "`layersched serve`, `layersched admin user add --bootstrap` or `alembic upgrade head`, not by a worker)",
        file=sys.stderr,
        flush=True,
    )
    try:
        run_worker(args.celery_args)
    except ClickException as exc:  # Celery's own command line refused an argument given after --
        raise ConfigError(f"celery worker: {exc.format_message()}") from None
    return 0


def cmd_evalset_verify(args: argparse.Namespace) -> int:
    from layersched.sim.evalset import verify_evalset

    if verify_evalset(args.file, args.commitment):
        print(f"{args.file}: matches commitment {args.commitment.strip().lower()}")
        return 0
    return _fail(f"{args.file} does NOT match commitment {args.commitment.strip()}: the set was changed")


# ---------------------------------------------------------------------------------------------- output


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False))
