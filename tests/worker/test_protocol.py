"""Unit tests of the wire format and of the pure pieces of the harness (no sandbox started)."""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from layersched.sim.tracks.layers_v1.catalog import load_catalog
from layersched.sim.tracks.layers_v1.sandbox import nodes_from_wire, nodes_to_wire
from layersched.sim.tracks.layers_v1.scenario import CloudNode, Scenario
from layersched.sim.tracks.layers_v1.workload import NodeSpec
from layersched.worker.sandbox import protocol
from layersched.worker.sandbox.capture import Capture
from layersched.worker.sandbox.limits import SandboxLimits
from layersched.worker.sandbox.wire import action_message, replica_from_frame, scenario_frame


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


@pytest.fixture
def pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    yield a, b
    a.close()
    b.close()


def test_round_trip(pair):
    a, b = pair
    message = {"type": "task", "step": 3, "task": [1.5, 2, 30.25], "note": "é"}
    protocol.send(a, message)
    assert protocol.recv(b, max_size=1000, deadline=time.monotonic() + 1) == message


def test_encode_is_a_length_prefixed_json_object():
    data = protocol.encode({"type": "ping"})
    assert data == b'\x00\x00\x00\x0f{"type":"ping"}'


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\xff\xfe", "frame is not valid UTF-8"),
        (b"{not json", "frame is not valid JSON"),
        (b'{"type": "action", "action": NaN}', "non-finite number NaN is not allowed"),
        (b'{"type": "action", "action": Infinity}', "non-finite number Infinity is not allowed"),
        (b'{"type": "x", "v": 1e400}', "number 1e400 does not fit in a finite float"),
        (b'{"type": "x", "v": -1e400}', "number -1e400 does not fit in a finite float"),
        (b'{"type": "action", "step": 1, "step": 2}', "duplicate key 'step'"),
        (b"[1, 2]", "frame must be a JSON object, got list"),
        (b'{"step": 1}', "frame has no string 'type'"),
        (b'{"type": 7}', "frame has no string 'type'"),
    ],
    ids=[
        "utf8",
        "json",
        "nan",
        "infinity",
        "overflow",
        "negative-overflow",
        "duplicate",
        "list",
        "no-type",
        "type-int",
    ],
)
def test_decode_is_strict(payload, message):
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.decode(payload)


def test_texts_of_the_sender_are_cut_in_errors():
    """Field names and types a sandbox sends end up in messages: a few of them, each short."""
    many = {"type": "hello", **{f"k{i}" + "x" * 1000: 1 for i in range(50)}}
    with pytest.raises(protocol.ProtocolError) as raised:
        protocol.expect(many, "hello", {"episode_id": str})
    assert len(str(raised.value)) < 500 and "and 45 more" in str(raised.value)
    with pytest.raises(protocol.ProtocolError) as raised:
        protocol.expect({"type": "T" * 100_000}, "hello", {})
    assert len(str(raised.value)) < 200
    key = "K" * 100_000
    with pytest.raises(protocol.ProtocolError) as raised:
        protocol.decode(b'{"type": "x", "%s": 1, "%s": 2}' % (key.encode(), key.encode()))
    assert len(str(raised.value)) < 400


