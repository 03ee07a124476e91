"""Writes an action frame holding ``NaN`` (valid for Python's json, not for the strict parser): ``protocol_error``."""

import struct

from layersched.worker import protocol

_encode = protocol.encode_action


def _nan(step, action):
    if step != 1:
        return _encode(step, action)
    payload = b'{"type":"action","step":1,"action":NaN}'
    return struct.pack(">I", len(payload)) + payload


protocol.encode_action = _nan


def policy(env, task, rng):
    return int(env.mask(task).argmax())
