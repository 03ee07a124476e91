"""The sandbox's memory accounting on the host (issue 30, item 7): which windows saw the memory limit hit, read from
a container's cgroup files as the kernel writes them (v1 and v2), and the messages that name the limit. The files
here are written by the test; the real cgroup is read by tests/worker/test_sandbox_docker.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from layersched.worker.sandbox.memory_accounting import (
    CgroupMemory,
    MemoryHit,
    container_cgroup,
    killed_by_the_limit,
    past_the_deadline,
)

CID = "c0ffee" * 10 + "beef"
LIMIT = 256 * 1024 * 1024


def v2_cgroup(directory: Path, **events: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    counts = {"low": 0, "high": 0, "max": 0, "oom": 0, "oom_kill": 0, "oom_group_kill": 0, **events}
    (directory / "memory.events").write_text("".join(f"{name} {value}\n" for name, value in counts.items()))
    return directory


def v1_cgroup(directory: Path, *, oom_kill: int = 0, under_oom: int = 0, peak: int = 20 << 20) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "memory.oom_control").write_text(f"oom_kill_disable 0\nunder_oom {under_oom}\noom_kill {oom_kill}\n")
    (directory / "memory.max_usage_in_bytes").write_text(f"{peak}\n")
    (directory / "memory.limit_in_bytes").write_text(f"{LIMIT}\n")
    return directory


@pytest.mark.parametrize(
    "relative",
    [
        f"memory/docker/{CID}",
        f"memory/system.slice/docker-{CID}.scope",
        f"system.slice/docker-{CID}.scope",
        f"docker/{CID}",
    ],
    ids=["v1-cgroupfs", "v1-systemd", "v2-systemd", "v2-cgroupfs"],
)
def test_the_containers_cgroup_is_found_for_each_driver_and_version(tmp_path: Path, relative: str) -> None:
    make = v1_cgroup if relative.startswith("memory/") else v2_cgroup
    make(tmp_path / relative)
    assert container_cgroup(CID, tmp_path) == tmp_path / relative
    assert container_cgroup("another", tmp_path) is None


def test_v2_windows_count_kills_and_limit_events_once_each(tmp_path: Path) -> None:
    directory = v2_cgroup(tmp_path / "c")
    memory = CgroupMemory(directory)
    assert memory.window_end() is None  # nothing counted since the start
    v2_cgroup(directory, max=3, oom=1, oom_kill=1)
    assert memory.window_end() == MemoryHit(1)
    assert memory.window_end() is None  # counted in its own window only
    v2_cgroup(directory, max=5, oom=1, oom_kill=1)  # usage at the limit, reclaimed without a kill
    assert memory.window_end() == MemoryHit(0)
    v2_cgroup(directory, max=5, oom=2, oom_kill=3)
    assert memory.window_end() == MemoryHit(2)


def test_v1_windows_count_kills_and_a_peak_at_the_limit_which_each_window_resets(tmp_path: Path) -> None:
    directory = v1_cgroup(tmp_path / "c")
    memory = CgroupMemory(directory)
    assert memory.window_end() is None
    v1_cgroup(directory, oom_kill=1, peak=LIMIT)
    assert memory.window_end() == MemoryHit(1)
    assert (directory / "memory.max_usage_in_bytes").read_text() == "0"  # the kernel resets it to the usage
    assert memory.window_end() is None
    v1_cgroup(directory, oom_kill=1, peak=LIMIT)  # at the limit again, no kill: still the limit
    assert memory.window_end() == MemoryHit(0)
    v1_cgroup(directory, oom_kill=1, under_oom=1)
    assert memory.window_end() == MemoryHit(0)


def test_a_cgroup_that_is_gone_or_garbled_is_unreadable_not_a_verdict(tmp_path: Path) -> None:
    memory = CgroupMemory(v2_cgroup(tmp_path / "c"))
    (tmp_path / "c" / "memory.events").unlink()  # the container stopped: its cgroup went with it
    with pytest.raises(FileNotFoundError):
        memory.window_end()
    garbled = CgroupMemory(v1_cgroup(tmp_path / "d"))
    (tmp_path / "d" / "memory.max_usage_in_bytes").write_text("lots\n")
    with pytest.raises(OSError) as exc:
        garbled.window_end()
    assert str(exc.value) == (
        f"unreadable memory accounting in {tmp_path / 'd'}: invalid literal for int() with base 10: 'lots\\n'"
    )


@pytest.mark.parametrize(
    ("hit", "killed", "late"),
    [
        (
            MemoryHit(1),
            f"killed by the out-of-memory killer (limit {LIMIT} bytes)",
            f"step 3: out of memory: the out-of-memory killer killed 1 process (limit {LIMIT} bytes); then its "
            "deadline passed: no action within the per-decision deadline of 2 s",
        ),
        (
            MemoryHit(2),
            f"killed by the out-of-memory killer (limit {LIMIT} bytes)",
            f"step 3: out of memory: the out-of-memory killer killed 2 processes (limit {LIMIT} bytes); then its "
            "deadline passed: no action within the per-decision deadline of 2 s",
        ),
        (
            MemoryHit(0),
            "killed by signal SIGKILL at the memory limit: the sandbox's memory usage reached the limit "
            f"(limit {LIMIT} bytes)",
            f"step 3: out of memory: the sandbox's memory usage reached the limit (limit {LIMIT} bytes); then its "
            "deadline passed: no action within the per-decision deadline of 2 s",
        ),
        (
            MemoryHit(1, source="engine"),
            f"killed by the out-of-memory killer (limit {LIMIT} bytes)",
            f"step 3: out of memory: the engine reports an out-of-memory kill in the sandbox (limit {LIMIT} bytes); "
            "then its deadline passed: no action within the per-decision deadline of 2 s",
        ),
    ],
    ids=["one-kill", "two-kills", "at-the-limit", "engine"],
)
def test_the_messages_name_the_memory_limit(hit: MemoryHit, killed: str, late: str) -> None:
    assert killed_by_the_limit(hit, LIMIT) == killed
    assert past_the_deadline(hit, LIMIT, 3, "step 3: no action within the per-decision deadline of 2 s") == late