def test_deep_nesting_is_a_protocol_error():
    with pytest.raises(protocol.ProtocolError, match="frame nests too deeply"):
        protocol.decode(b'{"type": "x", "v": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def test_oversized_frame_is_rejected_from_its_header(pair):
    a, b = pair
    a.sendall(struct.pack(">I", 2**32 - 1))  # header only: the body is never read
    with pytest.raises(protocol.ProtocolError) as info:
        protocol.recv(b, max_size=4096, deadline=time.monotonic() + 1)
    assert str(info.value) == "frame announces 4294967295 bytes, more than the maximum of 4096 bytes"


def test_encode_refuses_frames_over_the_maximum():
    with pytest.raises(protocol.ProtocolError, match=r"exceeds the maximum of 10 bytes"):
        protocol.encode({"type": "x", "pad": "y" * 20}, max_size=10)


def test_encode_refuses_nan():
    with pytest.raises(ValueError, match="Out of range float values"):
        protocol.encode({"type": "x", "value": float("nan")})


def test_timeout_and_partial_frames(pair):
    a, b = pair
    with pytest.raises(protocol.ChannelTimeout, match=r"0 of 4 bytes received"):
        protocol.recv(b, max_size=100, deadline=time.monotonic() + 0.05)
    a.sendall(frame(b'{"type":"ping"}')[:7])
    with pytest.raises(protocol.ChannelTimeout, match=r"3 of 15 bytes received"):
        protocol.recv(b, max_size=100, deadline=time.monotonic() + 0.05)


def test_partial_frame_then_close(pair):
    a, b = pair
    a.sendall(frame(b'{"type":"ping"}')[:7])
    a.close()
    with pytest.raises(protocol.ChannelClosed, match=r"connection closed after 3 of 15 bytes"):
        protocol.recv(b, max_size=100, deadline=time.monotonic() + 1)


def test_closed_before_any_byte(pair):
    a, b = pair
    a.close()
    with pytest.raises(protocol.ChannelClosed, match=r"connection closed after 0 of 4 bytes"):
        protocol.recv(b, max_size=100)


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"type": "error", "step": 1}, "expected a 'action' frame, got 'error'"),
        ({"type": "action", "step": 1}, r"'action' frame has wrong fields \(missing \['action'\], unexpected \[\]\)"),
        (
            {"type": "action", "step": 1, "action": 2, "x": 0},
            r"'action' frame has wrong fields \(missing \[\], unexpected \['x'\]\)",
        ),
        ({"type": "action", "step": 1, "action": True}, "'action' frame field 'action' must be int, got True"),
        ({"type": "action", "step": 1, "action": 2.0}, "'action' frame field 'action' must be int, got 2.0"),
        ({"type": "action", "step": "1", "action": 2}, "'action' frame field 'step' must be int, got '1'"),
    ],
    ids=["kind", "missing", "extra", "bool", "float", "step-str"],
)
def test_expect(message, error):
    with pytest.raises(protocol.ProtocolError, match=error):
        protocol.expect(message, "action", {"step": int, "action": int})


def test_expect_accepts_exact_frames():
    message = {"type": "action", "step": 1, "action": 2}
    assert protocol.expect(message, "action", {"step": int, "action": int}) is message


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, {"type": "action", "step": 4, "action": 3}),
        (np.int64(3), {"type": "action", "step": 4, "action": 3}),
        (-1, {"type": "action", "step": 4, "action": -1}),
        (True, {"type": "bad_action", "step": 4, "value": "True", "value_type": "bool"}),
        (2.0, {"type": "bad_action", "step": 4, "value": "2.0", "value_type": "float"}),
        (None, {"type": "bad_action", "step": 4, "value": "None", "value_type": "NoneType"}),
        ("1", {"type": "bad_action", "step": 4, "value": "'1'", "value_type": "str"}),
        (2**70, {"type": "bad_action", "step": 4, "value": "an integer of 71 bits", "value_type": "int"}),
        (_BadRepr(), {"type": "bad_action", "step": 4, "value": "<unrepresentable>", "value_type": "_BadRepr"}),
    ],
    ids=["int", "numpy-int", "negative", "bool", "float", "none", "str", "huge", "bad-repr"],
)
def test_action_message(value, expected):
    message = action_message(4, value)
    assert message == expected
    protocol.encode(message)  # always encodable


def test_capture_keeps_the_head_and_counts_the_rest():
    capture = Capture(10)
    capture.add(b"0123456")
    capture.add(b"789abcdef")
    assert bytes(capture.data) == b"0123456789"
    assert capture.dropped == 6


@pytest.mark.parametrize(
    "scenario",
    [
        Scenario(n_tasks=10),
        Scenario(n_tasks=10, cloud=CloudNode(), arrival_rate=0.5),
        Scenario(
            n_tasks=10,
            catalog=load_catalog("hub-top70-2023-07"),
            nodes=Scenario().nodes.__class__(storage_gb=(20.0, 40.0)),
        ),
    ],
    ids=["lab", "cloud", "hub"],
)
def test_scenario_survives_the_wire(scenario):
    frame = json.loads(protocol.encode(scenario_frame("s", "layers-v1", scenario))[4:])
    assert (frame["track"], frame["module"]) == ("layers-v1", "layersched.sim.tracks.layers_v1")
    replica, content_hash = replica_from_frame(frame)
    assert content_hash == frame["hash"] == scenario.content_hash
    assert replica.env.scenario.content_hash == scenario.content_hash


