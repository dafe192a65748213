"""Charts as inline SVG, drawn on the server: no JavaScript library, nothing fetched from
the internet, and a page that prints and archives as it is shown. Each mark carries a
``<title>`` with its exact figure; the pages also show the figures as a table."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

Format = Callable[[float], str]

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 100, 12, 28, 40
TICKS = 4


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]
    css: str  # s1, s2, s3: colours in dashboard.css


def nice_step(value: float, *, integer: bool) -> float:
    """The smallest of 1, 2, 2.5 and 5 times 10^k at or above ``value``."""
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    for multiple in (1, 2, 2.5, 5, 10):
        step = multiple * magnitude
        if step >= value and (not integer or step == int(step)):
            return float(step)
    return 10.0 * magnitude


def _scale(top: float, integer: bool) -> float:
    return nice_step(top / TICKS, integer=integer) * TICKS


def _frame(title: str, legend: Sequence[Series], ticks: list[tuple[float, str]]) -> list[str]:
    plot_height = HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for fraction, text in ticks:
        y = TOP + plot_height * (1 - fraction)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(text)}</text>"
        )
    x = LEFT
    for series in legend:
        parts.append(
            f'<rect class="{series.css}" x="{x}" y="6" width="10" height="10"/>'
            f'<text class="legend" x="{x + 14}" y="15">{escape(series.name)}</text>'
        )
        x += 24 + 7 * len(series.name)
    return parts


def _x_labels(labels: Sequence[str], slot: float) -> list[str]:
    every = max(1, math.ceil(len(labels) / 16))
    y = HEIGHT - BOTTOM + 16
    return [
        f'<text class="tick" x="{LEFT + slot * (i + 0.5):.1f}" y="{y}" text-anchor="middle">'
        f"{escape(label)}</text>"
        for i, label in enumerate(labels)
        if i % every == 0
    ]


def _ticks(top: float, fmt: Format) -> list[tuple[float, str]]:
    return [(i / TICKS, fmt(top * i / TICKS)) for i in range(TICKS + 1)]


def bar_chart(
    title: str,
    labels: Sequence[str],
    series: Sequence[Series],
    fmt: Format,
    *,
    stacked: bool = False,
    integer: bool = False,
) -> Markup:
    """Bars per label, side by side (or stacked); an unknown value draws no bar."""
    if not labels:
        return Markup("")
    if stacked:
        peak = max(sum(s.values[i] or 0 for s in series) for i in range(len(labels)))
    else:
        peak = max((v or 0 for s in series for v in s.values), default=0)
    top = _scale(float(peak), integer)
    plot_height = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / len(labels)
    parts = _frame(title, series, _ticks(top, fmt))
    bar = slot * 0.8 if stacked else slot * 0.8 / len(series)
    for i, label in enumerate(labels):
        base = 0.0
        for k, s in enumerate(series):
            value = s.values[i]
            if value is None:
                continue
            height = plot_height * (value / top)
            x = LEFT + slot * i + slot * 0.1 + (0 if stacked else bar * k)
            y = TOP + plot_height - height - (plot_height * base / top if stacked else 0)
            parts.append(
                f'<rect class="{s.css}" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" '
                f'height="{max(height, 0):.1f}"><title>{escape(label)} — '
                f"{escape(s.name)}: {escape(fmt(value))}</title></rect>"
            )
            if stacked:
                base += value
    parts.extend(_x_labels(labels, slot))
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 (every text above went through escape)


def line_chart(title: str, labels: Sequence[str], series: Sequence[Series], fmt: Format) -> Markup:
    """A line per series through each label's value; an unknown value breaks the line."""
    if not labels:
        return Markup("")
    peak = max((v or 0 for s in series for v in s.values), default=0)
    top = _scale(float(peak), integer=False)
    plot_height = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT - RIGHT) / len(labels)
    parts = _frame(title, series, _ticks(top, fmt))
    for s in series:
        runs: list[list[tuple[float, float]]] = [[]]
        for i, value in enumerate(s.values):
            if value is None:
                runs.append([])
                continue
            x = LEFT + slot * (i + 0.5)
            y = TOP + plot_height * (1 - max(value, 0) / top)
            runs[-1].append((x, y))
            parts.append(
                f'<circle class="{s.css}" cx="{x:.1f}" cy="{y:.1f}" r="3">'
                f"<title>{escape(labels[i])} — {escape(s.name)}: {escape(fmt(value))}</title>"
                "</circle>"
            )
        for points in runs:
            if len(points) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
                parts.append(f'<polyline class="line {s.css}" points="{path}"/>')
    parts.extend(_x_labels(labels, slot))
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 (every text above went through escape)
