"""Hostile uploads and API calls against the real app on PostgreSQL: each is refused with its 4xx and writes nothing.

"Nothing written" is checked on everything the service owns: the bundle folder (every file and its size) and the row
count of every table, before and after (the ``unchanged`` fixture, requested last so the accounts exist first).
Uploads are parsed by Starlette into spooled temporary files (the system temporary folder, deleted with the
request); nothing else is written. tests/server/test_bundles.py already proves the archive checks one by one on small
archives and tests/server/test_api_*.py the plain 401/403/404/422/429 answers; this file adds realistic attack
sizes, the cases those miss, and the "nothing written" property.
"""

from __future__ import annotations

import gzip
import io
import json
import struct
import tarfile
import time
import zipfile
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from layersched.server import storage
from layersched.server.app import create_app
from layersched.server.body_limits import MAX_REQUEST_BODY, RequestBodyLimits
from layersched.server.config import Settings
from layersched.server.models import AuditLogEntry, Submission
from tests.redteam.conftest import snapshot
from tests.server.conftest import POLICY, Account, Captured, burst, run_evaluation, submit

# The archive builders of the bundle tests, under the short names this table uses.
from tests.server.test_bundles import extended_header, tar_member, zip_raw, zip_with_method
from tests.server.test_bundles import make_tar as tar_of
from tests.server.test_bundles import tar_gz as tar_raw
from tests.server.test_bundles import tar_special as special

pytestmark = pytest.mark.postgres

MB = 1_000_000


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error"]["code"], body["error"]["message"]


def zip_of(members: list[tuple[str, bytes]], *, mode: int | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode is not None and name != "policy.py":
                info.external_attr = mode << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def lying_zip() -> bytes:
    """policy.py holds 5 MB but the central directory says it holds 44 bytes (a bomb that lies about its size)."""
    data = bytearray(zip_of([("policy.py", POLICY + b"#" * 5 * MB)]))
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, len(POLICY))  # uncompressed size field of the directory entry
    return bytes(data)


ZEROS = b"\0" * 20 * MB  # deflates to about 20 kB: under the 50 kB upload limit, 100 times the unpacked limit

ARCHIVES = [
    ("zip-bomb-20MB", "b.zip", zip_of([("policy.py", POLICY), ("zeros", ZEROS)]), "the archive unpacks to more than"),
    (
        "tar-bomb-20MB",
        "b.tar.gz",
        tar_of([("policy.py", POLICY), ("zeros", ZEROS)]),
        "the archive unpacks to more than",
    ),
    ("zip-lying-size", "b.zip", lying_zip(), "archive member 'policy.py' cannot be read: Bad CRC-32"),
    ("zip-dotdot", "b.zip", zip_of([("policy.py", POLICY), ("../../../x.py", b"")]), "climbs out of the bundle"),
    ("zip-absolute", "b.zip", zip_of([("policy.py", POLICY), ("/etc/cron.d/x", b"")]), "has an absolute path"),
    ("zip-symlink", "b.zip", zip_of([("policy.py", POLICY), ("l", b"/etc/shadow")], mode=0o120777), "is a link"),
    ("tar-dotdot", "b.tgz", tar_of([("policy.py", POLICY), ("a/../../x.py", b"")]), "climbs out of the bundle"),
    ("tar-absolute", "b.tgz", tar_of([("policy.py", POLICY), ("/root/.ssh/x", b"")]), "has an absolute path"),
    ("tar-symlink", "b.tgz", tar_of([("policy.py", POLICY), special("l", tarfile.SYMTYPE, "/")]), "is a link"),
    ("tar-hardlink", "b.tgz", tar_of([("policy.py", POLICY), special("h", tarfile.LNKTYPE, "/etc/x")]), "is a link"),
    ("tar-device", "b.tgz", tar_of([("policy.py", POLICY), special("d", tarfile.BLKTYPE)]), "is a device or fifo"),
    (
        "tar-symlink-then-file",  # the classic two-step escape: a link to /, then a file written through it
        "b.tgz",
        tar_of([("policy.py", POLICY), special("up", tarfile.SYMTYPE, "/"), ("up/tmp/pwned", b"x")]),
        "is a link",
    ),
]


