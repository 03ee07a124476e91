"""At import, fills /tmp until ``ENOSPC`` and then prints 200 MiB to stdout and 8 MiB to stderr.

Import output is captured like an episode's (bounded, the rest counted) and never through /tmp: the import must
succeed (``ok``), with the first ``output_bytes`` of each stream reported.
"""

import contextlib
import os

with contextlib.suppress(OSError), open("/tmp/filler.bin", "wb", buffering=0) as filler:
    while True:
        filler.write(b"\0" * (1 << 20))

CHUNK = b"A" * (1 << 20)
for _ in range(200):
    os.write(1, CHUNK)
for _ in range(8):
    os.write(2, b"E" * (1 << 20))


def policy(env, task, rng):
    return int(env.mask(task).argmax())
