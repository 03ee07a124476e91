"""The HEFT paper's example (Topcuoglu, Hariri and Wu 2002, Fig. 2): 10 tasks on 3 processors, bandwidth 1."""

from __future__ import annotations

from typing import Any

EDGES = [
    ("T0", "T1", 18), ("T0", "T2", 12), ("T0", "T3", 9), ("T0", "T4", 11), ("T0", "T5", 14),
    ("T1", "T7", 19), ("T1", "T8", 16), ("T2", "T6", 23), ("T3", "T7", 27), ("T3", "T8", 23),
    ("T4", "T8", 13), ("T5", "T7", 15), ("T6", "T9", 17), ("T7", "T9", 11), ("T8", "T9", 13),
]  # fmt: skip
W = [[14, 16, 9], [13, 19, 18], [11, 13, 19], [13, 8, 17], [12, 13, 10],
     [13, 16, 9], [7, 15, 11], [5, 11, 14], [18, 12, 20], [21, 7, 16]]  # fmt: skip
# What the paper states (the ranks of its Table 1, rounded to 3 decimals there) and its makespan.
RANKS = [108, 77, 80, 80, 69, 63.333, 42.667, 35.667, 44.333, 14.667]
MAKESPAN = 80


def paper_json() -> dict[str, Any]:
    return {
        "tasks": [f"T{i}" for i in range(10)],
        "edges": [list(e) for e in EDGES],
        "W": W,
        "bandwidth": [[1, 1, 1], [1, 1, 1], [1, 1, 1]],
    }
