"""Freezes its own harness (SIGSTOP to the parent process) at the second decision, then hangs.

Nobody in the sandbox can answer any more: the per-decision deadline ends the episode (``timeout``), the frozen
harness cannot report the kill, so the session replaces the whole sandbox before the next episode.
"""

import os
import signal
import time


def policy(env, task, rng):
    if env.k == 1:
        os.kill(os.getppid(), signal.SIGSTOP)
        time.sleep(3600)
    return int(env.mask(task).argmax())
