"""What both ends of the sandbox's channel agree on besides framing: how scenarios, nodes and replies travel, and
the fingerprint of the simulator each end runs.

Imported on both sides (the trusted runner encodes, the harness and the episode process decode), so it depends on
``layersched.sim`` and the standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import operator
from pathlib import Path
from typing import Any

from layersched.sim.catalog import parse_catalog
from layersched.sim.scenario import CloudNode, NodeRanges, Scenario
from layersched.sim.workload import NodeSpec

_INT64 = 2**63
# The worker hands the harness its start nonce in this environment variable (not on the command line, which every
# process can read); the harness echoes it in its first frame and removes it before it forks anything.
NONCE_ENV = "LAYERSCHED_START_NONCE"
# The longest text of a bad return value the episode process sends (the trusted side cuts it again).
MAX_VALUE_CHARS = 200


def scenario_to_wire(name: str, scenario: Scenario) -> dict[str, Any]:
    params = scenario.params()
    params.pop("catalog")
    return {
        "type": "scenario",
        "name": name,
        "hash": scenario.content_hash,
        "params": params,
        "catalog": {"name": scenario.catalog.name, "images": scenario.catalog.to_json()},
    }


def scenario_from_wire(message: dict[str, Any]) -> Scenario:
    p = message["params"]
    cloud = p["cloud"]
    return Scenario(
        catalog=parse_catalog(message["catalog"]["images"], name=message["catalog"]["name"]),
        n_nodes=p["n_nodes"],
        n_tasks=p["n_tasks"],
        arrival_rate=p["arrival_rate"],
        slots=p["slots"],
        nodes=NodeRanges(
            bandwidth_mbps=tuple(p["nodes"]["bandwidth_mbps"]),
            freq_ghz=tuple(p["nodes"]["freq_ghz"]),
            storage_gb=tuple(p["nodes"]["storage_gb"]),
        ),
        cycles_g=tuple(p["cycles_g"]),
        zipf_s=p["zipf_s"],
        cloud=None if cloud is None else CloudNode(**cloud),
    )


def nodes_to_wire(specs: list[NodeSpec]) -> list[list[Any]]:
    # JSON has no Infinity: the cloud's unlimited storage travels as null.
    return [[s.bandwidth, s.freq, None if s.storage == float("inf") else s.storage, s.slots, s.is_cloud] for s in specs]


def nodes_from_wire(rows: list[list[Any]]) -> list[NodeSpec]:
    return [
        NodeSpec(bandwidth=b, freq=f, storage=float("inf") if s is None else s, slots=k, is_cloud=c)
        for b, f, s, k, c in rows
    ]


def action_message(step: int, value: object) -> dict[str, Any]:
    """The reply for what the policy returned: an ``action`` if it is an integer, else ``bad_action`` naming it."""
    if not isinstance(value, bool) and not isinstance(value, int):
        with contextlib.suppress(Exception):  # numpy integers and other exact integer types, as in-process
            value = operator.index(value)  # type: ignore[arg-type]
    if isinstance(value, int) and not isinstance(value, bool):
        if -_INT64 <= value < _INT64:
            return {"type": "action", "step": step, "action": value}
        return {
            "type": "bad_action",
            "step": step,
            "value": f"an integer of {value.bit_length()} bits",
            "value_type": "int",
        }
    try:
        text = repr(value)[:MAX_VALUE_CHARS]
    except Exception:
        text = "<unrepresentable>"
    return {"type": "bad_action", "step": step, "value": text, "value_type": type(value).__name__[:MAX_VALUE_CHARS]}


def sim_fingerprint() -> str:
    """SHA-256 over the simulator as installed here: its ``*.py`` and ``*.c`` files and data files (what the image
    build copies; the image runs observe()'s Python loop, the host may run the C kernel built from that ``*.c``).

    The harness reports it before any code of the participant runs, and it never runs any afterwards either: if it
    equals the worker's own, the two simulators are the same.
    """
    import layersched.sim

    root = Path(layersched.sim.__file__).parent
    files = sorted([*root.glob("*.py"), *root.glob("*.c"), *(p for p in (root / "data").glob("*") if p.is_file())])
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
