"""Reading the schedule SVGs back (``layersched.sim.tracks.drawing``): each bar's panel, lane, item title, kind and
times from its geometry, through the root's ``data-x0`` and ``data-px``. Shared by the simulator's, the server's and
the CLI's tests, so that every drawing is checked the same way, parsed rather than eyeballed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass

NS = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class Bar:
    panel: str
    lane: str
    title: str
    kind: str
    start: float
    end: float
    y: float
    height: float


def svg_root(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg", root.tag
    return root


def tolerance(svg: str) -> float:
    """How far a time read back may be from the true one: a bar's x and width are each written to 0.1 px."""
    return 0.11 / float(svg_root(svg).get("data-px", "1"))


def at_times(bar: Bar, start: float, end: float, svg: str) -> bool:
    """Whether ``bar`` is drawn from ``start`` to ``end`` (a bar narrower than 0.4 px is drawn 0.4 px wide)."""
    eps, px = tolerance(svg), float(svg_root(svg).get("data-px", "1"))
    shown_end = max(end, start + 0.4 / px)
    return abs(bar.start - start) <= eps and abs(bar.end - shown_end) <= eps + 0.05 / px


def _lanes(root: ET.Element) -> Iterator[tuple[ET.Element, ET.Element]]:
    """(panel, lane) of a Gantt chart, in document order."""
    for panel in root.iter(f"{NS}g"):
        if panel.get("class") == "panel":
            yield from ((panel, lane) for lane in panel if lane.get("class") == "lane")


def bars(svg: str) -> list[Bar]:
    """Every bar of a Gantt chart, panel by panel and lane by lane, in document order."""
    root = svg_root(svg)
    x0, px = float(root.get("data-x0", "nan")), float(root.get("data-px", "nan"))
    out = []
    for panel, lane in _lanes(root):
        for item in lane.findall(f"{NS}g"):
            title = item.find(f"{NS}title")
            assert title is not None and title.text, "every item has a hover title"
            for rect in item.findall(f"{NS}rect"):
                x, width = float(rect.get("x", "nan")), float(rect.get("width", "nan"))
                out.append(
                    Bar(
                        panel=panel.get("data-panel", ""),
                        lane=lane.get("data-lane", ""),
                        title=title.text,
                        kind=rect.get("class", ""),
                        start=(x - x0) / px,
                        end=(x + width - x0) / px,
                        y=float(rect.get("y", "nan")),
                        height=float(rect.get("height", "nan")),
                    )
                )
    return out


def titles(svg: str) -> list[str]:
    """The text of every ``<title>`` (the hover texts)."""
    return [t.text or "" for t in svg_root(svg).iter(f"{NS}title")]


def marks(svg: str) -> list[tuple[str, str, float]]:
    """Every point mark of a Gantt chart (a cache hit): (panel, lane, time), its time read from its apex."""
    root = svg_root(svg)
    x0, px = float(root.get("data-x0", "nan")), float(root.get("data-px", "nan"))
    out = []
    for panel, lane in _lanes(root):
        for path in lane.findall(f"{NS}path"):
            if path.get("class") == "mark":
                x = float(path.get("d", "M nan").split()[0][1:])
                out.append((panel.get("data-panel", ""), lane.get("data-lane", ""), (x - x0) / px))
    return out
