"""One-time sign-in links (``admin user import --links``, ``admin user link``): a link opens the pages signed in and
shows its user a fresh API token to copy into ``layersched login``. Only the SHA-256 of a link's code is stored; a
link is used once, before it expires, and never for a disabled user."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from layersched.server.errors import Conflict, NotFound
from layersched.server.models import SignInLink, User
from layersched.server.storage.accounts import new_token
from layersched.server.storage.audit import add_log_entry

LINK_PREFIX = "lsl"


def _code_sha256(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def new_signin_link(session: Session, *, user: User, actor: User | None, hours: float, now: dt.datetime) -> str:
    """A link code for ``user``, valid ``hours``, in the caller's transaction; the plain code, shown once."""
    code = f"{LINK_PREFIX}_{secrets.token_urlsafe(24)}"
    link = SignInLink(
        user_id=user.id,
        code_sha256=_code_sha256(code),
        created_at=now,
        expires_at=now + dt.timedelta(hours=hours),
        created_by_id=actor.id if actor else None,
    )
    session.add(link)
    session.flush()
    add_log_entry(session, actor, "signin_link", f"user:{user.id}", {"link": link.id})
    return code


def create_signin_link(*, session: Session, user: User, actor: User, hours: float, now: dt.datetime) -> str:
    """``admin user link NAME``: a new link for an existing, enabled user (one transaction)."""
    if user.disabled_at is not None:
        raise Conflict(f"user {user.name!r} is disabled: enable them first (layersched admin user enable)")
    code = new_signin_link(session, user=user, actor=actor, hours=hours, now=now)
    session.commit()
    return code


def _usable(session: Session, code: str, now: dt.datetime) -> SignInLink:
    if not code.startswith(f"{LINK_PREFIX}_") or len(code) > 100 or "\x00" in code:
        raise NotFound("this sign-in link is not one the server made: check that it was copied whole")
    link = session.scalar(select(SignInLink).where(SignInLink.code_sha256 == _code_sha256(code)))
    if link is None:
        raise NotFound("this sign-in link is not one the server made: check that it was copied whole")
    if link.used_at is not None:
        used = link.used_at.astimezone(dt.timezone.utc).isoformat()
        raise Conflict(f"this sign-in link was used already, at {used}; ask an organiser for a new one")
    if now >= link.expires_at:
        expired = link.expires_at.astimezone(dt.timezone.utc).isoformat()
        raise Conflict(f"this sign-in link expired at {expired}; ask an organiser for a new one")
    if link.user.disabled_at is not None:
        raise Conflict(f"the account {link.user.name!r} is disabled; ask an organiser")
    return link


def peek_signin_link(*, session: Session, code: str, now: dt.datetime) -> User:
    """Whose link ``code`` is, if it can still be used (reads only: the page asks before it signs in)."""
    return _usable(session, code, now).user


def use_signin_link(*, session: Session, code: str, now: dt.datetime) -> tuple[User, str]:
    """Use the link up: its user and a new API token for them (shown once), in one transaction."""
    link = _usable(session, code, now)
    # Used up by a conditional update: of two uses at once (a double click), one gets the token, the other is told.
    taken = session.execute(
        update(SignInLink).where(SignInLink.id == link.id, SignInLink.used_at.is_(None)).values(used_at=now)
    )
    if not taken.rowcount:  # type: ignore[attr-defined]
        session.rollback()
        raise Conflict("this sign-in link was used already, a moment ago; ask an organiser for a new one")
    plain = new_token(session, link.user, link.user)
    session.commit()
    return link.user, plain
