"""Teams: creating one, inviting by code, joining, leaving, and the organisers' assignments.

The rules, Kaggle's where a choice was needed:

- a participant is in at most one team at a time (the partial unique index on ``team_members`` holds it whatever
  requests race); organisers compete in none;
- a team has at most ``max_size`` members (Settings.team_max_size); the seat count is checked under the team's row
  lock, so two joins racing for the last seat cannot both take it;
- an invite code is used once, before it expires (Settings.team_invite_hours); a team holds at most
  Settings.team_live_invites codes unused and unexpired at once (made by its members now; each is a row, and a
  member could otherwise make them without end);
- a participant who joins brings their submissions: the team's quota counts them (``members``), and a join that
  would put the team over a phase's daily quota today is refused;
- after the merger deadline (Settings.team_merge_deadline) participants can no longer create, join or leave teams;
  organisers still can assign and remove members (each change is in the audit log);
- a participant founds at most ``max_creations`` teams (Settings.team_creations), dissolved ones included: each is
  a name taken and a Ladder begun (issue 30: one participant made and left 1,503 teams in 26 s);
- a team whose last member leaves is dissolved, and its name is free again (its row stays: who was in it, and which
  Ladder its submissions were made under, refer to it); a team an organiser empties stays, to be filled again;
- two teams live at once never share a name in any letters' case: the application checks it, and the unique index
  on ``lower(name)`` refuses the second of two racing requests with the same 409;
- a founder may give the team their own name (``names.name_conflict``); when they leave it, or an organiser removes
  them, and the team lives on, it stops bearing it: the board would show a team "alice" without alice, beside
  alice's own row. There is no renaming a team, so the leave is not refused: the team is renamed ``team-<its id>``
  (a name kept for this: ``names.RENAMED_TEAM``), the change is in the audit log (``rename_team``, by whoever left
  or removed), and the team view tells its members (``renamed_from``: the name it bore).

Each function is one transaction: a refusal changes nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from layersched.server.errors import Conflict, Forbidden, NotFound
from layersched.server.models import Phase, Submission, Team, TeamInvite, TeamMember, User
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.members import lock_competitor, lock_row, team_of
from layersched.server.storage.names import check_display_name, name_conflict, name_taken, team_name_taken
from layersched.server.storage.phases import is_open
from layersched.server.storage.quota import count_owned_in_flight, count_owned_today, phase_quota

INVITE_PREFIX = "lsi"


def _utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).isoformat()


def _code_sha256(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def _check_changes_open(deadline: dt.datetime | None, now: dt.datetime) -> None:
    if deadline is not None and now >= deadline:
        raise Conflict(
            f"teams are fixed since the team merger deadline {_utc(deadline)}: no team can be created, joined or "
            "left any more (an organiser can still change one)"
        )


def _check_participant(user: User) -> None:
    if user.role != "participant":
        raise Forbidden(f"{user.name} is an organiser: organisers do not compete, so they are in no team")


_WITH_MEMBERS = selectinload(Team.members).selectinload(TeamMember.user)


def get_team(*, session: Session, name: str) -> Team:
    """The live team of this name (a dissolved team's name may be another's now)."""
    team = session.scalar(select(Team).where(Team.name == name, Team.dissolved_at.is_(None)).options(_WITH_MEMBERS))
    if team is None:
        raise NotFound(f"team {name!r} does not exist")
    return team


def list_teams(*, session: Session, offset: int = 0, limit: int = 50) -> tuple[list[Team], int]:
    """A page of the live teams, in the order they were made, with their members (an organiser's team not filled
    yet has none), and how many there are."""
    live = Team.dissolved_at.is_(None)
    total = session.scalar(select(func.count(Team.id)).where(live)) or 0
    rows = session.scalars(
        select(Team).where(live).options(_WITH_MEMBERS).order_by(Team.id).offset(offset).limit(limit)
    )
    return list(rows), total


def _member_count(session: Session, team_id: int) -> int:
    count = select(func.count(TeamMember.id)).where(TeamMember.team_id == team_id, TeamMember.left_at.is_(None))
    return session.scalar(count) or 0


def _refresh(session: Session, team_id: int) -> Team:
    """The team as committed (dissolved or not), its members loaded afresh."""
    session.expire_all()
    team = session.scalar(select(Team).where(Team.id == team_id).options(_WITH_MEMBERS))
    assert team is not None  # teams are never deleted
    return team


def _check_creations(session: Session, founder: User, max_creations: int) -> None:
    founded = session.scalar(select(func.count(Team.id)).where(Team.created_by_id == founder.id)) or 0
    if founded >= max_creations:
        raise Conflict(
            f"{founder.name} has founded {founded} teams, the most a participant may (dissolved ones count too); "
            "join a team with an invite code instead"
        )


def create_team(
    *,
    session: Session,
    name: str,
    founder: User | None,
    actor: User,
    deadline: dt.datetime | None,
    now: dt.datetime,
    max_creations: int | None = None,
) -> Team:
    """A new team named ``name``; ``founder`` (a participant outside any team, who has founded fewer than
    ``max_creations`` teams) is its first member. Organisers make teams without a founder and assign members
    (``actor``: who asks; organisers ignore the deadline)."""
    check_display_name(name)
    if actor.role != "organiser":
        _check_changes_open(deadline, now)
    if founder is not None:
        _check_participant(founder)
        lock_competitor(session=session, user=founder)  # the count of founded teams too is read under it
        current = team_of(session=session, user_id=founder.id)
        if current is not None:
            raise Conflict(
                f"{founder.name} is already in team {current.name!r}: a participant is in one team; leave it first"
            )
        if max_creations is not None:
            _check_creations(session, founder, max_creations)
    conflict = name_conflict(session=session, name=name, owner=founder)
    if conflict is not None:
        raise Conflict(conflict)
    team = Team(name=name, created_by_id=actor.id, created_at=now)
    session.add(team)
    try:
        session.flush()
    except IntegrityError as exc:  # the index on live teams' lower(name): a concurrent request made it first
        session.rollback()
        raise Conflict(team_name_taken(name)) from exc
    if founder is not None:
        session.add(TeamMember(team_id=team.id, user_id=founder.id, joined_at=now))
        try:
            session.flush()
        except IntegrityError as exc:  # the index on open stays: the founder joined a team in an unlocked request
            session.rollback()
            raise Conflict(f"{founder.name} joined another team meanwhile: a participant is in one team") from exc
    if actor.role == "organiser":
        add_log_entry(session, actor, "create_team", f"team:{name}", {})
    session.commit()
    return _refresh(session, team.id)


def _check_live_invites(session: Session, team: Team, most: int, now: dt.datetime) -> None:
    """Refuse a new code while the team holds ``most`` that could still admit someone: unused, unexpired, made by a
    member now (a code whose maker left admits no one: ``join_team``)."""
    live = (
        select(func.count(TeamInvite.id), func.min(TeamInvite.expires_at))
        .join(TeamMember, (TeamMember.user_id == TeamInvite.created_by_id) & TeamMember.left_at.is_(None))
        .where(
            TeamInvite.team_id == team.id,
            TeamMember.team_id == team.id,
            TeamInvite.used_at.is_(None),
            TeamInvite.expires_at > now,
        )
    )
    count, first_expiry = session.execute(live).one()
    if count >= most:
        raise Conflict(
            f"team {team.name!r} has {count} invite codes unused and unexpired, the most a team may hold at once "
            f"({most}); the oldest expires at {_utc(first_expiry)}: have one used, or make a new one after that"
        )


def create_invite(
    *,
    session: Session,
    user: User,
    valid_hours: float,
    max_live: int,
    deadline: dt.datetime | None,
    now: dt.datetime,
) -> tuple[TeamInvite, str]:
    """A new one-use invite code to the user's team, valid for ``valid_hours``, unless the team holds ``max_live``
    codes that could still be used: the code is returned once, only its hash is stored."""
    _check_changes_open(deadline, now)
    lock_competitor(session=session, user=user)  # two requests at once count the team's codes one after the other
    team = team_of(session=session, user_id=user.id)
    if team is None:
        raise Conflict(f"{user.name} is in no team: create one first (layersched team create NAME)")
    _check_live_invites(session, team, max_live, now)
    code = f"{INVITE_PREFIX}_{secrets.token_urlsafe(18)}"
    invite = TeamInvite(
        team_id=team.id,
        code_sha256=_code_sha256(code),
        created_by_id=user.id,
        created_at=now,
        expires_at=now + dt.timedelta(hours=valid_hours),
    )
    session.add(invite)
    session.commit()
    return invite, code


def _check_seat(session: Session, team: Team, max_size: int) -> None:
    members = _member_count(session, team.id)
    if members >= max_size:
        raise Conflict(f"team {team.name!r} is full: it has {members} members, the most a team may have")


@dataclass(frozen=True)
class Limits:
    """What one competitor may hold, which a join must not take a team past (the Settings of the same names)."""

    daily_quota: int
    max_in_flight: int
    final_submissions: int


def _check_merged_limits(session: Session, *, team: Team, joiner: User, limits: Limits, now: dt.datetime) -> None:
    """Refuse a join after which the team would hold more than one competitor may: submissions today to an open
    phase over its quota (Kaggle: a merged team's past submissions count against its quota), evaluations in flight
    over the allowance, or submissions selected for a phase's final ranking over the limit."""
    owners = [*(m.user_id for m in team.members), joiner.id]
    for phase in session.scalars(select(Phase).order_by(Phase.id)):
        if not is_open(phase, now):
            continue
        used = count_owned_today(session=session, owner_ids=owners, phase=phase, now=now)
        quota = phase_quota(phase, limits.daily_quota)
        if used > quota:
            raise Conflict(
                f"joining team {team.name!r} would give it {used} submissions to phase {phase.name!r} today, over "
                f"its daily quota of {quota} (a joiner's submissions count against the team's quota); join after "
                "00:00 UTC"
            )
    in_flight = count_owned_in_flight(session=session, owner_ids=owners)
    if in_flight > limits.max_in_flight:
        raise Conflict(
            f"joining team {team.name!r} would give it {in_flight} evaluations queued or running, over the most of "
            f"{limits.max_in_flight}; join once some have finished"
        )
    selected = session.execute(
        select(Phase.name, func.count(Submission.id))
        .join(Submission, Submission.phase_id == Phase.id)
        .where(Submission.owner_id.in_(owners), Submission.selected.is_(True))
        .group_by(Phase.name)
        .order_by(Phase.name)
    )
    for phase_name, count in selected:
        if count > limits.final_submissions:
            raise Conflict(
                f"joining team {team.name!r} would give it {count} submissions selected for the final ranking of "
                f"phase {phase_name!r}, over the most of {limits.final_submissions}; unselect some first"
            )


def join_team(
    *,
    session: Session,
    user: User,
    code: str,
    max_size: int,
    limits: Limits,
    deadline: dt.datetime | None,
    now: dt.datetime,
) -> Team:
    """Join the team of the invite ``code``, using the code up."""
    _check_participant(user)
    _check_changes_open(deadline, now)
    invite = session.scalar(select(TeamInvite).where(TeamInvite.code_sha256 == _code_sha256(code)))
    if invite is None:
        raise NotFound("this invite code is not one the server made: check that it was copied whole")
    lock_row(session, User, user.id)  # user first, then team: the order lock_competitor takes them in
    current = team_of(session=session, user_id=user.id)
    if current is not None:
        if current.id == invite.team_id:
            raise Conflict(f"{user.name} is already in team {current.name!r}")
        raise Conflict(
            f"{user.name} is in team {current.name!r}: a participant is in one team; leave it first "
            "(layersched team leave)"
        )
    lock_row(session, Team, invite.team_id)
    # Read again under the lock: another join may have used the code, or taken a seat, since it was read.
    session.refresh(invite)
    team = _refresh(session, invite.team_id)
    if team.dissolved_at is not None:
        raise Conflict(f"team {team.name!r} was dissolved when its last member left; this invite code admits no one")
    if invite.used_at is not None:
        who = invite.used_by.name if invite.used_by is not None else "a user since removed"
        raise Conflict(f"this invite code was used already, by {who} at {_utc(invite.used_at)}; ask for a new one")
    if now >= invite.expires_at:
        raise Conflict(
            f"this invite code expired at {_utc(invite.expires_at)}; ask a member of team {team.name!r} for a new one"
        )
    if invite.created_by_id not in {m.user_id for m in team.members}:  # an invite is its maker's, while a member
        raise Conflict(
            f"this invite code was made by someone no longer in team {team.name!r}; ask a member for a new one"
        )
    _check_seat(session, team, max_size)
    _check_merged_limits(session, team=team, joiner=user, limits=limits, now=now)
    invite.used_at, invite.used_by_id = now, user.id
    session.add(TeamMember(team_id=team.id, user_id=user.id, joined_at=now))
    try:
        session.flush()
    except IntegrityError as exc:  # the unique index: the user joined a team in a request that did not lock
        session.rollback()
        raise Conflict(f"{user.name} joined another team meanwhile: a participant is in one team") from exc
    session.commit()
    return _refresh(session, team.id)


def _end_membership(session: Session, user: User, now: dt.datetime) -> Team:
    """End the user's stay in their team (the caller holds their and the team's locks)."""
    membership = session.scalar(select(TeamMember).where(TeamMember.user_id == user.id, TeamMember.left_at.is_(None)))
    if membership is None:
        raise Conflict(f"{user.name} is in no team")
    membership.left_at = now
    session.flush()
    return membership.team


def _renamed_name(session: Session, team: Team) -> str:
    """``team-<id>``: no one may choose it (``names.RENAMED_TEAM``), so it is free unless a name chosen before that
    rule holds it; then ``team-<id>-2``, ``-3``, ..."""
    name, n = f"team-{team.id}", 1
    while name_taken(session=session, name=name) is not None:
        n += 1
        name = f"team-{team.id}-{n}"
    return name


def _stop_bearing_name(session: Session, team: Team, left: User, actor: User) -> None:
    """When ``left``, who just left the live ``team`` (or was removed by ``actor``), is the one whose name it bears,
    rename it (module docstring). The caller holds the team's lock and commits."""
    if team.dissolved_at is not None or team.name.lower() != left.name.lower():
        return
    new_name = _renamed_name(session, team)
    add_log_entry(session, actor, "rename_team", f"team:{team.name}", {"to": new_name, "member_left": left.name})
    team.renamed_from, team.name = team.name, new_name
    session.flush()


def leave_team(*, session: Session, user: User, deadline: dt.datetime | None, now: dt.datetime) -> Team:
    """Leave the user's team. Their submissions are theirs and go with them: they count for the user alone again.
    The last member to leave dissolves the team; a team that bore the leaver's name and lives on is renamed."""
    _check_changes_open(deadline, now)
    lock_competitor(session=session, user=user)
    team = _end_membership(session, user, now)
    if _member_count(session, team.id) == 0:  # the last one out: the name is free again
        team.dissolved_at = now
    _stop_bearing_name(session, team, user, user)
    session.commit()
    return _refresh(session, team.id)


def assign_member(
    *, session: Session, team_name: str, user: User, actor: User, max_size: int, limits: Limits, now: dt.datetime
) -> Team:
    """An organiser puts ``user`` into the team (whatever the deadline; the size, one-team and merged-limit rules
    hold)."""
    _check_participant(user)
    team = get_team(session=session, name=team_name)
    lock_row(session, User, user.id)
    current = team_of(session=session, user_id=user.id)
    if current is not None:
        raise Conflict(f"{user.name} is in team {current.name!r}: remove them from it first")
    lock_row(session, Team, team.id)
    _check_seat(session, team, max_size)
    _check_merged_limits(session, team=team, joiner=user, limits=limits, now=now)
    session.add(TeamMember(team_id=team.id, user_id=user.id, joined_at=now))
    try:
        session.flush()
    except IntegrityError as exc:
        session.rollback()
        raise Conflict(f"{user.name} joined another team meanwhile: a participant is in one team") from exc
    add_log_entry(session, actor, "assign_team", f"team:{team.name}", {"user": user.name})
    session.commit()
    return _refresh(session, team.id)


def remove_member(*, session: Session, team_name: str, user: User, actor: User, now: dt.datetime) -> Team:
    """An organiser takes ``user`` out of the team (whatever the deadline); a team that bore their name is renamed,
    even when it is left empty (it stays, to be filled again)."""
    team = get_team(session=session, name=team_name)
    lock_competitor(session=session, user=user)
    current = team_of(session=session, user_id=user.id)
    if current is None or current.id != team.id:
        raise Conflict(f"{user.name} is not in team {team.name!r}")
    _end_membership(session, user, now)
    add_log_entry(session, actor, "remove_from_team", f"team:{team.name}", {"user": user.name})
    _stop_bearing_name(session, team, user, actor)
    session.commit()
    return _refresh(session, team.id)
