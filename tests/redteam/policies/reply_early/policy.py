"""Answers step 1 before task 1 was sent, correctly numbered: with its step-0 reply it writes a reply for step 1 (a
blind guess at the next task, carrying step 0's nonce), then suppresses the harness's real reply to step 1. The
step number is right; the nonce cannot be, since task 1's nonce did not exist yet (``protocol_error``)."""

from layersched.worker.sandbox import protocol

_encode = protocol.encode_action


def _early(step, action, nonce):
    if step == 0:
        return _encode(0, action, nonce) + _encode(1, 0, nonce)
    if step == 1:
        return b""  # already "answered"
    return _encode(step, action, nonce)


protocol.encode_action = _early


def policy(env, task, rng):
    return int(env.mask(task).argmax())
