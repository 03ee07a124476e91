"""A small typed HTTP client for the layersched API (docs/API.md); the CLI uses it and scripts can import it.

    from layersched.sdk.client import Client
    from layersched.sdk.bundle import make_bundle

    with Client.from_config() as client:
        sub = client.submit(make_bundle("my_policy.py"), name="greedy-plus")
        sub = client.wait(sub.id)
        print(sub.state, sub.score, sub.rank)

Every method returns frozen dataclasses decoded from the documented JSON (unknown extra fields are ignored, missing
documented fields raise ``ServerError``). Failures are the SDK's own types from ``layersched.sdk.errors``.

``Client`` is one class made of a part per resource of the API (``layersched.sdk.api``); the response types are
re-exported here, so ``from layersched.sdk.client import Submission`` keeps working.
"""

from __future__ import annotations

from layersched.sdk.api.admin import AdminApi
from layersched.sdk.api.challenge import ChallengeApi
from layersched.sdk.api.exports import ExportsApi
from layersched.sdk.api.me import MeApi
from layersched.sdk.api.moderation import ModerationApi
from layersched.sdk.api.phases import PhasesApi
from layersched.sdk.api.quota import QuotaApi
from layersched.sdk.api.responses import (
    TERMINAL_STATES,
    Allowance,
    AuditLogEntry,
    AuditVerdict,
    CreatedToken,
    CreatedUser,
    EpisodeLog,
    ErrorInfo,
    EvalSetInfo,
    EvalSetScenario,
    Evaluation,
    EvaluationDetail,
    Invite,
    Leaderboard,
    LeaderboardRow,
    LeaderboardState,
    Me,
    OnTrack,
    Page,
    PhaseInfo,
    Progress,
    QueuePlace,
    Refusal,
    Score,
    Submission,
    Team,
    User,
)
from layersched.sdk.api.submissions import ProgressCallback, SubmissionsApi
from layersched.sdk.api.teams import TeamsApi
from layersched.sdk.api.transport import API_PREFIX
from layersched.sdk.api.users import UsersApi
from layersched.sdk.api.views import ViewsApi
from layersched.sdk.api.webhooks import WebhooksApi
from layersched.sdk.config import Config, load_config

__all__ = [
    "API_PREFIX",
    "TERMINAL_STATES",
    "Allowance",
    "AuditLogEntry",
    "AuditVerdict",
    "Client",
    "CreatedToken",
    "CreatedUser",
    "EpisodeLog",
    "ErrorInfo",
    "EvalSetInfo",
    "EvalSetScenario",
    "Evaluation",
    "EvaluationDetail",
    "Invite",
    "Leaderboard",
    "LeaderboardRow",
    "LeaderboardState",
    "Me",
    "OnTrack",
    "Page",
    "PhaseInfo",
    "Progress",
    "ProgressCallback",
    "QueuePlace",
    "Refusal",
    "Score",
    "Submission",
    "Team",
    "User",
]


class Client(
    MeApi,
    SubmissionsApi,
    PhasesApi,
    TeamsApi,
    AdminApi,
    ChallengeApi,
    UsersApi,
    ViewsApi,
    ExportsApi,
    QuotaApi,
    ModerationApi,
    WebhooksApi,
):
    """Talks to one server. ``token`` may be None for the public leaderboard."""

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

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
