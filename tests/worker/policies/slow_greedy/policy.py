"""Greedy at about 5 ms per decision, so that something can happen to its sandbox while an episode runs."""

import time

import numpy as np


def policy(env, task, rng):
    time.sleep(0.005)
    scores = -env.estimate_all(task).total
    masked = np.where(env.mask(task), scores, -np.inf)
    best = np.flatnonzero(masked == masked.max())
    return int(rng.choice(best))
