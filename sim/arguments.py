"""argparse types the simulator's command lines share (the lab's table, the tracks' tables, the ``layersched`` CLI):
each refuses a bad value with a message naming it, which argparse prints with exit code 2."""

from __future__ import annotations

import argparse


def parse_seeds(text: str) -> list[int]:
    """``0-4`` or ``0,3,7`` or ``5`` -> a list of seeds."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part.strip()[1:]:
                lo, hi = part.split("-", 1)
                seeds.extend(range(int(lo), int(hi) + 1))
            else:
                seeds.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must look like 0-4 or 0,3,7, got {text!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}")
    return seeds


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (also used by the ``layersched`` CLI)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number > 0 (also used by the ``layersched`` CLI)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value
