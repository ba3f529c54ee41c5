"""The benchmark history chart: one point per version (median, spread), baseline and roofline floor.

A version compared interleaved with the one before it draws that comparison's 95 % interval (``┃``)
instead of its own spread (``│``); the legend says the current version's verdict.

Drawn with box characters on the widget's own size. The y axis is time in µs (lower is better) or
the share of the roofline reached (floor ÷ time, higher is better); ``u`` toggles.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import BindingType
from textual.reactive import reactive
from textual.widget import Widget

from kerneltui.ui import keys
from kerneltui.ui.ports import HistoryPoint, HistorySeries
from kerneltui.ui.themes import rich_colour


def _fmt(value: float, unit: str) -> str:
    if unit == "percent":
        return f"{value:.0f}%"
    if value >= 10_000:
        return f"{value / 1000:.0f}ms"
    if value >= 100:
        return f"{value:.0f}µs"
    return f"{value:.3g}µs"


def transform(series: HistorySeries, unit: str) -> tuple[list[tuple[HistoryPoint, float, float, float]], float | None,
                                                           float | None]:
    """(point, median, low, high) in the chart's unit, plus the baseline and floor lines."""
    if unit == "percent" and series.floor_us:
        floor = series.floor_us

        def pct(us: float) -> float:
            return 100.0 * floor / us if us > 0 else 0.0

        pts = [(p, pct(p.median_us), pct(p.high_us), pct(p.low_us)) for p in series.points]
        base = pct(series.baseline_us) if series.baseline_us else None
        return pts, base, 100.0
    pts = [(p, p.median_us, p.low_us, p.high_us) for p in series.points]
    return pts, series.baseline_us, series.floor_us


def render_chart(series: HistorySeries, unit: str, width: int, height: int,
                 colours: dict[str, str]) -> Text:
    if width < 16 or height < 5:
        return Text("(too small)", style="dim")
    if not series.points:
        return Text(series.note or "no benchmark yet", style="dim")
    if unit == "percent" and not series.floor_us:
        unit = "us"
    pts, base, floor = transform(series, unit)
    values = [v for _, m, lo, hi in pts for v in (m, lo, hi)]
    values += [v for v in (base, floor) if v is not None]
    top = max(values) * 1.08 or 1.0
    bottom = 0.0
    label_w = 7
    plot_w = width - label_w - 1
    plot_h = height - 3  # the legend line, the x axis and the key below it
    visible = pts[-max(1, plot_w // 2):]
    step = max(1, plot_w // max(1, len(visible)))
    grid: list[list[tuple[str, str]]] = [[(" ", "")] * plot_w for _ in range(plot_h)]

    def row_of(value: float) -> int:
        frac = (value - bottom) / (top - bottom) if top > bottom else 0.0
        return max(0, min(plot_h - 1, round((1.0 - frac) * (plot_h - 1))))

    def hline(value: float | None, char: str, colour: str) -> None:
        if value is None:
            return
        r = row_of(value)
        for c in range(plot_w):
            grid[r][c] = (char, colour)

    hline(base, "─", colours["chart-baseline"])
    hline(floor, "┄", colours["chart-floor"])
    for i, (point, median, low, high) in enumerate(visible):
        c = min(plot_w - 1, i * step + step // 2)
        colour = colours["chart-current"] if point.current else colours["chart-point"]
        r_lo, r_hi = sorted((row_of(low), row_of(high)))
        for r in range(r_lo, r_hi + 1):
            grid[r][c] = ("┃" if point.vs_previous else "│", colour)
        grid[row_of(median)][c] = ("◆" if point.current else "●", f"bold {colour}")

    text = Text(no_wrap=True, overflow="crop")
    current = next((p for p in reversed(series.points) if p.current), series.points[-1])
    cur_val = transform(HistorySeries([current], series.baseline_us, series.floor_us), unit)[0][0][1]
    legend = f"{len(series.points)} versions · current {current.version}: {_fmt(cur_val, unit)}"
    if current.vs_previous:
        legend += f" · vs previous: {current.vs_previous}"
    if unit == "us" and series.floor_us:
        legend += f" ({100 * series.floor_us / current.median_us:.0f}% of floor)"
    if series.baseline_us and unit == "us":
        legend += f" · {series.baseline_us / current.median_us:.2f}× ref"
    text.append(legend[:width] + "\n", style="bold")
    key = Text(" " * label_w + " ")
    key.append("●", style=colours["chart-point"])
    key.append(" median │ spread  ")
    if any(p.vs_previous for p in series.points):
        key.append("┃ 95 % CI vs previous  ")
    key.append("◆", style=colours["chart-current"])
    key.append(" current  ")
    if base is not None:
        key.append("── ", style=colours["chart-baseline"])
        key.append(f"ref {_fmt(base, unit)}  ")
    if floor is not None:
        key.append("┄┄ ", style=colours["chart-floor"])
        key.append(f"floor {_fmt(floor, unit)}")
    key.truncate(width)
    labels = {0: _fmt(top, unit), plot_h - 1: _fmt(bottom, unit), plot_h // 2: _fmt((top + bottom) / 2, unit)}
    for r in range(plot_h):
        text.append(f"{labels.get(r, ''):>{label_w}}┤" if r in labels else " " * label_w + "│", style="dim")
        for ch, style in grid[r]:
            text.append(ch, style=style)
        text.append("\n")
    text.append(" " * label_w + "└" + "─" * plot_w + "\n", style="dim")
    text.append_text(key)
    return text


class HistoryChart(Widget, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.CHART)
    DEFAULT_CSS = """
    HistoryChart { height: 1fr; padding: 0 1; }
    """

    unit: reactive[str] = reactive("us")

    def __init__(self, unit: str = "us", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series = HistorySeries(note="no benchmark yet")
        self.set_reactive(HistoryChart.unit, unit if unit in ("us", "percent") else "us")

    def show(self, series: HistorySeries) -> None:
        self.series = series
        self.refresh()

    def action_toggle_unit(self) -> None:
        if self.unit == "us" and not self.series.floor_us:
            self.notify("no roofline floor for this task yet: % of roofline needs flops/bytes_moved and a GPU",
                        severity="warning")
            return
        self.unit = "percent" if self.unit == "us" else "us"

    def render(self) -> Text:
        variables = self.app.theme_variables
        colours = {name: rich_colour(variables, name) for name in
                   ("chart-point", "chart-current", "chart-baseline", "chart-floor")}
        return render_chart(self.series, self.unit, self.content_size.width, self.content_size.height, colours)
