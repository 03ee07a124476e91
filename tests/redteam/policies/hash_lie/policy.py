"""Patches the harness (the running ``__main__`` module) so that its ``scenario_ok`` reply names a wrong scenario
hash, which is what a sandbox image built from another simulator would say: that would pass its own failure off as
the service's (``infrastructure_error`` is never charged to a quota).

Reviewed main imported the policy in the harness, so the patch took effect (and was caught by the fingerprint
check). Now the policy runs only in episode processes: the patch changes their copy of the harness module, never
the harness, and the episode is scored as usual."""

import sys

harness = sys.modules["__main__"]
_send = harness.Harness.send


def _lying_send(self, message):
    if message.get("type") == "scenario_ok":
        message = {**message, "hash": "0" * 64}
    _send(self, message)


harness.Harness.send = _lying_send
print(f"patched {harness.__name__}.Harness.send in process {__import__('os').getpid()}", flush=True)


def policy(env, task, rng):
    return int(env.mask(task).argmax())
