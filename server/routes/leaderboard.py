from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from layersched.server import leaderboard
from layersched.server.deps import OptionalUser, SessionDep
from layersched.server.schemas import Leaderboard

router = APIRouter(tags=["leaderboard"])


@router.get("/leaderboard", response_model=Leaderboard)
def read_leaderboard(
    session: SessionDep, user: OptionalUser, split: Literal["public", "private"] = "public"
) -> Leaderboard:
    return leaderboard.visible_leaderboard(session=session, split=split, viewer=user)
