"""Where the CLI finds its server and token.

``layersched login`` writes ``config.json`` into the user configuration directory (``platformdirs``; on Linux
``$XDG_CONFIG_HOME/layersched``, usually ``~/.config/layersched``) with mode 0600, because it holds a bearer token.
The environment overrides the file: ``LAYERSCHED_SERVER`` and ``LAYERSCHED_TOKEN`` (handy in CI and notebooks), and
``LAYERSCHED_CONFIG`` points at another file. This module is the only place of the SDK that reads the environment.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

from layersched.sdk.errors import ConfigError

APP_NAME = "layersched"
ENV_SERVER = "LAYERSCHED_SERVER"
ENV_TOKEN = "LAYERSCHED_TOKEN"
ENV_CONFIG = "LAYERSCHED_CONFIG"
# The same variable as the server's and the worker's (Settings.track_modules): tracks besides the built-in ones.
ENV_TRACK_MODULES = "LAYERSCHED_TRACK_MODULES"

# The API's path on the server; a URL copied with it (``https://host/api/v1``) names the same server.
API_PATH = "/api/v1"

LOGIN_HINT = "run `layersched login --server URL --token TOKEN` or set LAYERSCHED_SERVER and LAYERSCHED_TOKEN"


@dataclass(frozen=True)
class Config:
    """A server URL and, when logged in, a token. ``source`` says where they came from, for messages."""

    server: str | None = None
    token: str | None = None
    source: str = "defaults"

    def require_server(self) -> str:
        if not self.server:
            raise ConfigError(f"no server configured: {LOGIN_HINT}")
        return self.server

    def require_token(self) -> str:
        if not self.token:
            raise ConfigError(f"not logged in: {LOGIN_HINT}")
        return self.token


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The config file: ``$LAYERSCHED_CONFIG`` if set, else ``config.json`` in the user config directory."""
    env = os.environ if environ is None else environ
    override = env.get(ENV_CONFIG)
    if override:
        return Path(override).expanduser()
    return platformdirs.user_config_path(APP_NAME) / "config.json"


def normalise_server(url: str) -> str:
    """``http(s)://host[:port][/prefix]`` without a trailing slash; a bare ``host:port`` gets ``http://``.

    A trailing ``/api/v1`` is dropped: the client adds it to every request, and a URL copied from the API's own
    address (or docs/API.md) otherwise ends up as ``/api/v1/api/v1/me``.
    """
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"server must be an http(s) URL such as https://challenge.example.org, got {url!r}")
    url = url.rstrip("/")
    if url.lower().endswith(API_PATH):
        url = url[: -len(API_PATH)].rstrip("/")
    return url


def load_config(environ: Mapping[str, str] | None = None) -> Config:
    """The saved login, with ``LAYERSCHED_SERVER`` / ``LAYERSCHED_TOKEN`` taking precedence."""
    env = os.environ if environ is None else environ
    path = config_path(env)
    saved: dict[str, object] = {}
    if path.exists():
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"config file {path} must hold a JSON object, got {type(raw).__name__}")
        saved = raw
    server = env.get(ENV_SERVER) or _str_or_none(saved.get("server"))
    token = env.get(ENV_TOKEN) or _str_or_none(saved.get("token"))
    sources = [name for name in (ENV_SERVER, ENV_TOKEN) if env.get(name)]
    if saved:
        sources.append(str(path))
    return Config(
        server=normalise_server(server) if server else None,
        token=token,
        source=" and ".join(sources) if sources else str(path),
    )


def track_modules(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The modules ``LAYERSCHED_TRACK_MODULES`` lists (a JSON list of module names, as the server reads it)."""
    text = (os.environ if environ is None else environ).get(ENV_TRACK_MODULES, "").strip()
    if not text:
        return ()
    try:
        names = json.loads(text)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise ConfigError(
            f'{ENV_TRACK_MODULES} must be a JSON list of module names such as ["my_tracks.toy"], got {text!r:.120}'
        )
    return tuple(names)


def save_config(server: str, token: str, environ: Mapping[str, str] | None = None) -> Path:
    """Write the login atomically with mode 0600 (created that way: the token is never world-readable)."""
    path = config_path(environ)
    payload = json.dumps({"server": normalise_server(server), "token": token}, indent=2) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".config-", dir=path.parent)  # mkstemp creates with 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(payload)
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ConfigError(f"cannot write config file {path}: {exc.strerror or exc}") from None
    return path


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
