"""Answers two decisions, then sleeps for an hour in the third (``timeout``)."""

import time


def policy(env, task, rng):
    if env.k == 2:
        time.sleep(3600)
    return int(env.mask(task).argmax())
