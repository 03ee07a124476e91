"""Organiser operations that work on the database directly, for ``layersched admin ...`` and ``layersched serve``.

Each function opens its own session from ``settings`` (default: the environment) and returns plain values, so
the CLI can print them. They raise ``layersched.server.errors.ServiceError`` subclasses (``Conflict``,
``NotFound``) with a one-line message for the CLI to print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config

from layersched.server import storage
from layersched.server.config import Settings, get_settings
from layersched.server.db import make_engine, make_sessionmaker, session_scope
from layersched.server.errors import Conflict, ServiceError
from layersched.server.storage.evalsets import changed_set_message
from layersched.server.tracks import load_tracks
from layersched.sim.tracks import DEFAULT_TRACK_ID, get_track

# What the CLI catches: every deliberate failure here (Conflict, NotFound) is a ServiceError with a .message.
AdminError = ServiceError

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


@dataclass(frozen=True)
class CreatedUser:
    id: int
    name: str
    email: str
    role: str
    token_id: int
    token: str  # shown once


@dataclass(frozen=True)
class CreatedToken:
    id: int
    user: str
    token: str  # shown once


def alembic_config(database_url: str) -> Config:
    """An Alembic configuration for ``database_url`` (``migrations/env.py`` reads it from the attributes)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["database_url"] = database_url
    config.attributes["configure_logger"] = False
    return config


def upgrade_database(*, settings: Settings | None = None, revision: str = "head") -> None:
    """``alembic upgrade head`` on the configured database (creates a SQLite file if needed)."""
    settings = settings or get_settings()
    make_engine(settings.database_url).dispose()  # creates the SQLite directory
    command.upgrade(alembic_config(settings.database_url), revision)


def add_user(*, name: str, email: str, role: str = "participant", settings: Settings | None = None) -> CreatedUser:
    """``layersched admin user add NAME EMAIL [--organiser]``: the user and a first token."""
    settings = settings or get_settings()
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            user = storage.create_user(session=session, name=name, email=email, role=role)
            token, plain = storage.issue_token(session=session, user_id=user.id)
            return CreatedUser(user.id, user.name, user.email, user.role, token.id, plain)
    finally:
        engine.dispose()


def new_token(*, name: str, settings: Settings | None = None) -> CreatedToken:
    """``layersched admin user token NAME``: another token for an existing user."""
    settings = settings or get_settings()
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            user = storage.get_user_by_name(session=session, name=name)
            token, plain = storage.issue_token(session=session, user_id=user.id)
            return CreatedToken(token.id, user.name, plain)
    finally:
        engine.dispose()


def revoke_token(*, token_id: int, settings: Settings | None = None) -> None:
    """``layersched admin token revoke ID``."""
    settings = settings or get_settings()
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            storage.revoke_token(session=session, token_id=token_id)
    finally:
        engine.dispose()


@dataclass(frozen=True)
class RegisteredEvalSet:
    name: str
    commitment: str
    path: str
    scenarios: list[dict[str, Any]]
    track: str = DEFAULT_TRACK_ID
    # What the registration did: "registered" (a new set), "unchanged" (the same set, read from the same path, was
    # registered already: nothing was written), "moved" (the same set, now read from ``path``), "made current".
    outcome: str = "registered"


def register_evalset(
    *,
    path: str | Path,
    name: str | None = None,
    commitment: str | None = None,
    scenarios: Sequence[dict[str, Any]] | None = None,
    track: str = DEFAULT_TRACK_ID,
    current: bool = True,
    settings: Settings | None = None,
) -> RegisteredEvalSet:
    """Make an evaluation set known to the server, current for new submissions unless ``current=False``.

    With only ``path``, the file is loaded and validated by ``layersched.sim.evalset`` and its name, commitment,
    track and public scenario summary are taken from it. Otherwise ``name``, ``commitment``, ``scenarios``
    (``[{"name", "weight", "public_episodes"}]``) and ``track`` are stored as given. The track must be one this
    process knows (``TrackError`` lists them): its board is described from it. Baseline reference rows are not
    computed here (that runs the simulator: the worker's ``register_and_score`` does it).

    Idempotent: the same set again writes nothing (``outcome`` "unchanged"); another commitment under a registered
    name is refused (``Conflict`` naming both commitments), and nothing is written.
    """
    settings = settings or get_settings()
    load_tracks(settings.track_modules)  # the file may be on a track the settings add
    if name is None or commitment is None or scenarios is None:
        name, commitment, scenarios, track = _describe_evalset_file(Path(path))
    get_track(track)  # an unknown id fails here, naming the known ones, not later on every page of the board
    engine = make_engine(settings.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            before = storage.find_evalset(session=session, name=name)
            outcome = _registration_outcome(before, commitment=commitment, path=str(path), current=current)
            if outcome == "unchanged":
                assert before is not None
                return RegisteredEvalSet(
                    before.name, before.commitment, before.path, list(before.scenarios), before.track, outcome
                )
            row = storage.register_evalset(
                session=session,
                name=name,
                commitment=commitment,
                path=str(path),
                scenarios=scenarios,
                current=current,
                track=track,
            )
            storage.log_action(
                session=session,
                actor=None,
                action="register_evalset",
                target=f"evalset:{name}",
                detail={"commitment": commitment, "current": current, "track": track, "path": str(path)},
            )
            return RegisteredEvalSet(row.name, row.commitment, row.path, list(row.scenarios), row.track, outcome)
    finally:
        engine.dispose()


def _registration_outcome(before: Any, *, commitment: str, path: str, current: bool) -> str:
    """What registering (``commitment``, ``path``, ``current``) does to the registered row ``before`` (None: none);
    raises Conflict for another commitment under its name."""
    if before is None:
        return "registered"
    if before.commitment != commitment:
        raise Conflict(changed_set_message(name=before.name, registered=before.commitment, given=commitment, path=path))
    if current and not before.current:
        return "made current"
    return "unchanged" if before.path == path else "moved"


def _describe_evalset_file(path: Path) -> tuple[str, str, list[dict[str, Any]], str]:
    from layersched.sim.evalset import load_evalset

    evalset = load_evalset(path)
    scenarios = [
        {"name": sc.name, "weight": sc.weight, "public_episodes": sum(ep.split == "public" for ep in sc.episodes)}
        for sc in evalset.scenarios
    ]
    return evalset.name, evalset.commitment, scenarios, evalset.track
