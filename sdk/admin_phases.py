"""``layersched admin phase ...``: the organisers' commands on the challenge's phases (create, edit, open, close,
list), through the API with an organiser token. A phase scores on one registered evaluation set and has its own
times, quota and boards; ``admin`` adds these under its ``phase`` action."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from layersched.sdk.arguments import moment, phase_name
from layersched.sdk.commands import AddCommand, configured_client, missing_action
from layersched.sdk.errors import ConfigError
from layersched.sdk.tables import phases_table
from layersched.sim.arguments import positive_int


def add_phase_parser(actions: Any, add: AddCommand) -> None:
    phase = add(
        actions,
        "phase",
        missing_action,
        "create, edit, open, close and list the challenge's phases",
        "A phase scores its submissions on one registered evaluation set (its track is the set's), takes them\n"
        "between its opening and closing times, has its own daily quota and its own boards. Several may be open\n"
        "at once (dev beside final, one per track); participants then name one: layersched submit --phase.",
        "  layersched admin phase create dev --evalset sample --title Development\n"
        "  layersched admin phase create final --evalset spring --closes 2027-03-01T12:00Z --quota 2\n"
        "  layersched admin phase close main\n  layersched admin phase list\n",
    )
    phase_actions = phase.add_subparsers(dest="phase_command", metavar="ACTION")
    phase_actions.required = True
    p = add(
        phase_actions,
        "create",
        cmd_phase_create,
        "create a phase on a registered evaluation set",
        "The set must be registered with the service: `layersched evalset register FILE` where its file is (a\n"
        "worker host), or LAYERSCHED_EVALSET_PATH and LAYERSCHED_EXTRA_EVALSET_PATHS of `layersched serve`.\n"
        "Times are ISO 8601; without an offset they are UTC. A whole challenge's phases at once: admin challenge.",
        "  layersched admin phase create dev --evalset sample --title Development\n"
        "  layersched admin phase create final --evalset spring --opens 2027-02-01T00:00Z "
        "--closes 2027-03-01T12:00Z --quota 2\n",
    )
    p.add_argument("name", type=phase_name, help="the phase's name, as participants give it to --phase")
    p.add_argument("--evalset", required=True, help="the registered evaluation set it scores on")
    p.add_argument("--title", default="", help="shown on the leaderboard page (default: the name)")
    p.add_argument("--opens", type=moment, help="when it opens (default: now)")
    p.add_argument("--closes", type=moment, help="when it closes (default: open-ended)")
    p.add_argument("--quota", type=positive_int, help="submissions per participant a day (default: the server's)")
    p.add_argument(
        "--organisers-only", action="store_true", help="show its boards to organisers only (participants still submit)"
    )
    p = add(
        phase_actions,
        "edit",
        cmd_phase_edit,
        "change a phase's title, times, quota or board visibility",
        "Only what you name changes; its evaluation set stays (its submissions were scored on it). The phase\n"
        "must still close after it opens. Each change is in the audit log with the value before and after.",
        "  layersched admin phase edit final --closes 2027-03-08T12:00Z --quota 3\n"
        "  layersched admin phase edit dev --open-ended --default-quota --title 'Development round'\n",
    )
    p.add_argument("name", type=phase_name, help="the phase")
    p.add_argument("--title", help="its new title")
    p.add_argument("--opens", type=moment, help="when it opens")
    closes = p.add_mutually_exclusive_group()
    closes.add_argument("--closes", type=moment, help="when it closes")
    closes.add_argument("--open-ended", action="store_true", help="take its closing time away")
    quota = p.add_mutually_exclusive_group()
    quota.add_argument("--quota", type=positive_int, help="submissions per participant a day")
    quota.add_argument("--default-quota", action="store_true", help="use the server's daily quota")
    p.add_argument("--visibility", choices=("public", "organisers"), help="who sees its boards")
    p = add(
        phase_actions,
        "open",
        cmd_phase_open,
        "open a phase now",
        "A phase not open yet opens now; a closed one reopens, open-ended until closed again.",
        "  layersched admin phase open final\n",
    )
    p.add_argument("name", type=phase_name, help="the phase")
    p = add(
        phase_actions,
        "close",
        cmd_phase_close,
        "close a phase (now, or at a later time)",
        "Uploads to the phase are refused from then on, with its closing time; its boards stay.",
        "  layersched admin phase close dev\n  layersched admin phase close final --at 2027-03-01T12:00Z\n",
    )
    p.add_argument("name", type=phase_name, help="the phase")
    p.add_argument("--at", type=moment, help="when (default: now)")
    p = add(
        phase_actions,
        "list",
        cmd_phase_list,
        "list the phases",
        "Every phase, as `layersched phases` shows them.",
        "  layersched admin phase list\n",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _phase_line(verb: str, phase: Any) -> str:
    closes = f", closes {phase.closes_at}" if phase.closes_at else ", open-ended"
    now = "open now" if phase.open else "closed now"
    return f"phase {phase.name} {verb}: set {phase.evalset} ({phase.track}), opens {phase.opens_at}{closes}; {now}"


def cmd_phase_create(args: argparse.Namespace) -> int:
    with configured_client() as client:
        phase = client.admin_create_phase(
            name=args.name,
            evalset=args.evalset,
            title=args.title,
            opens_at=args.opens,
            closes_at=args.closes,
            daily_quota=args.quota,
            visibility="organisers" if args.organisers_only else "public",
        )
    print(_phase_line("created", phase))
    return 0


def cmd_phase_edit(args: argparse.Namespace) -> int:
    changes: dict[str, Any] = {}
    for field, value in (
        ("title", args.title),
        ("opens_at", args.opens),
        ("closes_at", args.closes),
        ("daily_quota", args.quota),
        ("visibility", args.visibility),
    ):
        if value is not None:
            changes[field] = value
    if args.open_ended:
        changes["closes_at"] = None
    if args.default_quota:
        changes["daily_quota"] = None
    if not changes:
        raise ConfigError("nothing to change: give --title, --opens, --closes, --open-ended, --quota, ... (see --help)")
    with configured_client() as client:
        print(_phase_line("changed", client.admin_edit_phase(args.name, **changes)))
    return 0


def cmd_phase_open(args: argparse.Namespace) -> int:
    with configured_client() as client:
        print(_phase_line("opened", client.admin_open_phase(args.name)))
    return 0


def cmd_phase_close(args: argparse.Namespace) -> int:
    with configured_client() as client:
        print(_phase_line("closed" if args.at is None else "closing", client.admin_close_phase(args.name, at=args.at)))
    return 0


def cmd_phase_list(args: argparse.Namespace) -> int:
    with configured_client() as client:
        phases = client.phases()
    if args.json:
        print(json.dumps([asdict(p) for p in phases], indent=2))
        return 0
    print(phases_table(phases))
    return 0
