"""Import a WfFormat 1.5 instance (the JSON of WfCommons' workflow instances), read here without WfCommons.

Read: ``workflow.specification.tasks`` (``id``, ``parents``, ``children``, ``inputFiles``, ``outputFiles``),
``workflow.specification.files`` (``id``, ``sizeInBytes``) and ``workflow.execution.tasks`` (``id``,
``runtimeInSeconds``, and if present ``coreCount`` and ``memoryInBytes``). Every other property is ignored.

* An edge is a parent listed by the child, or a child listed by the parent (the union: WfFormat expects the two to
  agree; where they do not, the dependency is still real).
* The data of an edge is the total size of the files that the parent writes and the child reads (10^9 bytes = 1 GB);
  0 if they share none.
* A task's work is its ``runtimeInSeconds``; its cores ``coreCount`` (1 if absent), its memory ``memoryInBytes``
  in GiB (1 GB if absent).

Errors name the instance and the task or file: a duplicate id, a parent, child or file that does not exist, a task
without a runtime, a cycle. Schema versions "1.5" and "1.6" (the same properties) are accepted.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from layersched.sim.tracks.workflows_v1.dag import edge_order, read_json
from layersched.sim.tracks.workflows_v1.errors import WorkflowError
from layersched.sim.tracks.workflows_v1.structure import WorkflowStructure

VERSIONS = ("1.5", "1.6")


def _get(obj: Any, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise WorkflowError(f"{where} has no {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise WorkflowError(f"{where}: {key!r} must be a {getattr(kind, '__name__', 'value')}, got {value!r:.60}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise WorkflowError(f"{where} must be a number >= 0, got {value!r:.60}")
    return float(value)


def parse_wfformat(raw: Any, *, source: str = "instance") -> WorkflowStructure:
    """The structure of the WfFormat instance ``raw`` (parsed JSON); ``source`` names it in errors."""
    name = raw.get("name", source) if isinstance(raw, dict) else source
    where = f"WfFormat {name!r}"
    version = raw.get("schemaVersion") if isinstance(raw, dict) else None
    if version not in VERSIONS:
        raise WorkflowError(f"{where}: schemaVersion must be one of {', '.join(VERSIONS)}, got {version!r}")
    workflow = _get(raw, "workflow", where, dict)
    spec = _get(workflow, "specification", f"{where} workflow", dict)
    tasks = _get(spec, "tasks", f"{where} specification", list)
    files = spec.get("files", [])
    sizes: dict[str, float] = {}
    for f in files:
        fid = _get(f, "id", f"{where} file", str)
        if fid in sizes:
            raise WorkflowError(f"{where}: file {fid!r} is declared twice")
        sizes[fid] = _number(
            _get(f, "sizeInBytes", f"{where} file {fid!r}", (int, float)), f"{where} file {fid!r} size"
        )
    index: dict[str, int] = {}
    for t in tasks:
        tid = _get(t, "id", f"{where} task", str)
        if tid in index:
            raise WorkflowError(f"{where}: task {tid!r} is declared twice")
        index[tid] = len(index)
    if not index:
        raise WorkflowError(f"{where}: the specification has no tasks")
    reads: list[set[str]] = []
    writes: list[set[str]] = []
    pairs: set[tuple[int, int]] = set()
    for t in tasks:
        tid = t["id"]
        for key in ("inputFiles", "outputFiles"):
            for fid in t.get(key, []):
                if fid not in sizes:
                    raise WorkflowError(f"{where}: task {tid!r} names file {fid!r} in {key}, which is not declared")
        reads.append(set(t.get("inputFiles", [])))
        writes.append(set(t.get("outputFiles", [])))
        for key, as_parent in (("parents", True), ("children", False)):
            for other in t.get(key, []):
                if other not in index:
                    raise WorkflowError(f"{where}: task {tid!r} names {key[:-1]} {other!r}, which is not a task")
                if other == tid:
                    raise WorkflowError(f"{where}: task {tid!r} depends on itself")
                pairs.add((index[other], index[tid]) if as_parent else (index[tid], index[other]))
    runs: dict[str, dict[str, Any]] = {}
    execution = workflow.get("execution", {})
    for e in execution.get("tasks", []) if isinstance(execution, dict) else []:
        runs[_get(e, "id", f"{where} execution task", str)] = e
    work, cores, memory = [], [], []
    for tid in index:
        run = runs.get(tid)
        if run is None or "runtimeInSeconds" not in run:
            raise WorkflowError(f"{where}: task {tid!r} has no runtimeInSeconds in workflow.execution.tasks")
        work.append(_number(run["runtimeInSeconds"], f"{where}: task {tid!r} runtimeInSeconds"))
        cores.append(_number(run.get("coreCount", 1), f"{where}: task {tid!r} coreCount"))
        memory.append(_number(run.get("memoryInBytes", 2**30), f"{where}: task {tid!r} memoryInBytes") / 2**30)
    edges = tuple((u, v, sum(sizes[f] for f in writes[u] & reads[v]) / 1e9) for u, v in sorted(pairs))
    ids = tuple(index)
    try:  # a cycle, named by the DAG's own check
        edge_order(ids, edges)
    except WorkflowError as exc:
        raise WorkflowError(f"{where}: {exc}") from None
    return WorkflowStructure(str(name), ids, tuple(work), tuple(cores), tuple(memory), edges)


def load_wfformat(path: Path) -> WorkflowStructure:
    """``parse_wfformat`` of a file; bad JSON or an unreadable file is a ``WorkflowError`` naming the path."""
    return parse_wfformat(read_json(path), source=path.name)
