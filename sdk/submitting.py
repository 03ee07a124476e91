"""``submit`` and ``status``: a policy's way from the student's disk to its score and rank.

``submit`` chooses the phase (``phase_choice``: ``--phase``, the kit's track's open phase, the only open one), asks
the server whether an upload would be accepted (token, phase, quota), checks the bundle locally against the phase's
track, uploads it with a progress bar and follows the evaluation; ``status`` lists the submissions with their
phases or shows one with the provenance of its evaluations. Both say, on the submission's own phase (``outcome``),
what its score is a ratio to and why a scored submission has no rank.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layersched.sdk.arguments import phase_name
from layersched.sdk.bundle import skipped_text
from layersched.sdk.checks import limits_text
from layersched.sdk.commands import AddCommand, print_json
from layersched.sdk.config import load_config
from layersched.sdk.errors import BundleError, LayerschedError, WaitTimeout
from layersched.sdk.kit_track import find_kit_track
from layersched.sdk.outcome import outcome_line, rank_for, reference_for, references, selection_for
from layersched.sdk.phase_choice import choose_target
from layersched.sdk.progress import ProgressBar, format_bytes
from layersched.sdk.tables import text_table
from layersched.sdk.terminal_text import continued
from layersched.sim.arguments import positive_float, positive_int
from layersched.sim.tracks import Track

if TYPE_CHECKING:  # imported where used: `layersched --help` need not load httpx
    from layersched.sdk.client import Client


def add_submitting_parsers(sub: Any, add: AddCommand) -> None:
    """``submit`` and ``status``."""
    p = add(
        sub,
        "submit",
        cmd_submit,
        "upload a policy and follow its evaluation",
        "Bundle PATH (a .py file, or a directory with policy.py), run the static checks, upload it with a\n"
        "progress bar, then follow the evaluation until its score and rank are known. A kit made by\n"
        "`layersched init --track` (its layersched-kit.toml) goes to the open phase of its track; --phase names\n"
        "another. Left out of the bundle: caches, virtual environments and what .layerschedignore lists.\n"
        f"A bundle holds {limits_text()}.",
        "  layersched submit my_policy.py\n"
        '  layersched submit my_policy/ --name mlp-v2 --message "imitation + 200 PG episodes"\n'
        "  layersched submit my_policy/ --no-wait      # then: layersched status ID\n"
        "  layersched submit . --phase final            # when several phases are open\n",
    )
    p.add_argument("path", type=Path, help="a policy .py file or a directory with policy.py")
    p.add_argument(
        "--phase",
        type=phase_name,
        help="the phase to submit to (default: the open phase of the kit's track, else the only open one; see "
        "layersched phases)",
    )
    p.add_argument("--name", help="submission name, 1-100 characters (default: the file or directory name)")
    p.add_argument("--message", "-m", default="", help="a description for you and the organisers")
    p.add_argument(
        "--wait",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="follow the evaluation until it ends (default: --wait)",
    )
    p.add_argument("--skip-checks", action="store_true", help="upload even if the local static checks fail")
    p.add_argument("--poll", type=positive_float, default=2.0, metavar="S", help="seconds between status checks")
    p.add_argument("--timeout", type=positive_float, metavar="S", help="stop following after S seconds")

    p = add(
        sub,
        "status",
        cmd_status,
        "show one submission, or list yours",
        "Without ID: your submissions (and your team's), newest first, each with its phase. With ID: state,\n"
        "progress, score (a ratio to its phase's reference baseline), rank on its phase's board, final selection\n"
        "and the provenance of every evaluation (evaluation set, simulator version, sandbox image, bundle hash).",
        "  layersched status\n  layersched status --phase final\n  layersched status 12\n"
        "  layersched status 12 --json\n",
    )
    p.add_argument("id", nargs="?", type=positive_int, help="submission id")
    p.add_argument("--phase", type=phase_name, help="list only the submissions to this phase")
    p.add_argument("--limit", type=positive_int, default=20, help="how many to list (default 20)")
    p.add_argument("--json", action="store_true", help="print JSON")


def cmd_submit(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client, Submission

    config = load_config()
    config.require_server()
    config.require_token()
    kit = find_kit_track(args.path)  # before the server: a bad kit file is the student's to fix first
    with Client.from_config(config) as client:
        # The server's refusals first (token, no such phase, quota, closed uploads): they need no bundle, and
        # bundling a large policy takes seconds.
        target = choose_target(client, args.phase, kit)
        track = target.track
        bundle = _checked_bundle(args.path, skip_checks=args.skip_checks, track=track)
        name = args.name or _default_name(args.path)
        with ProgressBar("upload", len(bundle.data), unit="bytes") as bar:
            submission = client.submit(
                bundle,
                name=name,
                description=args.message,
                phase=target.phase,
                # Checked for this track: should the phase change track meanwhile, the server refuses, naming both.
                track=track.id if target.checked or kit is not None else None,
                on_progress=lambda sent, total: bar.update(sent, total),
            )
        print(f"submitted #{submission.id} '{submission.name}' ({submission.state})")
        if submission.queue is not None:
            print(f"queue: {queue_text(submission.queue)}")
        print(_page_line(client, submission.id))
        if not args.wait:
            print(f"follow it with: layersched status {submission.id}")
            return 0
        print("following the evaluation (Ctrl-C stops watching, not the evaluation)", file=sys.stderr)
        bar = ProgressBar("evaluation")

        def on_update(sub: Submission) -> None:
            note = f"queued: {queue_text(sub.queue, short=True)}" if sub.queue is not None else sub.state
            bar.update(sub.progress.done, sub.progress.total or None, note=note)

        try:
            final = client.wait(submission.id, on_update=on_update, poll_interval=args.poll, timeout=args.timeout)
        except WaitTimeout as exc:
            raise WaitTimeout(f"{exc}; follow it with: layersched status {submission.id}") from None
        finally:
            bar.close()
        rank, reference = rank_for(client, final), reference_for(client, final)
    print(outcome_line(final, rank, reference))
    return 0 if final.state == "succeeded" else 1


def _checked_bundle(path: Path, *, skip_checks: bool, track: Track) -> Any:
    """The bundle of ``path`` once the local static checks of ``track``'s contract pass (or are skipped); their
    warnings go to stderr."""
    from layersched.sdk.validate import static_check

    report = static_check(path, track)
    problems = [f.message for f in report.findings if f.level == "error"]
    if report.bundle is None:  # bundling itself failed: nothing to upload
        raise BundleError.of(path, problems)
    bundle = report.bundle
    for f in report.findings:
        if f.level == "warning":
            print(f"warning: {f.message}", file=sys.stderr)
    left_out = skipped_text(bundle.skipped)
    if left_out is not None:
        print(left_out, file=sys.stderr)
    if problems and not skip_checks:
        more = f" (and {len(problems) - 1} more; run layersched validate)" if len(problems) > 1 else ""
        raise LayerschedError(f"not uploaded: {problems[0]}{more}")
    print(
        f"bundle {bundle.filename}: {len(bundle.files)} file(s), {format_bytes(bundle.unpacked_bytes)}, "
        f"sha256 {bundle.sha256[:12]}",
        file=sys.stderr,
    )
    return bundle


def _default_name(path: Path) -> str:
    resolved = path.resolve()
    name = resolved.stem if resolved.is_file() else resolved.name
    return (name or "policy")[:100]


def cmd_status(args: argparse.Namespace) -> int:
    from layersched.sdk.client import Client

    with Client.from_config() as client:
        if args.id is None:
            return _list_submissions(client, limit=args.limit, phase=args.phase, as_json=args.json)
        sub = client.submission(args.id)
        if args.json:
            print_json(asdict(sub))
            return 0
        rank, selection = rank_for(client, sub), selection_for(client, sub)
        reference = reference_for(client, sub)
    print(
        f"#{sub.id} '{sub.name}' by {sub.owner}, created {sub.created_at}"
        + (f", phase {sub.phase}" if sub.phase else "")
    )
    if sub.description:
        print(f"  {continued(sub.description)}")
    print(f"state: {sub.state}, episodes {sub.progress.done}/{sub.progress.total}")
    if sub.queue is not None:
        print(f"queue: {queue_text(sub.queue)}")
    print(outcome_line(sub, rank, reference))
    print(selection)
    print(f"bundle sha256: {sub.bundle_sha256}")
    print(_page_line(client, sub.id))
    for e in sub.evaluations:
        of = f" of #{e.audit_of}" if e.audit_of is not None else ""
        print(
            f"  evaluation #{e.id} {e.kind}{of} {e.state} {e.progress.done}/{e.progress.total}:"
            f" set {e.evalset_commitment[:12]}, sim {e.sim_version or '-'}, sandbox {e.sandbox or '-'},"
            f" image {_short_image(e.image_digest)}"
            + (f", error {e.error.category}: {continued(e.error.message)}" if e.error else "")
            + (f", audit {e.audit.verdict}" if e.audit else "")
        )
    return 0


def _about(seconds: float) -> str:
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"


def queue_text(place: Any, *, short: bool = False) -> str:
    """A queued submission's place and estimate, as ``submit`` and ``status`` print them."""
    where = f"position {place.position} of {place.queued}"
    if short:
        return where + (f", starts in {_about(place.starts_in_s)}" if place.starts_in_s is not None else "")
    workers = f"{place.workers} worker{'s' if place.workers != 1 else ''}"
    if place.starts_in_s is None or place.done_in_s is None:
        return f"{where} ({workers}); no estimate yet (too few recent runs)"
    return (
        f"{where} ({workers}); it should start in {_about(place.starts_in_s)} and be done in "
        f"{_about(place.done_in_s)} (an estimate from recent run times)"
    )


