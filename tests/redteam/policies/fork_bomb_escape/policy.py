"""At the first decision of every episode, starts a fork bomb that leaves the episode's process group (``setsid``),
so the harness's group kill misses it, and plays on normally.

The bomb holds every pid and most of the CPU while the episode finishes (``ok``: the policy still answers in
time). What it must not do is outlive its episode: the next episode of the same sandbox must find free pids and
start normally, without the sandbox being replaced.
"""

import contextlib
import os


def policy(env, task, rng):
    if env.k == 0 and os.fork() == 0:
        os.setsid()
        while True:
            with contextlib.suppress(OSError):  # pids limit reached: try again, forever
                os.fork()
    return int(env.mask(task).argmax())
