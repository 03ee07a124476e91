"""Moderation at scale: ``layersched admin rerun`` and ``admin disqualify`` with several ids or a filter
(``--owner``, ``--phase --state failed --category infrastructure_error``, ...). They list what they would touch
first (``--dry-run`` stops there), ask before they go on (``--yes`` answers), then act on exactly what was listed.
One id and no filter is the single action ``admin`` has always had."""

from __future__ import annotations

import argparse
from typing import Any

from layersched.sdk.admin_submissions import add_filter_options, chosen
from layersched.sdk.commands import configured_client
from layersched.sdk.confirm import add_yes_argument, confirm
from layersched.sdk.errors import ConfigError
from layersched.sdk.tables import text_table

FILTERS = ("phase", "state", "owner", "team", "category", "since")


def add_bulk_options(parser: argparse.ArgumentParser) -> None:
    """The filter options, --dry-run and --yes, on a command whose positional ``ids`` take several ids."""
    add_filter_options(parser)
    parser.add_argument("--dry-run", action="store_true", help="list what would be touched, and touch nothing")
    add_yes_argument(parser)


def is_bulk(args: argparse.Namespace) -> bool:
    """Several ids, a filter or a dry run: the bulk path. One id alone is the single action."""
    filtered = any(getattr(args, name) is not None for name in FILTERS)
    if filtered and args.ids:
        raise ConfigError("name submissions by ids or by filter options, not both")
    if not filtered and not args.ids:
        raise ConfigError("name a submission id, several, or filter options (--owner, --phase, --state, ...)")
    return filtered or len(args.ids) > 1 or args.dry_run


def _listing(result: Any) -> str:
    rows = [
        [
            f"#{s.id}",
            s.name[:30],
            s.owner,
            s.phase,
            s.state + (" (dq)" if s.disqualified is not None else ""),
            s.category or "-" + (" (service)" if s.service_failure else ""),
        ]
        for s in result.submissions
    ]
    return text_table(["id", "name", "owner", "phase", "state", "category"], rows)


def _plan(args: argparse.Namespace, verb: str, ask: Any) -> tuple[Any, list[int]] | None:
    """The dry run, printed; None when there is nothing to do or the organiser said no (or asked a dry run)."""
    ids = list(args.ids) or None
    filtered = None if ids else chosen(args)
    result = ask(ids, filtered, True)
    if result.count == 0:
        print("no submissions match: nothing to do")
        return None
    print(_listing(result))
    if args.dry_run:
        print(f"would {verb} these {result.count} submissions (dry run: nothing was done)")
        return None
    confirm(f"{verb} these {result.count} submissions", yes=args.yes)
    return result, [s.id for s in result.submissions]


def cmd_bulk_rerun(args: argparse.Namespace) -> int:
    with configured_client() as client:

        def ask(ids: list[int] | None, filtered: Any, dry_run: bool) -> Any:
            return client.admin_bulk_rerun(ids=ids, chosen=filtered, evalset=args.evalset, dry_run=dry_run)

        planned = _plan(args, "rerun", ask)
        if planned is None:
            return 0
        _dry, ids = planned
        done = ask(ids, None, False)
    queued = ", ".join(f"#{e}" for e in done.evaluations) or "none"
    print(f"queued {len(done.evaluations)} reruns (evaluations {queued})")
    for skipped in done.skipped:
        print(f"skipped #{skipped['id']}: {skipped['why']}")
    return 0


def cmd_bulk_disqualify(args: argparse.Namespace) -> int:
    with configured_client() as client:

        def ask(ids: list[int] | None, filtered: Any, dry_run: bool) -> Any:
            return client.admin_bulk_disqualify(reason=args.reason, ids=ids, chosen=filtered, dry_run=dry_run)

        planned = _plan(args, "disqualify", ask)
        if planned is None:
            return 0
        _dry, ids = planned
        done = ask(ids, None, False)
    print(f"disqualified {done.count} submissions: {args.reason}")
    return 0
