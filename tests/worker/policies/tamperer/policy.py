"""Tampers with its replica and probes the sandbox, but places tasks round robin over feasible nodes.

Its actions do not depend on the tampering, so the trusted side's score must equal that of ``round_robin`` run
in-process on an untouched environment. The module-level counter also shows that episodes are isolated: each
episode process starts from the state after import, with the counter at 0.
"""

import os
import socket

from layersched.sim.tracks.layers_v1.env import ClusterEnv

counter = 0


def round_robin(env, task, count):
    mask = env.mask(task)
    node = count % env.n_nodes
    while not mask[node]:
        node = (node + 1) % env.n_nodes
    return node


def probe(name, action):
    try:
        result = action()
    except Exception as exc:
        print(f"{name}: blocked ({type(exc).__name__}: {exc})")
    else:
        print(f"{name}: allowed ({result!r})")


def _write(path):
    with open(path, "w") as f:
        f.write("x")
    return path


def probes():
    print(f"uid: {os.getuid()}")
    probe("network", lambda: socket.create_connection(("192.0.2.1", 80), timeout=1))
    probe("write bundle", lambda: _write(os.path.join(os.path.dirname(__file__), "owned.txt")))
    probe("write root", lambda: _write("/owned.txt"))
    probe("write channel dir", lambda: _write("/run/layersched/owned.txt"))
    probe("write tmp", lambda: _write("/tmp/scratch.txt"))
    probe("setuid root", lambda: os.setuid(0))
    probe("list channel dir", lambda: sorted(os.listdir("/run/layersched")))


def policy(env, task, rng):
    global counter
    action = round_robin(env, task, counter)
    counter += 1
    if env.k == 0:
        probes()
    # Break the replica in every way that does not stop it from answering: none of it may change the score.
    env.completion.clear()
    env.tasks[:] = [task]
    for node in env.nodes:
        node.freq = 1e9
    ClusterEnv.estimate_all = lambda self, task: None
    return action