def corrupt_second_member() -> bytes:
    """policy.py is fine; the CRC of weights.txt in the central directory is wrong (the upload read only policy.py)."""
    data = bytearray(zip_raw([("policy.py", POLICY), ("weights.txt", b"1 2 3 4 5 6 7 8")]))
    struct.pack_into("<I", data, data.rfind(b"PK\x01\x02") + 16, 0)
    return bytes(data)


def gzipped_tar(stream: bytes) -> bytes:
    return gzip.compress(stream + b"\0" * 1024, mtime=0)


# Accepted before the fix, then failing in the worker (finding 9), or checked on a copy the worker does not run
# (duplicates, finding 10), or costing the API memory out of proportion to the upload (finding 2).
ARCHIVES += [
    (
        "zip-file-then-folder",
        "b.zip",
        zip_raw([("policy.py", POLICY), ("data", b"1"), ("data/w.npy", b"2")]),
        "archive member 'data' is a file, but 'data/w.npy' needs a folder of that name",
    ),
    (
        "tar-folder-then-file",
        "b.tgz",
        tar_raw([("policy.py", POLICY), ("data/w.npy", b"2"), ("data", b"1")]),
        "archive member 'data' is a file, but 'data/w.npy' needs a folder of that name",
    ),
    (
        "zip-duplicate-entry-point",  # the upload parsed the first copy, the worker would have run the second
        "b.zip",
        zip_raw([("policy.py", POLICY), ("policy.py", b"import os\nos.system('x')\n")]),
        "archive members 'policy.py' and 'policy.py' are the same file",
    ),
    (
        "tar-duplicate-after-normalising",
        "b.tgz",
        tar_raw([("policy.py", POLICY), ("a/b.py", b""), ("a/./b.py", b"")]),
        "archive members 'a/b.py' and 'a/./b.py' are the same file",
    ),
    (
        "zip-300-character-name",
        "b.zip",
        zip_raw([("policy.py", POLICY), ("n" * 300, b"")]),
        "has a name part of 300 bytes; Linux allows at most 255",
    ),
    (
        "tar-1030-byte-path",
        "b.tgz",
        tar_raw([("policy.py", POLICY), ("/".join(["d" * 200] * 5) + "/" + "w" * 25, b"")]),
        "has a path of 1030 bytes; at most 1024 are allowed",
    ),
    (
        "zip-corrupt-other-member",
        "b.zip",
        corrupt_second_member(),
        "archive member 'weights.txt' cannot be read: Bad CRC-32",
    ),
    (
        "zip-bzip2",
        "b.zip",
        zip_with_method(zipfile.ZIP_BZIP2),
        "is compressed with method 12 (bzip2); bundles may use only stored or deflate",
    ),
    (
        "zip-end-record-count",
        "b.zip",
        zip_raw([("policy.py", POLICY)] + [(f"f{i}.py", b"") for i in range(24)]),
        "the zip archive declares 25 entries; bundles may hold at most 10 files and 10 folders",
    ),
    (
        "tar-gnu-long-name-70kB",
        "b.tgz",
        gzipped_tar(extended_header(tarfile.GNUTYPE_LONGNAME, b"p" * 70_000 + b"\0") + tar_member("x", POLICY)),
        "the archive has a GNU long name of 70001 bytes; at most 65536 are allowed",
    ),
    (
        "tar-extended-header-chain",  # a RecursionError, so a 500, before the fix
        "b.tgz",
        gzipped_tar(extended_header(tarfile.GNUTYPE_LONGNAME, b"policy.py\0") * 2000 + tar_member("x", POLICY)),
        "the archive has more than 4 extended headers in a row",
    ),
]


