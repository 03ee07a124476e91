"""Finds the episode's socket in the harness's frame and writes its action itself, then returns it as usual, so
every action arrives twice: the copy answers a task that was already answered (``protocol_error``)."""

import sys

from layersched.worker.sandbox import protocol


def policy(env, task, rng):
    action = int(env.mask(task).argmax())
    harness = sys._getframe(1).f_locals  # episode_process: its connection to the trusted side and this task's nonce
    harness["conn"].sendall(protocol.encode_action(env.k, action, harness["nonce"]))
    return action
