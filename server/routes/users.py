"""The organisers' care of accounts: a roster imported at once, the list of users, disabling and enabling one,
and one-time sign-in links (``/admin/users...``; each route refuses participants and anonymous callers)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, cast

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam

from layersched.server import storage
from layersched.server.deps import MAX_ROW_ID, Organiser, SessionDep, SettingsDep
from layersched.server.models import utcnow
from layersched.server.organiser_schemas import (
    DisableRequest,
    Enrolled,
    LinkCreated,
    RosterImport,
    RosterImported,
    UserDisabled,
    UserListed,
    UsersListed,
)
from layersched.server.routes.page_auth import site_origin
from layersched.server.routes.teams import team_limits
from layersched.server.schemas import NO_NUL, Role
from layersched.server.storage.roster import RosterRow, import_roster
from layersched.server.storage.signin_links import create_signin_link
from layersched.server.storage.user_admin import disable_user, enable_user, list_users

router = APIRouter(prefix="/admin", tags=["organisers"])
UserName = Annotated[str, PathParam(min_length=1, max_length=100, pattern=NO_NUL)]


def link_url(request: Request, settings: SettingsDep, code: str) -> str:
    """The address of a sign-in link page, as browsers reach this site (``LAYERSCHED_PUBLIC_URL`` behind a proxy)."""
    return f"{site_origin(request, settings)}/signin/link/{code}"


@router.post("/users/import", status_code=201, response_model=RosterImported)
def import_users(
    request: Request, session: SessionDep, actor: Organiser, settings: SettingsDep, body: RosterImport
) -> RosterImported:
    """Create a roster's users (and its teams) in one transaction; a bad line refuses the whole roster (422
    ``invalid_roster`` naming the line and field). Users already there are reported, not changed."""
    now = utcnow()
    rows = [
        RosterRow(r.line, r.name.strip(), r.email.strip(), (r.team or "").strip() or None, r.role) for r in body.rows
    ]
    result = import_roster(
        session=session,
        rows=rows,
        actor=actor,
        max_size=settings.team_max_size,
        limits=team_limits(settings),
        links=body.links,
        link_hours=settings.signin_link_hours,
        now=now,
    )
    expires = now + dt.timedelta(hours=settings.signin_link_hours)
    return RosterImported(
        created=[
            Enrolled(
                name=e.name,
                email=e.email,
                role=cast(Role, e.role),  # checked against ROLES by the roster
                team=e.team,
                token=e.token,
                link=link_url(request, settings, e.link_code) if e.link_code else None,
                link_expires_at=expires if e.link_code else None,
            )
            for e in result.created
        ],
        existing=result.existing,
        teams_created=result.teams_created,
        assigned=[{"user": u, "team": t} for u, t in result.assigned],
    )


@router.get("/users", response_model=UsersListed)
def read_users(
    session: SessionDep,
    _actor: Organiser,
    role: Role | None = None,
    team: Annotated[str | None, Query(max_length=100, pattern=NO_NUL)] = None,
    disabled: bool | None = None,
    offset: Annotated[int, Query(ge=0, le=MAX_ROW_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
) -> UsersListed:
    """Users in creation order: name, e-mail, role, team, created, last submission, active tokens, disabled."""
    if team is not None:
        storage.get_team(session=session, name=team)  # an unknown team is a 404 naming it, not an empty list
    rows, count = list_users(session=session, role=role, team=team, disabled=disabled, offset=offset, limit=limit)
    return UsersListed(data=[UserListed.model_validate(r) for r in rows], count=count)


def _listed(session: SessionDep, name: str) -> UserListed:
    rows, _count = list_users(session=session, limit=1, offset=0, name=name)
    return UserListed.model_validate(rows[0])


@router.post("/users/{name}/disable", response_model=UserDisabled)
def disable(session: SessionDep, actor: Organiser, name: UserName, body: DisableRequest | None = None) -> UserDisabled:
    """Revoke every token of the user, refuse their uploads and take their rows off the boards (reversible)."""
    _user, revoked = disable_user(
        session=session, name=name, reason=body.reason if body else "", actor=actor, now=utcnow()
    )
    return UserDisabled(user=_listed(session, name), tokens_revoked=revoked)


@router.post("/users/{name}/enable", response_model=UserListed)
def enable(session: SessionDep, actor: Organiser, name: UserName) -> UserListed:
    """Bring a disabled user back (their revoked tokens stay revoked: give them a new one or a link)."""
    enable_user(session=session, name=name, actor=actor)
    return _listed(session, name)


@router.post("/users/{name}/links", status_code=201, response_model=LinkCreated)
def create_link(
    request: Request, session: SessionDep, actor: Organiser, settings: SettingsDep, name: UserName
) -> LinkCreated:
    """A new one-time sign-in link for the user (shown once)."""
    user = storage.get_user_by_name(session=session, name=name)
    now = utcnow()
    code = create_signin_link(session=session, user=user, actor=actor, hours=settings.signin_link_hours, now=now)
    expires = now + dt.timedelta(hours=settings.signin_link_hours)
    return LinkCreated(user=user.name, link=link_url(request, settings, code), expires_at=expires)
