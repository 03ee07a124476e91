"""A ``ClusterEnv`` that draws an episode once for several policies: ``reset`` with the same workload replays it.

The baselines run six policies on every episode (the lab's table, an evaluation set's reference rows). Drawing
an episode's nodes and tasks costs about as much as a sixth of a baseline's episode, a keyed workload
(``KeyedRandom``) more: drawn once, it is started six times instead.
"""

from __future__ import annotations

import random

from layersched.sim.tracks.layers_v1.env import ClusterEnv
from layersched.sim.tracks.layers_v1.scenario import Scenario
from layersched.sim.tracks.layers_v1.workload import NodeSpec, Task, draw_episode


class ReplayEnv(ClusterEnv):
    """``reset(workload)`` starts the episode drawn last again when ``workload`` is the one it was drawn from.

    The same workload is an equal seed (an int, drawn from ``random.Random(seed)`` as ``ClusterEnv`` does) or the
    very generator object it was drawn from (its draws cannot be repeated: the first reset draws, later ones
    replay). Any other workload is drawn, and replaces the remembered episode.
    """

    def __init__(self, scenario: Scenario | None = None) -> None:
        super().__init__(scenario)
        self._drawn: tuple[int | random.Random, list[NodeSpec], tuple[Task, ...]] | None = None

    def reset(self, seed: int | random.Random) -> Task:
        drawn = self._drawn
        if drawn is None or not _same_workload(drawn[0], seed):
            specs, tasks = draw_episode(self.scenario, seed if isinstance(seed, random.Random) else random.Random(seed))
            drawn = self._drawn = (seed, specs, tuple(tasks))
        self.start(drawn[1])
        self.tasks = list(drawn[2])  # a fresh list: the remembered episode stays as drawn
        return self.tasks[0]


def _same_workload(drawn_from: int | random.Random, workload: int | random.Random) -> bool:
    if isinstance(drawn_from, random.Random) or isinstance(workload, random.Random):
        return drawn_from is workload
    return type(drawn_from) is type(workload) and drawn_from == workload
