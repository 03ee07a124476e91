"""The commands that run the service itself on this machine: ``serve`` (everything on one host: API, pages, a
worker, SQLite and an embedded broker) and ``worker`` (an evaluation worker of a production deployment). Both need
the ``server`` extra, imported only when they run, and say so when it is missing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from layersched.sdk.commands import AddCommand
from layersched.sdk.errors import ConfigError, LayerschedError
from layersched.sim.arguments import positive_int


def add_hosting_parsers(sub: Any, add: AddCommand) -> None:
    """``serve`` and ``worker``."""
    p = add(
        sub,
        "serve",
        cmd_serve,
        "run the whole service on this machine (organisers, demos)",
        "Start the API, the leaderboard pages and a worker with SQLite storage and an embedded broker; the\n"
        "Docker sandbox when an engine is reachable, the process sandbox otherwise. Registers\n"
        "LAYERSCHED_EVALSET_PATH (default: the sample) as the default phase's set and LAYERSCHED_EXTRA_EVALSET_PATHS\n"
        "for other phases. --demo instead makes a phase on each track's public sample (layers, jobs, workflows),\n"
        "demo users and one starter submission (once per data directory). Needs the server extra:\n"
        "pip install 'layersched[server]'.",
        "  layersched serve --demo                    # prints a demo organiser's and student's tokens\n"
        "  layersched serve --host 0.0.0.0 --port 8080 --data-dir /srv/layersched\n",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=positive_int, default=8000, help="port (default 8000)")
    p.add_argument("--data-dir", type=Path, default=Path("var"), help="database, broker and bundles (default ./var)")
    p.add_argument("--demo", action="store_true", help="create demo users, print their tokens, submit a policy")

    p = add(
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


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from layersched.worker.serve import serve
    except ImportError as exc:
        raise ConfigError(
            f"layersched serve needs the server extra (missing module {exc.name!r}): pip install 'layersched[server]'"
        ) from None
    from layersched.server.errors import ServiceError

    try:
        return serve(host=args.host, port=args.port, data_dir=args.data_dir, demo=args.demo)
    except ServiceError as exc:  # a set refused at registration (another file under a registered name)
        raise LayerschedError(exc.message) from None


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
