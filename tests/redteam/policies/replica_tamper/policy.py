"""Rewrites the simulator inside the sandbox so that every node looks able to hold every image (mask, feasible
nodes, storage), then places each task on a node that really cannot hold it. The sandbox's simulator is not the
score's: the trusted side's ``check_action`` must refuse the action (``invalid_action``)."""

import numpy as np

from layersched.sim.tracks.layers_v1.env import ClusterEnv

_true_mask = ClusterEnv.mask


def _all_true(self, task):
    return np.ones(self.n_nodes, dtype=bool)


ClusterEnv.mask = _all_true
ClusterEnv.feasible_nodes = lambda self, task: list(range(self.n_nodes))


def policy(env, task, rng):
    truth = _true_mask(env, task)
    for node in env.nodes:
        node.storage = float("inf")
    assert env.mask(task).all()  # the replica now says yes to everything
    infeasible = np.flatnonzero(~truth)
    return int(infeasible[0]) if infeasible.size else int(truth.argmax())
