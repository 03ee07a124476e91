from __future__ import annotations

from typing import cast

from fastapi import APIRouter

from layersched.server import storage
from layersched.server.deps import CurrentUser, SessionDep, SettingsDep
from layersched.server.schemas import MePublic, Role

router = APIRouter(tags=["participants"])


@router.get("/me", response_model=MePublic)
def read_me(session: SessionDep, user: CurrentUser, settings: SettingsDep) -> MePublic:
    return MePublic(
        id=user.id,
        name=user.name,
        email=user.email,
        role=cast(Role, user.role),  # CHECK constraint guarantees the value
        submissions_today=storage.count_submissions_today(session=session, owner_id=user.id),
        daily_quota=settings.daily_quota,
    )