def _list_submissions(client: Any, *, limit: int, phase: str | None, as_json: bool) -> int:
    """Yours (and your team's), newest first, each with its phase; the scores are ratios to each phase's own
    reference baseline, which the line below the table names."""
    page = client.submissions(limit=limit, phase=phase)
    if as_json:
        print_json({"data": [asdict(s) for s in page.data], "count": page.count})
        return 0
    if not page.data:
        print(f"no submissions to phase {phase} yet" if phase else "no submissions yet: layersched submit PATH")
        return 0
    rows = [
        [
            f"#{s.id}",
            s.name,
            s.phase or "-",
            s.state,
            f"{s.progress.done}/{s.progress.total}",
            f"{s.score.overall:.4f}" if s.score else "-",
            str(s.rank) if s.rank is not None else "disqualified" if s.disqualified is not None else "-",
            "yes" if s.selected else "-",
            s.created_at[:19].replace("T", " "),
        ]
        for s in page.data
    ]
    print(text_table(["id", "name", "phase", "state", "episodes", "score", "rank", "selected", "created"], rows))
    scored = sorted({s.phase for s in page.data if s.score is not None and s.phase is not None})
    if scored:
        reference = references(client)
        ratios = ", ".join(f"{name}: {reference[name]}" for name in scored if name in reference)
        print(f"score: ratio to the phase's reference baseline ({ratios}), lower is better; rank: on its board")
    if page.count > len(page.data):
        print(f"({len(page.data)} of {page.count}; --limit N for more)")
    return 0


def _page_line(client: Client, submission_id: int) -> str:
    return f"page: {client.page_url(submission_id)} (sign in there with your token)"


def _short_image(image: str | None) -> str:
    """A digest's first 12 hex digits, as ``docker images`` shows it; any other image name (the process sandbox's
    ``process:python-3.11.9``) in full, since cutting it changes what it says."""
    if not image:
        return "-"
    algorithm, _, digest = image.partition(":")
    if algorithm == "sha256" and len(digest) == 64:
        return f"sha256:{digest[:12]}"
    return image
