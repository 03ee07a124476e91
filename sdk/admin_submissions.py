"""``layersched admin submissions``: every submission, filtered, with phase, team, state, failure category, queue
wait and run time, and the failures by category. The filter options are the ones ``admin export`` and the bulk
``admin rerun`` and ``admin disqualify`` take (``add_filter_options``)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from layersched.sdk.arguments import moment, phase_name
from layersched.sdk.commands import AddCommand, configured_client, print_json
from layersched.sdk.tables import text_table
from layersched.sim.arguments import positive_int

STATES = ("queued", "running", "succeeded", "failed", "cancelled")


def add_filter_options(parser: argparse.ArgumentParser) -> None:
    """--phase, --state, --owner, --team, --category, --since: which submissions."""
    parser.add_argument("--phase", type=phase_name, help="only this phase's")
    parser.add_argument("--state", choices=STATES, help="only in this state (of the newest evaluation)")
    parser.add_argument("--owner", help="only this user's")
    parser.add_argument("--team", help="only this team's members'")
    parser.add_argument(
        "--category", help="only failures of this category (timeout, crash, ...; infrastructure_error: the service's)"
    )
    parser.add_argument("--since", type=moment, help="only uploaded at or after this time (ISO 8601)")


def chosen(args: argparse.Namespace) -> Any:
    from layersched.sdk.api.views import Filter

    return Filter(
        phase=args.phase, state=args.state, owner=args.owner, team=args.team, category=args.category, since=args.since
    )


def add_submissions_parser(actions: Any, add: AddCommand) -> None:
    p = add(
        actions,
        "submissions",
        cmd_submissions,
        "list every submission, filtered, with wait and run times",
        "Every submission, newest first, with its phase, team, state, failure category, how long it waited in\n"
        "the queue and how long it ran, and the failures grouped by category. The filters combine;\n"
        "--category infrastructure_error means every failure of the service, whatever its category.",
        "  layersched admin submissions --phase final --state failed\n"
        "  layersched admin submissions --owner ada --json\n"
        "  layersched admin submissions --state failed --category infrastructure_error --since 2027-02-01T00:00Z\n",
    )
    add_filter_options(p)
    p.add_argument("--limit", type=positive_int, default=50, help="how many to list (default 50, at most 200)")
    p.add_argument("--offset", type=int, default=0, help="skip the first N")
    p.add_argument("--json", action="store_true", help="print JSON")


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f}s"
    if value < 3600:
        return f"{int(value // 60)}m{int(value % 60):02d}s"
    return f"{int(value // 3600)}h{int(value % 3600 // 60):02d}m"


def cmd_submissions(args: argparse.Namespace) -> int:
    with configured_client() as client:
        page = client.admin_submissions(chosen(args), offset=args.offset, limit=args.limit)
    if args.json:
        print_json(asdict(page))
        return 0
    rows = [
        [
            f"#{s.id}",
            s.name[:40],
            s.owner,
            s.team or "-",
            s.phase,
            s.state + (" (dq)" if s.disqualified is not None else ""),
            s.category or "-" + (" (service)" if s.service_failure else ""),
            _seconds(s.wait_s),
            _seconds(s.run_s),
            f"{s.score:.4f}" if s.score is not None else "-",
            s.created_at[:16].replace("T", " "),
        ]
        for s in page.data
    ]
    headers = ["id", "name", "owner", "team", "phase", "state", "category", "wait", "run", "score", "created (UTC)"]
    print(text_table(headers, rows) if rows else "(no submissions match)")
    states = ", ".join(f"{state} {count}" for state, count in page.summary.states.items() if count)
    print(f"states: {states or 'none'}")
    if page.summary.failures:
        failures = ", ".join(f"{c} {n}" for c, n in page.summary.failures.items())
        print(f"failures by category: {failures}")
    print(f"({len(page.data)} of {page.count}; --offset and --limit for more)", file=sys.stderr)
    return 0
