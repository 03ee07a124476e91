"""How long each hidden episode took does not reach its author while the evaluation runs (the red team's finding 4
after issue 15: a policy that sleeps in proportion to what it saw spelled ~10 bits per hidden episode into the
progress counter the participant polls, in a submission that succeeded).

While an evaluation runs, the participant's progress counts only episodes whose workload is not hidden, and the
logs list no hidden episode; organisers see everything as it happens. What remains is the evaluation's total time.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from layersched.server import storage
from tests.redteam.conftest import alice, client, db, enqueued, evalset, make_account, organiser  # noqa: F401
from tests.server.conftest import Account, submit


def started_with_one_episode_each(db: Session, evaluation_id: int) -> None:  # noqa: F811
    storage.start_evaluation(
        session=db,
        evaluation_id=evaluation_id,
        worker_id="w",
        total=3,
        sim_version="1",
        image_digest="d",
        sandbox="docker",
    )
    for episode_id, hidden in (("seed0", False), ("hidden-a", True)):
        storage.record_episode_result(
            session=db,
            evaluation_id=evaluation_id,
            scenario="lab-5",
            episode_id=episode_id,
            split="public",
            hidden=hidden,
            status="ok",
            metrics={"mean_completion": 10.0},
            primary_value=10.0,
            trace_hash="f" * 64,
        )


def test_hidden_episodes_do_not_move_the_participants_progress(
    client: Any,  # noqa: F811
    alice: Account,  # noqa: F811
    organiser: Account,  # noqa: F811
    db: Session,  # noqa: F811
) -> None:
    body = submit(client, alice).json()
    evaluation_id = body["evaluations"][0]["id"]
    started_with_one_episode_each(db, evaluation_id)

    mine = client.get(f"/api/v1/submissions/{body['id']}", headers=alice.headers).json()
    assert mine["progress"] == {"done": 1, "total": 3}  # the hidden episode that ended is not counted yet
    assert mine["evaluations"][0]["progress"] == {"done": 1, "total": 3}
    logs = client.get(f"/api/v1/submissions/{body['id']}/logs", headers=alice.headers).json()["data"]
    assert [row["episode"] for row in logs] == ["seed0"]
    page = client.get(f"/submissions/{body['id']}", headers=alice.headers).text
    assert "(1/3 episodes)" in page

    theirs = client.get(f"/api/v1/admin/evaluations/{evaluation_id}", headers=organiser.headers).json()
    assert theirs["progress"] == {"done": 2, "total": 3}
    assert client.get(f"/api/v1/submissions/{body['id']}", headers=organiser.headers).json()["progress"]["done"] == 2

    storage.finish_evaluation(
        session=db,
        evaluation_id=evaluation_id,
        state="failed",
        error_category="crash",
        error_message="m",
        public_error_message="m",
    )
    done = client.get(f"/api/v1/submissions/{body['id']}", headers=alice.headers).json()
    assert done["progress"] == {"done": 2, "total": 3}  # once it has ended, every recorded episode counts
    logs = client.get(f"/api/v1/submissions/{body['id']}/logs", headers=alice.headers).json()["data"]
    assert [row["episode"] for row in logs] == ["hidden-a", "seed0"]
