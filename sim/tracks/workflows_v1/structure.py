"""A workflow's structure as an importer reads it (``wfformat``, ``alibaba``), and its static DAG on given VMs.

An imported workflow has what the files hold: tasks with their work (the recorded runtime, taken as the mean
duration at speed 1), cores and memory, and edges with data in GB. ``static_dag`` puts it on a list of VM types:
``W[i][v]`` is the work over the VM's speed (``null`` where the task's demand exceeds the VM), bandwidth the pair's
transfer rate in GB/s; the result runs through HEFT (``heft.py``) and the static scenario like any other DAG.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from layersched.sim.tracks.workflows_v1.dag import StaticDag
from layersched.sim.tracks.workflows_v1.errors import WorkflowError
from layersched.sim.tracks.workflows_v1.vms import VmType, transfer_rate


@dataclass(frozen=True)
class WorkflowStructure:
    """Tasks by index (named ``ids``), their ``work`` (s at speed 1), ``cores``, ``memory_gb``, and ``edges`` as
    ``(parent, child, data GB)``."""

    name: str
    ids: tuple[str, ...]
    work: tuple[float, ...]
    cores: tuple[float, ...]
    memory_gb: tuple[float, ...]
    edges: tuple[tuple[int, int, float], ...]

    def static_dag(self, vms: Sequence[VmType]) -> StaticDag:
        """The DAG on ``vms`` (one processor per entry); ``WorkflowError`` if some task fits no VM."""
        costs = [
            [w / vm.speed if c <= vm.cores and m <= vm.memory_gb else None for vm in vms]
            for w, c, m in zip(self.work, self.cores, self.memory_gb, strict=True)
        ]
        for i, row in enumerate(costs):
            if all(c is None for c in row):
                raise WorkflowError(
                    f"workflow {self.name!r}: task {self.ids[i]!r} ({self.cores[i]:g} cores, {self.memory_gb[i]:g} "
                    "GB) fits none of the VMs"
                )
        bandwidth = [[transfer_rate(a, b) for b in vms] for a in vms]
        return StaticDag.build(self.ids, self.edges, costs, bandwidth)
