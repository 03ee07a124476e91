"""Text that databases refuse, in every text channel back: NUL bytes on stdout and stderr at the first decision,
then at the second an ``error`` frame written straight to the episode's socket whose traceback holds a NUL and a
lone surrogate (the JSON escape ``\\ud800`` decodes to one; it has no UTF-8 encoding).

The episode is the policy's ``crash``; what it must not do is make recording that result fail on the service's
side (PostgreSQL refuses NUL in text), which would leave the evaluation unfinished and uncharged.
"""

import os
import sys


def _episode_process_locals():
    """The locals of the episode process's loop (its connection and this task's nonce): the first caller that has
    them, above the track's replica that calls the policy."""
    frame = sys._getframe(1)
    while "nonce" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals


def policy(env, task, rng):
    if env.k == 0:
        print("stdout nul:\x00:end", flush=True)
        print("stderr nul:\x00:end", file=sys.stderr, flush=True)
    if env.k == 1:
        harness = _episode_process_locals()  # episode_process: its connection to the trusted side, this task's nonce
        payload = (
            b'{"type":"error","step":1,"nonce":%d,"kind":"exception","traceback":"boom \\u0000 \\ud800 end"}'
            % (harness["nonce"])
        )
        harness["conn"].sendall(len(payload).to_bytes(4, "big") + payload)
        os._exit(1)
    return int(env.mask(task).argmax())
