"""The trace view: the region table and a text-cell timeline of one traced launch.

Rows of the timeline are SMs (``c`` switches to CTAs); ``tab`` moves to the next traced kernel.
The timeline is redrawn for the screen's width, from the buffers the trace rung recorded.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from kerneltui.core.trace import stats, summary, timeline
from kerneltui.ui.adapters.trace import TraceData

REGION_STYLES = ("bold cyan", "bold magenta", "bold green", "bold yellow", "bold blue", "bold red")


class TraceScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="trace_close"),
        Binding("c", "toggle_rows", "SM / CTA rows", id="trace_rows"),
        Binding("tab", "next_kernel", "Next kernel", id="trace_next_kernel"),
    ]
    DEFAULT_CSS = """
    TraceScreen { align: center middle; }
    TraceScreen > Vertical { width: 95%; height: 90%; border: round $primary; background: $surface; padding: 0 1; }
    TraceScreen #trace-overhead { color: $warning; height: auto; }
    TraceScreen #trace-regions { height: auto; max-height: 12; }
    TraceScreen #trace-overlap { color: $text-muted; height: auto; }
    TraceScreen #trace-scroll { height: 1fr; }
    """

    def __init__(self, data: TraceData) -> None:
        super().__init__()
        self.data = data
        self.kernel_index = 0
        self.rows_by = "sm"

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_subtitle = "c SM/CTA rows · tab next kernel · esc closes"
            yield Static(Text(self.data.overhead), id="trace-overhead")
            table: DataTable = DataTable(zebra_stripes=True, cursor_type="row", id="trace-regions")
            yield table
            yield Static("", id="trace-overlap")
            with VerticalScroll(id="trace-scroll"):
                yield Static("", id="trace-timeline")

    def on_mount(self) -> None:
        self.query_one("#trace-regions", DataTable).add_columns(
            "region", "CTAs", "per CTA", "median", "p10", "p90", "share", "cycles")
        self.refresh_view()

    def on_resize(self) -> None:
        self.refresh_view()

    @property
    def report(self) -> stats.TraceReport:
        return stats.analyse(self.data.traces[self.kernel_index])

    def timeline_width(self) -> int:
        return max(16, self.size.width - 24)

    def refresh_view(self) -> None:
        if not self.is_mounted or not self.data.traces:
            return
        buf = self.data.traces[self.kernel_index]
        report = stats.analyse(buf)
        box = self.query_one(Vertical)
        box.border_title = (f"trace · {buf.kernel} ({self.kernel_index + 1}/{len(self.data.traces)}) · "
                            f"{report.ctas_traced}/{report.ctas} CTAs on {report.sms} SMs · "
                            f"{summary.fmt_ns(report.kernel_ns)}")
        table = self.query_one("#trace-regions", DataTable)
        table.clear()
        for r in report.regions:
            table.add_row(r.name, str(r.ctas), f"{r.occurrences:g}×", summary.fmt_ns(r.median_ns),
                          summary.fmt_ns(r.p10_ns), summary.fmt_ns(r.p90_ns), f"{100 * r.share:.1f}%",
                          f"{r.median_cycles:.0f}" if r.median_cycles is not None else "–")
        overlap = ", ".join(f"{o.first}∩{o.second} {100 * o.fraction:.0f}%" for o in report.overlaps)
        note = f"overlap: {overlap}" if overlap else "overlap: one region only"
        if self.data.chrome_trace:
            note += f"\nPerfetto / chrome://tracing: {self.data.chrome_trace}"
        self.query_one("#trace-overlap", Static).update(Text(note))
        tl = timeline.build(buf, width=self.timeline_width(), by=self.rows_by, max_rows=512)
        self.query_one("#trace-timeline", Static).update(render_timeline(tl))

    def action_toggle_rows(self) -> None:
        self.rows_by = "cta" if self.rows_by == "sm" else "sm"
        self.refresh_view()

    def action_next_kernel(self) -> None:
        self.kernel_index = (self.kernel_index + 1) % max(1, len(self.data.traces))
        self.refresh_view()


def render_timeline(tl: timeline.Timeline) -> Text:
    styles = {letter: REGION_STYLES[i % len(REGION_STYLES)] for i, (letter, _) in enumerate(tl.legend)}
    out = Text()
    lines = tl.text().splitlines()
    out.append(lines[0] + "\n", style="dim")
    label_w = max((len(r.label) for r in tl.rows), default=0)
    for row in tl.rows:
        out.append(f"{row.label:>{label_w}} │", style="dim")
        for ch in row.cells:
            out.append(ch, style=styles.get(ch.lower(), "dim"))
        out.append("│\n", style="dim")
    if tl.hidden_rows:
        out.append(f"… {tl.hidden_rows} more\n", style="dim")
    for letter, name in tl.legend:
        out.append(f"{letter} ", style=styles[letter])
        out.append(f"{name}  ")
    out.append("(upper case: regions overlap)", style="dim")
    return out
