"""``layersched admin user import|list|disable|enable|link``: a class enrolled from a roster file, the users'
list, disabling and enabling an account, one-time sign-in links. ``admin user add`` stays in ``admin``, which
adds these to its ``user`` group."""

from __future__ import annotations

import argparse
import csv
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from layersched.sdk.commands import AddCommand, configured_client, print_json
from layersched.sdk.errors import ConfigError
from layersched.sdk.spreadsheet import spreadsheet_cell
from layersched.sdk.tables import text_table


def add_user_commands(user_actions: Any, add: AddCommand) -> None:
    p = add(
        user_actions,
        "import",
        cmd_user_import,
        "enrol a roster (CSV: name,email[,team][,role]) in one go",
        "Create every user of a roster file in one transaction: a bad line changes nothing and is named by\n"
        "line and column; users already there are reported, not changed, so running the same file again\n"
        "changes nothing. Teams the file names are created and filled (within the team size limit).\n"
        "The new users' tokens go to --tokens-out (CSV name,email,token, created with mode 0600); with\n"
        "--links, one-time sign-in links for the web pages instead, where each student also copies a token.",
        "  layersched admin user import roster.csv --tokens-out tokens.csv\n"
        "  layersched admin user import roster.csv --tokens-out links.csv --links\n",
    )
    p.add_argument("roster", type=Path, help="CSV with a header: name,email and optionally team, role")
    p.add_argument(
        "--tokens-out",
        type=Path,
        required=True,
        metavar="FILE",
        help="where to write the new users' tokens or links (a new file, mode 0600)",
    )
    p.add_argument("--links", action="store_true", help="one-time sign-in links instead of tokens")

    p = add(
        user_actions,
        "list",
        cmd_user_list,
        "list users with team, last submission and active tokens",
        "Every user in creation order: id, name, e-mail, role, team, created, last submission, active tokens,\n"
        "and whether they are disabled.",
        "  layersched admin user list\n  layersched admin user list --team owls --json\n",
    )
    p.add_argument("--role", choices=("participant", "organiser"), help="only this role")
    p.add_argument("--team", help="only this team's members")
    p.add_argument("--disabled", action="store_true", help="only disabled users")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add(
        user_actions,
        "disable",
        cmd_user_disable,
        "revoke a user's tokens, refuse their uploads, take them off the boards",
        "Disable an account: every token of it is revoked (its page sessions end), its uploads are refused and\n"
        "its submissions leave the boards. Reversible with `enable`; both are in the audit log.",
        '  layersched admin user disable ada --reason "shared her token"\n',
    )
    p.add_argument("name", help="the user's name")
    p.add_argument("--reason", default="", help="kept in the audit log")

    p = add(
        user_actions,
        "enable",
        cmd_user_enable,
        "bring a disabled user back",
        "Enable a disabled account: its submissions are back on the boards. Its revoked tokens stay revoked:\n"
        "give the user a new one (`admin user link NAME` or `admin token new ID`).",
        "  layersched admin user enable ada\n",
    )
    p.add_argument("name", help="the user's name")

    p = add(
        user_actions,
        "link",
        cmd_user_link,
        "a new one-time sign-in link for a user",
        "Print a one-time link to the web pages for the user (shown once): it signs them in and shows them a\n"
        "fresh API token for `layersched login`.",
        "  layersched admin user link ada\n",
    )
    p.add_argument("name", help="the user's name")


def _new_private_file(path: Path) -> int:
    """A new file only its owner reads, opened before anything is asked of the server: a file that exists or cannot
    be made is reported before a single account is created, so no token is ever made without a place to go."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConfigError(f"{path} exists already: name a new file for the tokens (nothing was imported)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror} (nothing was imported)") from None


def cmd_user_import(args: argparse.Namespace) -> int:
    from layersched.sdk.roster import read_roster

    rows = read_roster(args.roster)
    if not rows:
        raise ConfigError(f"{args.roster}: no users below the header (nothing was imported)")
    fd = _new_private_file(args.tokens_out)
    try:
        with configured_client() as client:
            result = client.admin_import_roster(rows, links=args.links)
    except BaseException:
        os.close(fd)
        args.tokens_out.unlink()  # ours, and empty: nothing was imported
        raise
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["name", "email", "link" if args.links else "token"])
        for user in result.created:
            secret = user.link if args.links else user.token
            writer.writerow([spreadsheet_cell(user.name), spreadsheet_cell(user.email), secret or ""])
    what = "sign-in links" if args.links else "tokens"
    print(f"created {len(result.created)} users; their {what} are in {args.tokens_out} (mode 0600)")
    if result.teams_created:
        print(f"created {len(result.teams_created)} teams: {', '.join(result.teams_created)}")
    for assignment in result.assigned:
        print(f"put {assignment['user']} (already there) into team {assignment['team']}")
    if result.existing:
        print(f"{len(result.existing)} users were there already, unchanged: {', '.join(result.existing)}")
    return 0


def cmd_user_list(args: argparse.Namespace) -> int:
    with configured_client() as client:
        page = client.admin_users(role=args.role, team=args.team, disabled=True if args.disabled else None)
    if args.json:
        print_json({"data": [asdict(u) for u in page.data], "count": page.count})
        return 0
    rows = [
        [
            str(u.id),
            u.name,
            u.email,
            u.role,
            u.team or "-",
            u.created_at[:16].replace("T", " "),
            (u.last_submission_at or "-")[:16].replace("T", " "),
            str(u.tokens_active),
            "disabled" if u.disabled_at else "",
        ]
        for u in page.data
    ]
    headers = ["id", "name", "email", "role", "team", "created (UTC)", "last submission", "tokens", ""]
    print(text_table(headers, rows) if rows else "(no users)")
    print(f"({len(page.data)} of {page.count})", file=sys.stderr)
    return 0


def cmd_user_disable(args: argparse.Namespace) -> int:
    with configured_client() as client:
        result = client.admin_disable_user(args.name, reason=args.reason)
    print(
        f"disabled {result.user.name}: {result.tokens_revoked} tokens revoked, uploads refused, off the boards "
        f"(undo: layersched admin user enable {result.user.name})"
    )
    return 0


def cmd_user_enable(args: argparse.Namespace) -> int:
    with configured_client() as client:
        user = client.admin_enable_user(args.name)
    print(
        f"enabled {user.name}: back on the boards; their old tokens stay revoked, give them a new one with "
        f"`layersched admin user link {user.name}` or `layersched admin token new {user.id}`"
    )
    return 0


def cmd_user_link(args: argparse.Namespace) -> int:
    with configured_client() as client:
        link = client.admin_user_link(args.name)
    print(f"one-time sign-in link for {link.user} (shown once, valid until {link.expires_at}): {link.link}")
    return 0
