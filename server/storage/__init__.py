"""Every read and write of the database, as keyword-only typed functions, one module per idea.

Routes, the admin CLI and the worker call these; none of them repeats ``session.add``/``commit``. Functions that
change state commit before returning, so each is one transaction.

- ``accounts``: users and API tokens; ``audit``: the audit log every organiser action writes to;
- ``evalsets``: the registered evaluation sets; ``baselines``: the reference baselines' scores per set;
- ``submissions``: uploads, quota, visibility, deadline and final selection; ``reruns``: reruns and audits;
- ``evaluations``: the queued row, the worker's claim, episode results and the end (idempotent for redeliveries);
- ``phases``: the challenge's phases (set, times, quota, board visibility) and which one an upload is for;
- ``leaderboard``: each phase's frozen/published state and its boards' queries; ``ladder``: the Ladder's verdicts,
  what it showed of each submission, written once;
- ``replays``: what is kept of episodes whose workload is public, for their schedules to be drawn;
- ``teams``: creating, inviting to, joining and leaving teams; ``members``: who competes with whom now, and the
  row locks that order a competitor's changes; ``quota``: what a competitor used of a phase's quota.

This package re-exports them so that callers keep writing ``storage.create_submission(...)``: the package is the
storage layer's one public face, the modules are how it is cut.

Running a term (issue 32) adds modules that its routes import by name (``storage.roster.import_roster``), each used by
one or two routes: ``roster``, ``user_admin``, ``signin_links``, ``submission_views``, ``moderation``,
``quota_grants``, ``exports``, ``analytics``, ``queue_view`` and ``webhooks`` (docs/ARCHITECTURE.md).
"""

from layersched.server.errors import Conflict, NotFound
from layersched.server.storage.accounts import (
    TOKEN_PREFIX,
    authenticate,
    create_user,
    end_page_sessions,
    get_user,
    get_user_by_name,
    issue_token,
    revoke_token,
    token_sha256,
)
from layersched.server.storage.audit import list_audit_log, log_action
from layersched.server.storage.baselines import get_baseline_result, list_baseline_results, upsert_baseline_result
from layersched.server.storage.challenge import apply_challenge, export_challenge, get_rules
from layersched.server.storage.evalsets import (
    find_evalset,
    get_current_evalset,
    get_evalset,
    register_evalset,
)
from layersched.server.storage.evaluations import (
    INFRASTRUCTURE,
    expire_stuck_evaluations,
    finish_evaluation,
    get_evaluation,
    heartbeat,
    list_evaluations,
    list_stale_evaluations,
    record_episode_result,
    record_sandbox,
    recorded_episodes,
    requeue_evaluation,
    start_evaluation,
)
from layersched.server.storage.ladder import Shown, Verdict, ladder_verdicts, lock_ladders, record_ladder_verdicts
from layersched.server.storage.leaderboard import (
    Competitor,
    ScoredEntry,
    count_submissions_by_competitor,
    evaluation_scores,
    find_leaderboard_state,
    get_leaderboard_state,
    leaderboard_entries,
    leaderboard_fingerprint,
    publish_private,
    set_leaderboard_frozen,
    team_members,
)
from layersched.server.storage.members import member_ids, same_competitor, team_of
from layersched.server.storage.phases import (
    DEFAULT_PHASE,
    PhaseChanges,
    board_visible,
    close_phase,
    closed_because,
    create_phase,
    edit_phase,
    get_phase,
    is_open,
    is_published,
    list_phases,
    open_phase,
    phase_state,
    resolve_phase,
    reveal_evalset,
)
from layersched.server.storage.quota import count_in_flight, count_submissions_today, phase_quota
from layersched.server.storage.replays import (
    ReplayInput,
    StoredReplay,
    episode_replay,
    public_references,
    stored_bytes,
    trace_kept,
)
from layersched.server.storage.reruns import create_audit, create_rerun
from layersched.server.storage.submissions import (
    cancel_submission,
    check_can_submit,
    check_submissions_open,
    create_submission,
    disqualify_submission,
    get_submission,
    list_submissions,
    load_submission,
    lock_submitter,
    primary_evaluation,
    scored_evaluation,
    select_submission,
    unselect_submission,
)
from layersched.server.storage.teams import (
    INVITE_PREFIX,
    Limits,
    assign_member,
    create_invite,
    create_team,
    get_team,
    join_team,
    leave_team,
    list_teams,
    remove_member,
)

__all__ = [
    "DEFAULT_PHASE",
    "INFRASTRUCTURE",
    "INVITE_PREFIX",
    "TOKEN_PREFIX",
    "Competitor",
    "Conflict",  # the errors these functions raise, for callers that catch them",
    "Limits",
    "NotFound",
    "PhaseChanges",
    "ReplayInput",
    "ScoredEntry",
    "Shown",
    "StoredReplay",
    "Verdict",
    "apply_challenge",
    "assign_member",
    "authenticate",
    "board_visible",
    "cancel_submission",
    "check_can_submit",
    "check_submissions_open",
    "close_phase",
    "closed_because",
    "count_in_flight",
    "count_submissions_by_competitor",
    "count_submissions_today",
    "create_audit",
    "create_invite",
    "create_phase",
    "create_rerun",
    "create_submission",
    "create_team",
    "create_user",
    "disqualify_submission",
    "edit_phase",
    "end_page_sessions",
    "episode_replay",
    "evaluation_scores",
    "expire_stuck_evaluations",
    "export_challenge",
    "find_evalset",
    "find_leaderboard_state",
    "finish_evaluation",
    "get_baseline_result",
    "get_current_evalset",
    "get_evalset",
    "get_evaluation",
    "get_leaderboard_state",
    "get_phase",
    "get_rules",
    "get_submission",
    "get_team",
    "get_user",
    "get_user_by_name",
    "heartbeat",
    "is_open",
    "is_published",
    "issue_token",
    "join_team",
    "ladder_verdicts",
    "leaderboard_entries",
    "leaderboard_fingerprint",
    "leave_team",
    "list_audit_log",
    "list_baseline_results",
    "list_evaluations",
    "list_phases",
    "list_stale_evaluations",
    "list_submissions",
    "list_teams",
    "load_submission",
    "lock_ladders",
    "lock_submitter",
    "log_action",
    "member_ids",
    "open_phase",
    "phase_quota",
    "phase_state",
    "primary_evaluation",
    "public_references",
    "publish_private",
    "record_episode_result",
    "record_ladder_verdicts",
    "record_sandbox",
    "recorded_episodes",
    "register_evalset",
    "remove_member",
    "requeue_evaluation",
    "resolve_phase",
    "reveal_evalset",
    "revoke_token",
    "same_competitor",
    "scored_evaluation",
    "select_submission",
    "set_leaderboard_frozen",
    "start_evaluation",
    "stored_bytes",
    "team_members",
    "team_of",
    "token_sha256",
    "trace_kept",
    "unselect_submission",
    "upsert_baseline_result",
]
