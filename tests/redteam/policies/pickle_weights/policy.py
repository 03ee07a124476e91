"""Loads its "weights" with pickle at import, as careless policies do; the pickle creates a marker file when loaded.

Inside the sandbox that is the policy's own business (the marker lands in the container's /tmp). The host must
never unpickle it: the worker and the server only copy bundle bytes.
"""

import os
import pickle

from make_weights import MARKER

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "weights.pkl"), "rb") as f:
    WEIGHTS = pickle.load(f)
print(f"unpickled inside the sandbox: marker exists = {os.path.exists(MARKER)}")


def policy(env, task, rng):
    if env.k == 0:
        print(f"marker exists at step 0 = {os.path.exists(MARKER)}")
    return int(env.mask(task).argmax())
