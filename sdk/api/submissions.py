"""Submissions (``/submissions``): uploading a bundle with its progress, reading one's own, their logs, the final
selection, and following an evaluation to its end."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Iterator

from layersched.sdk.api.decoding import decode, decode_list, decode_page, json_field
from layersched.sdk.api.responses import EpisodeLog, Page, Submission
from layersched.sdk.api.transport import Transport, poll
from layersched.sdk.bundle import Bundle

ProgressCallback = Callable[[int, int], None]


class SubmissionsApi(Transport):
    """Upload, list, read, select and follow submissions."""

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
        return decode(Submission, raw, "submission")

    def submissions(self, *, offset: int = 0, limit: int = 50, phase: str | None = None) -> Page[Submission]:
        """Yours and your team's, newest first (an organiser: everyone's); ``phase``: only those to it."""
        params: dict[str, str | int] = {"offset": offset, "limit": limit}
        if phase is not None:
            params["phase"] = phase
        raw = self._request("GET", "/submissions", params=params)
        return decode_page(raw, Submission, "submissions")

    def submission(self, submission_id: int) -> Submission:
        return decode(Submission, self._request("GET", f"/submissions/{submission_id}"), "submission")

    def logs(self, submission_id: int) -> list[EpisodeLog]:
        raw = self._request("GET", f"/submissions/{submission_id}/logs")
        return decode_list(EpisodeLog, json_field(raw, "data", "logs"), "logs.data")

    def select(self, submission_id: int) -> Submission:
        """Add the submission to your final selection (``POST /submissions/{id}/select``)."""
        return decode(Submission, self._request("POST", f"/submissions/{submission_id}/select"), "submission")

    def unselect(self, submission_id: int) -> Submission:
        """Take the submission out of your final selection (``POST /submissions/{id}/unselect``)."""
        return decode(Submission, self._request("POST", f"/submissions/{submission_id}/unselect"), "submission")

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
        return poll(lambda: self.submission(submission_id), on_update, poll_interval, timeout, sleep, self.server)


_TOKEN = re.compile(r'["\\\r\n]')


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
