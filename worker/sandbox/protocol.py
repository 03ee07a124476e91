"""The wire format between the trusted worker and the sandbox harness: length-prefixed JSON frames.

A frame is a 4-byte big-endian payload length followed by that many bytes of UTF-8 JSON holding one object with a
string ``"type"``. Parsing is strict, because one side of the channel runs hostile code: the length is checked
against a maximum *before* anything is read, the payload must be valid UTF-8 and valid JSON without ``NaN`` or
``Infinity``, without duplicate keys, and must be an object whose ``"type"`` is a string. Never pickle: unpickling
runs code chosen by the sender.

This module is imported on both sides, so it uses the standard library only.

Messages (``->`` trusted to sandbox, ``<-`` sandbox to trusted):

* control connection (the harness, which never runs code of the participant): ``<- sim`` (fingerprint and the
  start's nonce), ``-> load`` (warm pool), ``<- ready`` / ``<- import_error``; ``-> scenario`` / ``<- scenario_ok``,
  ``-> episode`` (id, scenario, token), ``-> kill``, ``-> ping`` / ``<- pong``, ``-> shutdown``; ``<- exited`` when an
  episode process has ended. ``import_error`` and ``exited`` announce the sizes of the stdout and stderr captures,
  which follow as raw bytes.
* episode connection (one fresh process per episode): ``<- hello`` (episode id and token); ``-> start`` (the
  policy's seed, the episode's nodes); then per step ``-> task`` and ``<- action`` (or ``<- bad_action`` /
  ``<- error`` when the policy returned something else or raised); ``-> end``, ``<- timing``. Every task carries its
  step number and a fresh random ``nonce``; every reply echoes both, so a reply is for this task and was written
  after the task arrived.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import struct
import time
from typing import Any

HEADER = struct.Struct(">I")

# Trusted -> sandbox frames carry a scenario (its whole catalog) once per sandbox: allow a few MiB.
MAX_FRAME_TO_SANDBOX = 16 * 1024 * 1024
# Sandbox -> trusted frames are replies; the largest is ``exited`` with two base64 output captures of ~1 MiB.
MAX_FRAME_FROM_SANDBOX = 4 * 1024 * 1024


class ProtocolError(Exception):
    """A frame that is too large, truncated, not UTF-8 JSON, or not the expected message."""


class ChannelClosed(ProtocolError):
    """The peer closed the connection (EOF) before a complete frame arrived."""


class ChannelTimeout(ProtocolError):
    """No complete frame arrived before the deadline."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 is valid JSON and overflows to inf
        raise ValueError(f"number {text[:40]} does not fit in a finite float")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r:.80}")
        out[key] = value
    return out


# Built once: json.dumps/json.loads with options build a new encoder/decoder per call, which costs more than
# encoding a task frame.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=False)
_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_no_duplicates
)


def encode(message: dict[str, Any], *, max_size: int = MAX_FRAME_TO_SANDBOX) -> bytes:
    """One frame for ``message`` (a dict with a string ``type``); raises ``ProtocolError`` if it is too large."""
    payload = _ENCODER.encode(message).encode()
    if len(payload) > max_size:
        raise ProtocolError(f"frame of {len(payload)} bytes exceeds the maximum of {max_size} bytes")
    return HEADER.pack(len(payload)) + payload


# The hot path, once per decision each way: the exact bytes the generic encoder writes for a task and for an
# action, built and recognised without the JSON machinery (a few microseconds each). The action and task patterns
# accept a subset of what the strict parser accepts, with the same result; any other frame takes the strict path.
_ACTION_FRAME = re.compile(
    rb'\{"type":"action","step":(0|[1-9][0-9]{0,17}),"nonce":(0|[1-9][0-9]{0,18}),"action":(-?(?:0|[1-9][0-9]{0,17}))\}'
)
# A JSON number with a fraction or an exponent, as float.__repr__ writes it: json.loads makes such a number a
# float with float(text), exactly as the fast path does (without either part it would be an int).
_FLOAT = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)"
_INT = rb"-?(?:0|[1-9][0-9]{0,17})"
_NUMBER = rb"(?:" + _FLOAT + rb"|" + _INT + rb")"
# A task whose payload is a flat array of numbers (the common shape of a track's decision payload).
_TASK_FRAME = re.compile(
    rb'\{"type":"task","step":(0|[1-9][0-9]{0,17}),"nonce":(0|[1-9][0-9]{0,18}),"task":\[('
    + _NUMBER
    + rb"(?:,"
    + _NUMBER
    + rb")*)?\]\}"
)
_FLOAT_MARKS = frozenset(b".eE")
# The lab track's payload shape, [float, int, float], recognised first: converting three captured groups costs a
# quarter of splitting and classifying a generic array (0.6 against 2.3 us here), once per decision.
_TASK3_FRAME = re.compile(
    rb'\{"type":"task","step":(0|[1-9][0-9]{0,17}),"nonce":(0|[1-9][0-9]{0,18}),"task":\[('
    + _FLOAT
    + rb"),("
    + _INT
    + rb"),("
    + _FLOAT
    + rb")\]\}"
)
_INT_BOUND = 10**18  # the fast path's integers have at most 18 digits, as _INT matches
NONCE_BITS = 62  # per task: an early reply would have to guess it (see new_nonces)


