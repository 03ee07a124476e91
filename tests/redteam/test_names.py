"""Names a participant or an organiser chooses (issue 30 items 1 and 2), on PostgreSQL, the deployment's backend.

Item 2: every name fits every column it is written to, through each write path, at the longest length the API
accepts (a 96-100 character team name overflowed the audit log's 100-character target: every organiser change to
that team was a 500 on PostgreSQL, while SQLite ignored the length). Item 1: a name with a character that is not
visible text (controls, escape sequences, line breaks, bidi overrides and isolates, zero-width and other format
characters) is refused with a 422 that names the character by code point, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from layersched.server import admin, storage
from layersched.server.config import Settings
from layersched.server.errors import ServiceError
from layersched.server.models import (
    AUDIT_TARGET_LENGTH,
    NAME_LENGTH,
    AuditLogEntry,
    EvalSet,
    Evaluation,
    Phase,
    Submission,
    Team,
    User,
    utcnow,
)

from ..server.conftest import SCENARIOS, Account, run_evaluation, submit

LONGEST = NAME_LENGTH
# A display name of the longest length: the pattern allows words of letters, digits and _.@+- between single spaces.
LONG_TEAM = ("T" * 49 + " " + "t" * 50)[:LONGEST]
LONG_USER = "u" * LONGEST
LONG_SUBMISSION = "s" * LONGEST
LONG_PHASE = "p" * 50
LONG_TITLE = "T" * 200


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Room for every upload a test makes."""
    return settings.model_copy(update={"daily_quota": 10, "max_in_flight": 10})


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def _targets(db: Session) -> list[str]:
    db.expire_all()
    return list(db.scalars(select(AuditLogEntry.target).order_by(AuditLogEntry.id)))


def test_a_team_with_the_longest_name_goes_through_every_organiser_action(
    client: Any, organiser: Account, alice: Account, bob: Account, db: Session
) -> None:
    assert len(LONG_TEAM) == LONGEST
    _ok(client.post("/api/v1/admin/teams", headers=organiser.headers, json={"name": LONG_TEAM}), 201)
    members = f"/api/v1/admin/teams/{LONG_TEAM}/members"
    assert _ok(client.post(members, headers=organiser.headers, json={"user": "alice"}))["members"] == ["alice"]
    assert _ok(client.delete(f"{members}/alice", headers=organiser.headers))["members"] == []
    # A participant's team of the same length: made by its founder, changed by the organisers.
    own = LONG_TEAM.replace("T", "A")
    _ok(client.post("/api/v1/teams", headers=bob.headers, json={"name": own}), 201)
    _ok(client.delete(f"/api/v1/admin/teams/{own}/members/bob", headers=organiser.headers))
    assert _targets(db)[-4:] == [f"team:{LONG_TEAM}"] * 3 + [f"team:{own}"]


def test_a_user_with_the_longest_name_is_made_and_acts(
    client: Any, organiser: Account, make_account: Any, db: Session
) -> None:
    body = {"name": LONG_USER, "email": "long@example.org", "role": "organiser"}
    created = _ok(client.post("/api/v1/admin/users", headers=organiser.headers, json=body), 201)
    assert created["user"]["name"] == LONG_USER
    headers = {"Authorization": f"Bearer {created['token']}"}
    # Every action of an organiser writes their name into the audit log's actor column.
    _ok(client.post("/api/v1/admin/teams", headers=headers, json={"name": LONG_TEAM}), 201)
    db.expire_all()
    assert db.scalars(select(AuditLogEntry.actor).order_by(AuditLogEntry.id.desc())).first() == LONG_USER


def test_a_submission_with_the_longest_name_is_stored_ranked_and_audited(
    client: Any, alice: Account, organiser: Account, db: Session
) -> None:
    sid = _ok(submit(client, alice, name=LONG_SUBMISSION), 201)["id"]
    run_evaluation(db, _ok(client.get(f"/api/v1/submissions/{sid}", headers=alice.headers))["evaluations"][0]["id"])
    board = _ok(client.get("/api/v1/leaderboard"))
    assert [row["submission_name"] for row in board["rows"] if not row["baseline"]] == [LONG_SUBMISSION]
    _ok(client.post(f"/api/v1/admin/submissions/{sid}/rerun", headers=organiser.headers, json={}), 202)
    _ok(client.post(f"/api/v1/admin/submissions/{sid}/disqualify", headers=organiser.headers, json={"reason": "x"}))


