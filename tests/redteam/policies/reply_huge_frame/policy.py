"""Writes a frame announcing 2 GiB and then pushes 64 MiB of it: the header alone must be refused
(``protocol_error``) without reading or buffering the body."""

import struct
import sys

from layersched.worker.sandbox import protocol

_encode = protocol.encode_action
_sent = []


def _huge(step, action, nonce):
    if step != 1:
        return _encode(step, action, nonce)
    _sent.append(step)
    return struct.pack(">I", 2**31) + b"{" * (64 * 1024 * 1024)


protocol.encode_action = _huge


def policy(env, task, rng):
    if _sent:
        print(f"huge frame sent at step {_sent[0]}", file=sys.stderr)
    return int(env.mask(task).argmax())
