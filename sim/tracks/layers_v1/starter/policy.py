"""My policy for the layer-aware container scheduling challenge.

The contract is the lab's: ``policy(env, task, rng) -> int``, called once per task, in arrival order.

* ``env``: a replica of the lab's ``ClusterEnv`` that knows the nodes, the image catalog, the past tasks and the
  current one (never future tasks):
  ``env.n_nodes``, ``env.nodes[n]`` (``bandwidth`` MB/s, ``freq`` GHz, ``storage`` MB, ``slots``, ``layers``,
  ``in_use``, ``download_free``), ``env.images``, ``env.size``, ``env.image_mb``, ``env.estimate(n, task)``,
  ``env.mask(task)`` (nodes whose storage can hold the image) and ``env.observe(task)``: an (n_nodes, 6) float32
  array per node of missing GB, download, wait, compute and total time (/100 s) and the free storage share.
* ``task``: ``task.arrival`` (s), ``task.image`` (index into ``env.images``), ``task.cycles`` (G cycles).
* ``rng``: a ``random.Random`` seeded for this episode. Use it (or numpy/torch, seeded the same way) for any
  randomness, so that a rerun reproduces every action: audits compare action traces.

Return the index of a node with ``env.mask(task)[n]`` true; anything else ends the episode as ``invalid_action``.

On the server each decision has a deadline (check yours with ``layersched validate``), the sandbox has the standard
library, numpy, torch (CPU, one thread), ``layersched.sim`` and your own files, and no network. Read your files
relative to ``__file__``, as below.

This template works as it is: without weights it is Greedy (smallest estimated completion time); with the file
named by ``WEIGHTS_FILE`` next to it, a small network scores every node and the best feasible node wins. Each
training script writes its own file, and only when its best checkpoint beats Greedy on validation workloads:
``imitation_rl.py`` writes ``weights_imitation.pt`` (loaded as shipped), ``train_reinforce.py`` writes
``weights_reinforce.pt``; a ``policy_seed*.pt`` from the lab's ``pg.py`` loads too. Change ``WEIGHTS_FILE`` to
submit another one.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np

WEIGHTS_FILE = "weights_imitation.pt"  # the one place that says which weights this policy uses
WEIGHTS = Path(__file__).with_name(WEIGHTS_FILE)
N_FEATURES = 6  # the columns of env.observe(task)
HIDDEN = 64


def make_scorer(n_features: int = N_FEATURES, hidden: int = HIDDEN) -> Any:
    """The lab's Scorer: one small MLP shared by all nodes, (n_nodes, n_features) -> (n_nodes,) scores.

    Sharing the network over nodes means a policy trained on 10 nodes runs unchanged on 5 or 20.
    torch is imported here, not at the top, so the template runs without torch when there are no weights.
    """
    import torch
    from torch import nn

    class Scorer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1)
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            scores: torch.Tensor = self.net(x).squeeze(-1)
            return scores

    return Scorer()


def _load_scorer() -> Any:
    """Load the trained weights once, at import (the sandbox imports this module once per evaluation)."""
    if not WEIGHTS.exists():
        return None
    import torch

    scorer = make_scorer()
    # weights_only=True: a weights file is data, never code to run.
    scorer.load_state_dict(torch.load(WEIGHTS, map_location="cpu", weights_only=True))
    scorer.eval()
    return scorer


SCORER = _load_scorer()


def policy(env: Any, task: Any, rng: random.Random) -> int:
    """Place ``task`` on a node: the best-scored feasible one."""
    features = env.observe(task)  # (n_nodes, 6)
    feasible = env.mask(task)
    if SCORER is None:
        scores = -features[:, 4]  # Greedy: the smallest estimated completion time (column 4, total / 100 s)
    else:
        import torch

        with torch.no_grad():
            scores = SCORER(torch.from_numpy(features)).numpy()
    scores = np.where(feasible, scores, -np.inf)
    best = np.flatnonzero(scores == scores.max())
    return int(best[0]) if len(best) == 1 else int(rng.choice(list(best)))  # ties: at random, reproducibly