@pytest.mark.parametrize(("filename", "content", "message"), [a[1:] for a in ARCHIVES], ids=[a[0] for a in ARCHIVES])
def test_hostile_archive_refused_and_nothing_written(
    client: TestClient, alice: Account, enqueued: Captured, filename: str, content: bytes, message: str, unchanged: None
) -> None:
    assert len(content) < 50_000  # under the upload limit: the archive checks, not the size limit, refuse it
    status, code, text = error(submit(client, alice, content, filename=filename))
    assert (status, code) == (422, "invalid_bundle") and message in text, text
    assert enqueued.calls == []


@pytest.fixture
def roomy_client(settings: Settings, enqueued: Captured) -> Iterator[TestClient]:
    """Uploads up to 20 MB, so an archive of 100,000 tiny files reaches the member checks."""
    roomy = settings.model_copy(update={"max_bundle_mb": 20})
    with TestClient(create_app(roomy, enqueuer=enqueued)) as test_client:
        yield test_client


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_hundred_thousand_files_refused_quickly(
    roomy_client: TestClient, alice: Account, fmt: str, unchanged: None
) -> None:
    members: list[tarfile.TarInfo | tuple[str, bytes]] = [("policy.py", POLICY)]
    members += [(f"d/{i}.py", b"") for i in range(100_000)]
    content = zip_of(members) if fmt == "zip" else tar_of(members)  # type: ignore[arg-type]
    start = time.monotonic()
    response = submit(roomy_client, alice, content, filename=f"b.{fmt}")
    expected = {
        "zip": "the zip archive declares 100001 entries; bundles may hold at most 10 files and 10 folders",
        "tar.gz": "the archive holds more than 10 files",
    }
    assert error(response) == (422, "invalid_bundle", expected[fmt])
    assert time.monotonic() - start < 10  # the tar walk stops at member 11; the zip's end record is read first


def test_upload_filename_never_becomes_a_path(client: TestClient, alice: Account, settings: Settings) -> None:
    response = submit(client, alice, POLICY, filename="../../../../tmp/evil/policy.py")
    assert response.status_code == 201
    sha = response.json()["bundle_sha256"]
    assert [str(p.relative_to(settings.bundle_dir)) for p in settings.bundle_dir.rglob("*")] == [
        sha[:2],
        f"{sha[:2]}/{sha}",
    ]


RAW_BODIES = [
    ("json-body", {"content-type": "application/json"}, b'{"name": "x", "file": "def policy(e, t, r): return 0"}'),
    ("text-body", {"content-type": "text/plain"}, b"def policy(env, task, rng):\n    return 0\n"),
    ("no-content-type", {}, b"\x00\x01garbage"),
]


@pytest.mark.parametrize(("headers", "body"), [r[1:] for r in RAW_BODIES], ids=[r[0] for r in RAW_BODIES])
def test_wrong_content_type_422(
    client: TestClient, alice: Account, headers: dict[str, str], body: bytes, unchanged: None
) -> None:
    response = client.post("/api/v1/submissions", headers={**alice.headers, **headers}, content=body)
    assert error(response)[:2] == (422, "invalid_request")


MULTIPART = [
    ("no-boundary", "multipart/form-data", b"--x\r\n", "Missing boundary in multipart."),
    ("bad-framing", "multipart/form-data; boundary=xyz", b"this is not multipart", "Invalid multipart data."),
]


@pytest.mark.parametrize(("ctype", "body", "message"), [m[1:] for m in MULTIPART], ids=[m[0] for m in MULTIPART])
def test_malformed_multipart_400(
    client: TestClient, alice: Account, ctype: str, body: bytes, message: str, unchanged: None
) -> None:
    response = client.post("/api/v1/submissions", headers={**alice.headers, "content-type": ctype}, content=body)
    assert error(response) == (400, "invalid_request", message)


