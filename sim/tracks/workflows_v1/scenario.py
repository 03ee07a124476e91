"""A ``workflows-v1`` scenario: the VMs, the workflows' families and arrivals, the duration noise; or one static DAG.

Generated: ``vm_counts[k]`` VMs of type ``VM_TYPES[k]`` (VM indices follow that order), ``n_workflows`` workflows
of the ``families`` (each drawn uniformly among them), arriving as a Poisson process of ``arrival_rate`` per second
from time 0 (the first arrives after one exponential gap) or all at time 0 if the rate is 0. A task's actual duration
on a VM is its mean there times ``max(0.1, 1 + spread * z)``, z standard normal, one z per task (the policy knows
the means and ``spread``); ``deterministic`` makes every duration its mean.

Static (``dag`` set): the DAG at time 0 on its processors, each a VM of 1 core and 1 GB running one task at a time
(every task needs 1 and 1), durations exactly ``W``, communication as ``dag.comm``: the HEFT paper's model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from typing import Any

from layersched.sim.canonical import canonical_json
from layersched.sim.errors import ScenarioError
from layersched.sim.tracks.workflows_v1.dag import StaticDag, parse_dag
from layersched.sim.tracks.workflows_v1.families import FAMILIES
from layersched.sim.tracks.workflows_v1.vms import VM_TYPES


@dataclass(frozen=True)
class WorkflowScenario:
    vm_counts: tuple[int, ...] = (2, 2, 1)
    n_workflows: int = 8
    arrival_rate: float = 0.004
    families: tuple[str, ...] = FAMILIES
    spread: float = 0.15
    deterministic: bool = False
    dag: StaticDag | None = None

    def __post_init__(self) -> None:
        if len(self.vm_counts) != len(VM_TYPES) or any(c < 0 for c in self.vm_counts) or sum(self.vm_counts) < 1:
            raise ScenarioError(
                f"vm_counts must be {len(VM_TYPES)} counts >= 0 (small, medium, large), at least one VM; "
                f"got {self.vm_counts!r}"
            )
        if self.n_workflows < 1:
            raise ScenarioError(f"n_workflows must be >= 1, got {self.n_workflows!r}")
        if not (math.isfinite(self.arrival_rate) and self.arrival_rate >= 0):
            raise ScenarioError(f"arrival_rate must be a number >= 0 (0: all at time 0), got {self.arrival_rate!r}")
        if not self.families or any(f not in FAMILIES for f in self.families):
            bad = next((f for f in self.families if f not in FAMILIES), None)
            raise ScenarioError(f"families must be some of {', '.join(FAMILIES)}; got {bad!r}")
        if not (math.isfinite(self.spread) and 0 <= self.spread <= 1):
            raise ScenarioError(f"spread must be in [0, 1], got {self.spread!r}")

    @property
    def static(self) -> bool:
        return self.dag is not None

    @property
    def duration_spread(self) -> float:
        """The relative std of actual durations around their means (0 when durations are the means)."""
        return 0.0 if self.deterministic or self.dag is not None else self.spread

    @property
    def n_vms(self) -> int:
        return self.dag.n_procs if self.dag is not None else sum(self.vm_counts)

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["vm_counts"] = list(self.vm_counts)
        out["families"] = list(self.families)
        out["dag"] = None if self.dag is None else self.dag.to_json()
        return out

    @staticmethod
    def from_json(message: Any) -> WorkflowScenario:
        fields = dict(message)
        fields["vm_counts"] = tuple(fields["vm_counts"])
        fields["families"] = tuple(fields["families"])
        fields["dag"] = None if fields["dag"] is None else parse_dag(fields["dag"])
        return WorkflowScenario(**fields)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(canonical_json({"track": "workflows-v1", **self.to_json()})).hexdigest()


def static_scenario(dag: StaticDag) -> WorkflowScenario:
    """The static deterministic scenario of ``dag`` (one workflow at time 0, durations its ``W``)."""
    return WorkflowScenario(n_workflows=1, arrival_rate=0.0, spread=0.0, deterministic=True, dag=dag)
