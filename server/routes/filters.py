"""The query parameters that choose submissions for the organisers (their views, exports and bulk actions): one
definition, so that ``?phase=final&state=failed&category=infrastructure_error`` means the same everywhere, in the
API (a query model) and on the organisers' page (the same model, from its form)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from fastapi import Depends, Query
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from layersched.server.schemas import NO_NUL, State
from layersched.server.storage.submission_views import SERVICE_FAILURES, SubmissionFilter


class FilterQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    phase: str | None = Field(default=None, min_length=1, max_length=50, pattern=NO_NUL, description="a phase's name")
    state: State | None = Field(default=None, description="the state of the primary evaluation")
    owner: str | None = Field(default=None, min_length=1, max_length=100, pattern=NO_NUL, description="a user's name")
    team: str | None = Field(default=None, min_length=1, max_length=100, pattern=NO_NUL, description="a team's name")
    category: str | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        pattern=NO_NUL,
        description=f"a failure category (timeout, crash, ...); {SERVICE_FAILURES!r}: every failure of the service",
    )
    since: AwareDatetime | None = Field(default=None, description="uploaded at or after (ISO 8601 with its zone)")

    def chosen(self) -> SubmissionFilter:
        return SubmissionFilter(**self.model_dump())


FILTER_FIELDS = tuple(FilterQuery.model_fields)


def filter_from(values: Mapping[str, str]) -> SubmissionFilter:
    """The filter of a page's form (empty fields are no filter); raises pydantic's ValidationError as the API
    would refuse the same values."""
    return FilterQuery.model_validate({k: v for k, v in values.items() if k in FILTER_FIELDS and v}).chosen()


def submission_filter(query: Annotated[FilterQuery, Query()]) -> SubmissionFilter:
    return query.chosen()


FilterDep = Annotated[SubmissionFilter, Depends(submission_filter)]
