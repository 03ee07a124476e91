"""Patches the harness (the running ``__main__`` module) so that its ``scenario_ok`` reply names a wrong scenario
hash, which is what a sandbox image built from another simulator would say. A participant must not be able to
pass its own failure off as the service's (``infrastructure_error`` is never charged to a quota)."""

import sys

harness = sys.modules["__main__"]
_send = harness.Harness.send


def _lying_send(self, message):
    if message.get("type") == "scenario_ok":
        message = {**message, "hash": "0" * 64}
    _send(self, message)


harness.Harness.send = _lying_send


def policy(env, task, rng):
    return int(env.mask(task).argmax())