def test_a_frame_whose_module_defines_another_track_is_refused():
    frame = scenario_frame("s", "layers-v1", Scenario(n_tasks=5))
    with pytest.raises(ValueError, match="defines track 'layers-v1', not 'toy-v1'"):
        replica_from_frame({**frame, "track": "toy-v1"})


def test_nodes_survive_the_wire_with_an_infinite_cloud():
    specs = [NodeSpec(8.5, 1.1, 9000.0, 4), NodeSpec(12.5, 2.0, float("inf"), 1, is_cloud=True)]
    rows = json.loads(protocol.encode({"type": "x", "nodes": nodes_to_wire(specs)})[4:])["nodes"]
    assert nodes_from_wire(rows) == specs


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("decision_seconds", 0, "SandboxLimits.decision_seconds must be positive, got 0"),
        ("memory_bytes", 1.5, "SandboxLimits.memory_bytes must be a positive int, got 1.5"),
        ("pids", True, "SandboxLimits.pids must be a positive int, got True"),
        ("poll_seconds", -1e-6, r"SandboxLimits.poll_seconds must be within 0..0.01, got -1e-06"),
        ("poll_seconds", 0.5, r"SandboxLimits.poll_seconds must be within 0..0.01, got 0.5"),
    ],
    ids=["deadline", "memory-float", "pids-bool", "poll-negative", "poll-too-long"],
)
def test_limits_are_validated(field, value, message):
    with pytest.raises(ValueError, match=message):
        SandboxLimits(**{field: value})


@pytest.mark.parametrize(
    ("step", "arrival", "image", "cycles"),
    [(0, 0.1, 0, 20.0), (499, 1234.5678901234567, 59, 79.99999999999999), (7, 1e-7, 3, 1e22)],
    ids=["small", "long", "exponents"],
)
def test_fast_task_frames_equal_the_generic_encoding(step, arrival, image, cycles):
    nonce = protocol.new_nonces(1)[0]
    generic = protocol.encode({"type": "task", "step": step, "nonce": nonce, "task": [arrival, image, cycles]})
    assert protocol.encode_task(step, (arrival, image, cycles), nonce) == generic


def test_fast_task_frames_refuse_non_finite_numbers():
    with pytest.raises(ValueError, match="Out of range float values"):
        protocol.encode_task(0, (float("inf"), 0, 1.0), 1)


@pytest.mark.parametrize(
    ("step", "action", "nonce"),
    [(0, 0, 0), (12, -1, 7), (499, 2**62, 2**62 - 1)],
    ids=["zero", "negative", "large"],
)
def test_fast_action_frames_equal_the_generic_path(step, action, nonce):
    frame = protocol.encode_action(step, action, nonce)
    assert frame == protocol.encode({"type": "action", "step": step, "nonce": nonce, "action": action})
    assert protocol.decode(frame[4:]) == {"type": "action", "step": step, "nonce": nonce, "action": action}


def test_nonces_are_fresh_and_within_their_bits():
    nonces = [protocol.new_nonces(1)[0] for _ in range(1000)]
    assert len(set(nonces)) == len(nonces)
    assert all(0 <= n < 2**protocol.NONCE_BITS for n in nonces)
    assert max(nonces) > 2 ** (protocol.NONCE_BITS - 4)  # the high bits are used (1000 draws: all below: ~1e-28)


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b'{"type":"action","step":01,"action":2}', "frame is not valid JSON"),
        (b'{"type":"action","step":1,"action":2,"action":3}', "duplicate key 'action'"),
    ],
    ids=["leading-zero", "duplicate"],
)
def test_action_frames_off_the_fast_path_are_parsed_strictly(payload, error):
    with pytest.raises(protocol.ProtocolError, match=error):
        protocol.decode(payload)


