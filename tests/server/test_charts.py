"""The board's score chart (issue 29, item 5): a log axis where the ratios span more than 3x, and the reference's
"X = 1" label never cut off by the chart's right edge."""

from __future__ import annotations

import datetime as dt
import re

from layersched.server.charts import LABEL_CHAR_WIDTH, score_chart
from layersched.server.schemas import LeaderboardRow


def row(name: str, score: float, spread: float = 0.02) -> LeaderboardRow:
    return LeaderboardRow(
        rank=None, participant=name, submission_id=None, submission_name=name, score=score, ci_low=score - spread,
        ci_high=score + spread, per_scenario={}, submissions=0, submitted_at=dt.datetime(2027, 1, 1), baseline=True,
    )  # fmt: skip


def ticks(svg: str) -> list[str]:
    return re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', svg)


def x_of(svg: str, value: str) -> float:
    match = re.search(rf'<text class="tick" x="([0-9.]+)"[^>]*>{re.escape(value)}</text>', svg)
    assert match is not None, value
    return float(match.group(1))


def test_a_narrow_span_keeps_a_linear_axis() -> None:
    svg = score_chart([row("a", 0.95), row("b", 1.2)], reference="Greedy")
    assert "log scale" not in svg
    assert ticks(svg) == ["1", "1.1", "1.2"]


def test_more_than_3x_reads_on_a_log_axis() -> None:
    svg = score_chart([row("Random", 4.0, 0.3), row("ada", 0.9), row("SJF", 1.0)], reference="SJF")
    assert "log scale" in svg
    assert ticks(svg) == ["1", "2"]
    # 0.5 and 2 are equally far from 1 on a log axis: 1 -> 2 is the same distance as 2 -> 4.
    svg = score_chart([row("a", 0.5, 0.0), row("b", 4.0, 0.0)], reference="HEFT")
    assert ticks(svg) == ["0.5", "1", "2"]
    assert abs((x_of(svg, "1") - x_of(svg, "0.5")) - (x_of(svg, "2") - x_of(svg, "1"))) < 0.2


def reference_label(svg: str) -> tuple[float, bool]:
    """The reference label's x and whether it is anchored at its end (drawn left of x)."""
    label = re.search(r'<text class="reference-label" x="([0-9.]+)"( text-anchor="end")?', svg)
    assert label is not None
    return float(label.group(1)), label.group(2) is not None


def test_the_reference_label_stays_inside_the_chart() -> None:
    for reference, rows in (("Greedy", [row("a", 0.8)]), ("LongestReferenceName", [row("a", 0.5, 0.0)])):
        svg = score_chart(rows, reference=reference)  # 1.0 is the largest value: its line is at the right edge
        width = float(re.search(r'width="([0-9.]+)"', svg).group(1))  # type: ignore[union-attr]
        x, anchored_end = reference_label(svg)
        assert anchored_end and x - LABEL_CHAR_WIDTH * len(f"{reference} = 1") >= 0 and x <= width
    # With room on the right, the label starts at its line.
    assert reference_label(score_chart([row("a", 1.4)], reference="Greedy"))[1] is False
