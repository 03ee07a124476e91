"""Reading a TOML file of the SDK's (a kit's ``layersched-kit.toml``, a ``challenge.toml``): one ``ConfigError``
naming the file for an unreadable file or bad TOML."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from layersched.sdk.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 needs the tomli backport
    import tomli as tomllib


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """The TOML table of the file at ``path``, ``what`` it is naming it in errors (``challenge file``)."""
    try:
        table: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        return table
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc})") from None