def test_action_frames_off_the_fast_path_mean_the_same():
    assert protocol.decode(b'{ "type": "action", "step": 1, "action": 2 }') == {
        "type": "action",
        "step": 1,
        "action": 2,
    }
    message = protocol.decode(b'{"type":"action","step":1,"action":2.0}')
    with pytest.raises(protocol.ProtocolError, match=r"'action' frame field 'action' must be int, got 2\.0"):
        protocol.expect(message, "action", {"step": int, "action": int})


def _strict(payload: bytes) -> object:
    """What the strict JSON path makes of a payload (the fast paths must agree with it exactly)."""
    return protocol._DECODER.decode(payload.decode())


@pytest.mark.parametrize(
    ("arrival", "cycles"),
    [(0.1, 20.0), (1234.5678901234567, 79.99999999999999), (1e-7, 1e22), (5e-324, 1.7976931348623157e308)],
    ids=["small", "long", "exponents", "extremes"],
)
def test_fast_task_decoding_equals_the_strict_parser(arrival, cycles):
    payload = protocol.encode_task(42, (arrival, 7, cycles), protocol.new_nonces(1)[0])[4:]
    assert protocol._TASK3_FRAME.fullmatch(payload) is not None  # the fast path is the one tested
    decoded = protocol.decode(payload, tasks=True)
    assert decoded == _strict(payload)
    assert [type(v) for v in decoded["task"]] == [float, int, float]


def test_fast_task_decoding_agrees_on_random_floats():
    rng = random.Random(7)
    for _ in range(2000):
        arrival = rng.choice([rng.random(), rng.uniform(0, 1e4), 10 ** rng.uniform(-300, 300)])
        cycles = rng.expovariate(0.01) * rng.choice([1, 1e-12, 1e12])
        step, image, (nonce,) = rng.randrange(10**6), rng.randrange(100), protocol.new_nonces(1)
        payload = protocol.encode_task(step, (arrival, image, cycles), nonce)[4:]
        assert protocol.decode(payload, tasks=True) == _strict(payload), payload


@pytest.mark.parametrize(
    ("payload", "task"),
    [
        (b'{"type":"task","step":1,"nonce":2,"task":[20,3,4.5]}', [20, 3, 4.5]),  # an int stays an int
        (b'{"type":"task","step":1,"nonce":2,"task":[2.0,3,4.5],"extra":1}', [2.0, 3, 4.5]),
        (b'{"type":"task", "step":1,"nonce":2,"task":[2.0,3,4.5]}', [2.0, 3, 4.5]),  # whitespace
    ],
    ids=["integer-arrival", "extra-field", "whitespace"],
)
def test_task_frames_off_the_fast_path_take_the_strict_parser(payload, task):
    assert protocol._TASK3_FRAME.fullmatch(payload) is None
    assert protocol.decode(payload, tasks=True)["task"] == task
    assert protocol.decode(payload, tasks=True) == _strict(payload)


def test_nonces_drawn_together_are_fresh_and_within_their_bits():
    nonces = protocol.new_nonces(1000) + protocol.new_nonces(1000)
    assert len(set(nonces)) == len(nonces)  # within one draw and between draws
    assert all(0 <= n < 2**protocol.NONCE_BITS for n in nonces)
    assert max(nonces) > 2 ** (protocol.NONCE_BITS - 4)
    assert protocol.new_nonces(0) == []


def _send_later(sock: socket.socket, pieces: list[tuple[float, bytes]]) -> threading.Thread:
    """Send each piece after its delay (seconds), then close, from a thread: a peer that answers late."""

    def run() -> None:
        for delay, data in pieces:
            time.sleep(delay)
            sock.sendall(data)
        sock.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


TASK = protocol.encode_task(3, (12.5, 4, 20.0), 99)


