"""Tries every way out of the container at the first decision and prints one JSON object of what happened.

TCP to public addresses, the Docker bridge gateway, the cloud metadata address and the worker's services
(Redis, PostgreSQL) on localhost; UDP to a public resolver; DNS lookups; abstract Unix sockets (shared with the
host only in the host's network namespace); the interfaces it can see. Plays on normally (``ok``).
"""

import json
import socket

TCP = [
    ("1.1.1.1", 443),
    ("8.8.8.8", 53),
    ("172.17.0.1", 2375),  # docker0 gateway, the engine's TCP port
    ("172.17.0.1", 6379),
    ("169.254.169.254", 80),  # cloud metadata
    ("127.0.0.1", 6379),  # Redis, if the loopback were the host's
    ("127.0.0.1", 5432),  # PostgreSQL
    ("::1", 6379),
]
NAMES = ["example.com", "pypi.org", "host.docker.internal", "localhost"]
ABSTRACT = ["\0/containerd-shim", "\0layersched", "\0/tmp/.X11-unix/X0"]


def attempt(action):
    try:
        result = action()
    except OSError as exc:
        return f"blocked: {type(exc).__name__}: {exc}"
    return f"allowed: {result!r}"


def tcp(host, port):
    with socket.create_connection((host, port), timeout=0.5) as s:
        return s.getpeername()


def udp_dns():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.5)
        query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
        s.sendto(query, ("8.8.8.8", 53))
        return s.recvfrom(512)


def lookup(name):
    return sorted({info[4][0] for info in socket.getaddrinfo(name, 80)})


def abstract(name):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(name)
        return "connected"


def policy(env, task, rng):
    if env.k == 0:
        report = {
            "tcp": {f"{h}:{p}": attempt(lambda h=h, p=p: tcp(h, p)) for h, p in TCP},
            "udp": attempt(udp_dns),
            "dns": {name: attempt(lambda n=name: lookup(n)) for name in NAMES},
            "abstract": {name.replace("\0", "@"): attempt(lambda n=name: abstract(n)) for name in ABSTRACT},
            "interfaces": sorted(name for _, name in socket.if_nameindex()),
        }
        print(json.dumps(report))
    return int(env.mask(task).argmax())
