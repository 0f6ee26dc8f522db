"""Small inline SVG charts (line, scatter, bars, diverging bars, sparkline), no library.

Charts are built as ElementTree elements, so every label (task ids, slice names) is
escaped by the serializer, never pasted into markup. Colours come from CSS classes in the
report's stylesheet (no `style` attributes, which a strict CSP would block). Each chart
carries a `<title>` and `<desc>` and an `aria-label` for screen readers.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass

WIDTH = 520
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 44
PLOT_H = 200
LABEL_CHARS = 28  # longer row labels are cut; the bar's tooltip has the whole label
Fmt = Callable[[float], str]


def percent(x: float) -> str:
    return f"{100 * x:.0f}%"


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float]]
    css: str = ""


@dataclass(frozen=True)
class Scale:
    """Maps a data interval onto a pixel interval."""

    d0: float
    d1: float
    r0: float
    r1: float

    def __call__(self, v: float) -> float:
        span = self.d1 - self.d0 or 1.0
        return round(self.r0 + (v - self.d0) / span * (self.r1 - self.r0), 2)


def _el(parent: ET.Element, tag: str, text: str | None = None, **attrs: object) -> ET.Element:
    node = ET.SubElement(
        parent, tag, {k.rstrip("_").replace("_", "-"): str(v) for k, v in attrs.items()}
    )
    if text is not None:
        node.text = text
    return node


def _svg(title: str, desc: str, height: float, width: float = WIDTH) -> ET.Element:
    svg = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {width:.0f} {height:.0f}",
            "role": "img",
            "aria-label": title,
            "class": "chart",
        },
    )
    _el(svg, "title", title)
    _el(svg, "desc", desc)
    return svg


def _text(svg: ET.Element) -> str:
    return ET.tostring(svg, encoding="unicode", short_empty_elements=True)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    return [lo + (hi - lo) * i / (n - 1) for i in range(n)]


def _axes(
    svg: ET.Element,
    x: Scale,
    y: Scale,
    x_label: str,
    y_label: str,
    x_ticks: Sequence[tuple[float, str]],
    y_fmt: Fmt,
) -> None:
    g = _el(svg, "g", class_="axis")
    _el(g, "line", x1=x.r0, y1=y.r0, x2=x.r1, y2=y.r0)
    _el(g, "line", x1=x.r0, y1=y.r0, x2=x.r0, y2=y.r1)
    for v in _ticks(y.d0, y.d1):
        py = y(v)
        _el(g, "line", class_="grid", x1=x.r0, y1=py, x2=x.r1, y2=py)
        _el(g, "text", y_fmt(v), x=x.r0 - 6, y=py + 4, text_anchor="end")
    for v, label in x_ticks:
        _el(g, "text", label, x=x(v), y=y.r0 + 16, text_anchor="middle")
    _el(g, "text", x_label, class_="label", x=(x.r0 + x.r1) / 2, y=y.r0 + 34, text_anchor="middle")
    _el(
        g,
        "text",
        y_label,
        class_="label",
        transform=f"translate(14 {(y.r0 + y.r1) / 2}) rotate(-90)",
        text_anchor="middle",
    )


LEGEND_PER_ROW, LEGEND_ROW = 3, 18


def _legend_height(entries: int) -> int:
    return LEGEND_ROW * -(-entries // LEGEND_PER_ROW)


def _legend(svg: ET.Element, names: Sequence[tuple[str, str]], top: float) -> None:
    """Legend rows under the plot, three to a row, from `top` down."""
    col = (WIDTH - LEFT) / LEGEND_PER_ROW
    for i, (name, css) in enumerate(names):
        gx = LEFT + (i % LEGEND_PER_ROW) * col
        gy = top + (i // LEGEND_PER_ROW) * LEGEND_ROW
        _el(svg, "rect", class_=f"key {css}", x=gx, y=gy - 9, width=12, height=10)
        _el(svg, "text", name, class_="legend", x=gx + 16, y=gy)


def _frame(legend_entries: int) -> tuple[Scale, float, float]:
    """A plot's y scale (bottom to top pixel), its legend's top, and the total height."""
    legend_top = TOP + PLOT_H + BOTTOM + 14
    height = legend_top + _legend_height(legend_entries) + (4 if legend_entries else -8)
    return Scale(0, 1, TOP + PLOT_H, TOP), legend_top, height


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    desc: str,
    x_label: str,
    y_label: str,
    x_names: Sequence[str] | None = None,
) -> str:
    """Lines over integer x values (k) with y in [0, 1]; points carry their values.
    `x_names` names the x values 1, 2, ... (time windows) instead of `k=`."""
    xs = sorted({px for s in series for px, _ in s.points})
    lo, hi = (xs[0], xs[-1]) if xs else (0, 1)
    x = Scale(lo, hi, LEFT + 8, WIDTH - RIGHT - 8)
    y, legend_top, height = _frame(len(series))
    svg = _svg(title, desc, height)

    def name(v: float) -> str:
        return x_names[int(v) - 1] if x_names is not None else f"k={v:g}"

    ticks = [(v, x_names[int(v) - 1] if x_names is not None else f"{v:g}") for v in xs]
    _axes(svg, x, y, x_label, y_label, ticks, percent)
    for s in series:
        g = _el(svg, "g", class_=f"series {s.css}")
        coords = " ".join(f"{x(px)},{y(py)}" for px, py in s.points)
        _el(g, "polyline", points=coords)
        for px, py in s.points:
            dot = _el(g, "circle", cx=x(px), cy=y(py), r=3)
            _el(dot, "title", f"{s.name}: {name(px)}, {percent(py)}")
    _legend(svg, [(s.name, s.css) for s in series], legend_top)
    return _text(svg)


def scatter(
    points: Sequence[tuple[float, float, str, str]],
    *,
    title: str,
    desc: str,
    x_label: str,
    y_label: str,
    x_fmt: Fmt,
    legend: Sequence[tuple[str, str]] = (),
) -> str:
    """(x, y in [0, 1], label, css class) points; each point's label is its tooltip."""
    hi = max((px for px, *_ in points), default=0.0) or 1.0
    x = Scale(0, hi * 1.05, LEFT + 8, WIDTH - RIGHT)
    y, legend_top, height = _frame(len(legend))
    svg = _svg(title, desc, height)
    _axes(svg, x, y, x_label, y_label, [(v, x_fmt(v)) for v in _ticks(0, hi, 4)], percent)
    g = _el(svg, "g", class_="points")
    for px, py, label, css in points:
        dot = _el(g, "circle", class_=css, cx=x(px), cy=y(py), r=4)
        _el(dot, "title", label)
    _legend(svg, legend, legend_top)
    return _text(svg)


