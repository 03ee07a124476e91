"""A challenge as one document (``layersched admin challenge apply|export``, ``docs/CHALLENGE.md``): the API's
bodies for it, and the settings as the applied challenge makes them.

The rules a challenge sets (team size, invite hours, merger deadline, final-selection size, submission deadline)
live in the database (``storage.challenge``) and override the ``LAYERSCHED_*`` settings of the same names, which stay
their defaults: ``effective_settings`` is what every route reads (``deps.SettingsDep``).
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from layersched.server import storage
from layersched.server.config import Settings
from layersched.server.schemas import NO_NUL, PHASE_NAME, Visibility
from layersched.server.storage.challenge import RULE_NAMES, PhaseRule, Rules


class RulesSpec(BaseModel):
    """The challenge's rules; a rule left out (null) is its ``LAYERSCHED_*`` setting."""

    model_config = ConfigDict(extra="forbid")

    submission_deadline: AwareDatetime | None = None
    final_submissions: int | None = Field(default=None, ge=1)
    team_max_size: int | None = Field(default=None, ge=1)
    team_invite_hours: float | None = Field(default=None, gt=0)
    team_merge_deadline: AwareDatetime | None = None


class PhaseSpec(BaseModel):
    """A phase; ``opens_at`` null: now when it is made, as it is afterwards; ``closes_at`` null: open-ended;
    ``daily_quota`` null: the server's."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=PHASE_NAME)
    title: str = Field(default="", max_length=200, pattern=NO_NUL)
    evalset: str = Field(min_length=1, max_length=100, pattern=NO_NUL)
    opens_at: AwareDatetime | None = None
    closes_at: AwareDatetime | None = None
    daily_quota: int | None = Field(default=None, ge=0)
    visibility: Visibility = "public"


class ChallengeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: RulesSpec = Field(default_factory=RulesSpec)
    phases: list[PhaseSpec] = Field(default_factory=list, max_length=100)

    @model_validator(mode="after")
    def _unique_phase_names(self) -> ChallengeSpec:
        names = [p.name for p in self.phases]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"phase {repeated[0]!r} is named twice; phase names are unique")
        return self

    def rules_values(self) -> Rules:
        return Rules(**self.rules.model_dump())

    def phase_values(self) -> list[PhaseRule]:
        return [PhaseRule(**p.model_dump()) for p in self.phases]

    @classmethod
    def of(cls, rules: Rules, phases: list[PhaseRule]) -> ChallengeSpec:
        return cls(
            rules=RulesSpec(**{name: getattr(rules, name) for name in RULE_NAMES}),
            phases=[PhaseSpec(**vars(p)) for p in phases],
        )


class ChallengePlanPublic(BaseModel):
    """What applying the challenge changes (``changes``, in words, in order), what it leaves alone (``notes``) and
    whether it was applied (false: a dry run, or nothing to change)."""

    changes: list[str]
    notes: list[str]
    applied: bool


def effective_settings(session: Session, base: Settings) -> Settings:
    """``base`` with the rules of the applied challenge in place of their settings."""
    try:
        rules = storage.get_rules(session=session)
    except SQLAlchemyError:
        # The database does not answer (or has no schema yet): each route that needs it fails on its own query,
        # and /healthz, which reads the broker's setting, still answers, naming the database.
        session.rollback()
        return base
    overrides = {name: value for name in RULE_NAMES if (value := getattr(rules, name)) is not None}
    return base.model_copy(update=overrides) if overrides else base
