"""Answers two decisions, then spins forever in the third: the per-decision deadline must end it (``timeout``)."""


def policy(env, task, rng):
    if env.k == 2:
        while True:
            pass
    return int(env.mask(task).argmax())
