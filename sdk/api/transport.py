"""The client's connection to one server: the HTTP session, one request turned into parsed JSON or the SDK's own
error (``layersched.sdk.errors``), and following something until it ends. The resource parts
(``layersched.sdk.api.*``) build on ``Transport``; ``layersched.sdk.client.Client`` is all of them together."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterator
from typing import IO, Any, TypeVar

import httpx

from layersched.sdk.api.responses import EvaluationDetail, Submission
from layersched.sdk.config import API_PATH, normalise_server
from layersched.sdk.errors import ApiError, ServerError, ServerUnreachable, WaitTimeout, error_for
from layersched.sdk.terminal_text import shown

API_PREFIX = API_PATH


class Transport:
    """Talks to one server. ``token`` may be None for the public leaderboard."""

    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.server = normalise_server(server)
        self.token = token
        self.timeout = timeout
        headers = {"User-Agent": "layersched-sdk"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=self.server, headers=headers, timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        content: Iterator[bytes] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        url = API_PREFIX + path
        try:
            response = self._http.request(method, url, json=json, params=params, content=content, headers=headers)
        except httpx.TimeoutException:
            raise ServerUnreachable(
                f"the server at {self.server} did not answer {method} {url} within {self.timeout:g} s",
                server=self.server,
            ) from None
        except httpx.TransportError as exc:
            raise ServerUnreachable(
                f"cannot reach the server at {self.server}: {_transport_reason(exc, self.server)}", server=self.server
            ) from None
        if response.status_code >= 400:
            raise _api_error(response, method, url)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ServerError(
                response.status_code,
                "invalid_response",
                f"{method} {url} answered HTTP {response.status_code} with a body that is not JSON: "
                f"{_snippet(response.text)!r}",
            ) from None

    def _download(self, path: str, *, params: dict[str, Any] | None, sink: IO[bytes]) -> int:
        """GET ``path`` and write the body to ``sink`` as it arrives (an export: never held whole in memory); the
        bytes written. An error answer raises as ``_request``'s do, before anything is written."""
        url = API_PREFIX + path
        try:
            with self._http.stream("GET", url, params=params) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _api_error(response, "GET", url)
                written = 0
                for chunk in response.iter_bytes():
                    sink.write(chunk)
                    written += len(chunk)
                return written
        except httpx.TimeoutException:
            raise ServerUnreachable(
                f"the server at {self.server} did not answer GET {url} within {self.timeout:g} s", server=self.server
            ) from None
        except httpx.TransportError as exc:
            raise ServerUnreachable(
                f"cannot reach the server at {self.server}: {_transport_reason(exc, self.server)}", server=self.server
            ) from None


def _api_error(response: httpx.Response, method: str, url: str) -> ApiError:
    status = response.status_code
    try:
        body = response.json()
        error = body["error"]
        code, message = shown(str(error["code"])), shown(str(error["message"]))
    except (ValueError, KeyError, TypeError):
        code = f"http_{status}"
        message = f"{method} {url} failed with HTTP {status} {response.reason_phrase}: {_snippet(response.text)!r}"
    return error_for(status, code, message)


# OpenSSL's reasons when the other end answers a TLS handshake in plain HTTP (they vary with the OpenSSL version).
_PLAIN_HTTP_REASONS = frozenset(
    {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST"}
)


def _transport_reason(exc: httpx.TransportError, server: str) -> str:
    """Why no HTTP answer came, in words; an https:// URL aimed at a plain-HTTP server says so instead of OpenSSL's
    ``[SSL: WRONG_VERSION_NUMBER]``."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError) and cause.reason in _PLAIN_HTTP_REASONS:
            plain = "http://" + server.split("://", 1)[1]
            return f"it answers in plain HTTP, not HTTPS (TLS); use --server {plain} if that is the right server"
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__


def _snippet(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


F = TypeVar("F", Submission, EvaluationDetail)


def poll(
    fetch: Callable[[], F],
    on_update: Callable[[F], None] | None,
    poll_interval: float,
    timeout: float | None,
    sleep: Callable[[float], None],
    server: str,
) -> F:
    started = time.monotonic()
    failures = 0
    while True:
        try:
            current = fetch()
            failures = 0
        except (ServerUnreachable, ServerError):
            failures += 1  # a restarting server or a proxy hiccup should not end a long wait
            if failures > 3:
                raise
            sleep(min(poll_interval * 2**failures, 30.0))
            continue
        if on_update is not None:
            on_update(current)
        if current.finished:
            return current
        if timeout is not None and time.monotonic() - started > timeout:
            raise WaitTimeout(f"gave up waiting after {timeout:g} s; the evaluation goes on at {server}")
        sleep(poll_interval)
