"""Tries to get at its harness (the parent process, same user): its memory, its file descriptors (the control
connection), its environment (the start nonce), ptrace; and looks for the nonce in its own environment. Prints
what it got as one JSON line."""

import ctypes
import json
import os


def _try(action):
    try:
        action()
    except OSError as exc:
        return f"refused: {type(exc).__name__}"
    return "allowed"


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def _ptrace(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
        return "allowed"
    return f"refused: {ctypes.get_errno()}"


def policy(env, task, rng):
    if env.k == 0:
        harness = os.getppid()
        report = {
            "mem": _try(lambda: open(f"/proc/{harness}/mem", "rb").close()),
            "fd": _try(lambda: os.listdir(f"/proc/{harness}/fd")),
            "environ": _try(lambda: _read(f"/proc/{harness}/environ")),
            "ptrace": _ptrace(harness),
            "own_environ_nonce": "LAYERSCHED_START_NONCE" in os.environ,
        }
        print(json.dumps(report), flush=True)
    return int(env.mask(task).argmax())
