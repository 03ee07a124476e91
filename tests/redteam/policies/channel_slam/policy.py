"""Patches the harness so that, when the first scenario arrives, it stops reading its control connection and then
answers ``scenario_ok``: the trusted side's next write (the ``episode`` frame) fails with a broken pipe. Also a
failure the participant causes and must be charged for, not an ``infrastructure_error``."""

import socket
import sys

harness = sys.modules["__main__"]
_send = harness.Harness.send


def _slamming_send(self, message):
    if message.get("type") == "scenario_ok":
        self.ctl.shutdown(socket.SHUT_RD)
    _send(self, message)


harness.Harness.send = _slamming_send


def policy(env, task, rng):
    return int(env.mask(task).argmax())
