"""How ``workflows-v1`` scenarios are written in an evaluation-set file: a ``[[scenario]]`` table's keys, and
``[dags]`` (static DAGs in files).

A generated scenario sets any of ``vm_counts = [2, 2, 1]`` (small, medium, large), ``n_workflows``,
``arrival_rate`` (per s; 0: all at time 0), ``families = ["montecarlo", "ml", "etl"]``, ``spread``,
``deterministic``; defaults as ``WorkflowScenario``. A static scenario sets only ``dag = "name"``, a DAG of the
file's ``[dags]`` table::

    [dags.paper]
    file = "dags/paper.json"     # the CLI's DAG JSON, relative to the set's file
    sha256 = "..."               # optional pin of the DAG's content hash

and runs it as ``scenario.static_scenario`` does. The commitment holds every DAG's content hash (and a scenario's
name of it); there is no secret beyond the episodes' keys.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layersched.sim.canonical import canonical_json
from layersched.sim.errors import EvalSetError, ScenarioError
from layersched.sim.tracks.interface import ScenarioEntry
from layersched.sim.tracks.values import check_name, integer, no_unknown, number
from layersched.sim.tracks.workflows_v1.dag import StaticDag, load_dag
from layersched.sim.tracks.workflows_v1.errors import WorkflowError
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario, static_scenario

GENERATED_KEYS = frozenset({"vm_counts", "n_workflows", "arrival_rate", "families", "spread", "deterministic"})
SCENARIO_KEYS = GENERATED_KEYS | {"dag"}


def dag_hash(dag: StaticDag) -> str:
    """A static DAG's content hash (what ``[dags]`` pins and the commitment holds)."""
    return hashlib.sha256(canonical_json(dag.to_json())).hexdigest()


@dataclass(frozen=True)
class DagSource:
    """A static scenario's DAG: its name in ``[dags]`` and its file as the set names it."""

    name: str
    path: str


@dataclass
class FileDags:
    """A file's ``[dags]``, loaded (each DAG once per file)."""

    sources: dict[str, DagSource] = field(default_factory=dict)
    dags: dict[str, StaticDag] = field(default_factory=dict)


def _read_dags(raw: Any, base_dir: Path) -> FileDags:
    if not isinstance(raw, dict):
        raise EvalSetError(f"[dags] must be a table of DAG files, got {raw!r:.80}")
    out = FileDags()
    for name, table in raw.items():
        check_name(name, "DAG name")
        where = f"dag {name!r}"
        if not isinstance(table, dict):
            raise EvalSetError(f"{where}: expected a table with a file, got {table!r:.80}")
        no_unknown(table, {"file", "sha256"}, where)
        path = table.get("file")
        if not isinstance(path, str) or not path:
            raise EvalSetError(f"{where}: 'file' must be a path relative to the set's file, got {path!r}")
        try:
            dag = load_dag(base_dir / path)
        except WorkflowError as exc:
            raise EvalSetError(f"{where}: {exc}") from exc
        pin = table.get("sha256")
        if pin is not None and not (isinstance(pin, str) and re.fullmatch(r"[0-9a-f]{64}", pin)):
            raise EvalSetError(f"{where}: 'sha256' must be 64 lowercase hex digits, got {pin!r}")
        if pin is not None and pin != dag_hash(dag):
            raise EvalSetError(f"{where}: {path!r} has content hash {dag_hash(dag)}, but the set pins sha256 = {pin}")
        out.sources[name], out.dags[name] = DagSource(name, path), dag
    return out