def bars(rows: Sequence[tuple[str, float, str]], *, title: str, desc: str, x_label: str) -> str:
    """Horizontal bars (label, value >= 0, css class), one per row, value at the end."""
    label_w, bar_h, gap = 150, 18, 6
    hi = max((v for _, v, _ in rows), default=0.0) or 1.0
    x = Scale(0, hi, label_w, WIDTH - RIGHT - 40)
    height = TOP + len(rows) * (bar_h + gap) + 30
    svg = _svg(title, desc, height)
    for i, (label, value, css) in enumerate(rows):
        top = TOP + i * (bar_h + gap)
        _el(svg, "text", label, class_="legend", x=label_w - 6, y=top + 13, text_anchor="end")
        _el(
            svg,
            "rect",
            class_=f"bar {css}",
            x=label_w,
            y=top,
            width=x(value) - label_w,
            height=bar_h,
        )
        _el(svg, "text", f"{value:g}", class_="legend", x=x(value) + 4, y=top + 13)
    _el(
        svg,
        "text",
        x_label,
        class_="label",
        x=(label_w + WIDTH) / 2,
        y=height - 8,
        text_anchor="middle",
    )
    return _text(svg)


def diverging(
    rows: Sequence[tuple[str, float, str]], *, title: str, desc: str, x_label: str
) -> str:
    """Bars left (negative) or right (positive) of zero for values in [-1, 1]."""
    label_w, bar_h, gap = 170, 14, 4
    x = Scale(-1, 1, label_w, WIDTH - RIGHT)
    height = TOP + len(rows) * (bar_h + gap) + 44
    svg = _svg(title, desc, height)
    zero = x(0)
    for i, (label, value, css) in enumerate(rows):
        top = TOP + i * (bar_h + gap)
        short = label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
        _el(svg, "text", short, class_="legend", x=label_w - 6, y=top + 11, text_anchor="end")
        left, right = sorted((zero, x(value)))
        bar = _el(
            svg,
            "rect",
            class_=f"bar {css}",
            x=left,
            y=top,
            width=max(right - left, 1),
            height=bar_h,
        )
        _el(bar, "title", f"{label}: {100 * value:+.0f} points")
    axis = TOP + len(rows) * (bar_h + gap)
    g = _el(svg, "g", class_="axis")
    _el(g, "line", x1=zero, y1=TOP - 4, x2=zero, y2=axis)
    for v in (-1, -0.5, 0, 0.5, 1):
        _el(g, "text", f"{100 * v:+.0f}" if v else "0", x=x(v), y=axis + 14, text_anchor="middle")
    _el(
        g,
        "text",
        x_label,
        class_="label",
        x=(label_w + WIDTH) / 2,
        y=axis + 32,
        text_anchor="middle",
    )
    return _text(svg)


def sparkline(values: Sequence[float], *, title: str) -> str:
    """A tiny unlabelled line of values in [0, 1], for a table cell."""
    w, h = 80, 22
    svg = _svg(title, title, h, w)
    svg.set("class", "spark")
    if values:
        x = Scale(0, max(len(values) - 1, 1), 3, w - 3)
        y = Scale(0, 1, h - 3, 3)
        coords = " ".join(f"{x(i)},{y(v)}" for i, v in enumerate(values))
        _el(svg, "polyline", points=coords)
    return _text(svg)
