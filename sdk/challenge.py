"""``layersched admin challenge apply|export``: the whole challenge (phases, team rules, final selection, deadline)
as one file, ``challenge.toml`` (``challenge_file``; format: ``docs/CHALLENGE.md``).

``apply`` brings the server to the file through the API in one transaction, printing each change (``--dry-run``:
only printing them); the same file again changes nothing; a refusal (a set that is not registered, a set change on
a phase with submissions) changes nothing either. ``export`` writes the server's challenge as such a file, so that
the next term starts from this term's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from layersched.sdk.challenge_file import read_challenge, write_challenge
from layersched.sdk.commands import AddCommand, configured_client, missing_action
from layersched.sdk.errors import ConfigError


def add_challenge_parser(actions: Any, add: AddCommand) -> None:
    challenge = add(
        actions,
        "challenge",
        missing_action,
        "apply or export the whole challenge as one file (challenge.toml)",
        "The challenge in one file: its phases (name, title, evaluation set, opening and closing times, quota,\n"
        "board), team rules (size, invite hours, merger deadline), final-selection size and submission deadline.\n"
        "Format: docs/CHALLENGE.md. The rules override the server's LAYERSCHED_* settings, which stay the defaults.",
        "  layersched admin challenge apply challenge.toml --dry-run\n"
        "  layersched admin challenge apply challenge.toml\n"
        "  layersched admin challenge export --out spring-2027.toml\n",
    )
    challenge_actions = challenge.add_subparsers(dest="challenge_command", metavar="ACTION")
    challenge_actions.required = True
    p = add(
        challenge_actions,
        "apply",
        cmd_challenge_apply,
        "bring the server to a challenge file",
        "Print what the file changes on the server (phases to create or change, rules), then apply it in one\n"
        "transaction with one audit-log entry. --dry-run prints and changes nothing. The same file again changes\n"
        "nothing. What the API refuses (a phase on a set that is not registered: layersched evalset register; a set\n"
        "change on a phase with submissions; a revealed set) is refused whole: nothing changes. Phases on the\n"
        "server that the file does not name are left as they are, and listed.",
        "  layersched admin challenge apply challenge.toml --dry-run\n"
        "  layersched admin challenge apply challenge.toml\n",
    )
    p.add_argument("file", type=Path, help="the challenge file (challenge.toml)")
    p.add_argument("--dry-run", action="store_true", help="print what would change; change nothing")
    p = add(
        challenge_actions,
        "export",
        cmd_challenge_export,
        "write the server's challenge as a challenge file",
        "The server's phases and the rules applied to it, as a challenge file: a copy to keep, or the start of\n"
        "the next term's (edit the sets and times, then apply it on the new server).",
        "  layersched admin challenge export\n  layersched admin challenge export --out spring-2027.toml\n",
    )
    p.add_argument("--out", type=Path, help="write to this file (default: print it)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")


def cmd_challenge_apply(args: argparse.Namespace) -> int:
    body = read_challenge(args.file)  # every key checked before the server is asked
    with configured_client() as client:
        plan = client.admin_apply_challenge(body, dry_run=args.dry_run)
    for change in plan.changes:
        print(f"  {change}")
    for note in plan.notes:
        print(f"  ({note})")
    if not plan.changes:
        print(f"nothing to change: the server already matches {args.file}")
    elif plan.applied:
        n = len(plan.changes)
        print(f"applied {args.file}: {n} change{'s' if n != 1 else ''} (in the audit log as apply_challenge)")
    else:
        print(f"dry run: nothing changed; `layersched admin challenge apply {args.file}` makes these changes")
    return 0


def cmd_challenge_export(args: argparse.Namespace) -> int:
    with configured_client() as client:
        text = write_challenge(client.admin_export_challenge(), source=client.server)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    if args.out.exists() and not args.force:
        raise ConfigError(f"{args.out} exists; use --force to overwrite it")
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0
