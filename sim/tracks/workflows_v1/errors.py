"""Errors of track ``workflows-v1``.

Hierarchy::

    SimError (layersched.sim.errors)
    └── WorkflowError     a DAG, a cost matrix or a workflow file is malformed (names the offending value)

A policy's invalid reply is the shared ``PolicyError``; a scenario that cannot be played is ``ScenarioError``.
"""

from __future__ import annotations

from layersched.sim.errors import SimError


class WorkflowError(SimError):
    """A static DAG, its matrices or an imported workflow is malformed."""