class WorkflowSchema:
    """Every ``ScenarioSchema`` method for ``WorkflowScenario`` (the track object inherits it)."""

    scenario_keys = SCENARIO_KEYS
    evalset_tables = frozenset({"dags"})

    def read_tables(self, tables: Mapping[str, Any], *, base_dir: Path) -> FileDags:
        return _read_dags(tables.get("dags", {}), base_dir)

    def parse_scenario(
        self, table: Mapping[str, Any], where: str, context: FileDags
    ) -> tuple[WorkflowScenario, DagSource | None]:
        if "dag" in table:
            name = table["dag"]
            others = sorted(set(table) & GENERATED_KEYS)
            if others:
                raise EvalSetError(f"{where}: a static DAG scenario takes no {others[0]!r}")
            if not isinstance(name, str) or name not in context.dags:
                known = ", ".join(sorted(context.dags)) or "none"
                raise EvalSetError(f"{where}: dag must name a DAG of [dags] (known: {known}), got {name!r}")
            return static_scenario(context.dags[name]), context.sources[name]
        values: dict[str, Any] = {}
        if "vm_counts" in table:
            counts = table["vm_counts"]
            if not isinstance(counts, list):
                raise EvalSetError(f"{where}: vm_counts must be a list of 3 counts, got {counts!r}")
            values["vm_counts"] = tuple(integer(c, f"{where}: vm_counts", minimum=0) for c in counts)
        if "n_workflows" in table:
            values["n_workflows"] = integer(table["n_workflows"], f"{where}: n_workflows", minimum=1)
        for key in ("arrival_rate", "spread"):
            if key in table:
                values[key] = number(table[key], f"{where}: {key}")
        if "families" in table:
            families = table["families"]
            if not isinstance(families, list) or not all(isinstance(f, str) for f in families):
                raise EvalSetError(f"{where}: families must be a list of names, got {families!r}")
            values["families"] = tuple(families)
        if "deterministic" in table:
            if not isinstance(table["deterministic"], bool):
                raise EvalSetError(f"{where}: deterministic must be true or false, got {table['deterministic']!r}")
            values["deterministic"] = table["deterministic"]
        try:
            return WorkflowScenario(**values), None
        except ScenarioError as exc:
            raise EvalSetError(f"{where}: {exc}") from exc

    def check_scenarios(self, scenarios: Sequence[ScenarioEntry]) -> None:
        names: dict[str, str] = {}
        for sc in scenarios:
            source = sc.source
            if sc.scenario.dag is not None and not isinstance(source, DagSource):
                raise EvalSetError(f"scenario {sc.name!r}: a static DAG built in code has no file to commit to")
            if isinstance(source, DagSource):
                digest = dag_hash(sc.scenario.dag)
                if names.setdefault(source.name, digest) != digest:
                    raise EvalSetError(f"scenario {sc.name!r}: DAG name {source.name!r} names two DAGs")

    def secret_keys(self, scenario: ScenarioEntry) -> tuple[tuple[bytes, str], ...]:
        return ()

    def scenario_canonical(self, scenario: ScenarioEntry, *, public: bool) -> dict[str, Any]:
        if isinstance(scenario.source, DagSource):
            return {"dag": scenario.source.name}
        out: dict[str, Any] = scenario.scenario.to_json()
        del out["dag"]
        return out

    def tables_canonical(self, scenarios: Sequence[ScenarioEntry], *, public: bool) -> dict[str, Any]:
        dags = {
            sc.source.name: {"sha256": dag_hash(sc.scenario.dag)}
            for sc in scenarios
            if isinstance(sc.source, DagSource)
        }
        return {"dags": dags} if dags else {}

    def dump_scenario(self, scenario: ScenarioEntry) -> dict[str, Any]:
        return self.scenario_canonical(scenario, public=False)

    def dump_tables(
        self, scenarios: Sequence[ScenarioEntry], *, relocate: Callable[[str], str]
    ) -> dict[str, dict[str, dict[str, Any]]]:
        dags = {
            sc.source.name: {"file": relocate(sc.source.path), "sha256": dag_hash(sc.scenario.dag)}
            for sc in scenarios
            if isinstance(sc.source, DagSource)
        }
        return {"dags": dags} if dags else {}