def test_a_set_and_a_phase_with_the_longest_names_go_through_every_action(
    client: Any, organiser: Account, settings: Settings, db: Session
) -> None:
    long_set = "s" * LONGEST
    admin.register_evalset(
        name=long_set, commitment="d" * 64, path="x.toml", scenarios=SCENARIOS, current=False, settings=settings
    )
    h = organiser.headers
    phase = {"name": LONG_PHASE, "evalset": long_set, "title": LONG_TITLE}
    _ok(client.post("/api/v1/admin/phases", headers=h, json=phase), 201)
    _ok(client.patch(f"/api/v1/admin/phases/{LONG_PHASE}", headers=h, json={"title": LONG_TITLE[:-1]}))
    _ok(client.post(f"/api/v1/admin/phases/{LONG_PHASE}/open", headers=h))
    _ok(client.post(f"/api/v1/admin/leaderboard/freeze?phase={LONG_PHASE}", headers=h, json={"frozen": True}))
    _ok(client.post(f"/api/v1/admin/leaderboard/publish?phase={LONG_PHASE}", headers=h))
    _ok(client.post(f"/api/v1/admin/phases/{LONG_PHASE}/close", headers=h))
    _ok(client.post(f"/api/v1/admin/evalsets/{long_set}/reveal", headers=h))
    assert _targets(db)[-8:] == [
        f"evalset:{long_set}",
        *[f"phase:{LONG_PHASE}"] * 3,
        *[f"leaderboard:{LONG_PHASE}"] * 2,
        f"phase:{LONG_PHASE}",
        f"evalset:{long_set}",
    ]


def test_every_name_the_api_accepts_fits_its_columns(client: Any) -> None:
    """The request schemas' limits (read from the OpenAPI document) against the columns the names are written to,
    and the audit log's target against the longest kind and name (the composed column of item 2)."""
    spec = client.get("/openapi.json").json()["components"]["schemas"]

    def longest(schema: str, field: str) -> int:
        prop = spec[schema]["properties"][field]
        found: int = next(p["maxLength"] for p in [prop, *prop.get("anyOf", [])] if "maxLength" in p)
        return found

    written = {
        ("UserCreate", "name"): [User.name, AuditLogEntry.actor],
        ("TeamCreate", "name"): [Team.name],
        ("Body_create_submission_api_v1_submissions_post", "name"): [Submission.name],
        ("PhaseCreate", "title"): [Phase.title],
        ("PhaseEdit", "title"): [Phase.title],
        ("PhaseCreate", "evalset"): [EvalSet.name, Evaluation.evalset_name],
    }
    for (schema, field), columns in written.items():
        for column in columns:
            assert longest(schema, field) <= column.type.length, (schema, field, column)
    kinds = ["team", "user", "submission", "evalset", "phase", "leaderboard"]
    assert max(len(f"{kind}:") for kind in kinds) + max(NAME_LENGTH, Phase.name.type.length) <= AUDIT_TARGET_LENGTH


def test_one_character_over_is_refused_naming_the_limit(client: Any, organiser: Account, alice: Account) -> None:
    too_long = "x" * (LONGEST + 1)
    for response in (
        client.post("/api/v1/teams", headers=alice.headers, json={"name": too_long}),
        client.post("/api/v1/admin/teams", headers=organiser.headers, json={"name": too_long}),
        client.post(
            "/api/v1/admin/users", headers=organiser.headers, json={"name": too_long, "email": "x@example.org"}
        ),
        submit(client, alice, name=too_long),
    ):
        assert response.status_code == 422, response.text
        assert f"at most {LONGEST} characters" in response.json()["error"]["message"]


# ------------------------------------------------------------------------------------------------------- item 1

# Each hostile character, named as the refusal must name it.
HOSTILE = {
    "esc": ("\x1b]0;pwned\x07", "U+001B"),
    "csi-erase": ("a\x1b[2Kb", "U+001B"),
    "c1-csi": ("a\x9b2Kb", "U+009B"),
    "bel": ("a\x07", "U+0007"),
    "cr": ("a\rb", "U+000D"),
    "lf": ("a\nb", "U+000A"),
    "tab": ("a\tb", "U+0009"),
    "del": ("a\x7fb", "U+007F"),
    "rlo": ("a\u202eb", "U+202E"),
    "lre": ("a\u202ab", "U+202A"),
    "rli": ("a\u2067b", "U+2067"),
    "pdi": ("a\u2069b", "U+2069"),
    "zwsp": ("a\u200bb", "U+200B"),
    "zwj": ("a\u200db", "U+200D"),
    "lrm": ("a\u200eb", "U+200E"),
    "bom": ("\ufeffab", "U+FEFF"),
    "line-separator": ("a\u2028b", "U+2028"),
    "soft-hyphen": ("a\u00adb", "U+00AD"),
    "nbsp": ("a\u00a0b", "U+00A0"),
    "private-use": ("a\ue000b", "U+E000"),
    "unassigned": ("a\U000e0080b", "U+E0080"),
    "tag": ("a\U000e0041b", "U+E0041"),
}