@pytest.mark.parametrize(
    ("poll_seconds", "pieces"),
    [
        (0.5, [(0.01, TASK)]),  # arrives while polling
        (0.001, [(0.05, TASK)]),  # arrives after the poll: the blocking read takes it
        (0.5, [(0.01, TASK[:2]), (0.01, TASK[2:9]), (0.01, TASK[9:])]),  # in pieces while polling
        (0.02, [(0.01, TASK[:6]), (0.05, TASK[6:])]),  # the header while polling, the rest after
    ],
    ids=["during-poll", "after-poll", "pieces-during-poll", "split-across-poll"],
)
def test_a_polling_reader_returns_the_frame_whenever_it_arrives(poll_seconds, pieces):
    ours, peer = socket.socketpair()
    reader = protocol.FrameReader(ours, max_size=protocol.MAX_FRAME_TO_SANDBOX)
    sender = _send_later(peer, [*pieces, (0.0, TASK)])
    assert reader.recv(poll_seconds=poll_seconds) == {"type": "task", "step": 3, "nonce": 99, "task": [12.5, 4, 20.0]}
    assert reader.recv(poll_seconds=poll_seconds)["step"] == 3  # the second frame, already buffered or not
    with pytest.raises(protocol.ChannelClosed):
        reader.recv(poll_seconds=poll_seconds)
    sender.join()
    ours.close()


def test_a_polling_reader_reports_a_close_during_the_poll():
    ours, peer = socket.socketpair()
    reader = protocol.FrameReader(ours, max_size=protocol.MAX_FRAME_TO_SANDBOX)
    sender = _send_later(peer, [(0.01, TASK[:5])])
    with pytest.raises(protocol.ChannelClosed, match="5 bytes of an incomplete frame"):
        reader.recv(poll_seconds=0.5)
    sender.join()
    ours.close()


def test_a_polling_reader_polls_a_socket_left_with_a_timeout_and_keeps_the_deadline():
    # The trusted side reads with deadlines, so its socket carries the last call's timeout. A socket with a timeout
    # waits in poll() before every recv, MSG_DONTWAIT or not: the poll must not inherit that wait (it raised
    # TimeoutError after 0.2 s here), and the deadline still holds after the poll.
    ours, peer = socket.socketpair()
    ours.settimeout(0.2)
    reader = protocol.FrameReader(ours, max_size=protocol.MAX_FRAME_TO_SANDBOX)
    sender = _send_later(peer, [(0.4, TASK), (0.5, b"")])  # then open for 0.5 s more, silent
    assert reader.recv(time.monotonic() + 10, poll_seconds=0.001)["step"] == 3
    with pytest.raises(protocol.ChannelTimeout, match="before the deadline"):
        reader.recv(time.monotonic() + 0.05, poll_seconds=0.001)
    sender.join()
    ours.close()


