"""Errors raised on purpose by layersched.server; the app turns them into HTTP error bodies at the edge.

Hierarchy (HTTP status and ``code`` of the error body in brackets)::

    ServiceError                       base of every deliberate error of the server's domain logic
    ├── Unauthorized                   [401 unauthorized] no token, or an unknown or revoked one
    ├── NotFound                       [404 not_found] the row does not exist or the caller may not know it does
    ├── Forbidden                      [403 forbidden]
    ├── Conflict                       [409 conflict] the request contradicts the current state
    ├── InvalidRequest                 [422 invalid_request] a value the schema admits but the service cannot use,
    │   │                              or values that contradict each other
    │   └── InvalidName                a name that breaks ``name_rules`` (checked in storage for the callers that
    │                                  bypass the request schemas, which check it first)
    ├── BundleTooLarge                 [413 bundle_too_large]
    ├── InvalidBundle                  [422 invalid_bundle] an archive that is unsafe, malformed or over a limit
    ├── InvalidPolicy                  [422 invalid_policy] the entry point does not parse or lacks ``policy``
    ├── InvalidRoster                  [422 invalid_roster] a roster line is bad (named by line and field)
    ├── QuotaExceeded                  [429 quota_exceeded] the daily submission quota is used up
    ├── TooManyInFlight                [429 too_many_in_flight]
    ├── StorageUnavailable             [503 storage_unavailable] the bundle store cannot be written
    └── TrackUnavailable               [503 track_unavailable] a set's track is not registered in this process

Every message is one sentence naming the offending value. ``error_response`` writes the body every error has,
``{"error": {"code": ..., "message": ...}}``, also for errors raised outside a route (a middleware's 401 or 413).
"""

from __future__ import annotations

from starlette.responses import JSONResponse


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


class ServiceError(Exception):
    """Base class; ``status`` and ``code`` say how the route edge reports it."""

    status = 400
    code = "invalid_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class InvalidRequest(ServiceError):
    """A value the schema admits but the service cannot use, or values that contradict each other (a challenge
    naming one phase twice)."""

    status = 422
    code = "invalid_request"


class BundleTooLarge(ServiceError):
    status = 413
    code = "bundle_too_large"


class InvalidBundle(ServiceError):
    status = 422
    code = "invalid_bundle"


class InvalidPolicy(ServiceError):
    status = 422
    code = "invalid_policy"


class InvalidRoster(ServiceError):
    status = 422
    code = "invalid_roster"


class InvalidName(InvalidRequest):
    pass


class QuotaExceeded(ServiceError):
    status = 429
    code = "quota_exceeded"


class TooManyInFlight(ServiceError):
    status = 429
    code = "too_many_in_flight"


class StorageUnavailable(ServiceError):
    status = 503
    code = "storage_unavailable"


class TrackUnavailable(ServiceError):
    status = 503
    code = "track_unavailable"


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"
