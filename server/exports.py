"""The organisers' exports of a phase (``GET /admin/exports/...``, ``layersched admin export``): the board as the
grades office needs it, every submission, every episode, and the bundles of the final selection as a zip.

The board export has a row per competitor (a team, or a participant alone), ranked as the phase's final (private)
board ranks them (its published snapshot once published), and also those it does not rank (nothing scored,
disqualified, disabled), so that every participant of the class is in the table: members and their e-mails, the
final score's submission with its private and public scores and intervals, the public rank, the selection, the
disqualified submissions with their reasons, and the provenance of the score (the set's commitment, the simulator
version, the sandbox image's digest).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from layersched.server import leaderboard
from layersched.server.bundles import bundle_path
from layersched.server.export_formats import csv_lines
from layersched.server.models import Phase, User
from layersched.server.storage.exports import (
    ExportedSubmission,
    entrants,
    exported_episodes,
    exported_submissions,
    selected_bundles,
)
from layersched.server.tracks import server_track

BOARD_COLUMNS = (
    "rank", "competitor", "kind", "members", "emails", "disabled", "final_submission", "final_submission_name",
    "private_score", "private_ci_low", "private_ci_high", "public_score", "public_ci_low", "public_ci_high",
    "public_rank", "selected", "disqualified", "submissions", "phase", "published", "evalset", "commitment",
    "sim_version", "image_digest",
)  # fmt: skip
SUBMISSION_COLUMNS = (
    "id", "name", "owner", "email", "team", "phase", "created_at", "state", "category", "service_failure",
    "started_at", "finished_at", "wait_s", "run_s", "disqualified", "selected", "scored_evaluation", "public_score",
    "public_ci_low", "public_ci_high", "private_score", "private_ci_low", "private_ci_high", "commitment",
    "sim_version", "image_digest", "bundle_sha256",
)  # fmt: skip
EPISODE_FIXED = (
    "submission_id", "owner", "team", "evaluation_id", "kind", "scenario", "episode", "split", "hidden", "status",
    "step", "message", "primary_value", "trace_hash", "n_actions",
)  # fmt: skip


@dataclass
class _Competitor:
    name: str
    kind: str
    members: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    selected: list[int] = field(default_factory=list)
    disqualified: list[str] = field(default_factory=list)
    submissions: int = 0


def board_rows(*, session: Session, phase: Phase, organiser: User) -> list[dict[str, Any]]:
    """The board export's rows (see the module docstring), ranked rows first."""
    final = leaderboard.visible_leaderboard(session=session, phase=phase, split="private", viewer=organiser, fresh=True)
    public = leaderboard.visible_leaderboard(session=session, phase=phase, split="public", viewer=organiser)
    public_rank = {r.participant: r.rank for r in public.rows if not r.baseline}
    ranked = {r.participant: r for r in final.rows if not r.baseline}
    competitors: dict[str, _Competitor] = {}
    for entrant in entrants(session=session):
        key = entrant.team or entrant.name
        who = competitors.setdefault(key, _Competitor(key, "team" if entrant.team else "participant"))
        who.members.append(entrant.name)
        who.emails.append(entrant.email)
        if entrant.disabled:
            who.disabled.append(entrant.name)
    finals = {r.submission_id for r in ranked.values()}
    scoring: dict[int, ExportedSubmission] = {}
    for exported in exported_submissions(session=session, phase=phase):
        owner = competitors.get(exported.team or exported.owner)
        if owner is None:  # an organiser's own test upload: organisers do not compete
            continue
        owner.submissions += 1
        if exported.selected:
            owner.selected.append(exported.id)
        if exported.disqualified is not None:
            owner.disqualified.append(f"{exported.id}: {exported.disqualified}")
        if exported.id in finals:
            scoring[exported.id] = exported
    rows: list[tuple[tuple[bool, int, str], dict[str, Any]]] = []
    for who in competitors.values():
        row = ranked.get(who.name)
        sub = scoring.get(row.submission_id) if row is not None and row.submission_id is not None else None
        order = (row is None or row.rank is None, (row.rank or 0) if row else 0, who.name.lower())
        rows.append(
            (
                order,
                {
                    "rank": row.rank if row else None,
                    "competitor": who.name,
                    "kind": who.kind,
                    "members": who.members,
                    "emails": who.emails,
                    "disabled": who.disabled,
                    "final_submission": row.submission_id if row else None,
                    "final_submission_name": row.submission_name if row else None,
                    "private_score": row.score if row else None,
                    "private_ci_low": row.ci_low if row else None,
                    "private_ci_high": row.ci_high if row else None,
                    "public_score": sub.public if sub else None,
                    "public_ci_low": sub.public_low if sub else None,
                    "public_ci_high": sub.public_high if sub else None,
                    "public_rank": public_rank.get(who.name),
                    "selected": who.selected,
                    "disqualified": who.disqualified,
                    "submissions": who.submissions,
                    "phase": phase.name,
                    "published": final.published,
                    "evalset": phase.evalset.name,
                    "commitment": sub.commitment if sub else phase.evalset.commitment,
                    "sim_version": sub.sim_version if sub else None,
                    "image_digest": sub.image_digest if sub else None,
                },
            )
        )
    return [values for _order, values in sorted(rows, key=lambda pair: pair[0])]


