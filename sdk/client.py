"""A small typed HTTP client for the layersched API (docs/API.md); the CLI uses it and scripts can import it.

    from layersched.sdk.client import Client
    from layersched.sdk.bundle import make_bundle

    with Client.from_config() as client:
        sub = client.submit(make_bundle("my_policy.py"), name="greedy-plus")
        sub = client.wait(sub.id)
        print(sub.state, sub.score, sub.rank)

Every method returns frozen dataclasses decoded from the documented JSON (unknown extra fields are ignored, missing
documented fields raise ``ServerError``). Failures are the SDK's own types from ``layersched.sdk.errors``.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import ssl
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints
from urllib.parse import quote

import httpx

from layersched.sdk.bundle import Bundle
from layersched.sdk.config import API_PATH, Config, load_config, normalise_server
from layersched.sdk.errors import ApiError, ServerError, ServerUnreachable, WaitTimeout, error_for
from layersched.sim.tracks import DEFAULT_TRACK_ID, get_track

API_PREFIX = API_PATH
TERMINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})
ProgressCallback = Callable[[int, int], None]

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------- response types


@dataclass(frozen=True)
class Me:
    id: int
    name: str
    email: str
    role: str
    submissions_today: int  # the team's, for a member of one
    daily_quota: int
    team: str | None = None  # None: competes alone (or a server older than teams)


@dataclass(frozen=True)
class Team:
    """A team (``GET /teams/mine``): its members now, in the order they joined, and the most it may have."""

    name: str
    members: list[str]
    max_size: int
    created_at: str


@dataclass(frozen=True)
class Invite:
    """A one-use code to join ``team``, valid until ``expires_at``; the server shows it once."""

    team: str
    code: str
    expires_at: str


@dataclass(frozen=True)
class Refusal:
    """The error that an upload made now would get: the HTTP status and the error body's code and message,
    word for word (the server runs the upload's own checks)."""

    status: int
    code: str
    message: str


@dataclass(frozen=True)
class Allowance:
    """``GET /me/allowance``: whether an upload made now would be accepted, and the counts behind it."""

    submissions_today: int
    daily_quota: int
    in_flight: int
    max_in_flight: int
    refusal: Refusal | None = None
    # The phase the upload would be for and its track (None: a server older than phases, or no such phase).
    phase: str | None = None
    track: str | None = None

    def raise_if_refused(self) -> None:
        """Raise the error the upload would get (``QuotaExceeded``, ``Conflict``, ...), before anything is sent."""
        if self.refusal is not None:
            raise error_for(self.refusal.status, self.refusal.code, self.refusal.message)


@dataclass(frozen=True)
class User:
    id: int
    name: str
    email: str
    role: str


@dataclass(frozen=True)
class Progress:
    done: int
    total: int


@dataclass(frozen=True)
class ErrorInfo:
    category: str
    message: str


@dataclass(frozen=True)
class Score:
    """Public-split score: weighted geometric mean of per-scenario ratios to the reference baseline of its set's
    track (lower is better) and its 95% CI."""

    overall: float
    ci_low: float
    ci_high: float
    per_scenario: dict[str, float]


@dataclass(frozen=True)
class AuditVerdict:
    verdict: str
    mismatches: list[str]


@dataclass(frozen=True)
class Evaluation:
    id: int
    kind: str
    state: str
    evalset_commitment: str
    bundle_sha256: str
    progress: Progress
    # docs/API.md says str, but a queued evaluation has not chosen its simulator or sandbox yet: the server sends null.
    sim_version: str | None = None
    sandbox: str | None = None
    image_digest: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    error: ErrorInfo | None = None
    audit: AuditVerdict | None = None
    evalset_name: str | None = None
    # An audit's: the evaluation whose episodes it replays and compares with (the newest succeeded one).
    audit_of: int | None = None

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class EvaluationDetail(Evaluation):
    """``GET /admin/evaluations/{id}``: an evaluation with its per-episode rows (kept as JSON objects)."""

    episodes: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Submission:
    id: int
    name: str
    owner: str
    created_at: str
    bundle_sha256: str
    state: str
    progress: Progress
    description: str = ""
    disqualified: str | None = None
    error: ErrorInfo | None = None
    score: Score | None = None
    rank: int | None = None
    evaluations: list[Evaluation] = field(default_factory=list)
    # Chosen for the final ranking (``layersched select``).
    selected: bool = False
    # Under the Ladder: False when ``score`` is your best shown public score, which this submission did not beat by
    # more than the step; None when the Ladder plays no part.
    score_revealed: bool | None = None
    phase: str | None = None  # the phase it was submitted to (None: a server older than phases)

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class EpisodeLog:
    scenario: str
    episode: str
    status: str
    message: str | None = None
    stdout: str | None = None  # public sample-set episodes only
    stderr: str | None = None


@dataclass(frozen=True)
class LeaderboardRow:
    rank: int | None
    participant: str
    submission_name: str
    score: float
    ci_low: float
    ci_high: float
    submission_id: int | None = None
    per_scenario: dict[str, float] = field(default_factory=dict)
    submissions: int = 0
    submitted_at: str | None = None
    baseline: bool = False
    members: list[str] = field(default_factory=list)  # a team's row: its members; empty otherwise

    def is_for(self, name: str) -> bool:
        """Whether this row is the participant ``name``'s: their own, or their team's."""
        return not self.baseline and (self.participant == name or name in self.members)


class OnTrack:
    """A set or board that names its track (docs/API.md, "Tracks"): ``track``, ``track_title``, ``reference_baseline``.

    A server older than tracks sends none of them: its only problem was the default track's.
    """

    track: str
    reference_baseline: str | None

    @property
    def reference(self) -> str:
        """The baseline its scores are ratios to: as the server says, else (an older server) as the track says."""
        return self.reference_baseline or get_track(self.track).reference_baseline


@dataclass(frozen=True)
class Leaderboard(OnTrack):
    split: str
    frozen: bool
    published: bool
    rows: list[LeaderboardRow]
    track: str = DEFAULT_TRACK_ID
    track_title: str | None = None
    reference_baseline: str | None = None
    phase: str | None = None  # None: a server older than phases


@dataclass(frozen=True)
class PhaseInfo(OnTrack):
    """A phase of the challenge (``GET /phases``): the set it scores on, when it takes submissions, its quota."""

    name: str
    title: str
    evalset: str
    opens_at: str
    open: bool
    daily_quota: int
    visibility: str
    closes_at: str | None = None
    track: str = DEFAULT_TRACK_ID
    track_title: str | None = None
    reference_baseline: str | None = None


@dataclass(frozen=True)
class LeaderboardState:
    phase: str
    frozen: bool
    published: bool
    frozen_at: str | None = None
    published_at: str | None = None


@dataclass(frozen=True)
class EvalSetScenario:
    name: str
    weight: float
    public_episodes: int


@dataclass(frozen=True)
class EvalSetInfo(OnTrack):
    name: str
    commitment: str
    scenarios: list[EvalSetScenario]
    track: str = DEFAULT_TRACK_ID
    track_title: str | None = None
    reference_baseline: str | None = None


@dataclass(frozen=True)
class CreatedUser:
    user: User
    token: str  # shown once


@dataclass(frozen=True)
class CreatedToken:
    id: int
    token: str  # shown once


@dataclass(frozen=True)
class AuditLogEntry:
    at: str
    actor: str
    action: str
    target: str | None = None
    detail: Any = None


@dataclass(frozen=True)
class Page(Generic[T]):
    data: list[T]
    count: int


# ---------------------------------------------------------------------------------------------- the client


class Client:
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

    @classmethod
    def from_config(cls, config: Config | None = None, *, require_token: bool = True, timeout: float = 30.0) -> Client:
        """A client for the saved login (or ``LAYERSCHED_SERVER`` / ``LAYERSCHED_TOKEN``)."""
        config = config if config is not None else load_config()
        server = config.require_server()
        token = config.require_token() if require_token else config.token
        return cls(server, token, timeout=timeout)

    def page_url(self, submission_id: int) -> str:
        """The submission's page on the server's website: its owner signs in there with the token to read it."""
        return f"{self.server}/submissions/{submission_id}"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- participants

    def me(self) -> Me:
        return _decode(Me, self._request("GET", "/me"), "me")

    def allowance(self, phase: str | None = None) -> Allowance:
        """Whether an upload (to ``phase``; None: the only open one) would be accepted now (``GET /me/allowance``);
        a wrong token fails here (``AuthError``)."""
        params = {"phase": phase} if phase is not None else None
        return _decode(Allowance, self._request("GET", "/me/allowance", params=params), "allowance")

    def phases(self) -> list[PhaseInfo]:
        """The challenge's phases (``GET /phases``), in the order they open."""
        return _page(self._request("GET", "/phases"), PhaseInfo, "phases").data

    def teams(self, *, offset: int = 0, limit: int = 50) -> Page[Team]:
        """A page of the teams and their members, oldest first, and how many there are (``GET /teams``)."""
        return _page(self._request("GET", "/teams", params={"offset": offset, "limit": limit}), Team, "teams")

    def my_team(self) -> Team:
        """The caller's team (``GET /teams/mine``); ``NotFound`` when they are in none."""
        return _decode(Team, self._request("GET", "/teams/mine"), "team")

    def create_team(self, name: str) -> Team:
        return _decode(Team, self._request("POST", "/teams", json={"name": name}), "team")

    def invite(self) -> Invite:
        """A new one-use invite code to the caller's team."""
        return _decode(Invite, self._request("POST", "/teams/mine/invites"), "invite")

    def join_team(self, code: str) -> Team:
        return _decode(Team, self._request("POST", "/teams/join", json={"code": code}), "team")

    def leave_team(self) -> Team:
        """Leave the caller's team; the team as it is after."""
        return _decode(Team, self._request("POST", "/teams/mine/leave"), "team")

    def submit(
        self,
        bundle: Bundle,
        *,
        name: str,
        description: str = "",
        phase: str | None = None,
        track: str | None = None,
        on_progress: ProgressCallback | None = None,
        chunk_size: int = 64 * 1024,
    ) -> Submission:
        """Upload ``bundle`` (``POST /submissions``) to ``phase`` (None: the only open one); ``track``, when given,
        is the track the policy was checked for (the server refuses it unless it is the phase's);
        ``on_progress(sent, total)`` is called as bytes leave."""
        fields = {"name": name, "description": description}
        fields.update({key: value for key, value in (("phase", phase), ("track", track)) if value is not None})
        boundary = secrets.token_hex(16)
        body = _multipart(
            boundary,
            fields=fields,
            file_field="file",
            filename=bundle.filename,
            content_type=bundle.content_type,
            data=bundle.data,
        )

        def chunks() -> Iterator[bytes]:
            total = len(body)
            for start in range(0, total, chunk_size):
                piece = body[start : start + chunk_size]
                yield piece
                if on_progress is not None:
                    on_progress(start + len(piece), total)

        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}", "Content-Length": str(len(body))}
        raw = self._request("POST", "/submissions", content=chunks(), headers=headers)
        return _decode(Submission, raw, "submission")

    def submissions(self, *, offset: int = 0, limit: int = 50) -> Page[Submission]:
        raw = self._request("GET", "/submissions", params={"offset": offset, "limit": limit})
        return _page(raw, Submission, "submissions")

    def submission(self, submission_id: int) -> Submission:
        return _decode(Submission, self._request("GET", f"/submissions/{submission_id}"), "submission")

    def logs(self, submission_id: int) -> list[EpisodeLog]:
        raw = self._request("GET", f"/submissions/{submission_id}/logs")
        return _decode_list(EpisodeLog, _field(raw, "data", "logs"), "logs.data")

    def select(self, submission_id: int) -> Submission:
        """Add the submission to your final selection (``POST /submissions/{id}/select``)."""
        return _decode(Submission, self._request("POST", f"/submissions/{submission_id}/select"), "submission")

    def unselect(self, submission_id: int) -> Submission:
        """Take the submission out of your final selection (``POST /submissions/{id}/unselect``)."""
        return _decode(Submission, self._request("POST", f"/submissions/{submission_id}/unselect"), "submission")

    def leaderboard(self, split: str = "public", phase: str | None = None) -> Leaderboard:
        """A phase's board (None: the open phase's, as the server chooses)."""
        params = {"split": split, **({"phase": phase} if phase is not None else {})}
        return _decode(Leaderboard, self._request("GET", "/leaderboard", params=params), "leaderboard")

    def current_evalset(self) -> EvalSetInfo:
        return _decode(EvalSetInfo, self._request("GET", "/evalsets/current"), "evalset")

    def wait(
        self,
        submission_id: int,
        *,
        on_update: Callable[[Submission], None] | None = None,
        poll_interval: float = 2.0,
        timeout: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Submission:
        """Poll until the submission is succeeded, failed or cancelled; brief server outages are retried."""
        return _poll(lambda: self.submission(submission_id), on_update, poll_interval, timeout, sleep, self.server)

    # ---------------------------------------------------------------- organisers

    def admin_create_user(self, *, name: str, email: str, role: str = "participant") -> CreatedUser:
        raw = self._request("POST", "/admin/users", json={"name": name, "email": email, "role": role})
        return _decode(CreatedUser, raw, "created user")

    def admin_create_token(self, user_id: int) -> CreatedToken:
        return _decode(CreatedToken, self._request("POST", f"/admin/users/{user_id}/tokens"), "created token")

    def admin_revoke_token(self, token_id: int) -> None:
        self._request("DELETE", f"/admin/tokens/{token_id}")

    def admin_rerun(self, submission_id: int, *, evalset: str | None = None) -> Evaluation:
        raw = self._request("POST", f"/admin/submissions/{submission_id}/rerun", json={"evalset": evalset})
        return _decode(Evaluation, raw, "evaluation")

    def admin_audit(self, submission_id: int, *, sample: int | None = None) -> Evaluation:
        raw = self._request("POST", f"/admin/submissions/{submission_id}/audit", json={"sample": sample})
        return _decode(Evaluation, raw, "evaluation")

    def admin_cancel(self, submission_id: int) -> None:
        self._request("POST", f"/admin/submissions/{submission_id}/cancel")

    def admin_disqualify(self, submission_id: int, *, reason: str) -> None:
        self._request("POST", f"/admin/submissions/{submission_id}/disqualify", json={"reason": reason})

    def admin_freeze(self, frozen: bool = True, *, phase: str | None = None) -> LeaderboardState:
        raw = self._request("POST", "/admin/leaderboard/freeze", params=_phase_param(phase), json={"frozen": frozen})
        return _decode(LeaderboardState, raw, "leaderboard state")

    def admin_publish(self, *, phase: str | None = None) -> LeaderboardState:
        raw = self._request("POST", "/admin/leaderboard/publish", params=_phase_param(phase))
        return _decode(LeaderboardState, raw, "leaderboard state")

    def admin_create_phase(
        self,
        *,
        name: str,
        evalset: str,
        title: str = "",
        opens_at: str | None = None,
        closes_at: str | None = None,
        daily_quota: int | None = None,
        visibility: str = "public",
    ) -> PhaseInfo:
        """A new phase on the registered set ``evalset``; times are ISO 8601 with an offset (None: now, and
        open-ended), ``daily_quota`` None is the server's default."""
        body = {
            "name": name,
            "evalset": evalset,
            "title": title,
            "opens_at": opens_at,
            "closes_at": closes_at,
            "daily_quota": daily_quota,
            "visibility": visibility,
        }
        return _decode(PhaseInfo, self._request("POST", "/admin/phases", json=body), "phase")

    def admin_edit_phase(self, name: str, **changes: Any) -> PhaseInfo:
        """Change the fields named (``title``, ``opens_at``, ``closes_at``, ``daily_quota``, ``visibility``); a field
        given as None means open-ended for ``closes_at``, the server's quota for ``daily_quota``."""
        raw = self._request("PATCH", f"/admin/phases/{_path(name)}", json=changes)
        return _decode(PhaseInfo, raw, "phase")

    def admin_open_phase(self, name: str) -> PhaseInfo:
        return _decode(PhaseInfo, self._request("POST", f"/admin/phases/{_path(name)}/open"), "phase")

    def admin_close_phase(self, name: str, *, at: str | None = None) -> PhaseInfo:
        raw = self._request("POST", f"/admin/phases/{_path(name)}/close", json={"at": at})
        return _decode(PhaseInfo, raw, "phase")

    def admin_create_team(self, name: str) -> Team:
        return _decode(Team, self._request("POST", "/admin/teams", json={"name": name}), "team")

    def admin_assign(self, team: str, user: str) -> Team:
        raw = self._request("POST", f"/admin/teams/{_path(team)}/members", json={"user": user})
        return _decode(Team, raw, "team")

    def admin_remove(self, team: str, user: str) -> Team:
        return _decode(Team, self._request("DELETE", f"/admin/teams/{_path(team)}/members/{_path(user)}"), "team")

    def admin_reveal_evalset(self, name: str) -> None:
        self._request("POST", f"/admin/evalsets/{name}/reveal")

    def admin_audit_log(self, *, offset: int = 0, limit: int = 50) -> Page[AuditLogEntry]:
        raw = self._request("GET", "/admin/audit-log", params={"offset": offset, "limit": limit})
        return _page(raw, AuditLogEntry, "audit log")

    def admin_evaluation(self, evaluation_id: int) -> EvaluationDetail:
        raw = self._request("GET", f"/admin/evaluations/{evaluation_id}")
        return _decode(EvaluationDetail, raw, "evaluation")

    def admin_wait_evaluation(
        self,
        evaluation_id: int,
        *,
        on_update: Callable[[EvaluationDetail], None] | None = None,
        poll_interval: float = 2.0,
        timeout: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> EvaluationDetail:
        """Poll an evaluation (rerun or audit) until it ends."""
        return _poll(
            lambda: self.admin_evaluation(evaluation_id), on_update, poll_interval, timeout, sleep, self.server
        )

    # ---------------------------------------------------------------- transport

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


# ---------------------------------------------------------------------------------------------- helpers


def _api_error(response: httpx.Response, method: str, url: str) -> ApiError:
    status = response.status_code
    try:
        body = response.json()
        error = body["error"]
        code, message = str(error["code"]), str(error["message"])
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


_TOKEN = re.compile(r'["\\\r\n]')


def _phase_param(phase: str | None) -> dict[str, str] | None:
    return {"phase": phase} if phase is not None else None


def _path(segment: str) -> str:
    return quote(segment, safe="")


def _multipart(
    boundary: str, *, fields: dict[str, str], file_field: str, filename: str, content_type: str, data: bytes
) -> bytes:
    """A multipart/form-data body (RFC 7578), built by hand so that the upload can report its progress."""
    parts: list[bytes] = []
    for key, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n'.encode() + value.encode() + b"\r\n"
        )
    safe_name = _TOKEN.sub("_", filename)
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{safe_name}"\r\n'
        f"Content-Type: {content_type}\r\n\r\n"
    )
    parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts)


