"""Teams as participants make them: create one, invite by code, join with a code, leave (organisers assign and
remove members: ``routes/admin``). The rules are ``storage.teams``'."""

from __future__ import annotations

from fastapi import APIRouter

from layersched.server import presenters, storage
from layersched.server.config import Settings
from layersched.server.deps import CurrentUser, PageDep, SessionDep, SettingsDep
from layersched.server.errors import NotFound
from layersched.server.models import utcnow
from layersched.server.schemas import InviteCreated, TeamCreate, TeamJoin, TeamPublic, TeamsPublic

router = APIRouter(prefix="/teams", tags=["teams"])


def team_limits(settings: Settings) -> storage.Limits:
    """What a join must not take a team past: one competitor's quota, in-flight allowance and final selection."""
    return storage.Limits(
        daily_quota=settings.daily_quota,
        max_in_flight=settings.max_in_flight,
        final_submissions=settings.final_submissions,
    )


@router.get("", response_model=TeamsPublic)
def list_teams(session: SessionDep, settings: SettingsDep, _user: CurrentUser, page: PageDep) -> TeamsPublic:
    """A page of the teams and their members, oldest first; ``count`` is how many there are (signed-in users only;
    the boards show teams' names and members too). Dissolved teams are not listed."""
    teams, count = storage.list_teams(session=session, offset=page.offset, limit=page.limit)
    return TeamsPublic(data=[presenters.team_public(t, max_size=settings.team_max_size) for t in teams], count=count)


@router.get("/mine", response_model=TeamPublic)
def read_my_team(session: SessionDep, settings: SettingsDep, user: CurrentUser) -> TeamPublic:
    team = storage.team_of(session=session, user_id=user.id)
    if team is None:
        raise NotFound(f"{user.name} is in no team: create one (layersched team create NAME) or join one with a code")
    return presenters.team_public(team, max_size=settings.team_max_size)


@router.post("", status_code=201, response_model=TeamPublic)
def create_team(session: SessionDep, settings: SettingsDep, user: CurrentUser, body: TeamCreate) -> TeamPublic:
    """A new team with the caller as its first member."""
    team = storage.create_team(
        session=session,
        name=body.name,
        founder=user,
        actor=user,
        deadline=settings.team_merge_deadline,
        now=utcnow(),
        max_creations=settings.team_creations,
    )
    return presenters.team_public(team, max_size=settings.team_max_size)


@router.post("/mine/invites", status_code=201, response_model=InviteCreated)
def create_invite(session: SessionDep, settings: SettingsDep, user: CurrentUser) -> InviteCreated:
    """A one-use code for someone to join the caller's team; shown this once."""
    invite, code = storage.create_invite(
        session=session,
        user=user,
        valid_hours=settings.team_invite_hours,
        max_live=settings.team_live_invites_limit,
        deadline=settings.team_merge_deadline,
        now=utcnow(),
    )
    return InviteCreated(team=invite.team.name, code=code, expires_at=invite.expires_at)


@router.post("/join", response_model=TeamPublic)
def join_team(session: SessionDep, settings: SettingsDep, user: CurrentUser, body: TeamJoin) -> TeamPublic:
    team = storage.join_team(
        session=session,
        user=user,
        code=body.code,
        max_size=settings.team_max_size,
        limits=team_limits(settings),
        deadline=settings.team_merge_deadline,
        now=utcnow(),
    )
    return presenters.team_public(team, max_size=settings.team_max_size)


@router.post("/mine/leave", response_model=TeamPublic)
def leave_team(session: SessionDep, settings: SettingsDep, user: CurrentUser) -> TeamPublic:
    """Leave the caller's team; the answer is the team as it is after."""
    team = storage.leave_team(session=session, user=user, deadline=settings.team_merge_deadline, now=utcnow())
    return presenters.team_public(team, max_size=settings.team_max_size)
