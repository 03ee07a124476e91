"""Tries to carry state from one episode to the next through memory shared by every fork of the harness.

``mmap.mmap(-1, n)`` is a MAP_SHARED anonymous mapping: made at import, it is inherited by every episode process and
a write by one is seen by the next. Every episode's actions depend on how many episodes wrote there before it.
Isolated episodes each see 0.
"""

import mmap
import struct

_shared = mmap.mmap(-1, 8)
_seen = 0


def policy(env, task, rng):
    global _seen
    if env.k == 0:  # first decision of an episode: count it in the shared page
        (_seen,) = struct.unpack("q", _shared[:8])
        _shared[:8] = struct.pack("q", _seen + 1)
    feasible = [n for n, ok in enumerate(env.mask(task)) if ok]
    return feasible[(env.k + _seen) % len(feasible)]
