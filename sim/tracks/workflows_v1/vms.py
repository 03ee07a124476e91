"""The VM types of ``workflows-v1``: the seed's three configurations, with a CPU speed each.

The seed gives cores, memory and bandwidth (8/32/10, 16/64/20, 32/128/40); it gives no speed, and the issue asks
that where a task runs matter: the larger types are faster (1.0, 1.25, 1.5). A task's mean duration on a VM is its
work (its mean duration at speed 1) divided by the VM's speed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VmType:
    """One VM configuration: ``cores``, ``memory_gb``, network ``bandwidth_gbps`` (Gbit/s) and CPU ``speed``."""

    name: str
    cores: int
    memory_gb: float
    bandwidth_gbps: float
    speed: float


VM_TYPES: tuple[VmType, ...] = (
    VmType("small", 8, 32.0, 10.0, 1.0),
    VmType("medium", 16, 64.0, 20.0, 1.25),
    VmType("large", 32, 128.0, 40.0, 1.5),
)


def transfer_rate(a: VmType, b: VmType) -> float:
    """GB/s between two distinct VMs: the slower network card's Gbit/s over 8 (no other traffic is modelled)."""
    return min(a.bandwidth_gbps, b.bandwidth_gbps) / 8.0
