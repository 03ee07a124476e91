"""Uploads against a real uvicorn server, as the review reproduced finding 3: what reaches the temporary folder.

FastAPI parses a multipart body (spooling the file part to a temporary file past 1 MiB) before it resolves any
dependency, authentication included, and a chunked upload declares no Content-Length. Before the fix, with no token,
195,849,502 bytes were written to the temporary folder before the 401. Here the server runs as its own process with
its own ``TMPDIR``; the spooled file is unlinked as soon as it is created (O_TMPFILE), so its size is read from the
server's open descriptors (``/proc/<pid>/fd``) while the upload runs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from layersched.server.body_limits import RequestBodyLimits
from layersched.server.config import Settings
from tests.pipeline.stack import free_port, wait_for
from tests.server.conftest import BROKER, POLICY, Account

pytestmark = pytest.mark.postgres

LIMIT = 3_000_000  # over Starlette's 1 MiB in-memory spool, so an accepted file part does reach the disk
BOUNDARY = "b0undary"


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    spool: Path


@dataclass
class SpoolWatch:
    """The largest total size of the server's open files under its temporary folder, sampled every millisecond."""

    server: Server
    largest: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def _spooled(self) -> int:
        total = 0
        fds = Path(f"/proc/{self.server.process.pid}/fd")
        for fd in fds.iterdir():
            try:
                if os.readlink(fd).startswith(str(self.server.spool)):
                    total += fd.stat().st_size
            except FileNotFoundError:  # closed between the listing and the look
                continue
        return total

    def run(self) -> None:
        while not self._stop.is_set():
            self.largest = max(self.largest, self._spooled())
            time.sleep(0.001)

    def __enter__(self) -> SpoolWatch:
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def server(settings: Settings, tmp_path: Path) -> Iterator[Server]:
    spool = tmp_path / "spool"
    spool.mkdir()
    port = free_port()
    env = {
        **os.environ,
        "TMPDIR": str(spool),
        "LAYERSCHED_DATABASE_URL": settings.database_url,
        "LAYERSCHED_BROKER_URL": BROKER,
        "LAYERSCHED_BUNDLE_DIR": str(settings.bundle_dir),
        "LAYERSCHED_MAX_BUNDLE_MB": str(LIMIT / 1e6),
    }
    argv = [sys.executable, "-m", "uvicorn", "--factory", "layersched.server.app:create_app", "--port", str(port)]
    # cwd: no .env of the checkout is read; the log goes to a file the assertion messages can show.
    with (tmp_path / "api.log").open("wb") as log:
        process = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: _answers(port), 30, "the API")
        yield Server(port, process, spool)
    finally:
        process.terminate()
        process.wait(timeout=30)


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code in (200, 503)
    except httpx.HTTPError:
        return False


def chunked_upload(server: Server, headers: dict[str, str], body_bytes: int) -> tuple[int, dict[str, Any], int]:
    """POST a multipart upload of a ``body_bytes`` file part with chunked transfer encoding, over a raw socket as an
    attacker would (no client library that stops early); returns the status, the JSON body and the bytes sent.

    The response is read while the body is still being sent: a server that answers early and closes would
    otherwise reset the connection before the answer is read."""
    sock = socket.create_connection(("127.0.0.1", server.port))
    lines = [
        "POST /api/v1/submissions HTTP/1.1",
        f"Host: 127.0.0.1:{server.port}",
        "Transfer-Encoding: chunked",
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    received = bytearray()

    def read() -> None:
        try:
            while not _complete(received) and (chunk := sock.recv(65536)):
                received.extend(chunk)
        except OSError:  # reset by the server once it has answered
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="policy.py"\r\n\r\n'
    ).encode() + POLICY
    sent = 0
    try:
        for piece in _pieces(head, body_bytes):
            if b"\r\n\r\n" in received:  # the answer's head is in: the server has stopped reading
                break
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            sent += len(piece)
        else:
            sock.sendall(f"{len(BOUNDARY) + 8:x}\r\n\r\n--{BOUNDARY}--\r\n\r\n0\r\n\r\n".encode())
    except OSError:  # the server closed the connection while this side was still sending
        pass
    reader.join(timeout=30)
    sock.close()
    status_line, _, rest = bytes(received).partition(b"\r\n")
    _headers, _, body = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), json.loads(body), sent


def _complete(response: bytes | bytearray) -> bool:
    """Whether ``response`` holds a whole HTTP response (the server may keep the connection open after it)."""
    head, found, body = bytes(response).partition(b"\r\n\r\n")
    if not found:
        return False
    lengths = [line.split(b":", 1)[1] for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
    return bool(lengths) and len(body) >= int(lengths[0])


def _pieces(head: bytes, body_bytes: int, size: int = 64 * 1024) -> Iterator[bytes]:
    yield head
    for start in range(0, body_bytes, size):
        yield b"#" * min(size, body_bytes - start)


def test_chunked_upload_stops_at_the_limit(server: Server, alice: Account, unchanged: None) -> None:
    """Before the fix all 100 MB were read and spooled to disk, then the route refused it (413)."""
    with SpoolWatch(server) as watch:
        status, body, sent = chunked_upload(server, alice.headers, 100_000_000)
    assert watch.largest <= LIMIT + RequestBodyLimits.SLACK, f"{watch.largest} bytes spooled, {sent} sent"
    assert sent < 20_000_000  # the server stopped reading: the socket buffers hold the rest
    limit = LIMIT + RequestBodyLimits.SLACK
    assert (status, body) == (
        413,
        {
            "error": {
                "code": "bundle_too_large",
                "message": f"the upload is more than {limit} bytes; bundles may be at most {LIMIT}",
            }
        },
    )


def test_no_token_is_refused_before_the_body(server: Server, alice: Account, unchanged: None) -> None:
    """The 401 comes back while the body has not even started: before the fix the server waited for all of it."""
    with SpoolWatch(server) as watch, socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            (
                f"POST /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n\r\n"
            ).encode()
        )
        sock.settimeout(10)
        answer = bytearray()
        while not _complete(answer) and (chunk := sock.recv(65536)):
            answer.extend(chunk)
    status_line, _, rest = bytes(answer).partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 401")
    assert b"www-authenticate: bearer" in rest.lower()
    assert json.loads(rest.partition(b"\r\n\r\n")[2]) == {
        "error": {
            "code": "unauthorized",
            "message": "this route needs a token: send the header 'Authorization: Bearer <token>'",
        }
    }
    assert watch.largest == 0


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer lst_0123456789abcdef_forged"}],
    ids=["no-token", "forged-token"],
)
def test_no_token_large_chunked_upload_writes_nothing(
    server: Server, alice: Account, headers: dict[str, str], unchanged: None
) -> None:
    """The review's reproduction: 200 MB, chunked, no (valid) token. Before the fix 195,849,502 bytes were spooled."""
    with SpoolWatch(server) as watch:
        status, body, sent = chunked_upload(server, headers, 200_000_000)
    assert watch.largest == 0, f"{watch.largest} bytes spooled"
    assert (status, body["error"]["code"]) == (401, "unauthorized"), body
    assert sent < 20_000_000