def test_file_sent_as_text_field_422(client: TestClient, alice: Account, unchanged: None) -> None:
    response = client.post(
        "/api/v1/submissions", headers=alice.headers, data={"name": "x", "file": POLICY.decode()}, files={"x": b""}
    )
    status, code, message = error(response)
    assert (status, code) == (422, "invalid_request") and message.startswith("file: ")


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_every_other_body_is_capped_before_it_is_read(client: TestClient, chunked: bool, unchanged: None) -> None:
    """A JSON route reads its body into memory before it checks the token: without a cap, anyone could have the API
    hold a body of any size. Every body but an upload is capped at 1 MiB, refused before a route sees it."""
    piece = b"x" * 65536

    def chunks() -> Iterator[bytes]:
        yield b'{"reason": "'
        for _ in range(32):  # 2 MiB
            yield piece
        yield b'"}'

    body: Any = chunks() if chunked else b"".join(chunks())
    response = client.post(
        "/api/v1/admin/submissions/1/disqualify", content=body, headers={"content-type": "application/json"}
    )
    status, code, message = error(response)
    assert (status, code) == (413, "request_too_large")
    assert message.endswith(f"bytes; bodies may be at most {MAX_REQUEST_BODY}")


def test_chunked_upload_over_limit_413(client: TestClient, alice: Account, unchanged: None) -> None:
    """No Content-Length (chunked): the middleware counts the body and stops at the limit and the multipart slack
    (tests/redteam/test_upload_server.py does this against uvicorn, watching the temporary folder)."""
    boundary = "bound"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="policy.py"\r\n\r\n'
    ).encode()

    def chunks() -> Iterator[bytes]:
        yield head + POLICY
        for _ in range(40):
            yield b"#" * 50_000  # 2 MB in all
        yield f"\r\n--{boundary}--\r\n".encode()

    response = client.post(
        "/api/v1/submissions",
        headers={**alice.headers, "content-type": f"multipart/form-data; boundary={boundary}"},
        content=chunks(),
    )
    assert error(response) == (
        413,
        "bundle_too_large",
        f"the upload is more than {50_000 + RequestBodyLimits.SLACK} bytes; bundles may be at most 50000",
    )


def test_file_part_between_limit_and_slack_413(client: TestClient, alice: Account, unchanged: None) -> None:
    """A body within the middleware's slack whose file is over the limit: the route's own read refuses it."""
    response = submit(client, alice, POLICY + b"#" * 60_000)
    assert error(response) == (413, "bundle_too_large", "bundle 'policy.py' is larger than the limit of 50000 bytes")


def test_oversized_text_field_400(client: TestClient, alice: Account, unchanged: None) -> None:
    """Starlette caps a non-file form part at 1 MiB; the upload limit middleware lets such a body through."""
    response = client.post(
        "/api/v1/submissions",
        headers={**alice.headers, "content-length": "1"},  # a lie: the middleware trusts it, the parser does not
        files={"file": ("p.py", POLICY)},
        data={"name": "n" * (1024 * 1024 + 1)},
    )
    assert response.status_code in (400, 413, 422)


@pytest.mark.parametrize(
    "form,expected",
    [
        # A name is visible text only (issue 30): the refusal names the character.
        ({"name": "a\x00b"}, "name: Value error, character 2 is U+0000 (NULL), which is not visible text"),
        ({"name": "ok", "description": "x\x00"}, "description: String should match pattern"),
    ],
    ids=["nul-in-name", "nul-in-description"],
)
def test_nul_in_text_fields_422(
    client: TestClient, alice: Account, form: dict[str, str], expected: str, unchanged: None
) -> None:
    """PostgreSQL refuses NUL in text; before the fix this was a 500 after the bundle had been stored."""
    response = client.post("/api/v1/submissions", headers=alice.headers, files={"file": ("p.py", POLICY)}, data=form)
    status, code, message = error(response)
    assert (status, code) == (422, "invalid_request") and message.startswith(expected), message


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/submissions/2147483648",
        "/api/v1/submissions/99999999999999999999999",
        "/api/v1/submissions/0/logs",
        "/api/v1/submissions?offset=9223372036854775808",
    ],
    ids=["int32-overflow", "bigint-overflow", "zero", "offset-overflow"],
)
def test_out_of_range_ids_422(client: TestClient, alice: Account, path: str, unchanged: None) -> None:
    """Ids beyond PostgreSQL's INTEGER used to reach the database and fail there (500)."""
    assert error(client.get(path, headers=alice.headers))[:2] == (422, "invalid_request")


