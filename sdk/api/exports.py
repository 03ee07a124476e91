"""The organisers' exports of a phase (``GET /admin/exports/...``), written to a file as they stream in."""

from __future__ import annotations

from typing import IO

from layersched.sdk.api.transport import Transport

EXPORTS = ("board", "submissions", "episodes", "bundles")


class ExportsApi(Transport):
    def admin_export(self, what: str, *, phase: str, sink: IO[bytes], format: str = "csv") -> int:
        """Write the phase's ``what`` export (one of ``EXPORTS``; ``bundles`` is a zip) to ``sink``; the bytes
        written."""
        if what not in EXPORTS:
            raise ValueError(f"export must be one of {', '.join(EXPORTS)}, got {what!r}")
        params = {"phase": phase} if what == "bundles" else {"phase": phase, "format": format}
        return self._download(f"/admin/exports/{what}", params=params, sink=sink)
