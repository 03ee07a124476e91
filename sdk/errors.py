"""Errors raised by the layersched SDK (client, bundling, validation, configuration).

Hierarchy::

    LayerschedError               base of everything the SDK raises on purpose
    ├── ConfigError               no server or token configured, unreadable or unwritable config file
    ├── BundleError               the local bundle breaks a limit (size, file count), holds a link, lacks policy.py
    ├── PolicyCheckError          ``check_policy``: the policy broke the contract on a local episode
    ├── WaitTimeout               ``Client.wait`` gave up following an evaluation (which goes on on the server)
    ├── ServerUnreachable         no HTTP answer at all: connection refused, DNS failure, timeout
    └── ApiError                  the server answered with an error body (status, code, message)
        ├── AuthError             401: missing, wrong or revoked token
        │   └── Forbidden         403: the token is valid but its role may not do this
        ├── NotFound              404
        ├── Conflict              409
        ├── BundleRejected        413 ``bundle_too_large``, 422 ``invalid_bundle`` / ``invalid_policy``
        ├── InvalidRequest        422 ``invalid_request`` (and any other 4xx the contract does not name)
        ├── QuotaExceeded         429 ``quota_exceeded`` / ``too_many_in_flight``
        └── ServerError           5xx, or an answer that does not follow docs/API.md

``ServerUnreachable`` is not an ``ApiError``: there is no status, code or body to report (the same cut as httpx's
``TransportError`` against ``HTTPStatusError``). Every message names the offending value, so the CLI can print it as
one line without a traceback.
"""

from __future__ import annotations


class LayerschedError(Exception):
    """Base class of every deliberate error of layersched.sdk."""


class ConfigError(LayerschedError):
    """Missing or unusable configuration (server URL, token, config file)."""


class BundleError(LayerschedError):
    """A file or directory cannot be bundled for submission; ``problems`` lists every reason found (a directory
    is searched whole, so one run names them all), the message joins them."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]

    @classmethod
    def of(cls, source: object, problems: list[str]) -> BundleError:
        """One error for all of ``problems`` (at least one) of the bundle ``source``."""
        if len(problems) == 1:
            return cls(problems[0])
        return cls(f"{len(problems)} problems with {source}: " + "; ".join(problems), problems)


class PolicyCheckError(LayerschedError):
    """The policy broke the contract during a local check."""


class WaitTimeout(LayerschedError):
    """Following an evaluation took longer than the caller allowed; the evaluation itself goes on."""


class ServerUnreachable(LayerschedError):
    """The server could not be reached at all (no HTTP response)."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class ApiError(LayerschedError):
    """The server answered with an error: HTTP ``status``, the contract's snake_case ``code`` and its ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r})"


class AuthError(ApiError):
    """401: the token is missing, wrong or revoked."""


class Forbidden(AuthError):
    """403: the token is valid but may not do this (organiser route, private split not published)."""


class NotFound(ApiError):
    """404: no such resource, or not yours."""


class Conflict(ApiError):
    """409: the resource is not in a state that allows the action."""


class BundleRejected(ApiError):
    """413/422: the server refused the bundle or the policy entry point."""


class InvalidRequest(ApiError):
    """422 ``invalid_request`` or another client error the contract does not name."""


class QuotaExceeded(ApiError):
    """429: daily submission quota used up, or too many evaluations in flight."""


class ServerError(ApiError):
    """5xx, or a response that does not follow the API contract."""


def error_for(status: int, code: str, message: str) -> ApiError:
    """The ``ApiError`` subclass for an HTTP status and contract code."""
    cls: type[ApiError]
    if status == 401:
        cls = AuthError
    elif status == 403:
        cls = Forbidden
    elif status == 404:
        cls = NotFound
    elif status == 409:
        cls = Conflict
    elif status == 413 or code in ("invalid_bundle", "invalid_policy", "bundle_too_large"):
        cls = BundleRejected
    elif status == 429:
        cls = QuotaExceeded
    elif 400 <= status < 500:
        cls = InvalidRequest
    else:
        cls = ServerError
    return cls(status, code, message)
