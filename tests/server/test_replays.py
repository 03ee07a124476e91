"""The schedules on the pages (issue 33): a submission's per-episode table of its episodes with a public workload,
each episode's replay page beside the reference baseline, the board's metric columns; and that nothing of a keyed
episode is kept, listed or drawn.

The evaluation is recorded as the worker records it (``public_runs``): a baseline plays a jobs-v1 set in-process,
two episodes seeded and two keyed.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.models import ActionTrace, EpisodeActions, EpisodeResult, EvalSet, ReplayScenario
from layersched.server.storage import ReplayInput
from layersched.server.storage.replays import write_episode_actions
from layersched.sim.episodes import trace_hash
from layersched.sim.evalset import score_baselines
from layersched.sim.tracks import get_track
from layersched.sim.tracks.schedules import decode_actions, encode_actions, replay_episode
from layersched.worker.evalsets import write_reference_rows
from tests.sim.schedule_svg import at_times, bars

from . import public_runs, stand_in_track
from .conftest import Account, run_evaluation, submit


def jobs_set(path: Path) -> Path:
    """A jobs-v1 set: two seeded episodes (one in each split), two keyed ones (one in each split)."""
    keys = [secrets.token_hex(32) for _ in range(2)]
    path.write_text(
        'format = "layersched-evalset"\nversion = 1\nname = "jobs-mixed"\ntrack = "jobs-v1"\n\n'
        '[[scenario]]\nname = "small"\nweight = 1.0\nsimu_len = 40\n'
        f'episodes = [{{ seed = 3 }}, {{ seed = 4, split = "private" }}, {{ id = "hidden-pub", key = "{keys[0]}" }}, '
        f'{{ id = "hidden-priv", split = "private", key = "{keys[1]}" }}]\n'
    )
    return path


@pytest.fixture
def world(db: Session, make_account: Any, tmp_path: Path) -> dict[str, Any]:
    """alice's Random on the mixed set, recorded; bob, a stranger; olga, an organiser; the baselines' rows."""
    row, evalset = public_runs.register(db, jobs_set(tmp_path / "jobs-mixed.toml"))
    write_reference_rows(session=db, evalset=evalset, records=score_baselines(evalset, tmp_path / "baselines"))
    alice, bob, olga = make_account("alice"), make_account("bob"), make_account("olga", role="organiser")
    made, evaluation_id = public_runs.submission(db, alice.user, row, "random <i>mine</i>")
    track = get_track("jobs-v1")
    played = public_runs.evaluate(
        db,
        evaluation_id,
        evalset,
        track.baseline("Random"),
        bundle_sha256=made.bundle_sha256,
        cache_dir=tmp_path / "baselines",
    )
    return {
        "alice": alice,
        "bob": bob,
        "olga": olga,
        "id": made.id,
        "evalset": evalset,
        "played": played,
        "evaluation_id": evaluation_id,
    }


def _hidden_texts(world: dict[str, Any]) -> list[str]:
    """What drawing a keyed episode's schedule would print: each of its jobs' hover text (computed here from the
    key, as only the worker could), and its actions as the trace hashes them."""
    from layersched.sim.tracks.jobs_v1.render import describe
    from layersched.sim.tracks.jobs_v1.schedule import replay_jobs

    texts = []
    for job in world["evalset"].jobs():
        if job.episode.hidden:
            actions = world["played"][(job.scenario_name, job.episode.id)]
            record = replay_jobs(job.scenario, job.episode.workload_rng(), actions)
            texts += [describe(j) for j in record.jobs]
            texts.append(",".join(map(str, actions[:30])))
    return texts


def test_only_seeded_episodes_keep_their_actions_and_with_them_the_reference(
    db: Session, world: dict[str, Any]
) -> None:
    rows = db.execute(
        select(EpisodeResult.episode_id, EpisodeResult.hidden, EpisodeActions.actions, EpisodeActions.reference)
        .join(EpisodeActions, EpisodeActions.episode_result_id == EpisodeResult.id)
        .where(EpisodeResult.evaluation_id == world["evaluation_id"])
    ).all()
    assert sorted(r[0] for r in rows) == ["seed3", "seed4"], "keyed episodes, public or private split, keep none"
    assert db.scalar(select(func.count()).select_from(ReplayScenario)) == 1, "the scenario is kept once"
    for episode_id, hidden, _blob, reference in rows:
        assert not hidden
        stored = storage.episode_replay(
            session=db,
            episode_result_id=db.scalar(select(EpisodeResult.id).where(EpisodeResult.episode_id == episode_id)),
        )
        assert stored is not None and stored.actions == world["played"][("small", episode_id)]
        assert (
            reference is not None
            and reference["baseline"] == "SJF"
            and set(reference["metrics"])
            >= {
                "mean_slowdown",
                "jobs_dropped",
            }
        )


def test_the_reference_run_is_kept_once_for_every_evaluation(
    db: Session, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The worker runs the reference baseline on a public episode the first time an evaluation records it; later
    evaluations find it kept (the replay pages read it, they never wait for a baseline's run)."""
    traces = {t.trace_hash: t.actions for t in db.scalars(select(ActionTrace))}
    references = storage.public_references(session=db, evaluation_id=world["evaluation_id"])
    assert sorted(traces) == sorted(r["trace_hash"] for r in references.values() if r is not None) and len(traces) == 2
    for kept, blob in traces.items():
        assert trace_hash(decode_actions(blob)) == kept

    def not_again(*_args: Any) -> None:
        raise AssertionError("the reference baseline ran again")

    monkeypatch.setattr("layersched.worker.replays.reference_actions", not_again)
    row = db.scalar(select(EvalSet).where(EvalSet.name == "jobs-mixed"))
    made, evaluation_id = public_runs.submission(db, world["bob"].user, row, "bob's random")
    public_runs.evaluate(
        db,
        evaluation_id,
        world["evalset"],
        get_track("jobs-v1").baseline("Random"),
        bundle_sha256=made.bundle_sha256,
        cache_dir=tmp_path / "baselines",
    )
    assert db.scalar(select(func.count()).select_from(ActionTrace)) == 2


