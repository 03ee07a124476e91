"""Leaves an impostor behind when its sandbox is replaced: at the second decision it starts a thread that keeps
connecting to the channel's socket, posing as a freshly started harness (``sim`` with a forged fingerprint, then
``ready``), and freezes its real harness so that the worker replaces the sandbox.

Reviewed main (with a warm pool, whose replaced containers are removed in the background): the new sandbox's socket
was bound again at the same path, in a directory the old container still had mounted, and the impostor connected
first in 22 of 22 restarts. Every start now gets a new channel directory, and the harness must echo the start's
nonce, which only the harness that start launched was given.
"""

import json
import os
import signal
import socket
import struct
import threading
import time

FORGED = {"type": "sim", "fingerprint": "IMPOSTOR", "nonce": ""}


def _frame(message):
    payload = json.dumps(message).encode()
    return struct.pack(">I", len(payload)) + payload


def _impostor():
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect("/run/layersched/chan.sock")
            conn.sendall(_frame(FORGED) + _frame({"type": "ready", "python": "x", "numpy": "x", "torch": None}))
            time.sleep(5)
        except OSError:
            time.sleep(0.001)


def policy(env, task, rng):
    if env.k == 1:
        threading.Thread(target=_impostor, daemon=True).start()
        os.kill(os.getppid(), signal.SIGSTOP)
        time.sleep(3600)
    return int(env.mask(task).argmax())
