"""The rungs pane: one row per rung with its live status and headline, and the selected row's details."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Static

from kerneltui.core import rungs as rung_registry
from kerneltui.core.integrity import summarise as summarise_integrity
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.worker.contract.replies import DeviceInfo
from kerneltui.ui import keys
from kerneltui.ui.messages import JumpToSource, OpenProfile, OpenTrace
from kerneltui.ui.themes import rich_colour

DEFENCE_ICONS = {"caught": "✗", "warned": "!", "passed": "✓", "stopped": "·", "not run": "–"}
ICONS = {"idle": "·", "queued": "○", "running": "◐", "ok": "✓", "warn": "!", "fail": "✗", "skip": "–",
         "cancelled": "⊘"}
SPINNER = "◐◓◑◒"
WIDE_MIN = 48  # the pane's width from which name, time and headline get a column each
VARIABLE_FOR = {"ok": "pass", "warn": "warn", "fail": "fail", "skip": "skip", "running": "running", "queued": "skip",
                "idle": "skip", "cancelled": "skip"}


@dataclass
class RungRow:
    name: str
    title: str
    needs_gpu: bool = False
    on_demand: bool = False
    state: str = "idle"  # idle | queued | running | ok | warn | fail | skip | cancelled
    started_at: float | None = None
    progress: str = ""
    fraction: float | None = None
    result: RungResult | None = None
    history: list[str] = field(default_factory=list)

    def elapsed(self, now: float) -> float:
        return now - self.started_at if self.started_at is not None else 0.0


def registry_rows() -> list[RungRow]:
    """One idle row per rung, in the registry's order."""
    return [RungRow(name=name, title=title, needs_gpu=needs_gpu, on_demand=on_demand)
            for name, title, needs_gpu, on_demand in rung_registry.rung_rows()]


class RungTable(DataTable):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.RUNGS)

    def action_open_row(self) -> None:
        panel = self._panel()
        if panel is not None:
            panel.open_selected()

    def action_profile(self) -> None:
        self.post_message(OpenProfile(self._selected_name() or "profile"))

    def action_trace(self) -> None:
        self.post_message(OpenTrace())

    async def action_run_selected(self) -> None:
        name = self._selected_name()
        if name:
            await self.app.run_action(f"run_rungs('{name}')")

    def _selected_name(self) -> str | None:
        panel = self._panel()
        if panel is None or not panel.rows:
            return None
        return list(panel.rows)[max(0, min(self.cursor_row, len(panel.rows) - 1))]

    def _panel(self) -> RungsPanel | None:
        for ancestor in self.ancestors:
            if isinstance(ancestor, RungsPanel):
                return ancestor
        return None


