"""The challenge as one file describes it (``layersched admin challenge apply|export``): its rules (team size,
invite hours, merger deadline, final selection, submission deadline) and its phases, brought to the file's values
in one transaction, or read back as such a file.

``apply_challenge`` first plans every change and checks each as the API's own routes would (a set that is not
registered, a revealed set for a new phase, a set change on a phase with submissions, a phase that would close
before it opens): a refusal raises before anything is written. It then writes them, with one audit-log entry that
lists them. A rule or phase field the file leaves out has its default (the rule: its ``LAYERSCHED_*`` setting; a
phase: open-ended, the server's quota, a public board), except a phase's opening time, which is "now" when the phase
is made and stays as it is afterwards. Phases on the server that the file does not name are left as they are (their
submissions keep them) and reported.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from layersched.server.errors import Conflict, InvalidRequest
from layersched.server.models import ChallengeRules, Phase, Submission, User, utcnow
from layersched.server.storage.audit import add_log_entry
from layersched.server.storage.evalsets import get_evalset
from layersched.server.storage.phases import list_phases

RULES_ID = 1


@dataclass(frozen=True)
class Rules:
    """The rules a challenge file sets; None: the ``LAYERSCHED_*`` setting of the same name."""

    submission_deadline: dt.datetime | None = None
    final_submissions: int | None = None
    team_max_size: int | None = None
    team_invite_hours: float | None = None
    team_merge_deadline: dt.datetime | None = None


RULE_NAMES = tuple(f.name for f in fields(Rules))


@dataclass(frozen=True)
class PhaseRule:
    """A phase as a challenge file describes it; ``opens_at`` None: now when made, as it is afterwards."""

    name: str
    evalset: str
    title: str = ""
    opens_at: dt.datetime | None = None
    closes_at: dt.datetime | None = None
    daily_quota: int | None = None
    visibility: str = "public"


@dataclass(frozen=True)
class Plan:
    """What applying a challenge changes (``changes``, in words, in order) and what it leaves alone (``notes``)."""

    changes: list[str]
    notes: list[str]


def get_rules(*, session: Session) -> Rules:
    """The applied rules (all None before any challenge is applied)."""
    row = session.get(ChallengeRules, RULES_ID)
    if row is None:
        return Rules()
    return Rules(**{name: getattr(row, name) for name in RULE_NAMES})


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).isoformat()
    return str(value)


def _rule_shown(name: str, value: Any) -> str:
    return f"the setting LAYERSCHED_{name.upper()}" if value is None else _shown(value)


def apply_challenge(
    *,
    session: Session,
    rules: Rules,
    phases: list[PhaseRule],
    actor: User | None,
    dry_run: bool,
    now: dt.datetime | None = None,
) -> Plan:
    """Bring the server's rules and phases to ``rules`` and ``phases`` (nothing is written with ``dry_run``);
    returns the plan. Raises Conflict, NotFound or InvalidRequest, having written nothing, for what the API refuses."""
    now = now or utcnow()
    names = [p.name for p in phases]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InvalidRequest(f"phase {repeated[0]!r} is named twice in the challenge; phase names are unique")
    changes: list[str] = []
    current = get_rules(session=session)
    for name in RULE_NAMES:
        before, after = getattr(current, name), getattr(rules, name)
        if before != after:
            changes.append(f"rule {name}: {_rule_shown(name, before)} -> {_rule_shown(name, after)}")
    existing = {p.name: p for p in list_phases(session=session)}
    writes: list[tuple[Phase | None, PhaseRule, dict[str, Any]]] = []
    for rule in phases:
        phase = existing.get(rule.name)
        evalset = get_evalset(session=session, name=rule.evalset)  # NotFound names an unregistered set
        if phase is None:
            if evalset.revealed:
                raise Conflict(
                    f"phase {rule.name!r}: evaluation set {rule.evalset!r} is revealed; no new phase may use it"
                )
            opens_at = rule.opens_at or now
            _check_times(rule.name, opens_at, rule.closes_at)
            changes.append(
                f"create phase {rule.name} ({rule.title or rule.name!r}) on set {evalset.name} ({evalset.track}): "
                f"opens {_shown(rule.opens_at) if rule.opens_at else 'now'}, closes "
                f"{_shown(rule.closes_at) if rule.closes_at else 'never'}, quota "
                f"{rule.daily_quota if rule.daily_quota is not None else 'the server default'} a day, board "
                f"{rule.visibility}"
            )
            writes.append((None, rule, {"evalset": evalset, "opens_at": opens_at}))
            continue
        wanted: dict[str, Any] = {
            "title": rule.title or rule.name,
            "opens_at": rule.opens_at or phase.opens_at,
            "closes_at": rule.closes_at,
            "daily_quota": rule.daily_quota,
            "visibility": rule.visibility,
        }
        _check_times(rule.name, wanted["opens_at"], wanted["closes_at"])
        diff = {field: value for field, value in wanted.items() if getattr(phase, field) != value}
        if evalset.id != phase.evalset_id:
            _check_set_change(session, phase, evalset.name, evalset.revealed)
            changes.append(f"phase {rule.name}: evalset {phase.evalset.name} -> {evalset.name} ({evalset.track})")
            diff["evalset"] = evalset
        for field, value in diff.items():
            if field != "evalset":
                changes.append(f"phase {rule.name}: {field} {_shown(getattr(phase, field))} -> {_shown(value)}")
        if diff:
            writes.append((phase, rule, diff))
    notes = [f"phase {name}: on the server, not in the file: left as is" for name in existing if name not in names]
    plan = Plan(changes, notes)
    if dry_run or not changes:
        return plan
    _write_rules(session, rules, now)
    for phase, rule, values in writes:
        if phase is None:
            session.add(
                Phase(
                    name=rule.name,
                    title=rule.title or rule.name,
                    evalset=values["evalset"],
                    opens_at=values["opens_at"],
                    closes_at=rule.closes_at,
                    daily_quota=rule.daily_quota,
                    visibility=rule.visibility,
                    created_at=now,
                )
            )
        else:
            for field, value in values.items():
                setattr(phase, field, value)
    add_log_entry(session, actor, "apply_challenge", "challenge", {"changes": changes})
    session.commit()
    return plan


def _check_times(name: str, opens_at: dt.datetime, closes_at: dt.datetime | None) -> None:
    if closes_at is not None and closes_at <= opens_at:
        raise Conflict(f"phase {name!r} would close at {_shown(closes_at)}, not after it opens at {_shown(opens_at)}")


def _check_set_change(session: Session, phase: Phase, evalset: str, revealed: bool) -> None:
    """A phase's set may change only while it has no submission (theirs were scored on the set they had)."""
    count = session.scalar(select(func.count(Submission.id)).where(Submission.phase_id == phase.id)) or 0
    if count:
        raise Conflict(
            f"phase {phase.name!r} has {count} submission{'s' if count != 1 else ''} scored on set "
            f"{phase.evalset.name!r}; its set cannot change to {evalset!r} (make a new phase for the new set)"
        )
    if revealed:
        raise Conflict(f"phase {phase.name!r}: evaluation set {evalset!r} is revealed; no phase may move to it")


def _write_rules(session: Session, rules: Rules, now: dt.datetime) -> None:
    row = session.get(ChallengeRules, RULES_ID)
    if row is None:
        row = ChallengeRules(id=RULES_ID)
        session.add(row)
    for name in RULE_NAMES:
        setattr(row, name, getattr(rules, name))
    row.updated_at = now


def export_challenge(*, session: Session) -> tuple[Rules, list[PhaseRule]]:
    """The server's rules and every phase, as a challenge file describes them (every phase field spelled out)."""
    phases = [
        PhaseRule(
            name=p.name,
            evalset=p.evalset.name,
            title=p.title,
            opens_at=p.opens_at,
            closes_at=p.closes_at,
            daily_quota=p.daily_quota,
            visibility=p.visibility,
        )
        for p in list_phases(session=session)
    ]
    return get_rules(session=session), phases
