"""Writes 64 MiB to stdout and 16 MiB to stderr at every decision: about 2.4 GiB over a 30-task episode.

Output capture is bounded: the episode ends ``ok`` with the first ``output_bytes`` of each stream kept and the rest
counted as dropped.
"""

import os

OUT = b"A" * (64 * 1024 * 1024)
ERR = b"E" * (16 * 1024 * 1024)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def policy(env, task, rng):
    _write_all(1, OUT)
    _write_all(2, ERR)
    return int(env.mask(task).argmax())