class RungsPanel(Vertical):
    DEFAULT_CSS = """
    RungsPanel RungTable { height: auto; max-height: 75%; overflow-x: hidden; }
    RungsPanel #rung-note { color: $text-muted; padding: 0 1; height: auto; }
    RungsPanel #rung-detail-scroll { height: 1fr; border-top: solid $panel; }
    RungsPanel #rung-detail { padding: 0 1; }
    """

    def __init__(self, rows: list[RungRow], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: dict[str, RungRow] = {r.name: r for r in rows}
        self.now = 0.0
        self.device: DeviceInfo = {}
        self._tick = 0
        self._built_width = -1
        self._followed_failure = False  # this run's first failure has taken the selection
        self._stale = False  # rows changed while the pane was hidden

    def compose(self) -> ComposeResult:
        self.table = RungTable(cursor_type="row", zebra_stripes=False, show_header=False, id="rung-table")
        yield self.table
        self.note = Static("", id="rung-note")
        self.detail = Static("", id="rung-detail")
        yield self.note
        with VerticalScroll(id="rung-detail-scroll"):
            yield self.detail

    def on_mount(self) -> None:
        self._build()
        self._update_note()
        self._show_detail()

    def on_resize(self) -> None:
        if self.size.width != self._built_width:
            self._build()

    def relayout(self) -> None:
        """Lay the table out again if it changed while hidden (the screen calls it after un-maximising)."""
        if self._stale or self.size.width != self._built_width:
            self._build()
            self._show_detail()

    def _build(self) -> None:
        """Lay the table out for the pane's width: the headline wraps in its own column, or, when the pane
        is narrow, under the rung's name. Never cut to a few characters."""
        table = self.table
        if not self.region.width and self._built_width > 0:
            # Hidden (another pane maximised): its size then is not the pane's; ``relayout`` builds the
            # table once the pane is shown again.
            self._stale = True
            return
        self._stale = False
        width = self._built_width = self.size.width
        cursor = table.cursor_row
        table.clear(columns=True)
        table.add_column("", key="icon", width=1)
        pad = 2 * table.cell_padding
        if width >= WIDE_MIN:
            table.add_column("rung", key="rung", width=12)
            table.add_column("time", key="time", width=6)
            table.add_column("headline", key="headline", width=max(8, width - 1 - 12 - 6 - 4 * pad - 1))
        else:
            table.add_column("rung", key="body", width=max(8, width - 1 - 2 * pad - 1))
        for row in self.rows.values():
            table.add_row(*self._shown(row), key=row.name, height=None)
        if self.rows:
            table.move_cursor(row=max(0, min(cursor, len(self.rows) - 1)), animate=False)

    def _shown(self, row: RungRow) -> tuple[Text, ...]:
        icon, name, time_text, head = self._cells(row)
        if len(self.table.columns) == 4:
            return icon, name, time_text, head
        first = Text.assemble(name, "  ", time_text)
        return icon, (Text.assemble(first, "\n", head) if head.plain else first)

    # -- state changes (called by the app) ------------------------------------------------------

    def run_started(self, rungs: list[str], now: float) -> None:
        self.now = now
        for row in self.rows.values():
            if row.name in rungs:
                row.state, row.result, row.progress, row.fraction, row.started_at = "queued", None, "", None, None
        self._followed_failure = False
        self._refresh_rows()

    def clear(self) -> None:
        """Every row back to idle (a replay going back to before any run)."""
        for row in self.rows.values():
            row.state, row.result, row.progress, row.fraction, row.started_at = "idle", None, "", None, None
        self._update_note()
        self._refresh_rows()
        self._show_detail()

    def rung_started(self, name: str, now: float) -> None:
        row = self.rows.get(name)
        if row is not None:
            row.state, row.started_at, row.progress = "running", now, ""
            self.now = now
            self._refresh_rows([name])

    def rung_progress(self, name: str, message: str, fraction: float | None) -> None:
        row = self.rows.get(name)
        if row is not None:
            row.progress, row.fraction = message, fraction
            self._refresh_rows([name])

    def rung_finished(self, result: RungResult) -> None:
        row = self.rows.get(result.name)
        if row is None:
            return
        row.state, row.result, row.progress, row.started_at = result.status, result, "", None
        self._refresh_rows([result.name])
        if result.status == "fail" and not self._followed_failure:
            self._followed_failure = True  # the detail shows why the run failed, not the row left selected
            self.select(result.name)
        elif self._selected() is row:
            self._show_detail()

    def run_finished(self, cancelled: bool, device: DeviceInfo) -> None:
        for row in self.rows.values():
            if row.state in ("queued", "running"):
                row.state = "cancelled" if cancelled else "idle"
                row.started_at = None
        if device:
            self.device = device
        self._update_note()
        self._refresh_rows()
        self._show_detail()

    def set_device(self, device: DeviceInfo) -> None:
        self.device = device
        self._update_note()

    def tick(self, now: float) -> None:
        """Advance the running rows' elapsed time and spinner."""
        self.now = now
        self._tick += 1
        running = [r.name for r in self.rows.values() if r.state == "running"]
        if running:
            self._refresh_rows(running)

    # -- drawing ------------------------------------------------------------------------------

    def _colour(self, state: str) -> str:
        return rich_colour(self.app.theme_variables, VARIABLE_FOR.get(state, "skip"))

    def _cells(self, row: RungRow) -> tuple[Text, Text, Text, Text]:
        colour = self._colour(row.state)
        icon = SPINNER[self._tick % len(SPINNER)] if row.state == "running" else ICONS.get(row.state, "?")
        if row.state == "running":
            seconds = row.elapsed(self.now)
            time_text = f"{seconds:4.1f}s"
            head = row.progress or "running…"
            if row.fraction is not None:
                head = f"{int(row.fraction * 100):3d}% {head}"
        elif row.result is not None:
            seconds = row.result.duration_s
            time_text = f"{seconds:4.1f}s" if seconds else ""
            head = row.result.summary if row.result.status != "fail" else (row.result.error or row.result.summary)
            head = head.splitlines()[0] if head else ""
        else:
            time_text = ""
            head = {"queued": "queued", "cancelled": "cancelled: overtaken by a newer save"}.get(row.state, "")
            if row.state == "idle":
                head = "on demand (ctrl+p)" if row.on_demand else ""
        name_style = "bold" if row.state in ("running", "fail") else ""
        return (Text(icon, style=f"bold {colour}"), Text(row.name, style=name_style),
                Text(time_text, style="dim"), Text(head, style=colour if row.state in ("fail", "warn") else ""))

    def _refresh_rows(self, names: list[str] | None = None) -> None:
        # Rebuilt whole: a row's height follows its wrapped headline, which DataTable measures when a
        # row is added (a dozen rows; a running rung updates four times a second).
        if self.is_mounted:
            self._build()

    def refresh_theme(self) -> None:
        self._refresh_rows()
        self._show_detail()

    def _update_note(self) -> None:
        if not self.is_mounted:
            return
        note = self.note
        if not self.device:
            note.update("starting a worker…")
            return
        if self.device.get("gpu"):
            note.update(Text(f"{self.device.get('name', 'GPU')} · {self.device.get('arch', '')}", style="dim"))
            return
        # What the last run did, where there is one; otherwise what each rung declares.
        results = [r for r in self.rows.values() if r.result is not None]
        if results:
            cpu = [r.name for r in results if r.result is not None and r.result.status != "skip"]
            skipped = [r.name for r in results if r.result is not None and r.result.status == "skip"]
        else:
            cpu = [r.name for r in self.rows.values() if not r.needs_gpu and not r.on_demand]
            skipped = [r.name for r in self.rows.values() if r.needs_gpu]
        how = " (Triton interpreter)" if self.device.get("interpreter") else ""
        text = f"no GPU: {', '.join(cpu)} ran on the CPU{how}" if cpu else "no GPU"
        text += f"; {', '.join(skipped)} skipped (see each row)" if skipped else "; rungs that need a GPU are skipped"
        note.update(text)

    # -- selection and details ------------------------------------------------------------------

    def _selected(self) -> RungRow | None:
        if not self.is_mounted or not self.rows:
            return None
        table = self.table
        names = list(self.rows)
        return self.rows[names[max(0, min(table.cursor_row, len(names) - 1))]]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.open_selected()

    def open_selected(self) -> None:
        row = self._selected()
        if row is None or row.result is None:
            return
        if row.result.location is not None:
            self.post_message(JumpToSource(row.result.location.line, row.result.location.column))
        elif row.name == "profile":
            self.post_message(OpenProfile(row.name))
        elif row.name == "trace":
            self.post_message(OpenTrace())

    def select(self, name: str) -> None:
        if name in self.rows:
            self.table.move_cursor(row=list(self.rows).index(name))
            self._show_detail()

    def _show_detail(self) -> None:
        if not self.is_mounted:
            return
        row = self._selected()
        detail = self.detail
        if row is None:
            detail.update("")
            return
        detail.update(render_detail(row, self._colour(row.state)))


def render_detail(row: RungRow, colour: str) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column()
    result = row.result
    grid.add_row("rung", Text(f"{row.name} — {row.title}", style="bold"))
    if result is None:
        grid.add_row("status", Text(row.state, style=colour))
        if row.needs_gpu:
            grid.add_row("", Text("needs a GPU"))
        return grid
    grid.add_row("status", Text(result.status + (f" in {result.duration_s:.2f} s" if result.duration_s else ""),
                                style=f"bold {colour}"))
    if result.summary:
        grid.add_row("summary", Text(result.summary))
    if result.error:
        grid.add_row("error", Text(result.error, style=colour))
    if result.location is not None:
        grid.add_row("where", Text(f"{result.location}  (enter: go to the line)", style="underline"))
    defences = summarise_integrity([result]).for_rung(row.name)
    if defences:
        lines = Text()
        for i, f in enumerate(defences):
            style = colour if f.state in ("caught", "warned") else ""
            lines.append(("\n" if i else "") + f"{DEFENCE_ICONS.get(f.state, '?')} {f.key} {f.state}", style=style)
            if f.state in ("caught", "warned") and f.note:
                lines.append(f": {f.note[:160]}", style=style)
        grid.add_row("integrity", lines)
    for key, value in result.metrics.items():
        shown = f"{value:.6g}" if isinstance(value, float) else str(value)
        grid.add_row(key, Text(shown[:400]))
    if result.details.strip():
        grid.add_row("output", Text(result.details.rstrip()[-20_000:]))
    return grid
