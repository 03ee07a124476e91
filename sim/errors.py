"""Errors raised by the reference simulator.

Hierarchy::

    SimError                      base of everything raised on purpose by layersched.sim
    ├── CatalogError              a catalog file or name is unknown, malformed or inconsistent
    ├── ScenarioError             a scenario cannot be simulated (zero nodes, image larger than every node, ...)
    ├── PolicyError               a policy broke the contract (not an int, out of range, masked node)
    └── EvalSetError              an evaluation-set file is malformed or does not match its commitment

Every message names the offending value so that a student or an organiser can act on it without a traceback.
"""

from __future__ import annotations


class SimError(Exception):
    """Base class of every deliberate error of layersched.sim."""


class CatalogError(SimError):
    """A catalog is unknown, malformed or internally inconsistent."""


class ScenarioError(SimError):
    """A scenario cannot be simulated as configured."""


class PolicyError(SimError):
    """A policy returned something the contract does not allow."""

    def __init__(self, message: str, *, step: int, value: object) -> None:
        super().__init__(message)
        self.step = step
        self.value = value


class EvalSetError(SimError):
    """An evaluation-set file is malformed or does not match its commitment."""
