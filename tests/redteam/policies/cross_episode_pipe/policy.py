"""Opens a pipe at import, which every episode process forked from the import state would inherit: each episode
takes what earlier episodes wrote into it and writes the tasks it sees; at step 5 it raises with what it took, if
anything (else it says so and plays on).

Reviewed main: the last episode's message carried every earlier (hidden) episode's tasks. Each episode's process
must import the policy afresh, so each has a pipe of its own and finds nothing from the others.
"""

import contextlib
import fcntl
import os

_read, _write = os.pipe()
for _fd in (_read, _write):
    fcntl.fcntl(_fd, fcntl.F_SETFL, fcntl.fcntl(_fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def _drain():
    data = b""
    while True:
        try:
            chunk = os.read(_read, 65536)
        except BlockingIOError:
            return data
        if not chunk:
            return data
        data += chunk


EARLIER = b""


def policy(env, task, rng):
    global EARLIER
    if env.k == 0:
        EARLIER = _drain()
    if env.k < 5:
        with contextlib.suppress(BlockingIOError):
            os.write(_write, f"{task.arrival},{task.image},{task.cycles};".encode())
    if env.k == 5:
        if EARLIER:
            raise RuntimeError(f"from earlier episodes: {len(EARLIER)} bytes: {EARLIER!r}")
        print("from earlier episodes: 0 bytes", flush=True)
    return int(env.mask(task).argmax())
