"""The sandbox contract on the process backend, plus what only the trusted side decides (bundles, hidden sets)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from layersched.sim.episodes import EpisodeSpec
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.outcomes import BundleError, HiddenEpisodeRefused, SandboxError
from layersched.worker.sandbox.process_backend import unshare_prefix
from layersched.worker.sandbox.runner import open_sandbox
from layersched.worker.sandbox.staging import stage_bundle

from .sandbox_contract import EPISODES, KILL_PARENT, LAB, POLICIES, SandboxContract, make_job, write_policy


class TestProcessSandbox(SandboxContract):
    backend = "process"

    def test_the_harness_cannot_be_killed_from_inside(self, tmp_path):
        if unshare_prefix():
            super().test_the_harness_cannot_be_killed_from_inside(tmp_path)
            return
        # Without a PID namespace of its own the weaker process sandbox's harness can be killed: a crash, charged.
        bundle = write_policy(tmp_path, KILL_PARENT)
        _, outcomes = self.run(bundle, episodes=EPISODES[:1])
        assert outcomes[0].status == "crash"


HIDDEN = EpisodeSpec("h0", split="private", key=b"k" * 16)


def test_process_backend_warns(caplog):
    with caplog.at_level(logging.WARNING), open_sandbox(POLICIES / "greedy", backend="process") as session:
        assert session.backend == "process"
        assert session.image_digest.startswith("process:python-")
    assert "process sandbox in use: development only, weaker isolation than docker" in caplog.text


def test_hidden_episodes_are_refused_unless_allowed():
    with (
        open_sandbox(POLICIES / "greedy", backend="process") as session,
        pytest.raises(HiddenEpisodeRefused, match="episode 'h0' is hidden; the process backend is not isolated"),
    ):
        session.run_episode(make_job(session, "lab", LAB, HIDDEN))
    with open_sandbox(POLICIES / "greedy", backend="process", allow_process_for_hidden=True) as session:
        assert session.run_episode(make_job(session, "lab", LAB, HIDDEN)).status == "ok"


def test_runner_import_is_light():
    # The worker package is imported by Celery and the server's tests: no docker SDK, celery or torch on import.
    code = (
        "import sys, layersched.worker, layersched.worker.sandbox.runner; "
        "print(sorted(m for m in ('docker', 'celery', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_unknown_backend():
    with pytest.raises(SandboxError, match="unknown sandbox backend 'vm'"):
        open_sandbox(POLICIES / "greedy", backend="vm")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("files", "limits", "message"),
    [
        ({"other.py": b"x"}, {}, "has no policy.py"),
        ({"policy.py": b"x", **{f"f{i}.txt": b"" for i in range(5)}}, {"bundle_files": 3}, "more than 3 files"),
        ({"policy.py": b"x" * 200}, {"bundle_bytes": 100}, "bundle is 200 bytes, more than the limit of 100 bytes"),
    ],
    ids=["no-policy", "too-many-files", "too-large"],
)
def test_bundle_rules(tmp_path, files, limits, message):
    source = tmp_path / "bundle"
    source.mkdir()
    for name, data in files.items():
        (source / name).write_bytes(data)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(BundleError, match=message):
        stage_bundle(source, run_dir, SandboxLimits(**limits))


def test_bundle_rejects_links_and_other_files(tmp_path):
    source = tmp_path / "bundle"
    source.mkdir()
    (source / "policy.py").write_text("def policy(env, task, rng):\n    return 0\n")
    os.symlink("/etc/passwd", source / "secrets")
    with pytest.raises(BundleError, match="bundle contains a symbolic link: 'secrets'"):
        stage_bundle(source, tmp_path, SandboxLimits())
    with pytest.raises(BundleError, match=r"a single-file bundle must be a \.py file, got 'secrets'"):
        stage_bundle(source / "secrets", tmp_path, SandboxLimits())


def test_bundle_hash_depends_on_content_and_names(tmp_path):
    hashes = []
    for i, (name, text) in enumerate([("w.txt", "a"), ("w.txt", "a"), ("w.txt", "b"), ("v.txt", "a")]):
        source = tmp_path / f"b{i}"
        source.mkdir()
        (source / "policy.py").write_text("def policy(env, task, rng):\n    return 0\n")
        (source / name).write_text(text)
        run_dir = tmp_path / f"r{i}"
        run_dir.mkdir()
        hashes.append(stage_bundle(source, run_dir, SandboxLimits())[1])
    assert hashes[0] == hashes[1]
    assert len(set(hashes)) == 3