def test_a_hidden_episode_never_keeps_actions_whatever_the_worker_passes(db: Session, world: dict[str, Any]) -> None:
    """The storage refuses to keep one, as it drops a hidden episode's output: a worker bug cannot store it."""
    replay = ReplayInput("jobs-v1", "h" * 64, {"x": 1}, 7, encode_actions((1, 2, 3)))
    storage.record_episode_result(
        session=db,
        evaluation_id=world["evaluation_id"],
        scenario="small",
        episode_id="hidden-pub",
        split="public",
        hidden=True,
        status="ok",
        replay=replay,
    )
    assert db.scalar(select(func.count()).select_from(ReplayScenario)) == 1
    hidden = db.scalar(select(EpisodeResult.id).where(EpisodeResult.episode_id == "hidden-pub"))
    assert db.get(EpisodeActions, hidden) is None
    assert storage.episode_replay(session=db, episode_result_id=hidden) is None


def _signed_in(client: Any, account: Account) -> Any:
    assert client.post("/signin", data={"token": account.token}, follow_redirects=False).status_code == 303
    return client


def test_the_owner_reads_the_per_episode_table_of_the_public_episodes(client: Any, world: dict[str, Any]) -> None:
    page = _signed_in(client, world["alice"]).get(f"/submissions/{world['id']}")
    assert page.status_code == 200 and "<script" not in page.text
    html = page.text
    table = html[html.index('<table id="episode-table">') : html.index("</table>", html.index('id="episode-table"'))]
    assert re.findall(r'data-episode="([^"]+)"', table) == sorted(
        re.findall(r'data-episode="([^"]+)"', table),
        key=lambda e: -_ratio(table, e),
    ), "worst ratio first by default"
    assert set(re.findall(r'data-episode="([^"]+)"', table)) == {"small/seed3", "small/seed4"}
    assert "hidden" not in table
    for episode in ("seed3", "seed4"):
        assert f'href="/submissions/{world["id"]}/episodes/small/{episode}"' in table
    won_lost = re.search(r"won (\d+)</strong>, <strong>lost (\d+)</strong>.* of (\d+) finished", html)
    assert won_lost is not None and int(won_lost.group(1)) + int(won_lost.group(2)) <= int(won_lost.group(3)) == 2
    assert html.count("<title>small/seed") == 2, "a dot per public episode in the ratios' strip"
    # Sorting by a column, both ways, through links (no script).
    ascending = _signed_in(client, world["alice"]).get(f"/submissions/{world['id']}?sort=ratio").text
    order = re.findall(r'data-episode="([^"]+)"', ascending)
    assert order == sorted(order, key=lambda e: _ratio(ascending, e))
    assert f'href="/submissions/{world["id"]}?sort=-mean_slowdown#episode-table"' in ascending
    bogus = _signed_in(client, world["alice"]).get(f"/submissions/{world['id']}?sort=%3Cb%3E")
    assert bogus.status_code == 200 and "<b>" not in bogus.text
    for text in _hidden_texts(world):
        assert text not in html


