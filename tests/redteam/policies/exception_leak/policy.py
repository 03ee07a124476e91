"""Raises at step 20 with every task it has seen, so the traceback (the episode's message) spells out the workload.

On a hidden (keyed) episode that workload is secret: the organisers may read the message, the participant must see
only the status and the step.
"""

SEEN = []


def policy(env, task, rng):
    SEEN.append((task.arrival, task.image, task.cycles))
    if env.k == 20:
        raise ValueError(f"LEAK {SEEN!r}")
    return int(env.mask(task).argmax())
