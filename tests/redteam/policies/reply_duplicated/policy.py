"""Finds the episode's socket in the harness's frame and writes its action itself, then returns it as usual, so
every action arrives twice: the copy answers a task that was already answered (``protocol_error``)."""

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
    action = int(env.mask(task).argmax())
    harness = _episode_process_locals()  # episode_process: its connection to the trusted side and this task's nonce
    harness["conn"].sendall(protocol.encode_action(env.k, action, harness["nonce"]))
    return action
