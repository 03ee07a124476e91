"""Tries to write everywhere, then fills /tmp (and /dev/shm) until the kernel refuses, at the first decision.

Prints one JSON object: for each path whether the write was refused, and how many MiB each tmpfs took before
``ENOSPC``. It then plays on normally (``ok``): a full /tmp is the policy's own problem, never the host's.
"""

import errno
import json
import os

TARGETS = ["/", "/etc", "/usr", "/usr/local/lib", "/bundle", "/run/layersched", "/var/tmp", "/home", "/root", "/opt"]
CHUNK = b"\xff" * (1024 * 1024)


def try_write(directory):
    path = os.path.join(directory, "redteam-owned.txt")
    try:
        with open(path, "w") as f:
            f.write("owned")
    except OSError as exc:
        return f"refused: {errno.errorcode.get(exc.errno, exc.errno)}"
    return "written"


def fill(directory, cap_mib=2048):
    written = 0
    try:
        with open(os.path.join(directory, "redteam-fill.bin"), "wb", buffering=0) as f:
            while written < cap_mib:
                f.write(CHUNK)
                written += 1
    except OSError as exc:
        return {"mib": written, "error": errno.errorcode.get(exc.errno, exc.errno)}
    return {"mib": written, "error": None}


def policy(env, task, rng):
    if env.k == 0:
        report = {"writes": {d: try_write(d) for d in TARGETS}, "tmp": fill("/tmp")}
        report["shm"] = fill("/dev/shm") if os.path.isdir("/dev/shm") else {"mib": 0, "error": "absent"}
        print(json.dumps(report))
    return int(env.mask(task).argmax())
