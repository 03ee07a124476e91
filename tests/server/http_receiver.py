"""A real HTTP server on the loopback that records what is posted to it: a webhook's receiver in tests."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Receiver:
    """Where it listens, what it answers (``status``) and every (path, JSON body) posted to it, in order."""

    url: str
    status: int = 204
    received: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@contextmanager
def http_receiver() -> Iterator[Receiver]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    record = Receiver(f"http://127.0.0.1:{port}")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            record.received.append((self.path, json.loads(self.rfile.read(length))))
            self.send_response(record.status)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield record
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
