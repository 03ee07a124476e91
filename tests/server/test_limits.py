"""One set of bundle limits: what the upload accepts, the worker unpacks and the sandbox stages (finding 10).

Before the fix the upload allowed 200 MB unpacked and the sandbox 50 MB (SandboxLimits.bundle_bytes was fed from the
compressed upload limit), so a 58 kB zip holding 60 MB was accepted, then failed ``invalid_bundle`` in the worker,
charged to the participant.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from layersched.sdk import bundle as cli_bundle
from layersched.server.bundles import inspect_bundle, store_bundle, unpack_bundle
from layersched.server.config import Settings
from layersched.server.errors import InvalidBundle
from layersched.sim.tracks import DEFAULT_TRACK_ID, get_track
from layersched.worker.pipeline import sandbox_limits
from layersched.worker.sandbox.staging import stage_bundle

LAB = get_track(DEFAULT_TRACK_ID).policy_arguments

POLICY = b"def policy(env, task, rng):\n    return 0\n"


def defaults(monkeypatch: pytest.MonkeyPatch) -> Settings:
    for name in ("MAX_BUNDLE_MB", "MAX_FILES", "MAX_UNPACKED_MB"):
        monkeypatch.delenv(f"LAYERSCHED_{name}", raising=False)
    return Settings(_env_file=None)  # type: ignore[call-arg]


def zip_of_zeros(total: int) -> bytes:
    """policy.py and a file of zeros, ``total`` bytes in all: deflates to about a thousandth of that."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("policy.py", POLICY)
        archive.writestr("weights.bin", b"\0" * (total - len(POLICY)))
    return buffer.getvalue()


def test_defaults_are_the_readmes(monkeypatch: pytest.MonkeyPatch) -> None:
    """README promises "at most 50 MB and 100 files"."""
    settings = defaults(monkeypatch)
    assert (settings.max_bundle_bytes, settings.max_unpacked_bytes, settings.max_files) == (50_000_000, 50_000_000, 100)


def test_the_cli_checks_the_servers_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = defaults(monkeypatch)
    assert (
        settings.max_bundle_bytes,
        settings.max_unpacked_bytes,
        settings.max_files,
    ) == (cli_bundle.MAX_BYTES, cli_bundle.MAX_UNPACKED_BYTES, cli_bundle.MAX_FILES)


@pytest.mark.parametrize(
    ("upload_mb", "unpacked_mb"), [(50, 50), (0.05, 0.2), (5, 1)], ids=["defaults", "small-upload", "small-unpacked"]
)
def test_the_sandbox_stages_what_the_upload_accepts(upload_mb: float, unpacked_mb: float) -> None:
    settings = Settings(_env_file=None, max_bundle_mb=upload_mb, max_unpacked_mb=unpacked_mb)  # type: ignore[call-arg]
    assert sandbox_limits(settings).bundle_bytes == settings.max_unpacked_bytes
    assert sandbox_limits(settings).bundle_files == settings.max_files


def test_a_bundle_at_the_unpacked_limit_is_accepted_unpacked_and_staged(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The whole way a bundle goes with the default settings: upload check, the worker's unpacking, the sandbox's
    staging; one byte more is refused at upload, where it costs nothing."""
    settings = defaults(monkeypatch)
    limit = settings.max_unpacked_bytes
    at_limit = zip_of_zeros(limit)
    assert len(at_limit) < settings.max_bundle_bytes
    inspect_bundle(at_limit, "b.zip", policy_arguments=LAB, max_files=settings.max_files, max_unpacked_bytes=limit)
    stored = store_bundle(at_limit, bundle_dir=tmp_path / "store")
    entry = unpack_bundle(
        stored,
        fmt="zip",
        dest=tmp_path / "unpacked",
        policy_arguments=LAB,
        max_files=settings.max_files,
        max_unpacked_bytes=limit,
    )
    staged, _digest = stage_bundle(entry.parent, tmp_path / "run", sandbox_limits(settings))
    assert sum(p.stat().st_size for p in staged.rglob("*") if p.is_file()) == limit

    with pytest.raises(InvalidBundle) as caught:
        inspect_bundle(
            zip_of_zeros(limit + 1),
            "b.zip",
            policy_arguments=LAB,
            max_files=settings.max_files,
            max_unpacked_bytes=limit,
        )
    assert caught.value.message == "the archive unpacks to more than 50000000 bytes (at member 'weights.bin')"