class _FakeCPU:
    """Stands in for the poll's clocks and sched_yield: each wall-clock read advances 1 us, and this thread runs
    ``share(poll)`` of the time during poll number ``poll`` (from 0; a poll starts with its first CPU-clock read)."""

    def __init__(self, share: Callable[[int], float]) -> None:
        self.share, self.now, self.cpu, self.yields, self.cpu_reads = share, 0.0, 0.0, 0, 0

    def clock(self) -> float:
        self.now += 1e-6
        self.cpu += 1e-6 * self.share(self.cpu_reads // 2)
        return self.now

    def cpu_clock(self) -> float:
        self.cpu_reads += 1
        return self.cpu

    def sched_yield(self) -> None:
        self.yields += 1


def _fake_cpu(monkeypatch, share: Callable[[int], float]) -> _FakeCPU:
    cpu = _FakeCPU(share)
    monkeypatch.setattr(protocol, "_clock", cpu.clock)
    monkeypatch.setattr(protocol, "_cpu_clock", cpu.cpu_clock)
    monkeypatch.setattr(protocol, "_yield_cpu", cpu.sched_yield)
    return cpu


def _reader_with_late_frames(frames: int) -> tuple[protocol.FrameReader, socket.socket, threading.Thread]:
    """A reader whose frames come 20 ms apart: each read polls (fake time runs out first), then sleeps for it."""
    ours, peer = socket.socketpair()
    return (
        protocol.FrameReader(ours, max_size=protocol.MAX_FRAME_TO_SANDBOX),
        ours,
        _send_later(peer, [(0.02, TASK)] * frames),
    )


def test_a_polling_reader_stops_polling_for_a_while_when_the_core_is_shared(monkeypatch):
    # Polls in which the reader ran only half the time: something else wants this core, and spinning takes its time.
    # After SHARED_POLLS of them the next PAUSE_READS reads sleep at once (no poll); then polling resumes.
    cpu = _fake_cpu(monkeypatch, lambda poll: 0.5)
    reader, ours, sender = _reader_with_late_frames(protocol.SHARED_POLLS + protocol.PAUSE_READS + 1)
    for _ in range(protocol.SHARED_POLLS):
        assert reader.recv(poll_seconds=0.001)["step"] == 3
    polled = cpu.yields
    assert polled > 100
    for _ in range(protocol.PAUSE_READS):
        reader.recv(poll_seconds=0.001)
    assert cpu.yields == polled  # paused: none of these polled
    reader.recv(poll_seconds=0.001)
    assert cpu.yields > polled + 50  # polling again
    sender.join()
    ours.close()


@pytest.mark.parametrize(
    "share",
    [lambda poll: 1.0, lambda poll: 0.5 if poll % 2 == 0 else 1.0],
    ids=["core-of-its-own", "shared-now-and-then"],  # the second: never SHARED_POLLS shared polls in a row
)
def test_a_polling_reader_keeps_polling_while_the_core_is_its_own(monkeypatch, share):
    cpu = _fake_cpu(monkeypatch, share)
    reader, ours, sender = _reader_with_late_frames(6)
    for _ in range(6):
        before = cpu.yields
        assert reader.recv(poll_seconds=0.001)["step"] == 3
        assert cpu.yields > before + 100  # every read polled for its whole 1 ms of fake time
    sender.join()
    ours.close()


@pytest.mark.parametrize(
    "payload",
    [(), (1, 2, 3), [0.5], (-0.0, -5, 1.5e300, 7), [10**17, -(10**17)], {"jobs": [[1, 2]], "void": True}, [[1.5, 2]]],
    ids=["empty", "ints", "one-float", "four", "big-ints", "object", "nested"],
)
def test_any_decision_payload_encodes_as_the_generic_encoder_and_decodes_as_the_strict_parser(payload):
    encoded = protocol.encode_task(5, payload, 77)
    generic = protocol.encode({"type": "task", "step": 5, "nonce": 77, "task": payload})
    assert encoded == generic
    decoded = protocol.decode(encoded[4:], tasks=True)
    assert decoded == _strict(encoded[4:])
    strict_task = _strict(encoded[4:])["task"]
    if isinstance(strict_task, list):  # ints stay ints and floats floats, whichever path decoded them
        assert [type(v) for v in decoded["task"]] == [type(v) for v in strict_task]


def test_integers_past_the_fast_paths_digits_take_the_generic_encoder():
    payload = (10**19, 1.5)
    generic = protocol.encode({"type": "task", "step": 0, "nonce": 1, "task": payload})
    assert protocol.encode_task(0, payload, 1) == generic
    assert protocol.decode(protocol.encode_task(0, payload, 1)[4:], tasks=True)["task"] == [10**19, 1.5]


def test_nonces_one_at_a_time_are_fresh_across_batches():
    source = protocol.Nonces(batch=16)
    drawn = [source.next() for _ in range(100)]
    assert len(set(drawn)) == 100
    assert all(0 <= n < 2**protocol.NONCE_BITS for n in drawn)


@pytest.mark.parametrize(
    "payload",
    [
        b'{"type":"task","step":1,"nonce":2,"task":[1e400,3,4.5]}',
        b'{"type":"task","step":1,"nonce":2,"task":[1e400]}',
        b'{"type":"task","step":1,"nonce":2,"task":[1,-1e999,2]}',
    ],
    ids=["lab-shape", "one-number", "generic"],
)
def test_task_fast_paths_refuse_numbers_json_refuses(payload):
    """Red team, 2026-12-01: float() reads 1e400 as Infinity where the strict parser refuses it."""
    with pytest.raises(protocol.ProtocolError, match="does not fit in a finite float"):
        protocol.decode(payload, tasks=True)


def test_the_workers_reads_never_take_the_task_fast_paths():
    """A sandbox's frame shaped like a task costs the worker the strict parser only, and reads as it says."""
    payload = protocol.encode_task(3, (12.5, 4, 20.0), 99)[4:]
    assert protocol.decode(payload) == protocol.decode(payload, tasks=True) == _strict(payload)
