from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Response

from layersched.server import leaderboard
from layersched.server.deps import OptionalUser, SessionDep
from layersched.server.schemas import Leaderboard

router = APIRouter(tags=["leaderboard"])


@router.get("/leaderboard", response_model=Leaderboard)
def read_leaderboard(
    session: SessionDep, user: OptionalUser, split: Literal["public", "private"] = "public"
) -> Response:
    # The body is cached with the board (serialising 500 rows per request cost more than the request's budget).
    body = leaderboard.visible_leaderboard_json(session=session, split=split, viewer=user)
    return Response(content=body, media_type="application/json")
