"""Scenarios: the frozen, hashable configuration of one simulated cluster and workload.

The defaults are the lab's: 10 nodes of 60-90 Mbps, 0.8-1.2 GHz and 5-15 GB, 4 container slots each, 500 tasks
arriving as a Poisson process of rate 0.3/s, Zipf(1) image popularity and 20-80 G cycles per task.

The optional cloud node is the lab's extension 1 (after LDLS): unlimited parallel compute and no layer cache, so
every task sent there downloads its whole image over the backhaul, independently of other cloud tasks. The values
chosen here, 50 Mbps and 2.0 GHz, make a cloud placement take about 139 s of download plus 25 s of compute for an
average lab image: slower than a cold edge node (about 96 + 50 s), so a myopic policy still warms the edge caches,
but faster than a long edge queue. Measured with Greedy over seeds 0-2 (`python -m layersched.sim --cloud`): 1% of
tasks go to the cloud at the lab's load, 3.5% at rate 0.5, 7% with 5 nodes, 68% with 3 nodes at rate 0.8.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from layersched.sim.canonical import canonical_json
from layersched.sim.errors import ScenarioError
from layersched.sim.tracks.layers_v1.catalog import Catalog, load_catalog
from layersched.sim.version import SIM_VERSION, package_rules_hash

# The rules of layers-v1, as every track's: the code of this package (its starter kit excepted). Each scenario's hash
# holds it, and so each episode's policy seed.
RULES_HASH = package_rules_hash(Path(__file__).parent)


@dataclass(frozen=True)
class NodeRanges:
    """Uniform ranges the node parameters are drawn from, in the lab's units."""

    bandwidth_mbps: tuple[float, float] = (60.0, 90.0)
    freq_ghz: tuple[float, float] = (0.8, 1.2)
    storage_gb: tuple[float, float] = (5.0, 15.0)


@dataclass(frozen=True)
class CloudNode:
    """Parameters of the optional cloud node (lab extension 1)."""

    bandwidth_mbps: float = 50.0
    freq_ghz: float = 2.0


@dataclass(frozen=True)
class Scenario:
    """Everything that defines an episode except the random stream that draws it."""

    catalog: Catalog = field(default_factory=lambda: load_catalog("lab"))
    n_nodes: int = 10
    n_tasks: int = 500
    arrival_rate: float = 0.3
    slots: int = 4
    nodes: NodeRanges = NodeRanges()
    cycles_g: tuple[float, float] = (20.0, 80.0)
    zipf_s: float = 1.0
    cloud: CloudNode | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Reject configurations the model cannot run, naming the offending value."""
        if not isinstance(self.n_nodes, int) or self.n_nodes < 1:
            raise ScenarioError(f"n_nodes must be a positive integer, got {self.n_nodes!r}")
        if not isinstance(self.n_tasks, int) or self.n_tasks < 1:
            raise ScenarioError(f"n_tasks must be a positive integer, got {self.n_tasks!r}")
        if not isinstance(self.slots, int) or self.slots < 1:
            raise ScenarioError(f"slots must be a positive integer, got {self.slots!r}")
        if not (self.arrival_rate > 0 and self.arrival_rate < float("inf")):
            raise ScenarioError(f"arrival_rate must be a positive finite number, got {self.arrival_rate!r}")
        for label, (lo, hi) in (
            ("nodes.bandwidth_mbps", self.nodes.bandwidth_mbps),
            ("nodes.freq_ghz", self.nodes.freq_ghz),
            ("nodes.storage_gb", self.nodes.storage_gb),
            ("cycles_g", self.cycles_g),
        ):
            if not (0 < lo <= hi < float("inf")):
                raise ScenarioError(f"{label} must be a range 0 < lo <= hi, got {(lo, hi)!r}")
        if self.zipf_s < 0:
            raise ScenarioError(f"zipf_s must be non-negative, got {self.zipf_s!r}")
        if self.cloud is not None and not (self.cloud.bandwidth_mbps > 0 and self.cloud.freq_ghz > 0):
            raise ScenarioError(f"cloud node needs positive bandwidth and frequency, got {self.cloud!r}")
        largest_storage_mb = self.nodes.storage_gb[1] * 1024
        for image in self.catalog.images:
            if image.size_mb > largest_storage_mb and self.cloud is None:
                raise ScenarioError(
                    f"image {image.name!r} of catalog {self.catalog.name!r} needs {image.size_mb:.1f} MB but no node "
                    f"can hold more than {largest_storage_mb:.0f} MB (nodes.storage_gb={self.nodes.storage_gb})"
                )

    def params(self) -> dict[str, Any]:
        """The scenario as plain JSON values, with the catalog replaced by its name and content hash."""
        values = asdict(self)
        values["catalog"] = {"name": self.catalog.name, "sha256": self.catalog.content_hash}
        return values

    @property
    def content_hash(self) -> str:
        """Identifies the scenario together with the simulator's rules: equal hashes, equal episodes."""
        payload = {"sim_version": SIM_VERSION, "rules": RULES_HASH, "scenario": self.params()}
        return hashlib.sha256(canonical_json(payload)).hexdigest()
