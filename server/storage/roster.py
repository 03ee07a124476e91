"""Enrolling a class at once: a roster of users (name, e-mail, optional team and role) in one transaction.

The rules, so that an organiser can run the same file again without fear:

- every line is checked before anything is written, and any bad line refuses the whole roster (``InvalidRoster``,
  naming the line and the field): nothing is half-done;
- a user already there with the same name, e-mail and role is reported, not changed; the same name with another
  e-mail or role, or an e-mail that is another user's, is a bad line (the roster would contradict the database);
- a team named in the file is created if it does not exist, and filled with the file's members within the size limit
  (Settings.team_max_size); an existing user already in another team is a bad line;
- each new user gets an API token or, with ``links``, a one-time sign-in link (``signin_links``);
- a second run of the same file changes nothing and writes nothing, not even to the audit log.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server.errors import InvalidRoster
from layersched.server.models import NAME_LENGTH, ROLES, Team, TeamMember, User
from layersched.server.name_rules import DISPLAY_NAME
from layersched.server.schemas import EMAIL
from layersched.server.storage.accounts import new_token
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.members import team_of
from layersched.server.storage.names import name_conflict
from layersched.server.storage.signin_links import new_signin_link
from layersched.server.storage.teams import Limits, _check_merged_limits

NAME_MAX, EMAIL_MAX = NAME_LENGTH, 254
_NAME, _EMAIL = re.compile(DISPLAY_NAME), re.compile(EMAIL)


@dataclass(frozen=True)
class RosterRow:
    """One line of a roster file, as its ``line`` number in the file names it."""

    line: int
    name: str
    email: str
    team: str | None = None
    role: str = "participant"


@dataclass(frozen=True)
class Enrolled:
    """A user the roster created, with what they sign in with (shown once): ``token`` or ``link_code``."""

    name: str
    email: str
    role: str
    team: str | None
    token: str | None = None
    link_code: str | None = None


@dataclass
class RosterResult:
    created: list[Enrolled] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    teams_created: list[str] = field(default_factory=list)
    assigned: list[tuple[str, str]] = field(default_factory=list)  # (user, team) of users already there


def _shown(value: str, limit: int = 40) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _bad(row: RosterRow, field_name: str, why: str) -> InvalidRoster:
    return InvalidRoster(f"line {row.line}, field {field_name}: {why}; nothing was imported")


def _check_values(row: RosterRow) -> None:
    """The values of one line, alone (the names' and e-mails' rules of ``POST /admin/users``)."""
    if not row.name:
        raise _bad(row, "name", "it is empty")
    if len(row.name) > NAME_MAX:
        raise _bad(row, "name", f"{_shown(row.name)} has {len(row.name)} characters, the most is {NAME_MAX}")
    if not _NAME.match(row.name):
        why = "letters, digits and _ . @ + - with single spaces between words"
        raise _bad(row, "name", f"{_shown(row.name)} is not a name: use {why}")
    if len(row.email) > EMAIL_MAX:
        raise _bad(row, "email", f"{_shown(row.email)} has {len(row.email)} characters, the most is {EMAIL_MAX}")
    if not _EMAIL.match(row.email):
        raise _bad(row, "email", f"{_shown(row.email)} is not an e-mail address")
    if row.role not in ROLES:
        raise _bad(row, "role", f"{_shown(row.role)} is not one of {', '.join(ROLES)}")
    if row.team is not None:
        if len(row.team) > NAME_MAX or not _NAME.match(row.team):
            raise _bad(row, "team", f"{_shown(row.team)} is not a team name (the rule of names, at most {NAME_MAX})")
        if row.role == "organiser":
            raise _bad(row, "team", f"{row.name} is an organiser: organisers compete in no team")


def _check_repeats(rows: list[RosterRow]) -> None:
    """No name or e-mail twice in the file (names compared as the boards do, ignoring case)."""
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        for field_name, value in (("name", row.name), ("email", row.email)):
            first = seen.setdefault((field_name, value.lower()), row.line)
            if first != row.line:
                raise _bad(row, field_name, f"{_shown(value)} is on line {first} too")


def _existing_user(session: Session, row: RosterRow) -> User | None:
    """The user this line names if they exist already and agree with it; a bad line if the database contradicts it."""
    by_name = session.scalar(select(User).where(func.lower(User.name) == row.name.lower()))
    by_email = session.scalar(select(User).where(func.lower(User.email) == row.email.lower()))
    if by_name is None and by_email is None:
        conflict = name_conflict(session=session, name=row.name)
        if conflict is not None:
            raise _bad(row, "name", conflict)
        return None
    if by_name is None or (by_email is not None and by_email.id != by_name.id):
        assert by_email is not None
        raise _bad(row, "email", f"{_shown(row.email)} is the e-mail of user {by_email.name!r}")
    if by_name.name != row.name:
        raise _bad(row, "name", f"{row.name!r} is user {by_name.name!r}'s name (names are compared ignoring case)")
    if by_name.email.lower() != row.email.lower():
        raise _bad(row, "email", f"user {by_name.name!r} exists with e-mail {by_name.email!r}, not {row.email!r}")
    if by_name.role != row.role:
        raise _bad(row, "role", f"user {by_name.name!r} exists as a {by_name.role}, not a {row.role}")
    return by_name


def _team(session: Session, row: RosterRow, created: dict[str, Team], result: RosterResult, actor: User) -> Team:
    """The team the line names: existing, made by an earlier line, or made now."""
    assert row.team is not None
    team = session.scalar(select(Team).where(Team.name == row.team)) or created.get(row.team)
    if team is not None:
        return team
    conflict = name_conflict(session=session, name=row.team)
    if conflict is not None:
        raise _bad(row, "team", conflict)
    team = Team(name=row.team, created_by_id=actor.id)
    session.add(team)
    session.flush()
    created[row.team] = team
    result.teams_created.append(row.team)
    add_log_entry(session, actor, "create_team", f"team:{row.team}", {"roster_line": row.line})
    return team


def _seat(session: Session, row: RosterRow, team: Team, max_size: int, filled: dict[int, list[int]]) -> None:
    """A seat in ``team`` for this line, within the size limit (the count includes the file's earlier members: the
    session flushes them before it counts)."""
    members = session.scalar(
        select(func.count(TeamMember.id)).where(TeamMember.team_id == team.id, TeamMember.left_at.is_(None))
    )
    members = members or 0
    lines = filled.setdefault(team.id, [])
    lines.append(row.line)
    if members + 1 > max_size:
        before = members - (len(lines) - 1)
        listed = ", ".join(str(n) for n in lines)
        raise _bad(
            row,
            "team",
            f"team {team.name!r} would have {members + 1} members ({before} before this roster, then lines {listed}), "
            f"the most a team may have is {max_size}",
        )


def import_roster(
    *,
    session: Session,
    rows: list[RosterRow],
    actor: User,
    max_size: int,
    limits: Limits,
    links: bool,
    link_hours: float,
    now: dt.datetime,
) -> RosterResult:
    """Create the roster's users and teams in one transaction (see the module docstring); raises ``InvalidRoster``
    and changes nothing when a line is bad."""
    for row in rows:
        _check_values(row)
    _check_repeats(rows)
    result = RosterResult()
    teams_made: dict[str, Team] = {}
    filled: dict[int, list[int]] = {}
    try:
        for row in rows:
            user = _existing_user(session, row)
            current = team_of(session=session, user_id=user.id) if user is not None else None
            team = _team(session, row, teams_made, result, actor) if row.team is not None else None
            if user is not None:
                result.existing.append(user.name)
                if team is None or (current is not None and current.id == team.id):
                    continue
                if current is not None:
                    raise _bad(row, "team", f"{user.name} is in team {current.name!r}: remove them from it first")
                _seat(session, row, team, max_size, filled)
                _check_merged_limits(session, team=team, joiner=user, limits=limits, now=now)
                session.add(TeamMember(team_id=team.id, user_id=user.id, joined_at=now))
                result.assigned.append((user.name, team.name))
                add_log_entry(session, actor, "assign_team", f"team:{team.name}", {"user": user.name})
                continue
            if team is not None:
                _seat(session, row, team, max_size, filled)
            user = User(name=row.name, email=row.email, role=row.role, created_at=now)
            session.add(user)
            session.flush()
            add_log_entry(session, actor, "create_user", f"user:{user.id}", {"name": user.name, "role": user.role})
            if team is not None:
                session.add(TeamMember(team_id=team.id, user_id=user.id, joined_at=now))
            if links:
                code = new_signin_link(session, user=user, actor=actor, hours=link_hours, now=now)
                enrolled = Enrolled(user.name, user.email, user.role, row.team, link_code=code)
            else:
                enrolled = Enrolled(user.name, user.email, user.role, row.team, token=new_token(session, user, actor))
            result.created.append(enrolled)
        if result.created or result.assigned or result.teams_created:
            detail = {
                "created": [e.name for e in result.created],
                "teams_created": result.teams_created,
                "assigned": [f"{u} -> {t}" for u, t in result.assigned],
                "existing": len(result.existing),
            }
            add_log_entry(session, actor, "import_roster", "users", detail)
        session.commit()
    except BaseException:
        session.rollback()
        raise
    return result
