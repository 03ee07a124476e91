"""The seed's three workflow families: their shapes, sizes and duration distributions.

Every family draws, per task: its work (mean duration at speed 1, in s) from the family's distribution, floored at
1 s; a core demand uniform in 1..4 and a memory demand uniform in 1..16 GB (so any task fits any VM type); a
priority uniform in 1..5 (a feature for policies: no rule of the simulator reads it); and an output volume uniform
in 0.5..20 GB, sent on each of its out-edges. Shapes (``n`` is the family's size, uniform in its range):

* ``montecarlo`` (scientific Monte Carlo, n in 20..80, LogNormal(mu 4.5, sigma 0.8)): layered. The last task is the
  aggregation of the whole last layer; the other n-1 tasks form 3..6 layers (uniform) of near-equal
  width; a task of layer k > 0 depends on 3..5 distinct tasks of layer k-1 (all of them if fewer).
* ``ml`` (ML pipeline, n in 15..50, Gamma(k 3, theta 40)): a strict chain of n - floor(0.3 n) stages; each of the
  floor(0.3 n) checkpoint tasks hangs off a distinct stage other than the last (a leaf: nothing waits for it).
* ``etl`` (ETL batch, n in 30..120, Weibull(lambda 100, k 1.2)): a star. J = max(1, n // 20) joins, one final load
  task after all joins, and the n - J - 1 others are sources without parents, each feeding one join (dealt round
  the joins after a shuffle, so each join has at least one). Only the joins and the load have inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

FAMILIES = ("montecarlo", "ml", "etl")
SIZES = {"montecarlo": (20, 80), "ml": (15, 50), "etl": (30, 120)}
MIN_WORK_S = 1.0


@dataclass(frozen=True)
class TaskSpec:
    """One task as drawn: ``work`` is its mean duration at speed 1; ``parents`` are ``(index, data GB)``."""

    work: float
    cores: int
    memory_gb: float
    priority: int
    parents: tuple[tuple[int, float], ...]


def _montecarlo_parents(n: int, rng: np.random.Generator) -> list[list[int]]:
    body = n - 1
    n_layers = int(rng.integers(3, 7))  # n >= 20: every layer has at least 3 tasks
    bounds = np.linspace(0, body, n_layers + 1).round().astype(int)
    layers = [list(range(bounds[k], bounds[k + 1])) for k in range(n_layers)]
    parents: list[list[int]] = [[] for _ in range(n)]
    for k in range(1, n_layers):
        previous = layers[k - 1]
        for t in layers[k]:
            want = min(len(previous), int(rng.integers(3, 6)))
            parents[t] = sorted(int(p) for p in rng.choice(previous, size=want, replace=False))
    parents[n - 1] = list(layers[-1])
    return parents


def _ml_parents(n: int, rng: np.random.Generator) -> list[list[int]]:
    checkpoints = int(0.3 * n)
    stages = n - checkpoints
    parents: list[list[int]] = [[s - 1] if s else [] for s in range(stages)]
    hooks = sorted(int(s) for s in rng.choice(stages - 1, size=checkpoints, replace=False))
    parents.extend([s] for s in hooks)
    return parents


def _etl_parents(n: int, rng: np.random.Generator) -> list[list[int]]:
    joins = max(1, n // 20)
    sources = n - joins - 1
    order = rng.permutation(sources)
    parents: list[list[int]] = [[] for _ in range(sources)]
    feeds: list[list[int]] = [[] for _ in range(joins)]
    for k, s in enumerate(order):
        feeds[k % joins].append(int(s))
    parents.extend(sorted(f) for f in feeds)
    parents.append(list(range(sources, sources + joins)))
    return parents


_SHAPES: dict[str, Callable[[int, np.random.Generator], list[list[int]]]] = {
    "montecarlo": _montecarlo_parents,
    "ml": _ml_parents,
    "etl": _etl_parents,
}


def _work(family: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if family == "montecarlo":
        work = rng.lognormal(mean=4.5, sigma=0.8, size=n)
    elif family == "ml":
        work = rng.gamma(shape=3.0, scale=40.0, size=n)
    else:
        work = 100.0 * rng.weibull(1.2, size=n)
    return np.maximum(work, MIN_WORK_S)


def draw_workflow(family: str, rng: np.random.Generator) -> list[TaskSpec]:
    """One workflow of ``family``, its tasks in a topological order (every parent index below its child's)."""
    lo, hi = SIZES[family]
    n = int(rng.integers(lo, hi + 1))
    shape = _SHAPES[family](n, rng)
    work = _work(family, n, rng)
    cores = rng.integers(1, 5, size=n)
    memory = rng.integers(1, 17, size=n)
    priority = rng.integers(1, 6, size=n)
    output = rng.uniform(0.5, 20.0, size=n)
    return [
        TaskSpec(
            float(work[i]),
            int(cores[i]),
            float(memory[i]),
            int(priority[i]),
            tuple((p, float(output[p])) for p in shape[i]),
        )
        for i in range(n)
    ]
