"""One namespace for the names the boards show: participants', teams' and baselines'.

A board row names its competitor by the team's name or the participant's (``coalesce(Team.name, User.name)``) and a
baseline's row by the baseline's, so two of them alike would be two rows nobody could tell apart (or a competitor
passing for the reference). A new user or team must take a name that none of them has, compared case-insensitively
(for live teams the database holds it too: ``models.Team``'s unique index on ``lower(name)``).

Names ``team-<number>`` are kept for the teams the server renames (``storage.teams``: a team that bore the name of a
member who left), so that such a name is always free for them and always means that.
"""

from __future__ import annotations

import re

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


# The names the server gives to the teams it renames: team-<the team's id>, -<n> after it if a name taken before
# this rule holds that.
RENAMED_TEAM = re.compile(r"team-[0-9]+(-[0-9]+)?", re.IGNORECASE)


def team_name_taken(name: str) -> str:
    """The refusal of a team name a live team has, whether the application saw it or the database's index did."""
    return f"a team named {name!r} already exists"


def name_conflict(*, session: Session, name: str, owner: User | None = None) -> str | None:
    """Why ``name`` cannot be a new participant's or team's name, or None. ``owner``: the user founding a team, who
    may give it their own name (their row then is the team's, until they leave it: ``storage.teams``)."""
    if RENAMED_TEAM.fullmatch(name):
        return f"{name!r} is kept for the teams the server renames (team-<number>): choose another name"
    return name_taken(session=session, name=name, owner=owner)


def name_taken(*, session: Session, name: str, owner: User | None = None) -> str | None:
    """Why ``name`` is a name the boards show already (a baseline's, a participant's, a live team's), or None."""
    folded = name.lower()  # the names are ASCII (name_rules.DISPLAY_NAME): SQL lower() folds them alike
    if folded in _baseline_names(session):
        return f"{name!r} is the name of a baseline: the leaderboard could not tell the two apart"
    user = session.scalar(select(User).where(func.lower(User.name) == folded))
    if user is not None and (owner is None or user.id != owner.id):
        return f"{name!r} is the name of a participant: the leaderboard could not tell the two apart"
    live_team = select(Team.id).where(func.lower(Team.name) == folded, Team.dissolved_at.is_(None))
    if session.scalar(live_team) is not None:  # a dissolved team's name is free (storage.teams)
        return team_name_taken(name)
    return None
