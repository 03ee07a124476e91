"""Settings from LAYERSCHED_* variables: bad values are refused with the offending value named."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from layersched.server.config import Settings


def test_the_sandbox_pool_is_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAYERSCHED_SANDBOX_POOL_SIZE", raising=False)
    assert Settings(_env_file=None).sandbox_pool_size == 0  # type: ignore[call-arg]


def test_the_sandbox_pool_size_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERSCHED_SANDBOX_POOL_SIZE", "2")
    assert Settings(_env_file=None).sandbox_pool_size == 2  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("variable", "field", "value", "message"),
    [
        ("LAYERSCHED_SANDBOX_POOL_SIZE", "sandbox_pool_size", "-1", "greater than or equal to 0"),
        ("LAYERSCHED_SANDBOX_POOL_SIZE", "sandbox_pool_size", "two", "valid integer"),
        ("LAYERSCHED_SANDBOX_POLL_US", "sandbox_poll_us", "-5", "greater than or equal to 0"),
        ("LAYERSCHED_SANDBOX_POLL_US", "sandbox_poll_us", "20000", "less than or equal"),
    ],
)
def test_a_bad_sandbox_setting_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, variable: str, field: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError, match=message) as raised:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert field in str(raised.value) and value in str(raised.value)


def test_max_attempts_must_allow_one_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERSCHED_MAX_ATTEMPTS", "0")
    with pytest.raises(ValidationError, match="max_attempts"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_the_sandbox_poll_reaches_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    from layersched.worker.pipeline import sandbox_limits

    monkeypatch.setenv("LAYERSCHED_SANDBOX_POLL_US", "0")
    assert sandbox_limits(Settings(_env_file=None)).poll_seconds == 0  # type: ignore[call-arg]
    monkeypatch.setenv("LAYERSCHED_SANDBOX_POLL_US", "150")
    assert sandbox_limits(Settings(_env_file=None)).poll_seconds == pytest.approx(150e-6)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("value", "origin"),
    [
        ("https://layersched.example.org", "https://layersched.example.org"),
        ("http://LOCALHOST:8000/", "http://localhost:8000"),
        ("", None),
    ],
    ids=["https", "http-port-slash", "empty"],
)
def test_the_public_url_is_an_origin(monkeypatch: pytest.MonkeyPatch, value: str, origin: str | None) -> None:
    monkeypatch.setenv("LAYERSCHED_PUBLIC_URL", value)
    assert Settings(_env_file=None).public_url == origin  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "value",
    [
        "layersched.example.org",
        "ftp://layersched.example.org",
        "https://",
        "https://x.org/layersched",
        "https://u@x.org",
    ],
    ids=["no-scheme", "ftp", "no-host", "path", "user"],
)
def test_a_bad_public_url_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LAYERSCHED_PUBLIC_URL", value)
    with pytest.raises(ValidationError, match="public_url") as raised:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert f"LAYERSCHED_PUBLIC_URL={value!r} is not" in str(raised.value)


def test_the_extra_evaluation_sets_for_phases_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(_env_file=None).extra_evalset_paths == ()  # type: ignore[call-arg]
    monkeypatch.setenv("LAYERSCHED_EXTRA_EVALSET_PATHS", '["hidden_seeds/sample.toml", "spring.toml"]')
    paths = Settings(_env_file=None).extra_evalset_paths  # type: ignore[call-arg]
    assert paths == (Path("hidden_seeds/sample.toml"), Path("spring.toml"))


DIGEST = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("value", "stored"), [(DIGEST, DIGEST), (DIGEST.upper(), DIGEST), ("", None)], ids=["hex", "upper-case", "empty"]
)
def test_the_metrics_token_setting_is_a_sha256(monkeypatch: pytest.MonkeyPatch, value: str, stored: str | None) -> None:
    monkeypatch.setenv("LAYERSCHED_METRICS_TOKEN_SHA256", value)
    assert Settings(_env_file=None).metrics_token_sha256 == stored  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "value", ["lsm_the-token-itself", DIGEST[:-1], DIGEST[:-1] + "g"], ids=["the-token", "63-digits", "not-hex"]
)
def test_a_metrics_token_setting_that_is_no_sha256_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LAYERSCHED_METRICS_TOKEN_SHA256", value)
    with pytest.raises(ValidationError, match="metrics_token_sha256") as raised:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert f"LAYERSCHED_METRICS_TOKEN_SHA256 has {len(value)} characters, not a SHA-256's 64 hex digits" in str(
        raised.value
    )
