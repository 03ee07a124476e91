"""Patches the harness so that, when the first scenario arrives, it stops reading its control connection and then
answers ``scenario_ok``: the trusted side's next write (the ``episode`` frame) would fail with a broken pipe.

Reviewed main imported the policy in the harness, where this took effect (a ``crash`` the participant caused).
Now the policy runs only in episode processes, which never hold the control connection: the patch changes
nothing, and the episode is scored as usual."""

import socket
import sys

harness = sys.modules["__main__"]
_send = harness.Harness.send


def _slamming_send(self, message):
    if message.get("type") == "scenario_ok":
        self.ctl.shutdown(socket.SHUT_RD)
    _send(self, message)


harness.Harness.send = _slamming_send
print(f"patched {harness.__name__}.Harness.send in process {__import__('os').getpid()}", flush=True)


def policy(env, task, rng):
    return int(env.mask(task).argmax())
