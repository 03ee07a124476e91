"""``layersched admin quota grant|list``: extra submissions for a participant or a team in a phase on a day (a
member's grant counts for their team, as their submissions do). Cancels by the organisers give the submission back
by themselves (``admin cancel``)."""

from __future__ import annotations

import argparse
import datetime as dt
from dataclasses import asdict
from typing import Any

from layersched.sdk.arguments import phase_name
from layersched.sdk.commands import AddCommand, configured_client, missing_action, print_json
from layersched.sdk.tables import text_table
from layersched.sim.arguments import positive_int


def _day(value: str) -> str:
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a day: give YYYY-MM-DD (UTC)") from None


def add_quota_parser(actions: Any, add: AddCommand) -> None:
    quota = add(
        actions,
        "quota",
        missing_action,
        "grant extra submissions to a participant or a team",
        "Grant a participant or a team extra submissions in a phase on one UTC day (default today); each grant\n"
        "is in the audit log. A member's grant counts for their team. An organiser's cancel already gives the\n"
        "submission back.",
        "  layersched admin quota grant --phase final --user ada --extra 2 --reason 'lost to the outage'\n"
        "  layersched admin quota list --phase final\n",
    )
    quota_actions = quota.add_subparsers(dest="quota_command", metavar="ACTION")
    quota_actions.required = True
    p = add(
        quota_actions,
        "grant",
        cmd_quota_grant,
        "grant extra submissions in a phase on a day",
        "Add --extra submissions to the quota of --user or --team (one of them) in --phase, on --day.",
        "  layersched admin quota grant --phase final --user ada --extra 2\n"
        "  layersched admin quota grant --phase final --team owls --extra 1 --day 2027-02-28 --reason outage\n",
    )
    p.add_argument("--phase", type=phase_name, required=True, help="the phase")
    whom = p.add_mutually_exclusive_group(required=True)
    whom.add_argument("--user", help="a participant's name")
    whom.add_argument("--team", help="a team's name")
    p.add_argument("--extra", type=positive_int, required=True, help="how many extra submissions")
    p.add_argument("--day", type=_day, help="the UTC day, YYYY-MM-DD (default: today)")
    p.add_argument("--reason", default="", help="kept with the grant and in the audit log")

    p = add(
        quota_actions,
        "list",
        cmd_quota_list,
        "list the grants",
        "Every grant, newest first (of one phase with --phase).",
        "  layersched admin quota list\n  layersched admin quota list --phase final --json\n",
    )
    p.add_argument("--phase", type=phase_name, help="only this phase's")
    p.add_argument("--json", action="store_true", help="print JSON")


def cmd_quota_grant(args: argparse.Namespace) -> int:
    with configured_client() as client:
        grant = client.admin_grant_quota(
            phase=args.phase, extra=args.extra, user=args.user, team=args.team, day=args.day, reason=args.reason
        )
    print(f"granted {grant.extra} extra submissions to {grant.kind} {grant.to} in phase {grant.phase} on {grant.day}")
    return 0


def cmd_quota_list(args: argparse.Namespace) -> int:
    with configured_client() as client:
        page = client.admin_quota_grants(phase=args.phase)
    if args.json:
        print_json({"data": [asdict(g) for g in page.data], "count": page.count})
        return 0
    rows = [[str(g.id), g.phase, f"{g.kind} {g.to}", str(g.extra), g.day, g.reason] for g in page.data]
    print(text_table(["id", "phase", "to", "extra", "day (UTC)", "reason"], rows) if rows else "(no grants)")
    return 0
