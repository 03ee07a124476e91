"""Writes an action frame holding ``NaN`` (valid for Python's json, not for the strict parser): ``protocol_error``."""

import struct

from layersched.worker.sandbox import protocol

_encode = protocol.encode_action


def _nan(step, action, nonce):
    if step != 1:
        return _encode(step, action, nonce)
    payload = b'{"type":"action","step":1,"nonce":%d,"action":NaN}' % nonce
    return struct.pack(">I", len(payload)) + payload


protocol.encode_action = _nan


def policy(env, task, rng):
    return int(env.mask(task).argmax())
