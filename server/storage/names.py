"""One namespace for the names the boards show: participants', teams' and baselines'.

A board row names its competitor by the team's name or the participant's (``coalesce(Team.name, User.name)``) and a
baseline's row by the baseline's, so two of them alike would be two rows nobody could tell apart (or a competitor
passing for the reference). A new user or team must take a name that none of them has, compared case-insensitively.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server.errors import InvalidName
from layersched.server.models import BaselineResult, Team, User
from layersched.server.name_rules import display_name_problem
from layersched.sim.tracks import get_track, track_ids


def _baseline_names(session: Session) -> set[str]:
    """Every baseline a board could show: of the tracks this process knows, and those scored on this server."""
    names = {name for track_id in track_ids() for name in get_track(track_id).baseline_names}
    names.update(session.scalars(select(BaselineResult.baseline).distinct()))
    return {name.lower() for name in names}


def check_display_name(name: str) -> None:
    """Raise InvalidName when ``name`` breaks the rule of participants' and teams' names (``name_rules``)."""
    problem = display_name_problem(name)
    if problem is not None:
        raise InvalidName(problem)


def name_conflict(*, session: Session, name: str, owner: User | None = None) -> str | None:
    """Why ``name`` cannot be a new participant's or team's name, or None. ``owner``: the user founding a team, who
    may give it their own name (their row then is the team's)."""
    folded = name.lower()  # the names are ASCII (name_rules.DISPLAY_NAME): SQL lower() folds them alike
    if folded in _baseline_names(session):
        return f"{name!r} is the name of a baseline: the leaderboard could not tell the two apart"
    user = session.scalar(select(User).where(func.lower(User.name) == folded))
    if user is not None and (owner is None or user.id != owner.id):
        return f"{name!r} is the name of a participant: the leaderboard could not tell the two apart"
    live_team = select(Team.id).where(func.lower(Team.name) == folded, Team.dissolved_at.is_(None))
    if session.scalar(live_team) is not None:  # a dissolved team's name is free (storage.teams)
        return f"a team named {name!r} already exists"
    return None
