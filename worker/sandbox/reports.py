"""What the sandbox reports, exactly: the fields of each frame its harness and episode processes send the trusted
side, and how their text, which is untrusted, is bounded before it reaches a message or the database.

The harness never runs code of the participant, so a frame of it that holds anything else means it is broken; an
episode process's reply is the policy's and is checked as such (``driver``).
"""

from __future__ import annotations

import re
import signal

# Every text the sandbox writes is untrusted and cut here before it reaches a message: tracebacks to their last
# this many characters (where the error is), and a whole message to MAX_MESSAGE_CHARS whatever it holds.
MAX_TRACEBACK_CHARS = 4000
MAX_MESSAGE_CHARS = 6000
# What an ``error`` reply may say happened.
ERROR_KINDS = ("exception", "memory", "replica", "import")
# Characters a sandbox can put in its text that databases refuse: NUL (PostgreSQL text columns) and lone surrogates
# (a JSON "\ud800" escape decodes to one; it cannot be encoded as UTF-8). Recording them would fail the whole
# evaluation on the service's side, so they become U+FFFD in every text an outcome carries.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

Fields = dict[str, type | tuple[type, ...]]

# What each reply from an episode process must hold, exactly (checked once per decision).
REPLY_FIELDS: dict[str, Fields] = {
    "action": {"step": int, "nonce": int, "action": int},
    "bad_action": {"step": int, "nonce": int, "value": str, "value_type": str},
    "error": {"step": int, "nonce": int, "kind": str, "traceback": str},
}
_OUTPUT_FIELDS: Fields = {
    "stdout_bytes": int,
    "stderr_bytes": int,
    "stdout_dropped": int,
    "stderr_dropped": int,
}
_MAYBE_INT = (int, type(None))
# What the harness reports: after an episode, after a failed import, and when the policy is imported.
EXITED_FIELDS: Fields = {
    "episode_id": str,
    "exit_code": _MAYBE_INT,
    "signal": _MAYBE_INT,
    "killed": bool,
    "scratch_dirty": bool,
    **_OUTPUT_FIELDS,
}
IMPORT_ERROR_FIELDS: Fields = {
    "traceback": str,
    "out_of_memory": bool,
    "exit_code": _MAYBE_INT,
    "signal": _MAYBE_INT,
    "scratch_dirty": bool,
    **_OUTPUT_FIELDS,
}
READY_FIELDS: Fields = {
    "python": str,
    "numpy": str,
    "torch": (str, type(None)),
    "preloaded": list,
    "import_seconds": (int, float),
    "parameters": list,
}


def storable(text: str) -> str:
    """``text`` with what a database refuses (NUL, lone surrogates) replaced by U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", text)


def cut_message(message: str) -> str:
    """A whole message cut to ``MAX_MESSAGE_CHARS``, saying how much was cut."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    return message[: MAX_MESSAGE_CHARS - 40] + f"... [{len(message) - MAX_MESSAGE_CHARS + 40} more chars]"


def signal_name(number: int) -> str:
    return signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
