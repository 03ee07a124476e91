"""Starts sleeping threads until the pids limit refuses one, then lets the error escape (``crash``)."""

import threading
import time


def policy(env, task, rng):
    started = 0
    while True:
        thread = threading.Thread(target=time.sleep, args=(3600,), daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:
            raise RuntimeError(f"thread bomb stopped after {started} threads: {exc}") from exc
        started += 1
