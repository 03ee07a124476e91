"""The production enqueuer against a real Redis: messages land on the right queue under the right task name."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from layersched.server.queue import (
    AUDIT_TASK,
    AUDITS_QUEUE,
    EVALUATE_TASK,
    EVALUATIONS_QUEUE,
    CeleryEnqueuer,
    enqueue,
    queue_depths,
)

pytestmark = pytest.mark.redis
REDIS = "redis://127.0.0.1:6379/14"


@pytest.fixture
def broker() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS)
    client.delete(EVALUATIONS_QUEUE, AUDITS_QUEUE)
    yield client
    client.delete(EVALUATIONS_QUEUE, AUDITS_QUEUE)
    client.close()


class _Evaluation:
    def __init__(self, id: int, kind: str) -> None:
        self.id, self.kind = id, kind


def _messages(client: redis.Redis, queue: str) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in client.lrange(queue, 0, -1)]


def test_send_by_name_to_separate_queues(broker: redis.Redis) -> None:
    enqueuer = CeleryEnqueuer(REDIS)
    evaluation_id = secrets.randbelow(10**6)
    assert enqueue(enqueuer, _Evaluation(evaluation_id, "initial"))  # type: ignore[arg-type]
    assert enqueue(enqueuer, _Evaluation(evaluation_id + 1, "rerun"))  # type: ignore[arg-type]
    assert enqueue(enqueuer, _Evaluation(evaluation_id + 2, "audit"))  # type: ignore[arg-type]
    assert queue_depths(REDIS) == {EVALUATIONS_QUEUE: 2, AUDITS_QUEUE: 1}

    evaluations = _messages(broker, EVALUATIONS_QUEUE)
    assert {m["headers"]["task"] for m in evaluations} == {EVALUATE_TASK}
    bodies = [json.loads(base64.b64decode(m["body"])) for m in evaluations]
    assert sorted(b[0][0] for b in bodies) == [evaluation_id, evaluation_id + 1]  # args=[evaluation_id], JSON only
    [audit] = _messages(broker, AUDITS_QUEUE)
    assert audit["headers"]["task"] == AUDIT_TASK
    assert json.loads(base64.b64decode(audit["body"]))[0] == [evaluation_id + 2]


def test_unreachable_broker_is_reported_not_raised() -> None:
    enqueuer = CeleryEnqueuer("redis://127.0.0.1:1/0")
    assert enqueue(enqueuer, _Evaluation(1, "initial")) is False  # type: ignore[arg-type]
