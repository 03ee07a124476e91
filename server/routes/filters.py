"""The query parameters that choose submissions for the organisers (their views, exports and bulk actions): one
definition, so that ``?phase=final&state=failed&category=infrastructure_error`` means the same everywhere, in the
API (a query model) and on the organisers' page (the same model, from its form)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from fastapi import Depends, Query

from layersched.server.organiser_schemas import FilterQuery
from layersched.server.storage.submission_views import SubmissionFilter

FILTER_FIELDS = tuple(FilterQuery.model_fields)


def filter_from(values: Mapping[str, str]) -> SubmissionFilter:
    """The filter of a page's form (empty fields are no filter); raises pydantic's ValidationError as the API
    would refuse the same values."""
    return FilterQuery.model_validate({k: v for k, v in values.items() if k in FILTER_FIELDS and v}).chosen()


def submission_filter(query: Annotated[FilterQuery, Query()]) -> SubmissionFilter:
    return query.chosen()


FilterDep = Annotated[SubmissionFilter, Depends(submission_filter)]