def _ratio(html: str, episode: str) -> float:
    row = html[html.index(f'data-episode="{episode}"') :]
    found = re.search(r'<td class="num" style="background: [^"]+">([0-9.]+)</td>', row)
    assert found, row[:300]
    return float(found.group(1))


def test_the_replay_page_draws_the_policy_beside_the_reference(client: Any, world: dict[str, Any]) -> None:
    response = _signed_in(client, world["alice"]).get(f"/submissions/{world['id']}/episodes/small/seed3")
    assert response.status_code == 200, response.text
    assert "script-src" not in response.headers["content-security-policy"] and "<script" not in response.text
    html = response.text
    assert "random &lt;i&gt;mine&lt;/i&gt;" in html and "<i>mine</i>" not in html
    track = get_track("jobs-v1")
    scenario = world["evalset"].scenarios[0].scenario
    actions = world["played"][("small", "seed3")]
    mine = replay_episode(track, scenario, 3, actions, expected_hash=trace_hash(actions))
    svg = re.search(r'<figure class="schedule" id="fig-jobs">.*?(<svg.*?</svg>)', html, re.S)
    assert svg is not None
    drawn = [b for b in bars(svg.group(1)) if b.panel == "random <i>mine</i>" and b.kind == "run"]
    placed = [job for job in mine.jobs if job.start is not None]
    assert len(drawn) == len(placed) > 0
    for bar, job in zip(drawn, placed, strict=True):
        assert bar.lane == f"job {job.id}" and at_times(bar, job.start, job.finish, svg.group(1))
    assert {b.panel for b in bars(svg.group(1))} == {"random <i>mine</i>", "SJF"}
    metrics = html[html.index('<table id="metrics">') :]
    assert f"{mine.metrics.mean_slowdown:.4g}" in metrics[: metrics.index("</table>")]
    assert html.count("<svg") == 4 and 'id="fig-occupancy"' in html and 'id="fig-slowdown"' in html


@pytest.mark.parametrize("episode", ["hidden-pub", "hidden-priv"])
def test_a_keyed_episode_has_no_replay_for_anyone(client: Any, world: dict[str, Any], episode: str) -> None:
    for account in (world["alice"], world["olga"]):
        response = _signed_in(client, account).get(f"/submissions/{world['id']}/episodes/small/{episode}")
        assert response.status_code == 404
        assert "no schedule is kept for this episode: schedules are drawn only of episodes whose workload" in (
            response.text
        )
        for text in _hidden_texts(world):
            assert text not in response.text


