"""Opens a second connection to the channel during its episode and greets, in advance, as the next episode's
process (episode ids are predictable); then plays its episode as usual, and is killed when it ends.

The connection waits on the worker's listener into the next episode. Taken for that episode's, it would be a
dead end (a crash charged to the policy) or a way to answer for a process it is not. Connections waiting before an
episode starts are refused, and the real episode process names a token only its episode was given.
"""

import json
import socket
import struct

GHOSTS = []


def policy(env, task, rng):
    if env.k == 0:
        ghost = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ghost.connect("/run/layersched/chan.sock")
        payload = json.dumps({"type": "hello", "episode_id": "e1", "token": ""}).encode()
        ghost.sendall(struct.pack(">I", len(payload)) + payload)
        GHOSTS.append(ghost)  # kept open until the episode process is killed
    return int(env.mask(task).argmax())
