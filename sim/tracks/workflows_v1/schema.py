"""How ``workflows-v1`` scenarios are written in an evaluation-set file: a ``[[scenario]]`` table's keys.

``vm_counts = [2, 2, 1]`` (small, medium, large), ``n_workflows``, ``arrival_rate`` (per s; 0: all at time 0),
``families = ["montecarlo", "ml", "etl"]``, ``spread``, ``deterministic``; each optional, defaults as
``WorkflowScenario``. The file has no tables of the track's own, and no secret beyond the episodes' keys. (A static
DAG scenario is built in code, ``scenario.static_scenario``; evaluation sets of generated workflows only, for now.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from layersched.sim.errors import EvalSetError, ScenarioError
from layersched.sim.tracks.interface import ScenarioEntry
from layersched.sim.tracks.values import integer, number
from layersched.sim.tracks.workflows_v1.scenario import WorkflowScenario

SCENARIO_KEYS = frozenset({"vm_counts", "n_workflows", "arrival_rate", "families", "spread", "deterministic"})


class WorkflowSchema:
    """Every ``ScenarioSchema`` method for ``WorkflowScenario`` (the track object inherits it)."""

    scenario_keys = SCENARIO_KEYS
    evalset_tables: frozenset[str] = frozenset()

    def read_tables(self, tables: Mapping[str, Any], *, base_dir: Path) -> None:
        return None

    def parse_scenario(self, table: Mapping[str, Any], where: str, context: object) -> tuple[WorkflowScenario, None]:
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
        for sc in scenarios:
            if sc.scenario.dag is not None:
                raise EvalSetError(f"scenario {sc.name!r}: a static DAG scenario cannot be written to a file yet")

    def secret_keys(self, scenario: ScenarioEntry) -> tuple[tuple[bytes, str], ...]:
        return ()

    def scenario_canonical(self, scenario: ScenarioEntry, *, public: bool) -> dict[str, Any]:
        out: dict[str, Any] = scenario.scenario.to_json()
        del out["dag"]
        return out

    def tables_canonical(self, scenarios: Sequence[ScenarioEntry], *, public: bool) -> dict[str, Any]:
        return {}

    def dump_scenario(self, scenario: ScenarioEntry) -> dict[str, Any]:
        return self.scenario_canonical(scenario, public=False)

    def dump_tables(
        self, scenarios: Sequence[ScenarioEntry], *, relocate: Callable[[str], str]
    ) -> dict[str, dict[str, dict[str, Any]]]:
        return {}
