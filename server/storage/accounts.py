"""Users and their API tokens: creation, sign-in by token, revocation."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from layersched.server.errors import Conflict, NotFound
from layersched.server.models import ApiToken, User, utcnow
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.names import check_display_name, name_conflict

TOKEN_PREFIX = "lst"


def create_user(
    *, session: Session, name: str, email: str, role: str = "participant", actor: User | None = None
) -> User:
    """A new user; ``actor`` is the organiser doing it (None: the admin CLI), recorded in the audit log."""
    if role not in ("participant", "organiser"):
        raise ValueError(f"role must be 'participant' or 'organiser', got {role!r}")
    check_display_name(name)
    taken = session.scalar(select(User).where((User.name == name) | (User.email == email)))
    if taken is not None:
        field = "name" if taken.name == name else "email"
        raise Conflict(f"a user with {field} {name if field == 'name' else email!r} already exists")
    conflict = name_conflict(session=session, name=name)
    if conflict is not None:
        raise Conflict(conflict)
    user = User(name=name, email=email, role=role)
    session.add(user)
    try:
        session.flush()
    except IntegrityError as exc:  # a concurrent request took the name or email first
        session.rollback()
        raise Conflict(f"a user with name {name!r} or email {email!r} already exists") from exc
    add_log_entry(session, actor, "create_user", f"user:{user.id}", {"name": name, "role": role})
    session.commit()
    return user


def get_user(*, session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"user {user_id} does not exist")
    return user


def get_user_by_name(*, session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        raise NotFound(f"user {name!r} does not exist")
    return user


def token_sha256(token: str) -> str:
    """What is stored of a token (the server's tokens, and the metrics token's setting): its SHA-256 in hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(session: Session, user: User, actor: User | None) -> str:
    """A new token for ``user`` in the caller's transaction (flushed, not committed); the plain token, shown once."""
    lookup = secrets.token_hex(8)
    plain = f"{TOKEN_PREFIX}_{lookup}_{secrets.token_urlsafe(32)}"
    token = ApiToken(user_id=user.id, lookup=lookup, token_sha256=token_sha256(plain))
    session.add(token)
    session.flush()
    add_log_entry(session, actor, "issue_token", f"user:{user.id}", {"token": token.id})
    return plain


def issue_token(*, session: Session, user_id: int, actor: User | None = None) -> tuple[ApiToken, str]:
    """A new token for the user; the plain token is returned once and only its SHA-256 is stored. A disabled user
    gets none (Conflict): ``enable`` them first."""
    user = get_user(session=session, user_id=user_id)
    if user.disabled_at is not None:
        raise Conflict(f"user {user.name!r} is disabled: enable them first (layersched admin user enable)")
    plain = new_token(session, user, actor)
    token = session.scalars(select(ApiToken).where(ApiToken.lookup == plain.split("_", 2)[1])).one()
    session.commit()
    return token, plain


def revoke_token(
    *, session: Session, token_id: int, actor: User | None = None, now: dt.datetime | None = None
) -> ApiToken:
    token = session.get(ApiToken, token_id)
    if token is None:
        raise NotFound(f"token {token_id} does not exist")
    if token.revoked_at is None:
        token.revoked_at = now or utcnow()
    add_log_entry(session, actor, "revoke_token", f"user:{token.user_id}", {"token": token_id})
    session.commit()
    return token


def end_page_sessions(*, session: Session, token_id: int) -> None:
    """Sign-out: every page session signed in with ``token_id`` ends (see ``ApiToken.session_generation``)."""
    # One UPDATE, so two sign-outs at once both count.
    session.execute(
        update(ApiToken).where(ApiToken.id == token_id).values(session_generation=ApiToken.session_generation + 1)
    )
    session.commit()


def authenticate(*, session: Session, token: str, now: dt.datetime | None = None) -> User | None:
    """The user owning ``token``, or None for a malformed, unknown or revoked token."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX or "\x00" in token:  # PostgreSQL refuses NUL in a query
        return None
    row = session.scalar(select(ApiToken).where(ApiToken.lookup == parts[1]))
    if row is None or row.revoked_at is not None:
        return None
    # The lookup part finds the row; the secret is compared in constant time so timing reveals nothing of it.
    if not hmac.compare_digest(row.token_sha256, token_sha256(token)):
        return None
    if row.user.disabled_at is not None:  # disabling revokes the tokens too; this holds should one be missed
        return None
    now = now or utcnow()
    # Recorded at minute resolution: a write per request would contend with the worker on SQLite.
    if row.last_used_at is None or now - row.last_used_at > dt.timedelta(minutes=1):
        row.last_used_at = now
        session.commit()
    return row.user
