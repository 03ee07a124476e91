"""The ``ScenarioSchema`` of a track whose scenario is a few integers (or numbers), for a track to inherit.

A track of that kind defines its scenario as a frozen dataclass of int fields with defaults and inherits
``IntegerScenarios``::

    @dataclass(frozen=True)
    class JobsScenario:
        n_jobs: int = 20
        n_machines: int = 2

    class JobsTrack(IntegerScenarios):
        scenario_type = JobsScenario
        ...  # the rest of the Track: id, baselines, run_episode, ...

A ``[[scenario]]`` table then sets any of the fields (``n_jobs = 50``), each an integer >= ``minimum``; a field
annotated ``float`` takes any finite number (``rate = 1`` reads as 1.0; its bounds are the dataclass's to check). The
canonical form and the dump are the fields, and the file has no tables of the track's own. The dataclass's
``__post_init__`` may check more; a ``ValueError`` it raises is reported with the scenario's name.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from layersched.sim.canonical import canonical_json
from layersched.sim.errors import EvalSetError
from layersched.sim.tracks.interface import ScenarioEntry
from layersched.sim.tracks.values import integer, number


class IntegerScenarios:
    """Every ``ScenarioSchema`` method, and the scenario's hash and wire form, for ``scenario_type``."""

    # A frozen dataclass whose fields are ints (or floats) with defaults.
    scenario_type: ClassVar[type]
    minimum: ClassVar[int] = 1
    evalset_tables: frozenset[str] = frozenset()

    @property
    def scenario_keys(self) -> frozenset[str]:
        return frozenset(f.name for f in dataclasses.fields(self.scenario_type))

    def read_tables(self, tables: Mapping[str, Any], *, base_dir: Path) -> None:
        return None

    def parse_scenario(self, table: Mapping[str, Any], where: str, context: object) -> tuple[Any, None]:
        floats = {f.name for f in dataclasses.fields(self.scenario_type) if f.type in (float, "float")}
        values = {
            key: number(value, f"{where}: {key}")
            if key in floats
            else integer(value, f"{where}: {key}", minimum=self.minimum)
            for key, value in table.items()
        }
        try:
            return self.scenario_type(**values), None
        except ValueError as exc:
            raise EvalSetError(f"{where}: {exc}") from exc

    def check_scenarios(self, scenarios: Sequence[ScenarioEntry]) -> None:
        return None

    def secret_keys(self, scenario: ScenarioEntry) -> tuple[tuple[bytes, str], ...]:
        return ()

    def scenario_canonical(self, scenario: ScenarioEntry, *, public: bool) -> dict[str, Any]:
        return dataclasses.asdict(scenario.scenario)

    def tables_canonical(self, scenarios: Sequence[ScenarioEntry], *, public: bool) -> dict[str, Any]:
        return {}

    def dump_scenario(self, scenario: ScenarioEntry) -> dict[str, Any]:
        return dataclasses.asdict(scenario.scenario)

    def dump_tables(
        self, scenarios: Sequence[ScenarioEntry], *, relocate: Callable[[str], str]
    ) -> dict[str, dict[str, dict[str, Any]]]:
        return {}

    def scenario_hash(self, scenario: Any) -> str:
        # The type's name is hashed too: two tracks' scenarios with equal fields seed different policy rngs.
        fields = dataclasses.asdict(scenario)
        return hashlib.sha256(canonical_json({"type": type(scenario).__qualname__, "fields": fields})).hexdigest()

    def scenario_to_wire(self, scenario: Any) -> dict[str, Any]:
        return dataclasses.asdict(scenario)

    def scenario_from_wire(self, message: Mapping[str, Any]) -> Any:
        return self.scenario_type(**message)
