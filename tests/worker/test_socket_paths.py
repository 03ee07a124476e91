"""A TMPDIR too long for the sandbox's channel socket is named, with the fix (issue 29's trial: a worker under a long
TMPDIR failed every evaluation with only "AF_UNIX path too long")."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from layersched.worker.sandbox.run_dirs import MAX_SOCKET_PATH_BYTES, RunDir
from layersched.worker.sandbox.runner import open_sandbox

STARTER = Path(__file__).resolve().parents[2] / "sim" / "tracks" / "layers_v1" / "starter"


@pytest.fixture
def long_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    return deep


def test_a_sandbox_under_a_long_tmpdir_says_which_directory_and_what_to_do(long_tmp: Path) -> None:
    with pytest.raises(OSError) as raised, open_sandbox(STARTER, backend="process"):
        pass
    message = str(raised.value)
    assert f"set TMPDIR to a shorter directory (it is {str(long_tmp)!r}" in message
    assert f"over the {MAX_SOCKET_PATH_BYTES} a Unix socket's path may have" in message


def test_a_tmpdir_that_leaves_room_for_the_socket_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    # A short directory of its own under /tmp: pytest's tmp_path, named after this test, leaves too little room.
    short = Path(tempfile.mkdtemp(prefix="ls-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    run = RunDir.create()
    try:
        directory, listener = run.new_channel(None)
        listener.close()
        assert directory.parent == run.path and run.path.parent == short
    finally:
        run.remove()
        short.rmdir()
