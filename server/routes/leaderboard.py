from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from layersched.server import leaderboard, storage
from layersched.server.deps import OptionalUser, SessionDep
from layersched.server.schemas import NO_NUL, Leaderboard

router = APIRouter(tags=["leaderboard"])


@router.get("/leaderboard", response_model=Leaderboard)
def read_leaderboard(
    session: SessionDep,
    user: OptionalUser,
    split: Literal["public", "private"] = "public",
    phase: Annotated[str | None, Query(max_length=50, pattern=NO_NUL, description="default: the open phase")] = None,
) -> Response:
    board_phase = storage.resolve_phase(session=session, name=phase)
    # The body is cached with the board (serialising 500 rows per request cost more than the request's budget).
    body = leaderboard.visible_leaderboard_json(session=session, phase=board_phase, split=split, viewer=user)
    return Response(content=body, media_type="application/json")
