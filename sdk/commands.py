"""What the CLI's command modules (``cli``, ``admin``, ``teams``) share: the shape of the function that adds a
command, the handler of a command group called without its action, and the client of the saved configuration."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from layersched.sdk.config import load_config
from layersched.sdk.errors import ConfigError

Handler = Callable[[argparse.Namespace], int]
# ``cli._add``: (subparsers, name, handler, help, description, examples) -> the new command's parser.
AddCommand = Callable[..., argparse.ArgumentParser]


def missing_action(args: argparse.Namespace) -> int:  # pragma: no cover - argparse requires an action first
    raise ConfigError("choose an action; see --help")


def configured_client() -> Any:
    """A client of the server and token that ``layersched login`` saved (imported late: ``--help`` needs no httpx)."""
    from layersched.sdk.client import Client

    return Client.from_config(load_config())
