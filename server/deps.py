"""FastAPI dependencies: the database session, the settings, the caller, the enqueuer, pagination."""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.challenge import effective_settings
from layersched.server.config import Settings
from layersched.server.errors import Forbidden, Unauthorized
from layersched.server.models import User
from layersched.server.queue import Enqueuer


def get_db(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


def get_enqueuer(request: Request) -> Enqueuer:
    enqueuer: Enqueuer = request.app.state.enqueuer
    return enqueuer


SessionDep = Annotated[Session, Depends(get_db)]


def get_app_settings(request: Request, session: SessionDep) -> Settings:
    """The app's settings with the applied challenge's rules in place of theirs (``challenge.effective_settings``)."""
    settings: Settings = request.app.state.settings
    return effective_settings(session, settings)


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
EnqueuerDep = Annotated[Enqueuer, Depends(get_enqueuer)]

bearer = HTTPBearer(auto_error=False, description="an API token from `layersched admin user token`")


def get_optional_user(
    session: SessionDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> User | None:
    """The caller, None when no token is sent; a token that is sent must be valid."""
    if credentials is None:
        return None
    user = storage.authenticate(session=session, token=credentials.credentials)
    if user is None:
        raise Unauthorized("the bearer token is unknown or revoked")
    return user


def get_current_user(user: Annotated[User | None, Depends(get_optional_user)]) -> User:
    if user is None:
        raise Unauthorized("this route needs a token: send the header 'Authorization: Bearer <token>'")
    return user


def get_organiser(user: Annotated[User, Depends(get_current_user)]) -> User:
    if user.role != "organiser":
        raise Forbidden(f"user {user.name!r} is a {user.role}; this route is for organisers")
    return user


def get_metrics_reader(
    request: Request,
    session: SessionDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """``/metrics``' caller: Prometheus with the metrics token (``LAYERSCHED_METRICS_TOKEN_SHA256``), or an
    organiser. The metrics token is no user's: every other route looks it up among the users' tokens, finds
    nothing and refuses it (401), so the monitoring host holds a credential that reads counts and nothing more."""
    expected: str | None = request.app.state.settings.metrics_token_sha256
    if (
        credentials is not None
        and expected is not None
        and hmac.compare_digest(storage.token_sha256(credentials.credentials), expected)
    ):
        return
    get_organiser(get_current_user(get_optional_user(session, credentials)))


OptionalUser = Annotated[User | None, Depends(get_optional_user)]
CurrentUser = Annotated[User, Depends(get_current_user)]
Organiser = Annotated[User, Depends(get_organiser)]
MetricsReader = Annotated[None, Depends(get_metrics_reader)]


# Row ids are PostgreSQL INTEGERs. A larger number in a path or an offset would reach the database and fail there
# ("integer out of range", a 500); bounding them here makes it a 422 that names the value.
MAX_ROW_ID = 2**31 - 1
RowId = Annotated[int, PathParam(ge=1, le=MAX_ROW_ID)]


class Page:
    """``?offset=0&limit=50`` (limit at most 200)."""

    def __init__(
        self,
        offset: Annotated[int, Query(ge=0, le=MAX_ROW_ID)] = 0,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
    ) -> None:
        self.offset, self.limit = offset, limit


PageDep = Annotated[Page, Depends()]
