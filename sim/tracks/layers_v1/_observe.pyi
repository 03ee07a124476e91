# Type stub of the C kernel sim/tracks/layers_v1/_observe.c: see its header for what it computes and when it declines
# (False). ``out`` is any writable C-contiguous buffer of len(plans) * 6 float32 (numpy's stubs type ndarray as a buffer
# only for Python 3.12+, so it is declared as object here; the kernel checks it).

from typing import Any

def fill_observation(plans: list[Any], now: float, cycles: float, out: object, /) -> bool: ...
