"""``layersched team ...`` (participants) and ``layersched admin team ...`` (organisers): forming and changing teams.

A team shares one daily quota, one leaderboard row and one final selection, and its members read each other's
submissions and logs. The rules (Kaggle's: one team per participant, a size limit, no changes after the merger
deadline, a joiner's submissions count against the team's quota) are the server's; these commands say what it
answered.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from layersched.sdk.commands import AddCommand, configured_client, missing_action
from layersched.sdk.tables import text_table
from layersched.sim.arguments import positive_int


def _team_name(value: str) -> str:
    """A team's name as the server accepts it: 1-100 characters, no leading, trailing or double spaces."""
    if not 1 <= len(value) <= 100 or value != " ".join(value.split()):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a team name: 1-100 characters of letters, digits and _.@+- with single spaces between"
        )
    return value


def add_team_parser(sub: Any, add: AddCommand) -> None:
    team = add(
        sub,
        "team",
        missing_action,
        "create, join, leave or show your team",
        "A team shares one daily quota, one leaderboard row (under its name) and one final selection; its\n"
        "members read each other's submissions and logs. You are in one team at most. A member invites with a\n"
        "one-use code; the invitee joins with it. After the organisers' team merger deadline teams are fixed.",
        "  layersched team create ants\n  layersched team invite            # prints a code for your teammate\n"
        "  layersched team join lsi_...\n  layersched team show\n  layersched team leave\n",
    )
    actions = team.add_subparsers(dest="team_command", metavar="ACTION")
    actions.required = True
    p = add(
        actions, "create", cmd_create, "create a team and be its first member", "", "  layersched team create ants\n"
    )
    p.add_argument("name", type=_team_name, help="the team's name, as the leaderboard shows it")
    add(
        actions,
        "invite",
        cmd_invite,
        "make a one-use code for someone to join your team",
        "The code is shown once; send it to your teammate, who runs `layersched team join CODE`.",
        "  layersched team invite\n",
    )
    p = add(
        actions,
        "join",
        cmd_join,
        "join a team with an invite code",
        "Join the team whose member gave you the code. Refused if you are in a team already, the team is full,\n"
        "the code was used or expired, or your submissions today would put the team over a phase's quota.",
        "  layersched team join lsi_...\n",
    )
    p.add_argument("code", help="the code a member of the team gave you")
    add(
        actions,
        "leave",
        cmd_leave,
        "leave your team",
        "Your submissions are yours: they leave with you and count for you alone again. A team you named after\n"
        "yourself is renamed team-<id> when you leave it to others.",
        "  layersched team leave\n",
    )
    p = add(
        actions,
        "show",
        cmd_show,
        "show your team",
        "Your team's name and members.",
        "  layersched team show\n  layersched team show --json\n",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p = add(
        actions,
        "list",
        cmd_list,
        "list the teams",
        "The teams and their members, oldest first, a page at a time.",
        "  layersched team list\n  layersched team list --offset 50\n",
    )
    _add_list_arguments(p)


def add_admin_team_parser(actions: Any, add: AddCommand) -> None:
    team = add(
        actions,
        "team",
        missing_action,
        "create teams, assign and remove members",
        "Organisers may change teams at any time, after the merger deadline too (each change is in the audit\n"
        "log); the size limit (LAYERSCHED_TEAM_MAX_SIZE) and one team per participant still hold.",
        "  layersched admin team create owls\n  layersched admin team assign owls ada\n"
        "  layersched admin team remove owls ada\n  layersched admin team list\n",
    )
    team_actions = team.add_subparsers(dest="team_command", metavar="ACTION")
    team_actions.required = True
    p = add(
        team_actions, "create", cmd_admin_create, "create an empty team", "", "  layersched admin team create owls\n"
    )
    p.add_argument("name", type=_team_name, help="the team's name")
    for verb, handler, text in (
        ("assign", cmd_admin_assign, "put a participant into a team"),
        ("remove", cmd_admin_remove, "take a participant out of a team"),
    ):
        p = add(
            team_actions, verb, handler, text, text.capitalize() + ".", f"  layersched admin team {verb} owls ada\n"
        )
        p.add_argument("team", type=_team_name, help="the team")
        p.add_argument("user", help="the participant's name")
    p = add(
        team_actions,
        "list",
        cmd_list,
        "list the teams",
        "The teams and their members, oldest first, a page at a time.",
        "  layersched admin team list\n  layersched admin team list --offset 50 --limit 200\n",
    )
    _add_list_arguments(p)


def _add_list_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the page's teams as JSON")
    p.add_argument("--limit", type=positive_int, default=50, help="teams to show (default 50, at most 200)")
    p.add_argument("--offset", type=int, default=0, help="skip the first N teams")


def _renamed(team: Any) -> str:
    """`` (named alice until that member left it)`` for a team the server renamed, else nothing."""
    return f" (named {team.renamed_from} until that member left it)" if team.renamed_from else ""


def _line(team: Any) -> str:
    members = ", ".join(team.members) if team.members else "no members"
    return f"team {team.name}{_renamed(team)}: {members} ({len(team.members)} of at most {team.max_size})"


def cmd_create(args: argparse.Namespace) -> int:
    with configured_client() as client:
        print(_line(client.create_team(args.name)))
    return 0


def cmd_invite(args: argparse.Namespace) -> int:
    with configured_client() as client:
        invite = client.invite()
    print(f"invite code for team {invite.team} (one use, until {invite.expires_at}; shown once):")
    print(invite.code)
    print(f"your teammate runs: layersched team join {invite.code}")
    return 0


def cmd_join(args: argparse.Namespace) -> int:
    with configured_client() as client:
        print("joined " + _line(client.join_team(args.code)))
    return 0


def cmd_leave(args: argparse.Namespace) -> int:
    with configured_client() as client:
        team = client.leave_team()
    print(f"left team {team.name}{_renamed(team)}; your submissions count for you alone again")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    with configured_client() as client:
        team = client.my_team()
    print(json.dumps(asdict(team), indent=2) if args.json else _line(team))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with configured_client() as client:
        page = client.teams(offset=args.offset, limit=args.limit)
    if args.json:
        print(json.dumps([asdict(t) for t in page.data], indent=2))
        return 0
    rows = [[t.name, ", ".join(t.members), f"{len(t.members)}/{t.max_size}"] for t in page.data]
    print(text_table(["team", "members", "size"], rows) if rows else "(no teams)")
    if args.offset + len(page.data) < page.count:
        print(f"(teams {args.offset + 1}-{args.offset + len(page.data)} of {page.count}; --offset N for more)")
    return 0


def cmd_admin_create(args: argparse.Namespace) -> int:
    with configured_client() as client:
        print("created " + _line(client.admin_create_team(args.name)))
    return 0


def cmd_admin_assign(args: argparse.Namespace) -> int:
    with configured_client() as client:
        print(f"assigned {args.user}: " + _line(client.admin_assign(args.team, args.user)))
    return 0


def cmd_admin_remove(args: argparse.Namespace) -> int:
    with configured_client() as client:
        print(f"removed {args.user}: " + _line(client.admin_remove(args.team, args.user)))
    return 0
