"""The challenge as one document, for organisers: ``GET /admin/challenge`` (export) and ``PUT /admin/challenge``
(apply, or with ``dry_run`` only say what applying would change)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from layersched.server import storage
from layersched.server.challenge import ChallengePlanPublic, ChallengeSpec
from layersched.server.deps import Organiser, SessionDep

router = APIRouter(prefix="/admin/challenge", tags=["organisers"])


@router.get("", response_model=ChallengeSpec)
def export_challenge(session: SessionDep, _actor: Organiser) -> ChallengeSpec:
    """The server's challenge rules and every phase, as a challenge file holds them."""
    return ChallengeSpec.of(*storage.export_challenge(session=session))


@router.put("", response_model=ChallengePlanPublic)
def apply_challenge(
    session: SessionDep,
    actor: Organiser,
    body: ChallengeSpec,
    dry_run: Annotated[bool, Query(description="only say what would change")] = False,
) -> ChallengePlanPublic:
    """Bring the rules and phases to the body's, in one transaction with one audit-log entry; a refusal (a set that
    is not registered, a set change on a phase with submissions, ...) changes nothing."""
    plan = storage.apply_challenge(
        session=session, rules=body.rules_values(), phases=body.phase_values(), actor=actor, dry_run=dry_run
    )
    return ChallengePlanPublic(changes=plan.changes, notes=plan.notes, applied=bool(plan.changes) and not dry_run)
