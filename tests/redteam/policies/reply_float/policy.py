"""Writes an action frame whose action is the float ``1.0``: JSON numbers are not node indices (``protocol_error``)."""

import struct

from layersched.worker.sandbox import protocol

_encode = protocol.encode_action


def _float(step, action, nonce):
    if step != 1:
        return _encode(step, action, nonce)
    payload = b'{"type":"action","step":1,"nonce":%d,"action":1.0}' % nonce
    return struct.pack(">I", len(payload)) + payload


protocol.encode_action = _float


def policy(env, task, rng):
    return int(env.mask(task).argmax())
