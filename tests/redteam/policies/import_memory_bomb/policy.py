"""Allocates and touches memory without end at import (``memory_exceeded`` before any episode runs)."""

hoard = []
while True:
    hoard.append(bytearray(b"\x01" * (16 * 1024 * 1024)))


def policy(env, task, rng):  # never reached
    return 0