def test_no_route_page_or_export_carries_a_keyed_episodes_schedule(client: Any, world: dict[str, Any]) -> None:
    sid = world["id"]
    texts = _hidden_texts(world)
    assert texts and any("held back" in t or "ran" in t for t in texts)
    for account in (world["alice"], world["olga"]):
        bodies = [
            client.get(f"/api/v1/submissions/{sid}", headers=account.headers).text,
            client.get(f"/api/v1/submissions/{sid}/logs", headers=account.headers).text,
            client.get("/api/v1/submissions", headers=account.headers).text,
            client.get("/api/v1/leaderboard").text,
            _signed_in(client, account).get(f"/submissions/{sid}").text,
            _signed_in(client, account).get("/").text,
        ]
        if account is world["olga"]:
            bodies.append(
                client.get(f"/api/v1/admin/evaluations/{world['evaluation_id']}", headers=account.headers).text
            )
        for body in bodies:
            for text in texts:
                assert text not in body


def test_others_get_no_replay(client: Any, world: dict[str, Any]) -> None:
    url = f"/submissions/{world['id']}/episodes/small/seed3"
    anonymous = client.get(url)
    assert anonymous.status_code == 401 and "Sign in" in anonymous.text
    stranger = _signed_in(client, world["bob"]).get(url)
    assert stranger.status_code == 403 and "is not one of yours" in stranger.text
    assert "job 0:" not in stranger.text


@pytest.mark.parametrize(
    ("url", "status", "text"),
    [
        ("/episodes/small/seed99", 404, "this submission&#39;s evaluation has no episode small/seed99"),
        ("/episodes/small/seed%3Cb%3E", 422, ""),
        ("/episodes/../seed3", 404, ""),
    ],
    ids=["unknown", "bad-name", "dots"],
)
def test_unknown_episodes_are_named(client: Any, world: dict[str, Any], url: str, status: int, text: str) -> None:
    response = _signed_in(client, world["alice"]).get(f"/submissions/{world['id']}{url}")
    assert response.status_code == status and text in response.text


def test_a_run_that_is_not_the_recorded_one_is_not_drawn(client: Any, db: Session, world: dict[str, Any]) -> None:
    row = db.scalar(select(EpisodeResult).where(EpisodeResult.episode_id == "seed4"))
    assert row is not None
    row.trace_hash = "0" * 64  # the stored actions no longer hash to the recorded trace
    db.commit()
    response = _signed_in(client, world["alice"]).get(f"/submissions/{world['id']}/episodes/small/seed4")
    assert response.status_code == 409
    assert "this episode cannot be replayed: the " in response.text and "not to the recorded trace 000000000000" in (
        response.text
    )


def test_the_board_shows_each_metric_sortable(client: Any, db: Session, world: dict[str, Any]) -> None:
    board = client.get("/").text
    track = get_track("jobs-v1")
    for spec in track.metric_specs:
        assert f'title="{spec.label}' in board and f">{spec.name.replace('_', ' ')}</a>" in board
    header = board[board.index('<table id="leaderboard">') : board.index("</thead>", board.index('id="leaderboard"'))]
    assert "sort=-jobs_dropped" in header
    rows = client.get("/?sort=-mean_slowdown").text
    table = rows[rows.index('<table id="leaderboard">') : rows.index("</table>", rows.index('id="leaderboard"'))]
    slowdowns = [float(x) for x in re.findall(r'<td class="num metric">([0-9.e+-]+)</td>', table)[0::5]]
    assert slowdowns == sorted(slowdowns, reverse=True) and len(slowdowns) >= 2
    api = client.get("/api/v1/leaderboard").json()
    (mine,) = [r for r in api["rows"] if r["participant"] == "alice"]
    evaluation = storage.get_evaluation(session=db, evaluation_id=world["evaluation_id"])
    assert mine["metrics"] == evaluation.score_public["metrics"]
    public = [r for r in evaluation.episodes if r.split == "public"]
    assert mine["metrics"]["mean_slowdown"] == pytest.approx(sum(r.metrics["mean_slowdown"] for r in public) / 2)


