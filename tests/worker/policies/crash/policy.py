"""Prints, then raises at step 3."""

import sys


def policy(env, task, rng):
    print(f"placing task {env.k}")
    if env.k == 3:
        print("about to fail", file=sys.stderr)
        raise RuntimeError("boom at step 3")
    return 0
