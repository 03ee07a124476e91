from __future__ import annotations

import pytest

from layersched.sdk import errors
from layersched.sdk.errors import ApiError, error_for


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (401, "unauthorized", errors.AuthError),
        (403, "forbidden", errors.Forbidden),
        (404, "not_found", errors.NotFound),
        (409, "conflict", errors.Conflict),
        (413, "bundle_too_large", errors.BundleRejected),
        (422, "invalid_bundle", errors.BundleRejected),
        (422, "invalid_policy", errors.BundleRejected),
        (422, "invalid_request", errors.InvalidRequest),
        (429, "quota_exceeded", errors.QuotaExceeded),
        (429, "too_many_in_flight", errors.QuotaExceeded),
        (500, "http_500", errors.ServerError),
        (503, "http_503", errors.ServerError),
    ],
    ids=lambda v: str(v) if not isinstance(v, type) else v.__name__,
)
def test_error_for_maps_status_and_code(status: int, code: str, cls: type[ApiError]) -> None:
    err = error_for(status, code, "the message")
    assert type(err) is cls
    assert (err.status, err.code, err.message, str(err)) == (status, code, "the message", "the message")


def test_hierarchy() -> None:
    assert issubclass(errors.Forbidden, errors.AuthError)
    for cls in (
        errors.ConfigError,
        errors.BundleError,
        errors.PolicyCheckError,
        errors.WaitTimeout,
        errors.ServerUnreachable,
        ApiError,
    ):
        assert issubclass(cls, errors.LayerschedError)
    assert not issubclass(errors.ServerUnreachable, ApiError)


def test_repr_names_status_and_code() -> None:
    assert repr(error_for(429, "quota_exceeded", "no more")) == (
        "QuotaExceeded(status=429, code='quota_exceeded', message='no more')"
    )
