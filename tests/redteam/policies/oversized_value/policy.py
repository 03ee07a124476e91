"""Writes a ``bad_action`` frame of its own on the episode's socket, with a 3,000,000-character value and a
500,000-character type (the harness would cut a returned value's repr to 200 characters; a hand-made frame is not
cut by anything in the sandbox). The trusted side must cut it before it becomes a message."""

import os
import sys

from layersched.worker.sandbox import protocol


def _episode_process_locals():
    """The locals of the episode process's loop (its connection and this task's nonce): the first caller that has
    them, above the track's replica that calls the policy."""
    frame = sys._getframe(1)
    while "nonce" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals


def policy(env, task, rng):
    if env.k == 1:
        frame = _episode_process_locals()  # the episode process: its connection and this task's nonce
        value, value_type = "V" * 3_000_000, "V" * 500_000  # within the 4 MiB a frame from the sandbox may have
        reply = {"type": "bad_action", "step": 1, "nonce": frame["nonce"], "value": value, "value_type": value_type}
        frame["conn"].sendall(protocol.encode(reply, max_size=protocol.MAX_FRAME_FROM_SANDBOX))
        os._exit(1)
    return int(env.mask(task).argmax())
