"""A static DAG on unrelated processors, as the HEFT paper states the problem, and its JSON form.

``{"tasks": [ids], "edges": [[from, to, data]], "W": [[cost of task i on processor p, or null]],
"bandwidth": [[b between p and q]], "startup": ...}``. ``startup`` is optional: absent (0), a number (every pair),
a list (the latency of each sending processor) or a matrix (per pair). Communicating ``data`` from processor p to
q costs ``startup[p][q] + data / bandwidth[p][q]``, and nothing on the same processor (the diagonals are ignored).
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layersched.sim.tracks.workflows_v1.errors import WorkflowError


@dataclass(frozen=True)
class StaticDag:
    """Tasks ``0..n-1`` (named by ``ids``), edges ``(parent, child, data)``, ``costs[i][p]`` (None: p cannot run
    task i), and per processor pair ``bandwidth[p][q]`` and ``startup[p][q]``. Frozen and hashable: a scenario holds
    one. Built by ``StaticDag.build`` (which checks it) or ``parse_dag``."""

    ids: tuple[str, ...]
    edges: tuple[tuple[int, int, float], ...]
    costs: tuple[tuple[float | None, ...], ...]
    bandwidth: tuple[tuple[float, ...], ...]
    startup: tuple[tuple[float, ...], ...]

    @property
    def n_tasks(self) -> int:
        return len(self.ids)

    @property
    def n_procs(self) -> int:
        return len(self.bandwidth)

    def comm(self, data: float, p: int, q: int) -> float:
        """The time to move ``data`` from processor ``p`` to ``q`` (0 on the same one)."""
        return 0.0 if p == q else self.startup[p][q] + data / self.bandwidth[p][q]

    def parents(self) -> list[list[tuple[int, float]]]:
        out: list[list[tuple[int, float]]] = [[] for _ in self.ids]
        for u, v, data in self.edges:
            out[v].append((u, data))
        return out

    def children(self) -> list[list[tuple[int, float]]]:
        out: list[list[tuple[int, float]]] = [[] for _ in self.ids]
        for u, v, data in self.edges:
            out[u].append((v, data))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "tasks": list(self.ids),
            "edges": [[self.ids[u], self.ids[v], data] for u, v, data in self.edges],
            "W": [list(row) for row in self.costs],
            "bandwidth": [list(row) for row in self.bandwidth],
            "startup": [list(row) for row in self.startup],
        }

    @staticmethod
    def build(
        ids: Sequence[str],
        edges: Sequence[tuple[int, int, float]],
        costs: Sequence[Sequence[float | None]],
        bandwidth: Sequence[Sequence[float]],
        startup: Sequence[Sequence[float]] | None = None,
    ) -> StaticDag:
        """Check and freeze; ``WorkflowError`` names the offending value."""
        n, p = len(ids), len(bandwidth)
        if n == 0:
            raise WorkflowError("the DAG has no tasks")
        if len(set(ids)) != n:
            dup = next(i for i in ids if list(ids).count(i) > 1)
            raise WorkflowError(f"task id {dup!r} appears twice in tasks")
        if p == 0:
            raise WorkflowError("bandwidth is empty: there must be at least one processor")
        for q, bw_row in enumerate(bandwidth):
            if len(bw_row) != p:
                raise WorkflowError(f"bandwidth must be {p}x{p}: row {q} has {len(bw_row)} entries")
            for r, b in enumerate(bw_row):
                if q != r and not (math.isfinite(b) and b > 0):
                    raise WorkflowError(f"bandwidth[{q}][{r}] must be a positive number, got {b!r}")
        if len(costs) != n:
            raise WorkflowError(f"W must have a row per task: {n} tasks, {len(costs)} rows")
        for i, row in enumerate(costs):
            if len(row) != p:
                raise WorkflowError(
                    f"W row {i} (task {ids[i]!r}) has {len(row)} entries, but bandwidth names {p} processors"
                )
            if all(c is None for c in row):
                raise WorkflowError(f"task {ids[i]!r} can run on no processor (its W row is all null)")
            for q, c in enumerate(row):
                if c is not None and not (math.isfinite(c) and c >= 0):
                    raise WorkflowError(f"W[{i}][{q}] (task {ids[i]!r}) must be a number >= 0 or null, got {c!r}")
        start = [[0.0] * p for _ in range(p)] if startup is None else [list(row) for row in startup]
        for u, v, data in edges:
            if not (0 <= u < n and 0 <= v < n):
                raise WorkflowError(f"edge ({u}, {v}) names a task that does not exist")
            if not (math.isfinite(data) and data >= 0):
                raise WorkflowError(f"edge {ids[u]!r} -> {ids[v]!r}: data must be a number >= 0, got {data!r}")
        if len({(u, v) for u, v, _ in edges}) != len(edges):
            u, v = next((u, v) for u, v, _ in edges if sum(1 for e in edges if e[:2] == (u, v)) > 1)
            raise WorkflowError(f"edge {ids[u]!r} -> {ids[v]!r} appears twice")
        dag = StaticDag(
            tuple(ids),
            tuple((u, v, float(d)) for u, v, d in edges),
            tuple(tuple(None if c is None else float(c) for c in row) for row in costs),
            tuple(tuple(float(b) for b in row) for row in bandwidth),
            tuple(tuple(float(s) for s in row) for row in start),
        )
        topological_order(dag)  # raises on a cycle
        return dag


def topological_order(dag: StaticDag) -> list[int]:
    """Kahn's order of ``dag``, lowest index first among the free tasks (``edge_order``)."""
    return edge_order(dag.ids, dag.edges)


