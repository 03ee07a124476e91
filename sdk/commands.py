"""What the CLI's command modules (``student``, ``submitting``, ``local``, ``hosting``, ``teams``, ``admin``,
``admin_phases``) share: how a command is added (its parser, with the examples kept as written), the handler of a
command group called without its action, the client of the saved configuration, and how results and failures are
printed."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from layersched.sdk.config import load_config
from layersched.sdk.errors import ConfigError

Handler = Callable[[argparse.Namespace], int]
# ``add_command``: (subparsers, name, handler, help, description, examples) -> the new command's parser.
AddCommand = Callable[..., argparse.ArgumentParser]


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the examples in epilogs as written."""


def add_command(
    sub: Any, name: str, handler: Handler, help_text: str, description: str, examples: str
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        description=description,
        epilog="examples:\n" + examples,
        formatter_class=Formatter,
    )
    parser.set_defaults(handler=handler)
    return parser


def missing_action(args: argparse.Namespace) -> int:  # pragma: no cover - argparse requires an action first
    raise ConfigError("choose an action; see --help")


def configured_client() -> Any:
    """A client of the server and token that ``layersched login`` saved (imported late: ``--help`` needs no httpx)."""
    from layersched.sdk.client import Client

    return Client.from_config(load_config())


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False))


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1
