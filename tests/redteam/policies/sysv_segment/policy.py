"""Counts episodes in a System V shared memory segment found by a fixed key (segments outlive processes), and
lets the count steer its actions. It prints whether it got a segment.

Reviewed main: episodes counted 0, 1, 2 with no tampering at all. The sandbox's IPC namespace allows no segment.
"""

import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY, IPC_CREAT = 0x4C53, 0o1000


def _counter():
    shmid = libc.shmget(KEY, 4096, IPC_CREAT | 0o600)
    if shmid < 0:
        return None, os.strerror(ctypes.get_errno())
    address = libc.shmat(shmid, None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        return None, os.strerror(ctypes.get_errno())
    return ctypes.c_int64.from_address(address), "attached"


SEEN = 0


def policy(env, task, rng):
    global SEEN
    if env.k == 0:
        counter, how = _counter()
        if counter is not None:
            SEEN = counter.value
            counter.value += 1
        print(f"segment: {how}; episodes before: {SEEN}", flush=True)
    feasible = [n for n, ok in enumerate(env.mask(task)) if ok]
    return feasible[(env.k + SEEN) % len(feasible)]