def new_nonces(n: int) -> list[int]:
    """``n`` fresh nonces, one per task frame, from one read of the operating system's generator.

    The sandbox must echo a task's nonce in its reply, so a reply written before its task was sent (an "early"
    reply, a blind guess at the next step) cannot carry it. They must not be predictable from earlier nonces: a
    seeded generator such as ``random.Random`` could be reconstructed from the nonces a policy has seen. An
    episode's nonces are drawn when it starts (one system call, not one per decision); they stay in the trusted
    process until each is sent with its task, so the sandbox learns each one only when it may use it.
    """
    shift = 64 - NONCE_BITS
    data = os.urandom(8 * n)
    return [int.from_bytes(data[i : i + 8], "big") >> shift for i in range(0, 8 * n, 8)]


class Nonces:
    """Fresh nonces (``new_nonces``) one at a time, read from the operating system ``batch`` at a time: an episode's
    number of decisions is its track's business, and one system call per decision would cost more than the rest of
    the nonce's handling."""

    __slots__ = ("_batch", "_left")

    def __init__(self, batch: int = 256) -> None:
        self._batch = batch
        self._left: list[int] = []

    def next(self) -> int:
        if not self._left:
            self._left = new_nonces(self._batch)
        return self._left.pop()


def encode_action(step: int, action: int, nonce: int) -> bytes:
    """``encode({"type": "action", "step": step, "nonce": nonce, "action": action})``, faster."""
    payload = b'{"type":"action","step":%d,"nonce":%d,"action":%d}' % (step, nonce, action)
    return HEADER.pack(len(payload)) + payload


def encode_task(step: int, payload: Any, nonce: int) -> bytes:
    """``encode({"type": "task", "step": step, "nonce": nonce, "task": payload})``, faster for a flat tuple or list
    of finite floats and ints (a track's usual decision payload); anything else takes the generic encoder."""
    if type(payload) is tuple or type(payload) is list:
        parts = []
        for value in payload:
            kind = type(value)
            if kind is float and math.isfinite(value):
                parts.append(float.__repr__(value))
            elif kind is int and -_INT_BOUND < value < _INT_BOUND:
                parts.append(int.__repr__(value))
            else:
                break
        else:
            body = b'{"type":"task","step":%d,"nonce":%d,"task":[%s]}' % (step, nonce, ",".join(parts).encode())
            return HEADER.pack(len(body)) + body
    return encode({"type": "task", "step": step, "nonce": nonce, "task": payload})  # raises on Infinity and NaN


def decode(payload: bytes, *, tasks: bool = False) -> dict[str, Any]:
    """Parse one frame's payload strictly; raises ``ProtocolError`` naming what is wrong. ``tasks``: try the task
    fast paths too (the episode process's reads: the worker never expects a task, and matching a sandbox's 4 MiB
    frame of numbers against them would cost the worker most of a second)."""
    fast = _ACTION_FRAME.fullmatch(payload)
    if fast is not None:
        return {"type": "action", "step": int(fast[1]), "nonce": int(fast[2]), "action": int(fast[3])}
    if tasks:
        return _decode_task(payload)
    return _strict_decode(payload)


def _decode_task(payload: bytes) -> dict[str, Any]:
    fast = _TASK3_FRAME.fullmatch(payload)
    if fast is not None:
        task = [float(fast[3]), int(fast[4]), float(fast[5])]
        if math.isfinite(task[0]) and math.isfinite(task[2]):  # 1e400 is Infinity to float(), an error to JSON
            return {"type": "task", "step": int(fast[1]), "nonce": int(fast[2]), "task": task}
    fast = _TASK_FRAME.fullmatch(payload)
    if fast is not None:
        numbers = fast[3]
        task = [float(t) if _FLOAT_MARKS.intersection(t) else int(t) for t in numbers.split(b",")] if numbers else []
        if all(type(v) is int or math.isfinite(v) for v in task):  # as above: out-of-range floats take the strict path
            return {"type": "task", "step": int(fast[1]), "nonce": int(fast[2]), "task": task}
    return _strict_decode(payload)


