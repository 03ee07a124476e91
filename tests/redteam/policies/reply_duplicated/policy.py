"""Finds the episode's socket in the harness's frame and writes its action itself, then returns it as usual, so
every action arrives twice: the copy answers a task that was already answered (``protocol_error``)."""

import sys

from layersched.worker import protocol


def policy(env, task, rng):
    action = int(env.mask(task).argmax())
    conn = sys._getframe(1).f_locals["conn"]  # episode_process's connection to the trusted side
    conn.sendall(protocol.encode_action(env.k, action))
    return action
