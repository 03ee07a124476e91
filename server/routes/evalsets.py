from __future__ import annotations

from fastapi import APIRouter

from layersched.server import presenters, storage
from layersched.server.deps import SessionDep
from layersched.server.errors import NotFound
from layersched.server.schemas import EvalSetPublic

router = APIRouter(prefix="/evalsets", tags=["evaluation sets"])


@router.get("/current", response_model=EvalSetPublic)
def read_current_evalset(session: SessionDep) -> EvalSetPublic:
    evalset = storage.get_current_evalset(session=session)
    if evalset is None:
        raise NotFound("no evaluation set is registered yet")
    return presenters.evalset_public(evalset)
