"""The participant's commands beside submitting (``submitting``): ``login`` (the server and token every other command
uses), ``select`` and ``unselect`` (the final selection), ``logs`` (a submission's episodes), ``leaderboard`` and
``phases`` (what the challenge shows everyone). Each talks to the server through ``layersched.sdk.client``."""

from __future__ import annotations

import argparse
import getpass
import sys
from dataclasses import asdict
from typing import Any

from layersched.sdk.arguments import phase_name
from layersched.sdk.commands import AddCommand, print_json
from layersched.sdk.config import load_config, normalise_server, save_config
from layersched.sdk.errors import ConfigError, NotFound
from layersched.sdk.tables import phases_table, quota_today, text_table
from layersched.sdk.terminal_text import continued, quoted
from layersched.sim.arguments import positive_int


def add_login_parser(sub: Any, add: AddCommand) -> None:
    """``login``: first of the commands, as a student meets them."""
    p = add(
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


def add_student_parsers(sub: Any, add: AddCommand) -> None:
    """``select``, ``unselect``, ``logs``, ``leaderboard``, ``phases``."""
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
        p = add(sub, name, handler, help_text, description, f"  layersched {name} 12\n  layersched status\n")
        p.add_argument("id", type=positive_int, help="submission id")

    p = add(
        sub,
        "logs",
        cmd_logs,
        "show the per-episode log of a submission",
        "The submission's phase and outcome (score as a ratio to its phase's reference baseline, rank on its\n"
        "phase's board), then the status and message of every episode; output and tracebacks for public\n"
        "episodes only (of a hidden episode: its status and the step at fault).",
        "  layersched logs 12\n  layersched logs 12 --json\n",
    )
    p.add_argument("id", type=positive_int, help="submission id")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add(
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

    p = add(
        sub,
        "phases",
        cmd_phases,
        "list the challenge's phases",
        "Each phase: its name (for --phase), title, track, evaluation set, when it opens and closes, your uploads\n"
        "to it today against its daily quota (when logged in), and whether it is open now, closed, published\n"
        "(closed for good: its final ranking is out) or opens later.",
        "  layersched phases\n  layersched phases --json\n",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


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
            try:
                quota = quota_today(client.phases())
            except NotFound:  # a server older than phases: one quota
                quota = f"{me.submissions_today}/{me.daily_quota} submissions today"
        team = f", team {me.team}" if me.team else ""
        who = f" as {me.name} ({me.role}{team}; {quota})"
    path = save_config(server, token)
    # The server as saved (normalised: no trailing slash or /api/v1), which every later command talks to.
    print(f"logged in to {normalise_server(server)}{who}; saved to {path}")
    return 0


def cmd_select(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config() as client:
        sub = client.select(args.id)
        mine = client.submissions(limit=200, phase=sub.phase).data if sub.phase else []
    print(f"selected #{sub.id} '{sub.name}' for the final ranking" + _of_phase(sub, mine))
    return 0


def _of_phase(sub: Any, mine: list[Any]) -> str:
    """`` of phase final (your selection there: #9, #12)``: a selection counts within its phase."""
    if sub.phase is None:  # a server older than phases
        return ""
    chosen = sorted(s.id for s in mine if s.selected and s.owner == sub.owner)
    listed = ", ".join(f"#{i}" for i in chosen) or "none"
    return f" of phase {sub.phase} (your selection there: {listed})"


def cmd_unselect(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config() as client:
        sub = client.unselect(args.id)
        mine = client.submissions(limit=200, phase=sub.phase).data if sub.phase else []
    print(f"unselected #{sub.id} '{sub.name}'" + _of_phase(sub, mine))
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client
    from layersched.sdk.outcome import outcome_line, rank_for, reference_for

    with Client.from_config() as client:
        logs = client.logs(args.id)
        if args.json:
            print_json([asdict(entry) for entry in logs])
            return 0
        sub = client.submission(args.id)
        outcome = outcome_line(sub, rank_for(client, sub), reference_for(client, sub))
    print(f"#{sub.id} '{sub.name}'" + (f", phase {sub.phase}" if sub.phase else "") + ":")
    print(outcome)
    if not logs:
        print(f"no episode has run yet for #{args.id}")
    for entry in logs:
        message = f": {continued(entry.message)}" if entry.message else ""
        print(f"{entry.scenario}/{entry.episode}: {entry.status}{message}")
        for label, text in (("stdout", entry.stdout), ("stderr", entry.stderr)):
            if text:
                print(f"  --- {label} ---")
                print(quoted(text.rstrip()))
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config(require_token=False) as client:
        board = client.leaderboard(args.split, phase=args.phase)
    if args.json:
        print_json(asdict(board))
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
        print_json([asdict(p) for p in phases])
        return 0
    print(phases_table(phases))
    return 0
