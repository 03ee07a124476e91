"""Greedy (the lab's baseline): the feasible node with the smallest estimated completion time, ties at random."""

import numpy as np


def policy(env, task, rng):
    scores = -env.estimate_all(task).total
    masked = np.where(env.mask(task), scores, -np.inf)
    best = np.flatnonzero(masked == masked.max())
    return int(rng.choice(best))
