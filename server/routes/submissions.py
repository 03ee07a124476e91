from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Query, UploadFile

from layersched.server import bundles, leaderboard, presenters, queue, storage, visibility
from layersched.server.deps import CurrentUser, EnqueuerDep, PageDep, RowId, SessionDep, SettingsDep
from layersched.server.errors import BundleTooLarge, StorageUnavailable
from layersched.server.models import NAME_LENGTH
from layersched.server.queue_places import QueuePlaces
from layersched.server.schemas import NO_NUL, SubmissionLogs, SubmissionPublic, SubmissionsPublic, VisibleName
from layersched.server.tracks import server_track
from layersched.server.upload_checks import check_upload_allowed

router = APIRouter(prefix="/submissions", tags=["participants"])


def _read_limited(upload: UploadFile, limit: int) -> bytes:
    data = upload.file.read(limit + 1)
    if len(data) > limit:
        raise BundleTooLarge(f"bundle {upload.filename!r} is larger than the limit of {limit} bytes")
    return data


@router.post("", status_code=201, response_model=SubmissionPublic)
def create_submission(
    session: SessionDep,
    user: CurrentUser,
    settings: SettingsDep,
    enqueuer: EnqueuerDep,
    file: Annotated[UploadFile, File(description="a .py, .zip, .tar.gz or .tgz bundle")],
    name: Annotated[str, Form(min_length=1, max_length=NAME_LENGTH, pattern=NO_NUL), VisibleName],
    description: Annotated[str, Form(max_length=2000, pattern=NO_NUL)] = "",
    phase: Annotated[
        str | None, Form(max_length=50, pattern=NO_NUL, description="default: the only open phase")
    ] = None,
    track: Annotated[
        str | None, Form(max_length=50, pattern=NO_NUL, description="if sent, must be the phase's track")
    ] = None,
) -> SubmissionPublic:
    target = check_upload_allowed(session=session, user=user, settings=settings, phase_name=phase, track=track)
    evalset = target.evalset
    data = _read_limited(file, settings.max_bundle_bytes)
    info = bundles.inspect_bundle(
        data,
        file.filename or "",
        policy_arguments=server_track(evalset.track).policy_arguments,
        max_files=settings.max_files,
        max_unpacked_bytes=settings.max_unpacked_bytes,
    )
    # Checked again under the participant's row lock (held until create_submission commits): the first check refuses
    # before the bundle is inspected, this one makes a burst of concurrent uploads count exactly. Neither runs before
    # the body is read: FastAPI parses the form first; the token and the size are checked before that by
    # body_limits.RequestBodyLimits.
    storage.lock_submitter(session=session, user=user)
    storage.check_can_submit(
        session=session,
        user=user,
        phase=target,
        daily_quota=settings.daily_quota,
        max_in_flight=settings.max_in_flight,
    )
    try:
        bundles.store_bundle(data, bundle_dir=settings.bundle_dir)
    except OSError as exc:  # read-only or full disk: the service's fault; store_bundle leaves no partial file
        raise StorageUnavailable(
            # The folder's path stays out of the message: participants need not learn the server's layout.
            f"the bundle store cannot be written ({exc.strerror or type(exc).__name__}); "
            "the upload was not kept, try again later"
        ) from exc
    submission, evaluation = storage.create_submission(
        session=session,
        owner=user,
        name=name,
        description=description,
        bundle_sha256=info.sha256,
        bundle_format=info.format,
        bundle_bytes=info.size,
        phase=target,
    )
    queue.enqueue(enqueuer, evaluation)
    return presenters.submission_public(submission, viewer=user, queue=QueuePlaces(session, settings))


@router.get("", response_model=SubmissionsPublic)
def list_submissions(
    session: SessionDep,
    user: CurrentUser,
    settings: SettingsDep,
    page: PageDep,
    phase: Annotated[str | None, Query(max_length=50, pattern=NO_NUL, description="only those to this phase")] = None,
) -> SubmissionsPublic:
    target = storage.get_phase(session=session, name=phase) if phase is not None else None
    rows, count = storage.list_submissions(
        session=session, viewer=user, offset=page.offset, limit=page.limit, phase=target
    )
    views, places = leaderboard.PublicViews(session, user), QueuePlaces(session, settings)
    return SubmissionsPublic(
        data=[presenters.submission_public(s, viewer=user, view=views.of(s.phase), queue=places) for s in rows],
        count=count,
    )


@router.get("/{submission_id}", response_model=SubmissionPublic)
def read_submission(
    session: SessionDep, user: CurrentUser, settings: SettingsDep, submission_id: RowId
) -> SubmissionPublic:
    submission = storage.get_submission(session=session, submission_id=submission_id, viewer=user)
    view = leaderboard.public_view(session=session, viewer=user, phase=submission.phase)
    return presenters.submission_public(submission, viewer=user, view=view, queue=QueuePlaces(session, settings))


@router.get("/{submission_id}/logs", response_model=SubmissionLogs)
def read_logs(session: SessionDep, user: CurrentUser, submission_id: RowId) -> SubmissionLogs:
    submission = storage.get_submission(session=session, submission_id=submission_id, viewer=user)
    return SubmissionLogs(data=presenters.submission_logs(submission, visibility.audience(user, submission)))


@router.post("/{submission_id}/select", response_model=SubmissionPublic)
def select_submission(
    session: SessionDep, user: CurrentUser, settings: SettingsDep, submission_id: RowId
) -> SubmissionPublic:
    submission = storage.select_submission(
        session=session,
        submission_id=submission_id,
        viewer=user,
        limit=settings.final_submissions,
        deadline=settings.submission_deadline,
    )
    return presenters.submission_public(
        submission, viewer=user, view=leaderboard.public_view(session=session, viewer=user, phase=submission.phase)
    )


@router.post("/{submission_id}/unselect", response_model=SubmissionPublic)
def unselect_submission(
    session: SessionDep, user: CurrentUser, settings: SettingsDep, submission_id: RowId
) -> SubmissionPublic:
    submission = storage.unselect_submission(
        session=session, submission_id=submission_id, viewer=user, deadline=settings.submission_deadline
    )
    return presenters.submission_public(
        submission, viewer=user, view=leaderboard.public_view(session=session, viewer=user, phase=submission.phase)
    )