def test_a_track_without_schedules_says_so(client: Any, alice: Account, db: Session) -> None:
    """The stand-in track draws no schedules: its episode's page says so, and the rest of the pages work."""
    stand_in_track.register()
    body = submit(client, alice).json()
    run_evaluation(db, body["evaluations"][0]["id"], public=0.9)
    row = db.scalar(select(EpisodeResult).where(EpisodeResult.episode_id == "e0"))
    assert row is not None and not row.hidden
    replay = ReplayInput(stand_in_track.TRACK_ID, "s" * 64, {}, 0, encode_actions((0,)))
    write_episode_actions(session=db, episode_result_id=row.id, hidden=False, replay=replay)
    db.commit()
    response = _signed_in(client, alice).get(f"/submissions/{body['id']}/episodes/lab-5/e0")
    assert response.status_code == 200
    assert "track standin-v1 (Stand-in bin packing) draws no schedules: its episodes have no replay" in response.text
    assert _signed_in(client, alice).get(f"/submissions/{body['id']}").status_code == 200


def test_under_the_ladder_a_rows_metrics_are_its_shown_submissions(
    settings: Any, enqueued: Any, alice: Account, db: Session
) -> None:
    """A submission the Ladder withholds shows nothing of its own on the board: not its score, not its metrics."""
    from starlette.testclient import TestClient

    from layersched.server.app import create_app

    with TestClient(create_app(settings.model_copy(update={"public_ladder_step": 0.05}), enqueuer=enqueued)) as c:
        for name, overall, completion in (("first", 0.95, 111.25), ("lucky", 0.93, 999.75)):
            body = submit(c, alice, name=name).json()
            run_evaluation(db, body["evaluations"][0]["id"], public=overall)
            evaluation = storage.get_evaluation(session=db, evaluation_id=body["evaluations"][0]["id"])
            evaluation.score_public = {**evaluation.score_public, "metrics": {"mean_completion": completion}}
            db.commit()
        board = c.get("/api/v1/leaderboard").json()
        (row,) = [r for r in board["rows"] if r["participant"] == "alice"]
        assert (row["submission_name"], row["score"], row["metrics"]) == ("first", 0.95, {"mean_completion": 111.25})
        page = c.get("/?sort=mean_completion").text
        assert "111.2" in page and "999.8" not in page and "999.75" not in page


def test_a_failed_public_episode_shows_its_schedule_up_to_the_step_at_fault(
    client: Any, db: Session, world: dict[str, Any], tmp_path: Path
) -> None:
    """An episode that ended at a refused action keeps the actions accepted before it: its page draws them, beside
    the reference's whole run, and says where it ended."""
    from layersched.worker.replays import PublicEpisodes

    row = db.scalar(select(EvalSet).where(EvalSet.name == "jobs-mixed"))
    made, evaluation_id = public_runs.submission(db, world["alice"].user, row, "alice's second")
    job = world["evalset"].jobs()[0]
    accepted = world["played"][(job.scenario_name, job.episode.id)][:7]
    storage.record_episode_result(
        session=db,
        evaluation_id=evaluation_id,
        scenario=job.scenario_name,
        episode_id=job.episode.id,
        split="public",
        hidden=False,
        status="invalid_action",
        step=7,
        message="step 7: policy returned slot 42, outside 0..9 (None or 10 for void)",
        trace_hash=trace_hash(accepted),
        n_actions=7,
        replay=PublicEpisodes(world["evalset"], tmp_path / "baselines").replay_input(job, accepted),
    )
    page = _signed_in(client, world["alice"]).get(f"/submissions/{made.id}/episodes/small/{job.episode.id}")
    assert page.status_code == 200, page.text
    assert "The episode ended at step 7 (invalid_action): this is its schedule up to there." in page.text
    table = _signed_in(client, world["alice"]).get(f"/submissions/{made.id}").text
    assert f'data-episode="small/{job.episode.id}"' in table and "invalid_action" in table