def submission_rows(*, session: Session, phase: Phase) -> Iterator[dict[str, Any]]:
    for sub in exported_submissions(session=session, phase=phase):
        wait = (sub.started_at - sub.created_at).total_seconds() if sub.started_at else None
        run = (sub.finished_at - sub.started_at).total_seconds() if sub.started_at and sub.finished_at else None
        yield {
            "id": sub.id,
            "name": sub.name,
            "owner": sub.owner,
            "email": sub.email,
            "team": sub.team,
            "phase": phase.name,
            "created_at": sub.created_at,
            "state": sub.state,
            "category": sub.category,
            "service_failure": sub.service_failure,
            "started_at": sub.started_at,
            "finished_at": sub.finished_at,
            "wait_s": wait,
            "run_s": run,
            "disqualified": sub.disqualified,
            "selected": sub.selected,
            "scored_evaluation": sub.scored_evaluation,
            "public_score": sub.public,
            "public_ci_low": sub.public_low,
            "public_ci_high": sub.public_high,
            "private_score": sub.private,
            "private_ci_low": sub.private_low,
            "private_ci_high": sub.private_high,
            "commitment": sub.commitment,
            "sim_version": sub.sim_version,
            "image_digest": sub.image_digest,
            "bundle_sha256": sub.bundle_sha256,
        }


def episode_columns(phase: Phase) -> tuple[str, ...]:
    """The episode export's columns: the fixed ones and a column per metric of the phase's track."""
    return EPISODE_FIXED + tuple(spec.name for spec in server_track(phase.evalset.track).metric_specs)


def episode_rows(*, session: Session, phase: Phase, flat_metrics: bool) -> Iterator[dict[str, Any]]:
    """Every episode's row; ``flat_metrics`` puts each metric in a column of its own (CSV), else in ``metrics``."""
    for ep in exported_episodes(session=session, phase=phase):
        row: dict[str, Any] = {
            "submission_id": ep.submission_id,
            "owner": ep.owner,
            "team": ep.team,
            "evaluation_id": ep.evaluation_id,
            "kind": ep.kind,
            "scenario": ep.scenario,
            "episode": ep.episode,
            "split": ep.split,
            "hidden": ep.hidden,
            "status": ep.status,
            "step": ep.step,
            "message": ep.message,
            "primary_value": ep.primary_value,
            "trace_hash": ep.trace_hash,
            "n_actions": ep.n_actions,
        }
        if flat_metrics:
            row.update(ep.metrics or {})
        else:
            row["metrics"] = ep.metrics
        yield row


def bundle_files(
    *, session: Session, phase: Phase, organiser: User, bundle_dir: Path
) -> list[tuple[str, Path | bytes]]:
    """The zip's members: each selected submission's bundle as ``bundles/ID.EXT`` (names of the participants' making
    stay out of paths) and ``manifest.csv`` naming each one's competitor, owner and hash; a competitor without a
    selection brings the submission the final ranking took."""
    final = leaderboard.visible_leaderboard(session=session, phase=phase, split="private", viewer=organiser, fresh=True)
    taken = [r.submission_id for r in final.rows if not r.baseline and r.submission_id is not None]
    chosen = selected_bundles(session=session, phase=phase, also=taken)
    files: list[tuple[str, Path | bytes]] = []
    manifest = []
    for bundle in chosen:
        extension = {"py": "py", "zip": "zip", "tar.gz": "tar.gz"}[bundle.bundle_format]
        member = f"bundles/{bundle.submission_id}.{extension}"
        files.append((member, bundle_path(bundle_dir, bundle.bundle_sha256)))
        manifest.append(
            {
                "file": member,
                "submission_id": bundle.submission_id,
                "competitor": bundle.team or bundle.owner,
                "owner": bundle.owner,
                "name": bundle.name,
                "selected": bundle.selected,
                "bundle_sha256": bundle.bundle_sha256,
            }
        )
    columns = ("file", "submission_id", "competitor", "owner", "name", "selected", "bundle_sha256")
    files.insert(0, ("manifest.csv", b"".join(csv_lines(columns, manifest))))
    return files
