"""Forges the harness's isolation verdict, then carries state from episode to episode through what the harness
would have found: a shared anonymous mapping made at import and a file the import leaves in /tmp.

Reviewed main: the harness (where the policy was imported) decided itself whether an episode had left state
behind; two assignments at import replaced its checks, and episodes counted 0, 1, 2 in one sandbox. The harness
must never run the participant's code: these assignments then only change this process's copy of it.
"""

import mmap
import struct
import sys

harness = sys.modules["__main__"]
forged = []
for name in ("holds_shared_memory", "restore_scratch", "empty_scratch", "_others_alive", "others_alive"):
    if hasattr(harness, name):
        setattr(harness, name, (lambda *args, **kwargs: False) if name != "empty_scratch" else (lambda *a: True))
        forged.append(name)
if hasattr(harness, "Harness"):
    harness.Harness._clean_up = lambda self: True
    forged.append("Harness._clean_up")

_shared = mmap.mmap(-1, 8)
with open("/tmp/import-state", "w") as handle:
    handle.write("0")
print(f"forged in {harness.__name__}: {forged}", flush=True)

SEEN = 0


def policy(env, task, rng):
    global SEEN
    if env.k == 0:
        (from_memory,) = struct.unpack("q", _shared[:8])
        with open("/tmp/import-state") as handle:
            from_file = len(handle.read()) - 1
        SEEN = from_memory + from_file
        _shared[:8] = struct.pack("q", from_memory + 1)
        with open("/tmp/import-state", "a") as handle:
            handle.write("1")
        print(f"episodes before this one: {SEEN}", flush=True)
    feasible = [n for n, ok in enumerate(env.mask(task)) if ok]
    return feasible[(env.k + SEEN) % len(feasible)]
