"""``layersched admin ...``: the organisers' commands.

They go through the HTTP API with an organiser token (``layersched login`` as an organiser), except three that
need not or cannot: ``admin evalset new`` writes a secret file on the organiser's machine (``layersched.sim.evalset``),
``admin token metrics`` makes Prometheus's token and prints the hash the server's setting holds, and
``admin user add --bootstrap`` creates the very first organiser directly in the server's database, before any
token exists (``layersched.sdk.bootstrap``: which database, its schema, the ``server`` extra).

``admin phase ...`` is in ``admin_phases``, ``admin challenge ...`` in ``challenge`` and ``admin team ...`` in
``teams`` (beside the participants' ``team``); this module adds them under ``admin``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import secrets
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from layersched.sdk.admin_exports import add_export_parser
from layersched.sdk.admin_moderation import add_bulk_options, cmd_bulk_disqualify, cmd_bulk_rerun, is_bulk
from layersched.sdk.admin_phases import add_phase_parser
from layersched.sdk.admin_quota import add_quota_parser
from layersched.sdk.admin_submissions import add_submissions_parser
from layersched.sdk.admin_users import add_user_commands
from layersched.sdk.admin_webhooks import add_webhook_parser
from layersched.sdk.arguments import phase_name
from layersched.sdk.challenge import add_challenge_parser
from layersched.sdk.commands import AddCommand, configured_client, missing_action
from layersched.sdk.confirm import add_yes_argument, confirm
from layersched.sdk.errors import ConfigError
from layersched.sdk.progress import ProgressBar
from layersched.sdk.teams import add_admin_team_parser
from layersched.sdk.terminal_text import continued

# A metrics token is no user's, so it is not one of the server's ``lst_`` tokens: the prefix tells the two apart.
METRICS_TOKEN_PREFIX = "lsm"


def add_admin_parser(sub: Any, add: AddCommand) -> None:
    admin = add(
        sub,
        "admin",
        missing_action,
        "organiser commands (need an organiser token)",
        "Organiser commands: users and tokens, evaluation sets, phases, teams, reruns, audits, cancel, disqualify,\n"
        "freeze and publish a phase's leaderboard, the audit log. Every action is recorded in the server's\n"
        "audit log.",
        "  layersched admin user add --name Ada --email ada@example.org\n"
        "  layersched admin phase create final --evalset spring --closes 2027-03-01T12:00Z\n"
        "  layersched admin audit 12\n  layersched admin freeze --phase final\n",
    )
    actions = admin.add_subparsers(dest="admin_command", metavar="ACTION")
    actions.required = True

    user = add(
        actions,
        "user",
        missing_action,
        "create, import, list, disable and enable users",
        "Create an account (its token is printed once), enrol a roster file at once, list the users,\n"
        "disable or enable one, or give one a one-time sign-in link.",
        "  layersched admin user add --name Ada --email ada@example.org\n"
        "  layersched admin user import roster.csv --tokens-out tokens.csv\n"
        "  layersched admin user list\n"
        "  layersched admin user add --name Root --email root@example.org --role organiser --bootstrap\n",
    )
    user_actions = user.add_subparsers(dest="user_command", metavar="ACTION")
    user_actions.required = True
    p = add(
        user_actions,
        "add",
        cmd_user_add,
        "create an account and print its token (shown once)",
        "Create a participant or organiser through the API. --bootstrap creates the first organiser\n"
        "directly in the server's database, on the server host: LAYERSCHED_DATABASE_URL's, else the one of\n"
        "`layersched serve --data-dir DIR` (default ./var). It names the database and brings its schema up\n"
        "to date first, so it may come before the first `serve`.",
        "  layersched admin user add --name Ada --email ada@example.org\n"
        "  layersched admin user add --name Root --email root@example.org --role organiser --bootstrap\n"
        "  layersched admin user add --name Root --email root@example.org --role organiser --bootstrap "
        "--data-dir /srv/layersched\n",
    )
    p.add_argument("--name", required=True, help="display name (shown on the leaderboard)")
    p.add_argument("--email", required=True, help="contact address")
    p.add_argument("--role", choices=("participant", "organiser"), default="participant", help="default participant")
    p.add_argument("--bootstrap", action="store_true", help="write to the server's database directly (no token yet)")
    p.add_argument(
        "--data-dir",
        type=Path,
        help="with --bootstrap: the database of `layersched serve --data-dir DIR` (default: LAYERSCHED_DATABASE_URL, "
        "else ./var)",
    )
    add_user_commands(user_actions, add)

    token = add(
        actions,
        "token",
        missing_action,
        "issue or revoke API tokens, or make Prometheus's metrics token",
        "Issue a new token for a user (shown once) or revoke one; or make the token Prometheus reads\n"
        "/metrics with, which opens nothing else.",
        "  layersched admin token new 7\n  layersched admin token revoke 15\n  layersched admin token metrics\n",
    )
    token_actions = token.add_subparsers(dest="token_command", metavar="ACTION")
    token_actions.required = True
    p = add(
        token_actions,
        "new",
        cmd_token_new,
        "issue a token for USER_ID",
        "Issue a token (shown once).",
        "  layersched admin token new 7\n",
    )
    p.add_argument("user_id", type=int, help="the user's id")
    p = add(
        token_actions,
        "revoke",
        cmd_token_revoke,
        "revoke TOKEN_ID",
        "Revoke a token at once.",
        "  layersched admin token revoke 15\n",
    )
    p.add_argument("token_id", type=int, help="the token's id")
    add(
        token_actions,
        "metrics",
        cmd_token_metrics,
        "make a token for Prometheus that reads /metrics only",
        "Make a metrics token here, without the server: it reads /metrics and opens nothing else (no user\n"
        "has it). Prints the token (shown once: put it in Prometheus's credentials_file) and the server's\n"
        "setting, its SHA-256 (the API's LAYERSCHED_METRICS_TOKEN_SHA256; restart the API to take it). To\n"
        "replace a leaked one, make another and set its hash.",
        "  layersched admin token metrics\n",
    )

    evalset = add(
        actions,
        "evalset",
        missing_action,
        "create or reveal evaluation sets",
        "`new` creates a real set with fresh secret keys locally (never committed) and prints its\n"
        "commitment; `reveal` makes a set public on the server after the challenge.",
        "  layersched admin evalset new --from hidden_seeds/challenge-example.toml "
        "--out hidden_seeds/private/spring.toml\n  layersched admin evalset reveal spring\n",
    )
    ev_actions = evalset.add_subparsers(dest="evalset_command", metavar="ACTION")
    ev_actions.required = True
    p = add(
        ev_actions,
        "new",
        cmd_evalset_new,
        "create a set with fresh keys from a template",
        "Fill a template's `generate` entries with fresh 256-bit keys, write the set (mode 0600, refused\n"
        "where git would track it) and print the commitment to publish. The set is named after the output\n"
        "file (spring.toml: spring) unless --name says otherwise: the board shows that name and\n"
        "`admin rerun --evalset` and `admin evalset reveal` take it.",
        "  layersched admin evalset new --from hidden_seeds/challenge-example.toml "
        "--out hidden_seeds/private/spring.toml\n"
        "  layersched admin evalset new --from hidden_seeds/challenge-example.toml "
        "--out hidden_seeds/private/s.toml --name spring-2027\n",
    )
    p.add_argument("--from", dest="template", type=Path, required=True, help="template file (template = true)")
    p.add_argument("--out", type=Path, required=True, help="where to write the set (git must ignore it)")
    p.add_argument("--name", help="the set's name (default: the output file's name without .toml)")
    p = add(
        ev_actions,
        "reveal",
        cmd_evalset_reveal,
        "reveal NAME on the server",
        "Mark a set revealed on the server, after the challenge; then publish its file, so that anyone can check\n"
        "it against the commitment published before (`layersched evalset verify FILE COMMITMENT`). Refused while\n"
        "a phase on the set is open and its private board unpublished (its hidden episodes would be known while\n"
        "it still takes uploads) unless --force, which the audit log records; once revealed, no new phase may use\n"
        "the set. Asks for confirmation on a terminal; --yes in scripts.",
        "  layersched admin evalset reveal spring\n  layersched admin evalset reveal spring --yes\n",
    )
    p.add_argument("name", help="evaluation set name")
    p.add_argument("--force", action="store_true", help="reveal even while a phase on it is open and unpublished")
    add_yes_argument(p)

    p = add(
        actions,
        "rerun",
        cmd_rerun,
        "evaluate submissions again (new evaluations, no quota)",
        "Queue a new evaluation of the same submission on the evaluation set of its phase (the set it was scored\n"
        "on), or with --evalset on another registered set (such a score counts on no board). It never counts\n"
        "against a quota. Several ids or filter options rerun many at once: they are listed first (--dry-run\n"
        "stops there), then asked for (--yes answers); one with an evaluation queued or running is skipped.",
        "  layersched admin rerun 12\n  layersched admin rerun 12 --evalset spring-v2 --wait\n"
        "  layersched admin rerun --phase final --state failed --category infrastructure_error --dry-run\n"
        "  layersched admin rerun 12 14 15 --yes\n",
    )
    p.add_argument("ids", nargs="*", type=int, metavar="ID", help="submission ids (or filter options)")
    p.add_argument("--evalset", help="a registered set's name (default: the set of the submission's phase)")
    p.add_argument("--wait", action=argparse.BooleanOptionalAction, default=False, help="follow it (default: no)")
    add_bulk_options(p)

    p = add(
        actions,
        "audit",
        cmd_audit,
        "re-run a submission's episodes and compare traces",
        "Re-run all or a sample of the episodes of the submission's newest succeeded evaluation (a rerun, if\n"
        "there is a newer one than the first) and compare action traces, metrics, simulator version and image\n"
        "digest with the stored ones; prints which evaluation it audits, the verdict and every mismatch.\n"
        "Exit 1 on a mismatch.",
        "  layersched admin audit 12\n  layersched admin audit 12 --sample 5\n  layersched admin audit 12 --no-wait\n",
    )
    p.add_argument("id", type=int, help="submission id")
    p.add_argument("--sample", type=int, help="audit N random episodes (default: all)")
    p.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True, help="wait for the verdict (default)")

    p = add(
        actions,
        "cancel",
        cmd_cancel,
        "cancel a queued or running submission",
        "Cancel its evaluation. A cancelled first evaluation gives the submission back to its owner's quota.",
        "  layersched admin cancel 12\n",
    )
    p.add_argument("id", type=int, help="submission id")

    p = add(
        actions,
        "disqualify",
        cmd_disqualify,
        "disqualify submissions with a reason",
        "Remove a submission from the leaderboard; the reason is kept and shown. Asks for confirmation on a\n"
        "terminal; --yes in scripts. Several ids or filter options disqualify many at once: they are listed\n"
        "first (--dry-run stops there), then asked for (--yes answers).",
        '  layersched admin disqualify 12 --reason "reads the evaluation-set file"\n'
        '  layersched admin disqualify 12 --reason "two accounts" --yes\n'
        '  layersched admin disqualify --owner mallory --reason "shared code" --dry-run\n',
    )
    p.add_argument("ids", nargs="*", type=int, metavar="ID", help="submission ids (or filter options)")
    p.add_argument("--reason", required=True, help="shown to the participant and on the audit log")
    add_bulk_options(p)

    p = add(
        actions,
        "freeze",
        cmd_freeze,
        "freeze (or --off: unfreeze) the public leaderboard",
        "While frozen, submissions are still evaluated but public ranks do not change. Each phase has its own\n"
        "board: --phase names it (default: the only open phase).",
        "  layersched admin freeze\n  layersched admin freeze --phase final\n  layersched admin freeze --off\n",
    )
    p.add_argument("--off", action="store_true", help="unfreeze")
    p.add_argument("--phase", type=phase_name, help="whose board (default: the only open phase)")

    p = add(
        actions,
        "publish",
        cmd_publish,
        "publish a phase's private leaderboard",
        "Make the phase's private split (its final ranking) visible to everyone, once and for good; it closes the\n"
        "phase. Asks for confirmation on a terminal; --yes in scripts.",
        "  layersched admin publish --phase final\n  layersched admin publish --phase final --yes\n",
    )
    p.add_argument("--phase", type=phase_name, help="whose board (default: the only open phase)")
    add_yes_argument(p)

    add_phase_parser(actions, add)
    add_challenge_parser(actions, add)
    add_admin_team_parser(actions, add)
    add_submissions_parser(actions, add)
    add_export_parser(actions, add)
    add_quota_parser(actions, add)
    add_webhook_parser(actions, add)

    p = add(
        actions,
        "audit-log",
        cmd_audit_log,
        "show the organisers' action log",
        "Who did what and when, newest first.",
        "  layersched admin audit-log --limit 100\n",
    )
    p.add_argument("--limit", type=int, default=50, help="entries to show (default 50, at most 200)")
    p.add_argument("--offset", type=int, default=0, help="skip the first N entries")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = add(
        actions,
        "evaluation",
        cmd_evaluation,
        "show one evaluation with its episodes",
        "An evaluation's provenance and per-episode rows.",
        "  layersched admin evaluation 31 --json\n",
    )
    p.add_argument("id", type=int, help="evaluation id")
    p.add_argument("--json", action="store_true", help="print JSON")


def cmd_user_add(args: argparse.Namespace) -> int:
    if args.bootstrap:
        from layersched.sdk.bootstrap import bootstrap_user

        user_id, token = bootstrap_user(
            name=args.name,
            email=args.email,
            role=args.role,
            data_dir=args.data_dir,
            say=lambda line: print(line, file=sys.stderr),
        )
    elif args.data_dir is not None:
        raise ConfigError("--data-dir goes with --bootstrap (without it, the user is created through the API)")
    else:
        with configured_client() as client:
            created = client.admin_create_user(name=args.name, email=args.email, role=args.role)
        user_id, token = created.user.id, created.token
    print(f"created {args.role} #{user_id} {args.name} <{args.email}>")
    print(f"token (shown once, store it now): {token}")
    return 0


def cmd_token_new(args: argparse.Namespace) -> int:
    with configured_client() as client:
        created = client.admin_create_token(args.user_id)
    print(f"token #{created.id} for user #{args.user_id} (shown once, store it now): {created.token}")
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    with configured_client() as client:
        client.admin_revoke_token(args.token_id)
    print(f"revoked token #{args.token_id}")
    return 0


def cmd_token_metrics(_args: argparse.Namespace) -> int:
    token = f"{METRICS_TOKEN_PREFIX}_{secrets.token_urlsafe(32)}"
    print(f"metrics token (shown once, store it now; Prometheus's credentials_file): {token}")
    print(f"the API's setting: LAYERSCHED_METRICS_TOKEN_SHA256={hashlib.sha256(token.encode()).hexdigest()}")
    return 0


def cmd_evalset_new(args: argparse.Namespace) -> int:
    from layersched.sim.errors import EvalSetError
    from layersched.sim.evalset import new_evalset

    # Named after the file by default: the template's own name (challenge-example) would otherwise reach the board.
    name = args.name or args.out.stem
    try:
        evalset = new_evalset(args.template, args.out, name=name)
    except EvalSetError as exc:
        if args.name is None and f"got {name!r}" in str(exc):  # the file's name does not make a set's name
            raise EvalSetError(f"{exc} (name it with --name)") from None
        raise
    episodes = sum(len(sc.episodes) for sc in evalset.scenarios)
    print(
        f"wrote {args.out} (mode 0600): evaluation set {evalset.name!r}, {len(evalset.scenarios)} scenarios, "
        f"{episodes} episodes"
    )
    print(f"commitment (publish this now, before the challenge): {evalset.commitment}")
    print(
        f"at the end: `layersched admin evalset reveal {evalset.name}` and publish {args.out.name}; then anyone "
        f"checks it with `layersched evalset verify {args.out.name} {evalset.commitment}`"
    )
    return 0


def cmd_evalset_reveal(args: argparse.Namespace) -> int:
    force = " (--force: while a phase on it is open)" if args.force else ""
    confirm(f"reveal evaluation set {args.name!r}{force}", yes=args.yes)
    with configured_client() as client:
        client.admin_reveal_evalset(args.name, force=args.force)
    print(f"revealed evaluation set {args.name!r}")
    return 0


def _follow(client: Any, evaluation_id: int) -> Any:
    bar = ProgressBar(f"evaluation #{evaluation_id}")
    try:
        return client.admin_wait_evaluation(
            evaluation_id, on_update=lambda e: bar.update(e.progress.done, e.progress.total or None, note=e.state)
        )
    finally:
        bar.close()


def cmd_rerun(args: argparse.Namespace) -> int:
    if is_bulk(args):
        if args.wait:
            raise ConfigError("--wait follows one rerun: give one id, or follow them with layersched admin submissions")
        return cmd_bulk_rerun(args)
    (submission_id,) = args.ids
    with configured_client() as client:
        evaluation = client.admin_rerun(submission_id, evalset=args.evalset)
        on = f" on {evaluation.evalset_name!r}" if evaluation.evalset_name else ""
        print(f"queued evaluation #{evaluation.id} (rerun{on}) of submission #{submission_id}")
        if not args.wait:
            return 0
        final = _follow(client, evaluation.id)
    print(f"evaluation #{final.id}: {final.state}" + (f": {continued(final.error.message)}" if final.error else ""))
    return 0 if final.state == "succeeded" else 1


def cmd_audit(args: argparse.Namespace) -> int:
    with configured_client() as client:
        evaluation = client.admin_audit(args.id, sample=args.sample)
        target = _audited(client, evaluation)
        print(f"queued audit #{evaluation.id} of submission #{args.id}: it replays {target} and compares with it")
        if not args.wait:
            return 0
        final = _follow(client, evaluation.id)
    against = f"evaluation #{final.audit_of}" if final.audit_of is not None else "its evaluation"
    if final.audit is None:
        detail = f": {final.error.category}: {continued(final.error.message)}" if final.error else ""
        print(f"audit #{final.id} of {against} {final.state} without a verdict{detail}")
        return 1
    print(f"audit #{final.id} of {against}: {final.audit.verdict}")
    for mismatch in final.audit.mismatches:
        print(f"  mismatch: {mismatch}")
    return 0 if final.audit.verdict == "match" else 1


def _audited(client: Any, audit: Any) -> str:
    """Which evaluation an audit replays, in words: the server picks the submission's newest succeeded one, which
    after a rerun is not the first (``audit 3`` replaying rerun #7 must say so)."""
    if audit.audit_of is None:  # the audited evaluation was deleted meanwhile
        return "the submission's newest succeeded evaluation"
    target = client.admin_evaluation(audit.audit_of)
    where = f" on {target.evalset_name!r}" if target.evalset_name else ""
    return f"evaluation #{target.id} ({target.kind}{where}, the newest succeeded)"


def cmd_cancel(args: argparse.Namespace) -> int:
    with configured_client() as client:
        client.admin_cancel(args.id)
    print(f"cancelled submission #{args.id}")
    return 0


def cmd_disqualify(args: argparse.Namespace) -> int:
    if is_bulk(args):
        return cmd_bulk_disqualify(args)
    (submission_id,) = args.ids
    confirm(f"disqualify submission #{submission_id} ({args.reason})", yes=args.yes)
    with configured_client() as client:
        client.admin_disqualify(submission_id, reason=args.reason)
    print(f"disqualified submission #{submission_id}: {args.reason}")
    return 0


def cmd_freeze(args: argparse.Namespace) -> int:
    with configured_client() as client:
        state = client.admin_freeze(not args.off, phase=args.phase)
    what = f"leaderboard of phase {state.phase}"
    print(f"{what} unfrozen" if args.off else f"{what} frozen (evaluations go on; public ranks stay)")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    which = f"phase {args.phase}" if args.phase else "the only open phase"
    confirm(f"publish the private leaderboard (the final ranking) of {which}", yes=args.yes)
    with configured_client() as client:
        state = client.admin_publish(phase=args.phase)
    print(f"private leaderboard of phase {state.phase} published")
    return 0


def cmd_audit_log(args: argparse.Namespace) -> int:
    with configured_client() as client:
        page = client.admin_audit_log(offset=args.offset, limit=args.limit)
    if args.json:
        print(json.dumps({"data": [asdict(e) for e in page.data], "count": page.count}, indent=2))
        return 0
    for e in page.data:
        detail = (
            ""
            if e.detail in (None, "", {})
            else f"  {json.dumps(e.detail) if not isinstance(e.detail, str) else e.detail}"
        )
        print(f"{e.at[:19].replace('T', ' ')}  {e.actor:<16} {e.action:<14} {e.target or ''}{detail}")
    print(f"({len(page.data)} of {page.count})", file=sys.stderr)
    return 0


def cmd_evaluation(args: argparse.Namespace) -> int:
    with configured_client() as client:
        evaluation = client.admin_evaluation(args.id)
    if args.json:
        print(json.dumps(asdict(evaluation), indent=2))
        return 0
    e = evaluation
    of = f" of evaluation #{e.audit_of}" if e.audit_of is not None else ""
    print(f"evaluation #{e.id} {e.kind}{of} {e.state} {e.progress.done}/{e.progress.total}")
    print(f"  set {e.evalset_commitment}  sim {e.sim_version}  sandbox {e.sandbox}  image {e.image_digest or '-'}")
    print(f"  bundle {e.bundle_sha256}  started {e.started_at or '-'}  finished {e.finished_at or '-'}")
    if e.error:
        print(f"  error {e.error.category}: {continued(e.error.message)}")
    if e.audit:
        print(f"  audit {e.audit.verdict}" + "".join(f"\n    mismatch: {m}" for m in e.audit.mismatches))
    for row in e.episodes:
        print("  " + "  ".join(f"{k}={v}" for k, v in row.items()))
    return 0