def _strict_decode(payload: bytes) -> dict[str, Any]:
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"frame is not valid UTF-8: {exc}") from None
    try:
        value = _DECODER.decode(text)
    except ValueError as exc:  # JSONDecodeError is a ValueError, so are our hooks' errors
        raise ProtocolError(f"frame is not valid JSON: {exc}: {_preview(payload)}") from None
    except RecursionError:  # [[[[...]]]] nested deeper than the parser's recursion limit
        raise ProtocolError(f"frame nests too deeply: {_preview(payload)}") from None
    if not isinstance(value, dict):
        raise ProtocolError(f"frame must be a JSON object, got {type(value).__name__}: {_preview(payload)}")
    if not isinstance(value.get("type"), str):
        raise ProtocolError(f"frame has no string 'type': {_preview(payload)}")
    return value


def _preview(payload: bytes, limit: int = 120) -> str:
    text = repr(payload[:limit])
    return text + (f"... ({len(payload)} bytes)" if len(payload) > limit else "")


def send(sock: socket.socket, message: dict[str, Any], *, max_size: int = MAX_FRAME_TO_SANDBOX) -> None:
    sock.sendall(encode(message, max_size=max_size))


def recv(sock: socket.socket, *, max_size: int, deadline: float | None = None) -> dict[str, Any]:
    """Read one frame. ``deadline`` is a ``time.monotonic()`` value; ``None`` waits forever.

    Raises ``ChannelTimeout``, ``ChannelClosed`` or ``ProtocolError`` (oversized or malformed frame). A frame
    whose header announces more than ``max_size`` bytes is rejected without reading its body. After any of these
    the position in the stream is lost: the connection must be closed.
    """
    header = recv_exact(sock, HEADER.size, deadline)
    (size,) = HEADER.unpack(header)
    if size > max_size:
        raise ProtocolError(f"frame announces {size} bytes, more than the maximum of {max_size} bytes")
    return decode(recv_exact(sock, size, deadline))


def recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    """Exactly ``n`` bytes (raw bytes that a frame announced, such as an output capture); same errors as ``recv``."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        if deadline is None:
            sock.settimeout(None)
        else:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout(f"no complete frame before the deadline ({got} of {n} bytes received)")
            sock.settimeout(remaining)
        try:
            k = sock.recv_into(view[got:], n - got)
        except TimeoutError:
            raise ChannelTimeout(f"no complete frame before the deadline ({got} of {n} bytes received)") from None
        if k == 0:
            raise ChannelClosed(f"connection closed after {got} of {n} bytes")
        got += k
    return bytes(buf)


# Polling (FrameReader._poll) pays only while this core is ours. Alone on it, a polling reader runs all the time it
# polls; sharing it (with a process of another evaluation, spinning or computing, or with its own peer) it runs part
# of that time. A poll of at least JUDGED_POLL_SECONDS in which the reader ran less than SHARED_CPU_SHARE of the time
# found the core shared; SHARED_POLLS such polls in a row (one alone is the peer passing through, or a daemon) stop
# polling for the next PAUSE_READS reads (a few milliseconds of decisions: it notices when the other has finished).
JUDGED_POLL_SECONDS = 20e-6
SHARED_CPU_SHARE = 0.7
SHARED_POLLS = 2
PAUSE_READS = 64
# Module names, so tests can stand in a fake: wall clock, this thread's CPU clock, and the yield.
_clock, _cpu_clock, _yield_cpu = time.perf_counter, time.thread_time, os.sched_yield


class FrameReader:
    """Reads frames from one socket through a buffer: one ``recv`` per frame instead of two on the hot path.

    Use it for every read of its socket (bytes it has buffered are not seen by ``recv()``). Same errors and limits
    as ``recv``; after an error the connection must be closed.
    """

    def __init__(self, sock: socket.socket, *, max_size: int, tasks: bool = False) -> None:
        self.sock = sock
        self.max_size = max_size
        self.tasks = tasks  # decode's fast paths for task frames (the episode process reads tasks)
        self._buf = bytearray()
        self._shared_polls = 0  # polls in a row that found the core shared (see _poll)
        self._poll_paused = 0  # reads left that sleep at once, after SHARED_POLLS such polls

    def recv(self, deadline: float | None = None, *, poll_seconds: float = 0.0) -> dict[str, Any]:
        """The next frame. ``poll_seconds``: first look for it without sleeping for up to that long (see ``_poll``)."""
        buf = self._buf
        if poll_seconds > 0:
            if self._poll_paused:
                self._poll_paused -= 1
            elif not self._has_frame():
                if not self._poll(poll_seconds):
                    self._shared_polls = 0
                elif (shared := self._shared_polls + 1) < SHARED_POLLS:
                    self._shared_polls = shared
                else:
                    self._shared_polls, self._poll_paused = 0, PAUSE_READS
        while True:
            if len(buf) >= HEADER.size:
                (size,) = HEADER.unpack_from(buf)
                if size > self.max_size:
                    raise ProtocolError(f"frame announces {size} bytes, more than the maximum of {self.max_size} bytes")
                end = HEADER.size + size
                if len(buf) >= end:
                    payload = bytes(buf[HEADER.size : end])
                    del buf[:end]
                    return decode(payload, tasks=self.tasks)
                wanted = end - len(buf)
            else:
                wanted = HEADER.size - len(buf)
            if deadline is None:
                if self.sock.gettimeout() is not None:  # settimeout is a system call even when nothing changes
                    self.sock.settimeout(None)
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ChannelTimeout(f"no complete frame before the deadline ({len(buf)} bytes buffered)")
                self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(max(wanted, 1 << 16))
            except TimeoutError:
                raise ChannelTimeout(f"no complete frame before the deadline ({len(buf)} bytes buffered)") from None
            if not chunk:
                raise ChannelClosed(f"connection closed with {len(buf)} bytes of an incomplete frame")
            buf += chunk

    def _has_frame(self) -> bool:
        buf = self._buf
        return len(buf) >= HEADER.size and len(buf) >= HEADER.size + HEADER.unpack_from(buf)[0]

    def _poll(self, seconds: float) -> bool:
        """Read what arrives within ``seconds`` without sleeping, yielding the CPU between tries. True if this
        thread ran less than ``SHARED_CPU_SHARE`` of a poll that lasted at least ``JUDGED_POLL_SECONDS``: the core
        is shared.

        A process that sleeps between two messages a few tens of microseconds apart wakes up slow: on these VMs its
        next piece of work ran up to 2x slower (an idle virtual CPU is descheduled and its caches go cold), and the
        sender pays for the wake-up too (a send to a sleeping reader took 15-20 us, 2-3 us to a polling one).
        Polling keeps both ends awake through such gaps. It only pays while cores are spare: with as many busy
        processes as cores, the spinning takes the time another evaluation needs (benchmarks/bench_pipeline.py,
        polling without the pause below: two workers on two cores 51 s instead of 41 s, one worker 53 s instead of
        86 s). The caller stops polling for a while when polls keep finding the core shared (with it: 48 s and 58 s).
        """
        sock, clock, flags, yield_cpu = self.sock, _clock, socket.MSG_DONTWAIT, _yield_cpu
        # A socket with a timeout waits in poll() before every recv, MSG_DONTWAIT or not (CPython's sock_call):
        # only a blocking socket makes the reads below return at once. recv() sets the deadline again after this.
        if sock.gettimeout() is not None:
            sock.settimeout(None)
        until = clock() + seconds
        started = cpu_started = -1.0  # set when the first read finds nothing: a poll that never spins is not judged
        while True:
            try:
                chunk = sock.recv(1 << 16, flags)
            except (BlockingIOError, InterruptedError):
                now = clock()
                if now >= until:
                    break
                if cpu_started < 0:
                    started, cpu_started = now, _cpu_clock()
                yield_cpu()
                continue
            if not chunk:
                break  # EOF: the blocking read that follows reports it
            self._buf += chunk
            if self._has_frame():
                break
        if cpu_started < 0:
            return False
        wall = clock() - started
        return wall >= JUDGED_POLL_SECONDS and _cpu_clock() - cpu_started < SHARED_CPU_SHARE * wall


def expect(message: dict[str, Any], kind: str, fields: dict[str, type | tuple[type, ...]]) -> dict[str, Any]:
    """Check that ``message`` is a ``kind`` frame with exactly ``fields`` (name -> allowed types).

    ``bool`` is never accepted where ``int`` is asked for, since JSON ``true`` is not a number.
    """
    if message["type"] != kind:
        raise ProtocolError(f"expected a {kind!r} frame, got {message['type']!r:.80}")
    keys = set(message) - {"type"}
    if keys != set(fields):
        missing = sorted(set(fields) - keys)
        # The names come from the sender: a few of them, each cut short.
        extra = [name[:40] for name in sorted(keys - set(fields))[:5]]
        more = f" and {len(keys - set(fields)) - 5} more" if len(keys - set(fields)) > 5 else ""
        raise ProtocolError(f"{kind!r} frame has wrong fields (missing {missing}, unexpected {extra}{more})")
    for name, allowed in fields.items():
        value = message[name]
        if isinstance(value, bool) and bool not in _as_tuple(allowed):
            raise ProtocolError(f"{kind!r} frame field {name!r} must be {_names(allowed)}, got {value!r}")
        if not isinstance(value, allowed):
            raise ProtocolError(f"{kind!r} frame field {name!r} must be {_names(allowed)}, got {value!r:.80}")
    return message


def _as_tuple(allowed: type | tuple[type, ...]) -> tuple[type, ...]:
    return allowed if isinstance(allowed, tuple) else (allowed,)


def _names(allowed: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in _as_tuple(allowed))