def test_nul_in_token_is_refused_not_crashing(db: Session, alice: Account) -> None:
    for token in ("lst_\x00_x", "lst_abc_\x00", "\x00"):
        assert storage.authenticate(session=db, token=token) is None


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer lst_0123456789abcdef_forged"},
        {"Authorization": "Basic YWxpY2U6cGFzc3dvcmQ="},
        {"Authorization": "Bearer " + "x" * 8000},
        {},
    ],
    ids=["forged", "basic", "huge", "none"],
)
def test_bad_tokens_upload_nothing(
    client: TestClient, alice: Account, enqueued: Captured, headers: dict[str, str], unchanged: None
) -> None:
    response = client.post("/api/v1/submissions", headers=headers, files={"file": ("p.py", POLICY)}, data={"name": "x"})
    assert error(response)[:2] == (401, "unauthorized")
    assert enqueued.calls == []


def test_another_users_ids(client: TestClient, alice: Account, bob: Account, db: Session, settings: Settings) -> None:
    alices = submit(client, alice).json()["id"]
    run_evaluation(db, db.scalar(select(Submission).where(Submission.id == alices)).evaluations[0].id)
    before = snapshot(settings)
    for method, path in [
        ("GET", f"/api/v1/submissions/{alices}"),
        ("GET", f"/api/v1/submissions/{alices}/logs"),
        ("POST", f"/api/v1/submissions/{alices}/select"),
    ]:
        assert error(client.request(method, path, headers=bob.headers)) == (
            404,
            "not_found",
            f"submission {alices} does not exist",
        )
    db.expire_all()
    assert db.get(Submission, alices).selected is False  # type: ignore[union-attr]
    assert snapshot(settings) == before
    assert bob.token not in json.dumps(client.get("/api/v1/leaderboard").json())


STUDENT_ON_ADMIN = [
    ("POST", "/api/v1/admin/users", {"name": "mallory", "email": "m@example.org", "role": "organiser"}),
    ("POST", "/api/v1/admin/users/1/tokens", None),
    ("DELETE", "/api/v1/admin/tokens/1", None),
    ("POST", "/api/v1/admin/submissions/1/rerun", {}),
    ("POST", "/api/v1/admin/submissions/1/audit", {}),
    ("POST", "/api/v1/admin/submissions/1/cancel", None),
    ("POST", "/api/v1/admin/submissions/1/disqualify", {"reason": "x"}),
    ("POST", "/api/v1/admin/leaderboard/freeze", {"frozen": True}),
    ("POST", "/api/v1/admin/leaderboard/publish", None),
    ("POST", "/api/v1/admin/evalsets/sample/reveal", None),
]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    STUDENT_ON_ADMIN,
    ids=[f"{m} {p.removeprefix('/api/v1/admin/')}" for m, p, _ in STUDENT_ON_ADMIN],
)
def test_student_on_organiser_routes_writes_nothing(
    client: TestClient,
    alice: Account,
    enqueued: Captured,
    settings: Settings,
    method: str,
    path: str,
    body: Any,
) -> None:
    assert submit(client, alice).status_code == 201  # submission 1 exists, so the route would have a target
    enqueued.calls.clear()
    before = snapshot(settings)
    response = client.request(method, path, headers=alice.headers, json=body)
    assert error(response)[:2] == (403, "forbidden")
    assert snapshot(settings) == before and enqueued.calls == []