def name_requests(client: Any, organiser: Account, alice: Account, value: str) -> dict[str, Callable[[], Any]]:
    """Every request that takes a name others read, by what it names: ``value`` as that name."""
    return {
        "submission": lambda: submit(client, alice, name=value),
        "team": lambda: client.post("/api/v1/teams", headers=alice.headers, json={"name": value}),
        "organiser's team": lambda: client.post("/api/v1/admin/teams", headers=organiser.headers, json={"name": value}),
        "user": lambda: client.post(
            "/api/v1/admin/users", headers=organiser.headers, json={"name": value, "email": "v@example.org"}
        ),
        "phase title": lambda: client.post(
            "/api/v1/admin/phases", headers=organiser.headers, json={"name": "p", "evalset": "sample", "title": value}
        ),
        "phase title edit": lambda: client.patch(
            f"/api/v1/admin/phases/{storage.DEFAULT_PHASE}", headers=organiser.headers, json={"title": value}
        ),
    }


@pytest.mark.parametrize("value,code_point", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_name_with_an_invisible_character_is_refused_naming_it(
    client: Any, organiser: Account, alice: Account, value: str, code_point: str, unchanged: None
) -> None:
    for what, request in name_requests(client, organiser, alice, value).items():
        response = request()
        assert response.status_code == 422, (what, response.text)
        message = response.json()["error"]["message"]
        assert code_point in message, (what, message)
        assert value not in message, (what, message)  # the message shows it escaped, never raw


def test_visible_unicode_names_are_accepted(client: Any, alice: Account) -> None:
    for name in ("première", "ñandú v2", "数据 policy", "🦉 owl"):
        assert submit(client, alice, name=name).status_code == 201, name


def test_the_admin_command_refuses_an_invisible_user_name(settings: Settings) -> None:
    """``layersched admin user add --bootstrap`` writes without the API: the rule is the storage's too."""
    with pytest.raises(ServiceError, match=r"U\+001B"):
        admin.add_user(name="olga\x1b[2J", email="o@example.org", role="organiser", settings=settings)
    with pytest.raises(ServiceError, match=f"at most {LONGEST} characters"):
        admin.add_user(name="o" * (LONGEST + 1), email="o@example.org", role="organiser", settings=settings)


def test_the_storage_refuses_an_invisible_team_name(db: Session, alice: Account) -> None:
    with pytest.raises(ServiceError, match=r"U\+202E"):
        storage.create_team(
            session=db, name="ab\u202ecd", founder=alice.user, actor=alice.user, deadline=None, now=utcnow()
        )


# --------------------------------------------------------------------------------- review of issue 30, item 4

# Names in which Unicode is allowed that show as nothing or draw over their neighbour: each refused naming why.
BLANK_LOOKING = {
    "hangul-fillers": ("\u3164\u3164", "character 1 is U+3164 (HANGUL FILLER), which shows as blank or as nothing"),
    "choseong-filler": ("\u115f", "character 1 is U+115F (HANGUL CHOSEONG FILLER), which shows as blank"),
    "braille-blank": ("\u2800", "character 1 is U+2800 (BRAILLE PATTERN BLANK), which shows as blank"),
    "variation-selector": ("alice\ufe0f", "character 6 is U+FE0F (VARIATION SELECTOR-16), which shows as blank"),
    "spaces": ("   ", "the name has 3 spaces and nothing else: a name must hold at least one visible character"),
    "combining-first": ("\u0336alice", "character 1 is U+0336 (COMBINING LONG STROKE OVERLAY), a combining mark"),
}


@pytest.mark.parametrize("value,message", BLANK_LOOKING.values(), ids=BLANK_LOOKING.keys())
def test_a_blank_looking_name_is_refused_naming_why(
    client: Any, organiser: Account, alice: Account, value: str, message: str, unchanged: None
) -> None:
    # The names in which Unicode is allowed; participants' and teams' are ASCII words (their pattern refuses these).
    unicode_names = ("submission", "phase title", "phase title edit")
    for what, request in name_requests(client, organiser, alice, value).items():
        if what not in unicode_names:
            continue
        response = request()
        assert response.status_code == 422, (what, response.text)
        assert message in response.json()["error"]["message"], what