def edge_order(ids: Sequence[str], edges: Sequence[tuple[int, int, float]]) -> list[int]:
    """Kahn's order of tasks ``ids`` under ``edges``, lowest index first among the free tasks; ``WorkflowError``
    names a task on a cycle."""
    indegree = [0] * len(ids)
    children: list[list[int]] = [[] for _ in ids]
    for u, v, _ in edges:
        indegree[v] += 1
        children[u].append(v)
    free = [i for i, d in enumerate(indegree) if d == 0]
    heapq.heapify(free)
    order: list[int] = []
    while free:
        u = heapq.heappop(free)
        order.append(u)
        for v in children[u]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(free, v)
    if len(order) < len(ids):
        stuck = min(i for i, d in enumerate(indegree) if d > 0)
        raise WorkflowError(f"the DAG has a cycle through task {ids[stuck]!r}")
    return order


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkflowError(f"{where} must be a number, got {value!r}")
    return float(value)


def _matrix(value: Any, where: str, *, nullable: bool = False) -> list[list[Any]]:
    if not isinstance(value, list) or not all(isinstance(row, list) for row in value):
        raise WorkflowError(f"{where} must be a list of lists, got {value!r:.80}")
    return [
        [None if nullable and x is None else _number(x, f"{where}[{i}][{j}]") for j, x in enumerate(row)]
        for i, row in enumerate(value)
    ]


def _startup(value: Any, p: int) -> list[list[float]] | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [[float(value)] * p for _ in range(p)]
    if isinstance(value, list) and all(not isinstance(x, list) for x in value):
        per_sender = [_number(x, f"startup[{i}]") for i, x in enumerate(value)]
        if len(per_sender) != p:
            raise WorkflowError(f"startup has {len(per_sender)} entries, but bandwidth names {p} processors")
        return [[per_sender[q]] * p for q in range(p)]
    matrix = _matrix(value, "startup")
    if len(matrix) != p or any(len(row) != p for row in matrix):
        raise WorkflowError(f"startup must be a number, a list of {p} or a {p}x{p} matrix")
    return matrix


def parse_dag(raw: Any) -> StaticDag:
    """The DAG of the JSON value ``raw`` (the format of this module's docstring)."""
    if not isinstance(raw, dict):
        raise WorkflowError(f"a DAG must be a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - {"tasks", "edges", "W", "bandwidth", "startup"})
    if unknown:
        raise WorkflowError(f"unknown key {unknown[0]!r} (allowed: W, bandwidth, edges, startup, tasks)")
    for key in ("tasks", "W", "bandwidth"):
        if key not in raw:
            raise WorkflowError(f"the DAG has no {key!r}")
    tasks = raw["tasks"]
    if not isinstance(tasks, list) or not all(isinstance(t, (str, int)) and not isinstance(t, bool) for t in tasks):
        raise WorkflowError(f"tasks must be a list of ids (strings or integers), got {tasks!r:.80}")
    ids = [str(t) for t in tasks]
    index = {t: i for i, t in enumerate(ids)}
    edges = []
    raw_edges = raw.get("edges", [])
    if not isinstance(raw_edges, list):
        raise WorkflowError(f"edges must be a list of [from, to, data], got {raw_edges!r:.80}")
    for e in raw_edges:
        if not isinstance(e, list) or len(e) != 3:
            raise WorkflowError(f"an edge must be [from, to, data], got {e!r}")
        u, v = str(e[0]), str(e[1])
        for end in (u, v):
            if end not in index:
                raise WorkflowError(f"edge {e!r} names task {end!r}, which is not in tasks")
        edges.append((index[u], index[v], _number(e[2], f"data of edge {u!r} -> {v!r}")))
    bandwidth = _matrix(raw["bandwidth"], "bandwidth")
    costs = _matrix(raw["W"], "W", nullable=True)
    return StaticDag.build(ids, edges, costs, bandwidth, _startup(raw.get("startup"), len(bandwidth)))


def read_json(path: Path) -> Any:
    """A JSON file's value; ``WorkflowError`` for a missing file or bad JSON, naming the path."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkflowError(f"cannot read {str(path)!r}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkflowError(f"{str(path)!r}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def load_dag(path: Path) -> StaticDag:
    """``parse_dag`` of a file; ``WorkflowError`` for a missing file or bad JSON, naming the path."""
    raw = read_json(path)
    try:
        return parse_dag(raw)
    except WorkflowError as exc:
        raise WorkflowError(f"{str(path)!r}: {exc}") from None
