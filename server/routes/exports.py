"""``GET /admin/exports/{board,submissions,episodes,bundles}?phase=P``: a phase's exports, streamed as they are read
(``server/exports.py``); the phase is checked before the first byte, so a phase that does not exist is a plain 404.
Each stream reads through a session of its own, open as long as the stream."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from layersched.server import exports, storage
from layersched.server.deps import Organiser, SessionDep, SettingsDep
from layersched.server.errors import StorageUnavailable
from layersched.server.export_formats import chunked, csv_lines, json_lines, zip_stream
from layersched.server.models import Phase, User
from layersched.server.organiser_schemas import Format
from layersched.server.schemas import NO_NUL

router = APIRouter(prefix="/admin/exports", tags=["organisers"])
PhaseName = Annotated[str, Query(min_length=1, max_length=50, pattern=NO_NUL, description="the phase to export")]
FormatQuery = Annotated[Format, Query(description="csv (default) or json (an array)")]
MEDIA = {"csv": "text/csv; charset=utf-8", "json": "application/json"}
STREAMED: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/csv": {}, "application/json": {}}, "description": "the rows, streamed"}
}


def _stream(
    request: Request, phase_name: str, filename: str, media: str, produce: Callable[[Session, Phase], Iterator[bytes]]
) -> StreamingResponse:
    def chunks() -> Iterator[bytes]:
        with request.app.state.sessionmaker() as session:
            phase = storage.get_phase(session=session, name=phase_name)
            yield from produce(session, phase)

    headers = {"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"}
    return StreamingResponse(chunks(), media_type=media, headers=headers)


def _rows(format: str, columns: tuple[str, ...], rows: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    return chunked(csv_lines(columns, rows) if format == "csv" else json_lines(rows))


@router.get("/board", response_class=StreamingResponse, responses=STREAMED)
def export_board(
    request: Request, session: SessionDep, actor: Organiser, phase: PhaseName, format: FormatQuery = "csv"
) -> StreamingResponse:
    """A row per competitor of the phase (every participant is in one): rank on the final board, members and e-mails,
    private and public scores with intervals, public rank, selection, disqualifications, provenance."""
    storage.get_phase(session=session, name=phase)

    def produce(s: Session, p: Phase) -> Iterator[bytes]:
        organiser = s.get(User, actor.id)
        assert organiser is not None
        return _rows(format, exports.BOARD_COLUMNS, iter(exports.board_rows(session=s, phase=p, organiser=organiser)))

    return _stream(request, phase, f"board-{phase}.{format}", MEDIA[format], produce)


@router.get("/submissions", response_class=StreamingResponse, responses=STREAMED)
def export_submissions(
    request: Request, session: SessionDep, _actor: Organiser, phase: PhaseName, format: FormatQuery = "csv"
) -> StreamingResponse:
    """Every submission of the phase with its state, times, scores of both splits and provenance."""
    storage.get_phase(session=session, name=phase)

    def produce(s: Session, p: Phase) -> Iterator[bytes]:
        return _rows(format, exports.SUBMISSION_COLUMNS, exports.submission_rows(session=s, phase=p))

    return _stream(request, phase, f"submissions-{phase}.{format}", MEDIA[format], produce)


@router.get("/episodes", response_class=StreamingResponse, responses=STREAMED)
def export_episodes(
    request: Request, session: SessionDep, _actor: Organiser, phase: PhaseName, format: FormatQuery = "csv"
) -> StreamingResponse:
    """Every episode of every submission's primary evaluation, hidden ones included, with the track's metrics."""
    columns = exports.episode_columns(storage.get_phase(session=session, name=phase))

    def produce(s: Session, p: Phase) -> Iterator[bytes]:
        return _rows(format, columns, exports.episode_rows(session=s, phase=p, flat_metrics=format == "csv"))

    return _stream(request, phase, f"episodes-{phase}.{format}", MEDIA[format], produce)


@router.get(
    "/bundles",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/zip": {}}, "description": "the zip, streamed"}},
)
def export_bundles(
    request: Request, session: SessionDep, actor: Organiser, settings: SettingsDep, phase: PhaseName
) -> StreamingResponse:
    """A zip of the bundles of the phase's final selection (each competitor's selected submissions, or the one the
    final ranking took), with a manifest: for plagiarism checks."""
    target = storage.get_phase(session=session, name=phase)
    files = exports.bundle_files(session=session, phase=target, organiser=actor, bundle_dir=settings.bundle_dir)
    missing = [name for name, source in files if not isinstance(source, bytes) and not source.is_file()]
    if missing:  # found before the first byte: a zip cut in the middle would pass for a whole one
        raise StorageUnavailable(f"the bundle store lacks {len(missing)} of these bundles (first: {missing[0]})")
    headers = {"Content-Disposition": f'attachment; filename="bundles-{phase}.zip"', "Cache-Control": "no-store"}
    return StreamingResponse(zip_stream(files), media_type="application/zip", headers=headers)
