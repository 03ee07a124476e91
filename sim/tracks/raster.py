"""A schedule as pixels and as text, for Gymnasium's ``render_mode="rgb_array"`` and ``"ansi"``: the same panels
``drawing.gantt`` draws as SVG, painted into a numpy array (numpy is imported when an image is asked for), and
occupancy rows shaded with characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from layersched.sim.tracks.drawing import Panel

# The colours of drawing.CSS, as RGB.
KIND_RGB = {
    "run": (76, 120, 168),
    "dl": (245, 133, 24),
    "wait": (217, 217, 217),
    "q": (198, 219, 239),
    "res": (158, 202, 225),
    "hold": (228, 87, 86),
    "hit": (44, 160, 44),
    "drop": (51, 51, 51),
}
GROUP_RGB = (
    (76, 120, 168),
    (245, 133, 24),
    (84, 162, 75),
    (178, 121, 162),
    (228, 87, 86),
    (114, 183, 178),
    (238, 202, 59),
    (255, 157, 166),
    (157, 117, 93),
    (186, 176, 172),
    (67, 152, 148),
    (131, 188, 182),
)
BACKGROUND = (250, 250, 250)
SEPARATOR = (255, 255, 255)
SHADES = " .:-=+*#%@"


def rgb_gantt(panel: Panel, end: float, *, width: int = 640, lane_px: int = 60, gap_px: int = 2) -> Any:
    """``panel`` painted into a ``uint8`` array (height, width, 3): time 0..``end`` across, each lane ``lane_px``
    high (its rows share it: the image has one size all episode long, as a video needs), each segment in its
    kind's colour (a ``run`` segment in its item's group colour)."""
    import numpy as np

    height = len(panel.lanes) * (lane_px + gap_px)
    image = np.empty((max(height, 1), width, 3), dtype=np.uint8)
    image[:] = SEPARATOR
    tops = [i * (lane_px + gap_px) for i in range(len(panel.lanes))]
    for top in tops:
        image[top : top + lane_px] = BACKGROUND
    scale = width / end if end > 0 else 1.0
    for item in panel.items:
        row_px = lane_px / max(panel.lanes[item.lane].rows, 1)
        y0 = tops[item.lane] + round(item.row * row_px)
        y1 = max(y0 + 1, tops[item.lane] + round((item.row + item.height) * row_px))
        for segment in item.segments:
            x0 = min(int(segment.start * scale), width - 1)
            x1 = max(x0 + 1, min(round(segment.end * scale), width))
            colour = KIND_RGB.get(segment.kind, KIND_RGB["run"])
            if segment.kind == "run" and item.group is not None:
                colour = GROUP_RGB[item.group % len(GROUP_RGB)]
            image[y0:y1, x0:x1] = colour
    return image


def shade(values: Sequence[float]) -> str:
    """Fractions in [0, 1] as characters from blank (0) to ``@`` (1)."""
    top = len(SHADES) - 1
    return "".join(SHADES[max(0, min(top, round(v * top)))] for v in values)


def buckets(intervals: Sequence[tuple[float, float, float]], end: float, width: int) -> list[float]:
    """The time-averaged sum of ``weight`` over each of ``width`` equal buckets of 0..``end``, for intervals
    (start, end, weight)."""
    out = [0.0] * width
    if end <= 0:
        return out
    size = end / width
    for start, stop, weight in intervals:
        first, last = int(start / size), min(int(stop / size), width - 1)
        for b in range(max(first, 0), last + 1):
            overlap = min(stop, (b + 1) * size) - max(start, b * size)
            if overlap > 0:
                out[b] += weight * overlap / size
    return out
