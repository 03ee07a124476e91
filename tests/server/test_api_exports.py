"""A phase's exports (issue 32, item 3): the board as a grades table, every submission, every episode (hidden ones
too: organisers read them), the bundles of the final selection as a zip; CSV guarded against formulas; on SQLite and
PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.bundles import bundle_path
from layersched.server.export_formats import chunked, csv_lines, json_lines, spreadsheet_text
from layersched.server.models import Submission

from .conftest import Account
from .term import HOSTILE, Term, make_term

EXPORT = "/api/v1/admin/exports"


@pytest.fixture
def term(db: Session, organiser: Account) -> Term:
    return make_term(db, organiser.user)


def table(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(response.text)))


def test_the_board_is_a_grades_table_with_every_competitor(client: Any, organiser: Account, term: Term) -> None:
    response = client.get(f"{EXPORT}/board?phase=final", headers=organiser.headers)
    assert response.headers["content-disposition"] == 'attachment; filename="board-final.csv"'
    rows = table(response)
    assert [(r["rank"], r["competitor"], r["kind"]) for r in rows] == [
        ("1", "owls", "team"),
        ("", "cyd", "participant"),
    ]
    owls = rows[0]
    assert (owls["members"], owls["emails"]) == ("ada;ben", "ada@uni.example;ben@uni.example")
    # No selection: the final ranking took the better private score of the team's two best public ones (ben's).
    assert owls["final_submission"] == str(term.ids["ben-scored"])
    assert owls["final_submission_name"] == "'" + HOSTILE  # a spreadsheet shows it, never runs it
    assert (owls["private_score"], owls["private_ci_low"], owls["private_ci_high"]) == (
        "0.8",
        "0.78",
        "0.8200000000000001",
    )
    assert (owls["public_score"], owls["public_rank"], owls["submissions"]) == ("0.91", "1", "3")
    assert (owls["commitment"], owls["sim_version"], owls["image_digest"]) == ("s" * 64, "1.0.0", "sha256:" + "ab" * 32)
    assert (owls["published"], owls["evalset"], owls["selected"], owls["disqualified"]) == ("false", "spring", "", "")
    cyd = rows[1]
    assert cyd["final_submission"] == "" and cyd["submissions"] == "2" and cyd["commitment"] == "s" * 64


def test_the_board_shows_selection_disqualification_and_disabled_members(
    client: Any, organiser: Account, term: Term, db: Session
) -> None:
    ada = {"Authorization": f"Bearer {storage.issue_token(session=db, user_id=term.users['ada'].id)[1]}"}
    assert client.post(f"/api/v1/submissions/{term.ids['ada-scored']}/select", headers=ada).status_code == 200
    client.post(f"/api/v1/admin/submissions/{term.ids['ben-scored']}/disqualify", headers=organiser.headers,
                json={"reason": "=copied"})  # fmt: skip
    client.post("/api/v1/admin/users/cyd/disable", headers=organiser.headers, json={})
    body = json.loads(client.get(f"{EXPORT}/board?phase=final&format=json", headers=organiser.headers).text)
    owls = next(r for r in body if r["competitor"] == "owls")
    assert owls["rank"] == 1 and owls["final_submission"] == term.ids["ada-scored"] and owls["private_score"] == 0.85
    assert owls["selected"] == [term.ids["ada-scored"]]
    assert owls["disqualified"] == [f"{term.ids['ben-scored']}: =copied"]  # JSON keeps the text as it is
    cyd = next(r for r in body if r["competitor"] == "cyd")
    assert cyd["disabled"] == ["cyd"] and cyd["rank"] is None
    csv_owls = table(client.get(f"{EXPORT}/board?phase=final", headers=organiser.headers))[0]
    assert csv_owls["disqualified"] == f"{term.ids['ben-scored']}: =copied"  # starts with a digit: as it is


def test_every_submission_with_both_scores_and_provenance(client: Any, organiser: Account, term: Term) -> None:
    rows = table(client.get(f"{EXPORT}/submissions?phase=final", headers=organiser.headers))
    assert [int(r["id"]) for r in rows] == sorted(
        term.ids[k] for k in ("ada-scored", "ben-scored", "cyd-timeout", "cyd-queued", "ben-running")
    )
    by_id = {int(r["id"]): r for r in rows}
    ben = by_id[term.ids["ben-scored"]]
    assert (ben["name"], ben["owner"], ben["email"], ben["team"]) == ("'" + HOSTILE, "ben", "ben@uni.example", "owls")
    assert (ben["state"], ben["wait_s"], ben["run_s"]) == ("succeeded", "10.0", "120.0")
    assert (ben["public_score"], ben["private_score"], ben["commitment"]) == ("0.91", "0.8", "s" * 64)
    timeout = by_id[term.ids["cyd-timeout"]]
    assert (timeout["state"], timeout["category"], timeout["public_score"], timeout["scored_evaluation"]) == (
        "failed", "timeout", "", "",
    )  # fmt: skip
    as_json = json.loads(client.get(f"{EXPORT}/submissions?phase=final&format=json", headers=organiser.headers).text)
    assert [r["id"] for r in as_json] == [int(r["id"]) for r in rows]
    assert next(r for r in as_json if r["id"] == term.ids["ben-scored"])["name"] == HOSTILE


def test_every_episode_with_its_metrics_hidden_ones_too(client: Any, organiser: Account, term: Term) -> None:
    rows = table(client.get(f"{EXPORT}/episodes?phase=final", headers=organiser.headers))
    assert list(rows[0])[-3:] == ["mean_completion", "p95_completion", "cloud_share"]
    scored = [r for r in rows if r["submission_id"] == str(term.ids["ada-scored"])]
    assert [(r["scenario"], r["episode"], r["hidden"]) for r in scored] == [
        ("hub-20", "e1", "true"),
        ("lab-5", "e0", "false"),
    ]
    assert (scored[0]["mean_completion"], scored[0]["status"], scored[0]["trace_hash"]) == ("11.0", "ok", "f" * 64)
    assert {r["submission_id"] for r in rows} == {str(term.ids[k]) for k in ("ada-scored", "ben-scored", "cyd-timeout")}
    episodes = json.loads(client.get(f"{EXPORT}/episodes?phase=final&format=json", headers=organiser.headers).text)
    assert episodes[0]["metrics"] == {"mean_completion": 10.0 + (episodes[0]["episode"] == "e1"),
                                      "p95_completion": 20.0, "cloud_share": 0.1}  # fmt: skip


def test_the_bundles_of_the_final_selection(
    client: Any, organiser: Account, term: Term, settings: Any, db: Session
) -> None:
    ben = term.ids["ben-scored"]
    missing = client.get(f"{EXPORT}/bundles?phase=final", headers=organiser.headers)
    assert missing.status_code == 503
    assert missing.json()["error"]["message"] == f"the bundle store lacks 1 of these bundles (first: bundles/{ben}.py)"
    for label in ("ada-scored", "ben-scored"):
        submission = db.get(Submission, term.ids[label])
        assert submission is not None
        path = bundle_path(settings.bundle_dir, submission.bundle_sha256)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"# {label}\ndef policy(env, task, rng):\n    return 0\n".encode())

    def zipped() -> tuple[list[str], zipfile.ZipFile, list[dict[str, str]]]:
        response = client.get(f"{EXPORT}/bundles?phase=final", headers=organiser.headers)
        assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
        archive = zipfile.ZipFile(io.BytesIO(response.content))
        manifest = list(csv.DictReader(io.StringIO(archive.read("manifest.csv").decode())))
        return archive.namelist(), archive, manifest

    # No selection: the submission the final ranking took for the team.
    names, archive, manifest = zipped()
    assert names == ["manifest.csv", f"bundles/{ben}.py"]
    assert [(m["competitor"], m["owner"], m["selected"], m["name"]) for m in manifest] == [
        ("owls", "ben", "false", "'" + HOSTILE)
    ]
    assert archive.read(names[1]).startswith(b"# ben-scored\n")
    ada_token = storage.issue_token(session=db, user_id=term.users["ada"].id)[1]
    selected = client.post(
        f"/api/v1/submissions/{term.ids['ada-scored']}/select", headers={"Authorization": f"Bearer {ada_token}"}
    )
    assert selected.status_code == 200
    names, archive, manifest = zipped()
    assert names == ["manifest.csv", f"bundles/{term.ids['ada-scored']}.py"]
    assert [(m["owner"], m["selected"]) for m in manifest] == [("ada", "true")]


@pytest.mark.parametrize("what", ["board", "submissions", "episodes", "bundles"])
def test_a_phase_that_does_not_exist_is_named(client: Any, organiser: Account, term: Term, what: str) -> None:
    response = client.get(f"{EXPORT}/{what}?phase=nope", headers=organiser.headers)
    assert response.status_code == 404 and response.json()["error"]["message"] == "phase 'nope' does not exist"
    assert (
        client.get(f"{EXPORT}/{what}", headers=organiser.headers).json()["error"]["message"]
        == "query.phase: Field required"
    )


@pytest.mark.parametrize("what", ["board", "submissions", "episodes"])
def test_a_format_that_is_not_offered_is_named(client: Any, organiser: Account, term: Term, what: str) -> None:
    response = client.get(f"{EXPORT}/{what}?phase=final&format=xml", headers=organiser.headers)
    assert response.status_code == 422
    assert response.json()["error"]["message"] == "query.format: Input should be 'csv' or 'json' (got 'xml')"


def test_csv_cells_that_look_like_formulas_are_text() -> None:
    assert [spreadsheet_text(t) for t in ("=1+1", "+1", "-x", "@SUM(A1)", "\tx", "ok", "1-2")] == [
        "'=1+1", "'+1", "'-x", "'@SUM(A1)", "'\tx", "ok", "1-2",
    ]  # fmt: skip
    lines = b"".join(csv_lines(("a", "b"), [{"a": -0.5, "b": "-0.5"}])).decode()
    assert lines == "a,b\r\n-0.5,'-0.5\r\n"  # a number stays a number; text that would compute is quoted


def test_the_writers_read_rows_one_at_a_time() -> None:
    """Each writer asks for the next row only when its caller asks for the next line: nothing is read ahead."""

    def rows() -> Iterator[dict[str, Any]]:
        yield {"a": 1}
        yield {"a": 2}
        raise AssertionError("read ahead of the caller")

    for lines in (csv_lines(("a",), rows()), json_lines(rows())):
        assert [next(lines) for _ in range(3)][1:] in ([b"1\r\n", b"2\r\n"], [b'\n{"a": 1}', b',\n{"a": 2}'])
    # Lines are sent in chunks of a bound, each as soon as it is full.
    assert list(chunked(iter([b"ab", b"cd", b"e"]), size=4)) == [b"abcd", b"e"]
    many = chunked(csv_lines(("a",), rows()), size=4)
    assert next(many) == b"a\r\n1\r\n"  # read the header and a row, not ahead