MALFORMED_JSON = [
    ("truncated", b'{"frozen": tru', 422),
    ("wrong-type", b'{"frozen": "yes please"}', 422),
    ("array", b"[true]", 422),
    ("deep-nesting", b"[" * 100_000, 400),  # the JSON parser's recursion limit: "There was an error parsing the body"
    ("nul-in-reason", b'{"reason": "bad\\u0000"}', 422),
    ("not-utf8", b'{"frozen": "\xff\xfe"}', 400),  # undecodable body: "There was an error parsing the body"
]


@pytest.mark.parametrize(("body", "status"), [m[1:] for m in MALFORMED_JSON], ids=[m[0] for m in MALFORMED_JSON])
def test_malformed_json_4xx(client: TestClient, organiser: Account, alice: Account, body: bytes, status: int) -> None:
    assert submit(client, alice).status_code == 201
    path = "/api/v1/admin/submissions/1/disqualify" if b"reason" in body else "/api/v1/admin/leaderboard/freeze"
    before = snapshot(client.app.state.settings)  # type: ignore[attr-defined]
    response = client.post(path, headers={**organiser.headers, "content-type": "application/json"}, content=body)
    assert error(response)[:2] == (status, "invalid_request")
    assert snapshot(client.app.state.settings) == before  # type: ignore[attr-defined]


def test_quota_burst_is_atomic(client: TestClient, alice: Account, db: Session, enqueued: Captured) -> None:
    """20 uploads at once from one participant (max 2 in flight): exactly 2 are accepted, the rest get 429.

    Before the row lock in the route (storage.lock_submitter) 3 to 5 got through."""
    log_before = db.scalar(select(func.count(AuditLogEntry.id)))
    assert burst(client, alice) == [201, 201] + [429] * 18
    assert db.scalar(select(func.count(Submission.id))) == 2
    assert len(enqueued.calls) == 2
    # Uploads are a participant's, not an organiser's actions: the audit log is unchanged. (This line once counted
    # the two entries that creating the user and its token had written, and could not fail.)
    assert db.scalar(select(func.count(AuditLogEntry.id))) == log_before


# ------------------------------------------------------------------------------- the leaderboard cache (load fix)


def test_leaderboard_cache_is_never_stale_for_this_process_and_briefly_for_others(
    settings: Settings, enqueued: Captured, alice: Account, db: Session
) -> None:
    """The board is cached (server/leaderboard.py): a commit in the serving process shows at once; a write by another
    process (the worker) shows once ``leaderboard_cache_s`` has passed, never later."""
    cached = settings.model_copy(update={"leaderboard_cache_s": 2.0})
    with TestClient(create_app(cached, enqueuer=enqueued)) as client:
        first, second = (submit(client, alice, POLICY + f"# {i}\n".encode()).json()["id"] for i in (1, 2))
        evaluations = {s.id: s.evaluations[0].id for s in db.scalars(select(Submission))}

        def participants() -> list[tuple[str, int]]:
            rows = client.get("/api/v1/leaderboard").json()["rows"]
            return [(r["participant"], r["submission_id"]) for r in rows if not r["baseline"]]

        assert participants() == []
        run_evaluation(db, evaluations[first], public=0.9)  # a commit in this process
        assert participants() == [("alice", first)]

        # Another process finishes the second one, better: a raw connection, so this process sees no commit.
        with psycopg.connect(settings.database_url.replace("postgresql+psycopg", "postgresql")) as conn:
            conn.execute(
                "UPDATE evaluations SET state = 'succeeded', finished_at = now(), score_public = %s WHERE id = %s",
                (json.dumps({"overall": 0.5, "ci_low": 0.5, "ci_high": 0.5, "per_scenario": {}}), evaluations[second]),
            )
        assert participants() == [("alice", first)]  # within the 2 s: the cached board
        time.sleep(2.1)
        assert participants() == [("alice", second)]
