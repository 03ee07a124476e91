"""Answers two steps, then spins forever at step 2."""


def policy(env, task, rng):
    if env.k == 2:
        while True:
            pass
    return 0
