from __future__ import annotations

from fastapi import APIRouter

from layersched.server import storage
from layersched.server.deps import SessionDep
from layersched.server.errors import NotFound
from layersched.server.schemas import EvalSetPublic, ScenarioPublic

router = APIRouter(prefix="/evalsets", tags=["evaluation sets"])


@router.get("/current", response_model=EvalSetPublic)
def read_current_evalset(session: SessionDep) -> EvalSetPublic:
    evalset = storage.get_current_evalset(session=session)
    if evalset is None:
        raise NotFound("no evaluation set is registered yet")
    return EvalSetPublic(
        name=evalset.name,
        commitment=evalset.commitment,
        revealed=evalset.revealed,
        scenarios=[ScenarioPublic.model_validate(s) for s in evalset.scenarios],
    )
