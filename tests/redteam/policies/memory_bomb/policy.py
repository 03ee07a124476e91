"""Allocates and touches memory without end at the first decision: the container's memory limit must stop it
(``memory_exceeded``), whether the kernel's OOM killer or a ``MemoryError`` gets there first."""

hoard = []


def policy(env, task, rng):
    while True:
        hoard.append(bytearray(b"\x01" * (16 * 1024 * 1024)))  # written, so every page is really used
