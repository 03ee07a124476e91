"""A plain transcription of the HEFT paper's pseudo-code, in exact fractions, as an oracle for ``heft.py``.

Nothing clever: ranks by recursion over successors, tasks in decreasing rank (ties: lower index), and for each
processor the earliest idle gap by scanning its tasks in start order.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

from layersched.sim.tracks.workflows_v1.dag import StaticDag


def reference_heft(dag: StaticDag) -> tuple[list[Fraction], dict[int, tuple[int, Fraction, Fraction]]]:
    n, p = dag.n_tasks, dag.n_procs
    pairs = [(q, r) for q in range(p) for r in range(p) if q != r]
    w_bar = [sum(Fraction(c) for c in row if c is not None) / sum(c is not None for c in row) for row in dag.costs]
    b_bar = sum(Fraction(dag.bandwidth[q][r]) for q, r in pairs) / len(pairs) if pairs else None
    l_bar = sum(Fraction(dag.startup[q][r]) for q, r in pairs) / len(pairs) if pairs else None
    succ = dag.children()
    pred = dag.parents()

    @cache
    def rank(i: int) -> Fraction:
        c_bar = [(Fraction(0) if b_bar is None else l_bar + Fraction(d) / b_bar) for _, d in succ[i]]
        return w_bar[i] + max((c + rank(j) for (j, _), c in zip(succ[i], c_bar, strict=True)), default=Fraction(0))

    ranks = [rank(i) for i in range(n)]
    schedule: dict[int, tuple[int, Fraction, Fraction]] = {}
    remaining = sorted(range(n), key=lambda i: (-ranks[i], i))
    while remaining:
        # The paper's list, kept topological: the first task in rank order whose parents are all scheduled.
        i = next(t for t in remaining if all(m in schedule for m, _ in pred[t]))
        remaining.remove(i)
        best = None
        for q in range(p):
            if dag.costs[i][q] is None:
                continue
            w = Fraction(dag.costs[i][q])
            ready = Fraction(0)
            for m, d in pred[i]:
                pm, _, fm = schedule[m]
                comm = (
                    Fraction(0)
                    if pm == q
                    else Fraction(dag.startup[pm][q]) + Fraction(d) / Fraction(dag.bandwidth[pm][q])
                )
                ready = max(ready, fm + comm)
            busy = sorted((s, f) for (pq, s, f) in schedule.values() if pq == q)
            start = ready
            for s, f in busy:
                if start + w <= s and (w > 0 or start < s):
                    break
                start = max(start, f)
            if best is None or start + w < best[2]:
                best = (q, start, start + w)
        schedule[i] = best
    return ranks, schedule
