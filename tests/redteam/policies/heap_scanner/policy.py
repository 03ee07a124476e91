"""Looks in its own memory for what earlier episodes printed.

Every episode prints a marker unique to it (built from its first task, so no other episode knows it) a thousand
times, after first searching every writable private mapping of its own process for any marker of that form. The
process it is forked from read those prints from a pipe: had the bytes passed through that process's heap (freed,
not overwritten), the next episode would inherit them and find them here.
"""

import ctypes
import hashlib
import re

# The marker's prefix exists only as it is built here (so the search below cannot find its own pattern source).
PREFIX = bytes(b ^ 0x2A for b in b"f\x7fojh\x1bi\x1b").decode()  # "LUE@B1C1"
PATTERN = re.compile(re.escape(PREFIX.encode()) + rb"[0-9a-f]{40}")


def _writable_private_regions():
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 2 and fields[1].startswith("rw") and fields[1][3] == "p":
                start, end = (int(x, 16) for x in fields[0].split("-"))
                yield start, end


def _search():
    # Forked from a non-dumpable harness, this process is not dumpable either: its own /proc files belong to root
    # until it says otherwise (which it may, for itself).
    ctypes.CDLL(None).prctl(4, 1)  # PR_SET_DUMPABLE
    hits = set()
    with open("/proc/self/mem", "rb", buffering=0) as mem:
        for start, end in _writable_private_regions():
            if end - start > 512 * 1024 * 1024:
                continue
            try:
                mem.seek(start)
                data = mem.read(end - start)
            except OSError:
                continue
            hits.update(PATTERN.findall(data))
    return hits


def policy(env, task, rng):
    if env.k == 0:
        found = sorted(h.decode() for h in _search())
        print(f"found {len(found)} markers of earlier episodes: {found[:3]}", flush=True)
        mine = PREFIX + hashlib.sha1(repr((task.arrival, task.image, task.cycles)).encode()).hexdigest()
        for _ in range(1000):
            print(mine)
        print("", flush=True)
    return int(env.mask(task).argmax())
