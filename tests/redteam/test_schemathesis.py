"""Property-based requests generated from the app's own OpenAPI document (schemathesis), against PostgreSQL.

Every operation is called with examples schemathesis draws from its schema (valid and, for parameters and bodies,
deliberately invalid values), with a participant's token. Checks, and why these:

- ``not_a_server_error``: no request a participant can make may produce a 5xx.
- ``status_code_conformance``: every status returned is one the document declares (the error statuses are declared
  once for every route, with the ``{"error": {...}}`` body).
- ``content_type_conformance`` and ``response_schema_conformance``: the body is what the document says, errors
  included.

Left out: ``negative_data_rejection`` and ``positive_data_acceptance`` (a schema-valid request can be refused by
state, e.g. 404 for an id that does not exist, 429 after the quota, 403 on organiser routes; and several refusals
come from rules no JSON schema states, like the bundle checks), ``use_after_free``/``ensure_resource_availability``
(stateful links; none are declared), ``ignored_auth`` (the token is sent on every call; the 401 paths are covered in
test_hostile_api.py), ``max_response_time`` (timing is benchmarks/bench_leaderboard.py's business).
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from layersched.server.app import create_app
from layersched.server.config import Settings
from tests.server.conftest import Account, Captured

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = 60


def _operations(settings: Settings, enqueued: Captured) -> Any:
    app = create_app(settings, enqueuer=enqueued)
    return schemathesis.openapi.from_asgi("/openapi.json", app)


def test_every_operation_holds(settings: Settings, enqueued: Captured, alice: Account, bob: Account) -> None:
    schema = _operations(settings, enqueued)
    labels = []
    for result in schema.get_all_operations():
        operation = result.ok()
        labels.append(operation.label)

        @given(case=operation.as_strategy())
        @hypothesis_settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: Any) -> None:
            case.call_and_validate(headers=alice.headers, checks=CHECKS)

        check()
    assert "POST /api/v1/submissions" in labels and "GET /api/v1/leaderboard" in labels
