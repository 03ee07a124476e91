from __future__ import annotations

import io

import pytest

from layersched.sdk.progress import ProgressBar, format_bytes


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (999, "999 B"), (1500, "1.5 kB"), (50_000_000, "50.0 MB"), (3e9, "3.0 GB")],
    ids=["zero", "bytes", "kilo", "mega", "giga"],
)
def test_format_bytes(n: float, text: str) -> None:
    assert format_bytes(n) == text


def test_render() -> None:
    bar = ProgressBar("upload", 2000, unit="bytes", stream=io.StringIO(), width=10)
    bar.done = 500
    assert bar.render() == "upload [##........]  25% 500 B/2.0 kB"
    bar.total = None
    assert bar.render() == "upload 500 B"


def test_non_terminal_prints_whole_lines_and_the_final_state() -> None:
    stream = io.StringIO()
    bar = ProgressBar("evaluation", 4, stream=stream, width=4, interval=3600)
    for done in range(5):
        bar.update(done, note="running")
    bar.close(note="succeeded")
    assert stream.getvalue() == "evaluation [....]   0% 0/4  running\nevaluation [####] 100% 4/4  succeeded\n"


def test_terminal_redraws_in_place() -> None:
    stream = Tty()
    with ProgressBar("x", 2, stream=stream, width=2) as bar:
        bar.update(1)
    assert stream.getvalue() == "\r\x1b[Kx [#.]  50% 1/2\r\x1b[Kx [#.]  50% 1/2\n"


def test_an_unknown_total_with_nothing_done_shows_no_count() -> None:
    stream = io.StringIO()
    bar = ProgressBar("evaluation", stream=stream, interval=0)
    bar.update(0, None, note="queued")
    bar.update(0, 0, note="queued")  # a queued evaluation reports total 0: still no count to show
    bar.update(1, 2, note="running")
    bar.close()
    assert stream.getvalue() == "evaluation  queued\nevaluation [###############...............]  50% 1/2  running\n"
