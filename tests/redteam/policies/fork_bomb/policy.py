"""The classic fork bomb at the first decision: every process forks forever, ignoring failures.

The pids limit caps it, the per-decision deadline ends the episode (``timeout``) and the harness kills the whole
process group; nothing may outlive the container.
"""

import contextlib
import os


def policy(env, task, rng):
    while True:
        with contextlib.suppress(OSError):  # pids limit reached: try again, forever
            os.fork()
