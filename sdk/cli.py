"""The ``layersched`` command: what students and organisers type.

Every command prints one clear ``error: ...`` line and exits non-zero when something fails (1 for a failure,
2 for a usage error, 130 when interrupted); no traceback reaches the terminal. Progress goes to stderr, results to
stdout, so ``--json`` output can be piped.

This module is the entry point (``main``) and the top-level parser; the commands live by what they do:
``student`` (login, select, unselect, logs, leaderboard, phases) and ``submitting`` (submit, status) talk to the
server for a participant; ``local`` (init, validate, sim, evalset verify) and ``replay_cli`` (replay) need no
server; ``hosting`` (serve, worker) runs the service; ``teams`` (team ...) and ``admin`` with ``admin_phases``
(admin ...) are the team and organiser commands. ``commands`` is what they share.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from layersched.sdk.admin import add_admin_parser
from layersched.sdk.commands import Formatter, Handler, add_command, fail
from layersched.sdk.config import LOGIN_HINT, track_modules
from layersched.sdk.errors import AuthError, Forbidden, LayerschedError
from layersched.sdk.hosting import add_hosting_parsers
from layersched.sdk.local import add_kit_parsers, add_tool_parsers, run_sim
from layersched.sdk.replay_cli import add_replay_parser
from layersched.sdk.student import add_login_parser, add_student_parsers
from layersched.sdk.submitting import add_submitting_parsers
from layersched.sdk.teams import add_team_parser
from layersched.sdk.terminal_text import for_terminal
from layersched.sim.errors import SimError
from layersched.sim.tracks import load_track_module

STUDENT_EPILOG = """\
first steps:
  pip install "layersched[torch,gym]"
  layersched login --server https://challenge.example.org --token YOUR_TOKEN
  layersched phases
  layersched init my_policy --track jobs-v1 && cd my_policy
  layersched validate .
  layersched submit . --name first-try

Run `layersched COMMAND --help` for the options and examples of each command.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="layersched",
        description="The scheduling challenge's CLI: make, validate, submit and follow your policies on its tracks\n"
        "(layers-v1: layer-aware container placement; jobs-v1: multi-resource job scheduling; workflows-v1: DAG\n"
        "workflows on heterogeneous VMs; `layersched phases` lists the server's), and run the service as an organiser.",
        epilog=STUDENT_EPILOG,
        formatter_class=Formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    # In the order `layersched --help` lists them: a student's first steps first, the organisers' commands last.
    add_login_parser(sub, add_command)
    add_kit_parsers(sub, add_command)
    add_replay_parser(sub, add_command)
    add_submitting_parsers(sub, add_command)
    add_student_parsers(sub, add_command)
    add_tool_parsers(sub, add_command)
    add_hosting_parsers(sub, add_command)
    add_team_parser(sub, add_command)
    add_admin_parser(sub, add_command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``layersched`` console script; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:  # before parsing: `init --track` and the checks must know an organiser's own tracks
        for module in track_modules():
            load_track_module(module)
    except (LayerschedError, SimError) as exc:
        return fail(str(exc))
    if args_list[:1] == ["sim"]:  # everything after `sim` belongs to the simulator's own parser
        return run_sim(args_list[1:])
    parser = build_parser()
    args = parser.parse_args(args_list)
    handler: Handler = args.handler
    try:
        with for_terminal():  # whatever the server sent is printed escaped (terminal_text)
            code = handler(args)
        sys.stdout.flush()  # a reader that went away shows here, not as a traceback in the interpreter's exit
        return code
    except AuthError as exc:
        hint = "" if isinstance(exc, Forbidden) else f" ({LOGIN_HINT})"
        return fail(f"{exc}{hint}")
    except LayerschedError as exc:
        return fail(str(exc))
    except BrokenPipeError:
        return _reader_went_away()
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except SimError as exc:  # evalset verify, sim: bad files or parameters, already one clear sentence
        return fail(str(exc))
    except OSError as exc:  # unreadable policy, unwritable starter directory, full disk
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(f"{where}{exc.strerror or exc}")


def _reader_went_away() -> int:
    """``layersched leaderboard | head``: the reader closed the pipe, which is not an error to report.

    Later writes (the interpreter flushes stdout at exit) go to /dev/null, so Python prints nothing either; the exit
    code is that of a Unix tool ended by SIGPIPE (128 + 13), as the shell's ``pipefail`` expects.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("layersched")
    except PackageNotFoundError:
        return "unknown"