F = TypeVar("F", Submission, EvaluationDetail)


def _poll(
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


def _field(raw: Any, name: str, where: str) -> Any:
    if not isinstance(raw, dict) or name not in raw:
        raise ServerError(200, "invalid_response", f"{where}: expected a JSON object with {name!r}, got {_short(raw)}")
    return raw[name]


def _page(raw: Any, item: type[T], where: str) -> Page[T]:
    data = _decode_list(item, _field(raw, "data", where), f"{where}.data")
    count = _decode(int, _field(raw, "count", where), f"{where}.count")
    return Page(data=data, count=count)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _decode(tp: type[T], value: Any, where: str) -> T:
    """Check ``value`` (parsed JSON) against the type ``tp`` and build dataclasses; raise ``ServerError`` if off."""
    return cast(T, _decode_any(tp, value, where))


def _decode_list(item: type[T], value: Any, where: str) -> list[T]:
    return cast(list[T], _decode_any(list[item], value, where))  # type: ignore[valid-type]


def _decode_any(tp: Any, value: Any, where: str) -> Any:

    def bad(expected: str) -> ServerError:
        return ServerError(200, "invalid_response", f"{where}: expected {expected}, got {_short(value)}")

    origin = get_origin(tp)
    if tp is Any or tp is object:
        return value
    if origin is Union or origin is types.UnionType:
        options = get_args(tp)
        if value is None and type(None) in options:
            return None
        real = [o for o in options if o is not type(None)]
        if len(real) != 1:
            raise TypeError(f"_decode does not support {tp!r}")
        return _decode_any(real[0], value, where)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise bad(f"a JSON object for {tp.__name__}")
        hints = get_type_hints(tp)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(tp):
            if f.name in value:
                kwargs[f.name] = _decode_any(hints[f.name], value[f.name], f"{where}.{f.name}")
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ServerError(200, "invalid_response", f"{where}: missing field {f.name!r} in {_short(value)}")
        return tp(**kwargs)
    if origin is list:
        if not isinstance(value, list):
            raise bad("a JSON array")
        (item,) = get_args(tp)
        return [_decode_any(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise bad("a JSON object")
        _, item = get_args(tp)
        return {str(k): _decode_any(item, v, f"{where}.{k}") for k, v in value.items()}
    if origin is Literal:
        if value not in get_args(tp):
            raise bad(" or ".join(repr(a) for a in get_args(tp)))
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad("a number")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise bad("a string")
        return value
    raise TypeError(f"_decode does not support {tp!r}")
