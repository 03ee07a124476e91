"""Speaks the channel itself: the harness's action encoder is replaced, so the frame says node 1000000 whatever
the policy chose. The frame is well-formed; the trusted side's ``check_action`` must refuse it (``invalid_action``).
"""

from layersched.worker.sandbox import protocol

_encode = protocol.encode_action
protocol.encode_action = lambda step, action, nonce: _encode(step, 1_000_000 if step == 1 else action, nonce)


def policy(env, task, rng):
    return int(env.mask(task).argmax())
