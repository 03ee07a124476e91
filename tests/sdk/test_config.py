from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from layersched.sdk.config import Config, config_path, load_config, normalise_server, save_config
from layersched.sdk.errors import ConfigError


def test_save_then_load_round_trips_with_mode_0600(isolated_config: Path) -> None:
    path = save_config("http://example.org:8000/", "tok")
    assert path == isolated_config
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_config() == Config("http://example.org:8000", "tok", str(path))


def test_save_tightens_an_existing_world_readable_file(isolated_config: Path) -> None:
    isolated_config.parent.mkdir(parents=True)
    isolated_config.write_text("{}")
    isolated_config.chmod(0o644)
    save_config("http://a", "t")
    assert stat.S_IMODE(isolated_config.stat().st_mode) == 0o600


def test_environment_overrides_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    save_config("http://saved", "saved-token")
    monkeypatch.setenv("LAYERSCHED_SERVER", "https://env.example.org")
    monkeypatch.setenv("LAYERSCHED_TOKEN", "env-token")
    config = load_config()
    assert (config.server, config.token) == ("https://env.example.org", "env-token")


def test_default_path_is_in_the_user_config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("LAYERSCHED_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_path() == tmp_path / "xdg" / "layersched" / "config.json"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "cannot read config file"),
        ("[1, 2]", "must hold a JSON object, got list"),
    ],
    ids=["not-json", "not-object"],
)
def test_a_broken_config_file_is_named(isolated_config: Path, text: str, message: str) -> None:
    isolated_config.parent.mkdir(parents=True)
    isolated_config.write_text(text)
    with pytest.raises(ConfigError, match=message) as exc:
        load_config()
    assert str(isolated_config) in str(exc.value)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("https://x.org/prefix/", "https://x.org/prefix"),
        ("http://x.org/api/v1", "http://x.org"),
        ("http://x.org:8000/api/v1/", "http://x.org:8000"),
        ("https://x.org/challenge/api/v1", "https://x.org/challenge"),
    ],
    ids=["bare-host", "trailing-slash", "api-path", "api-path-slash", "prefix-and-api-path"],
)
def test_normalise_server(url: str, expected: str) -> None:
    assert normalise_server(url) == expected


def test_normalise_server_refuses_other_schemes() -> None:
    with pytest.raises(ConfigError) as exc:
        normalise_server("ftp://x.org")
    assert str(exc.value) == "server must be an http(s) URL such as https://challenge.example.org, got 'ftp://x.org'"


def test_require_messages() -> None:
    with pytest.raises(ConfigError, match=r"^no server configured: run `layersched login"):
        Config().require_server()
    with pytest.raises(ConfigError, match=r"^not logged in: run `layersched login"):
        Config(server="http://x").require_token()


def test_saved_file_is_plain_json(isolated_config: Path) -> None:
    save_config("http://x", "t")
    assert json.loads(isolated_config.read_text()) == {"server": "http://x", "token": "t"}
