"""The main screen: chat | editor | rungs on top, chart | asm below, the status line and key hints.

```
┌ chat ─────┬ kernel.py ─────────┬ rungs ──────┐
│           │                    │             │
├ history ──┼ asm ───────────────┤  (details)  │
└───────────┴────────────────────┴─────────────┘
 status line
 footer (keys of the focused pane)
```

Each pane is a ``Pane`` container that can be focused (F2–F6), maximised (ctrl+o) and resized
(alt+arrows); the widgets inside never reach into each other, the app moves data between them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from kerneltui.settings.ui import UiSettings
from kerneltui.ui.widgets.asm_view import AsmLines, AsmPane
from kerneltui.ui.widgets.chat import ChatInput, ChatPane
from kerneltui.ui.widgets.editor import KernelEditor
from kerneltui.ui.widgets.history_chart import HistoryChart
from kerneltui.ui.widgets.rungs import RungRow, RungsPanel, RungTable
from kerneltui.ui.widgets.status_line import StatusLine

PANES = ("chat", "editor", "rungs", "chart", "asm")
COLUMN_OF = {"chat": 0, "chart": 0, "editor": 1, "asm": 1, "rungs": 2}
COLUMN_IDS = ("col-left", "col-middle", "col-right")
# Below this width three columns leave the editor 20-30 columns of code: the columns become tabs
# instead, one on screen at a time at the full width (F2 agent and history, F3 kernel and asm, F4 rungs).
TABS_BELOW = 120
TOP_ROW = {"chat", "editor"}


class Pane(Vertical):
    """A titled, focusable, maximisable region holding one pane's widget."""

    ALLOW_MAXIMIZE = True
    DEFAULT_CSS = """
    Pane { border: round $panel; border-title-color: $text-muted; height: 1fr; }
    Pane:focus-within { border: round $primary; border-title-color: $text; border-title-style: bold; }
    """


@dataclass
class Layout:
    """Column widths and the top row's share (fr units), changed by alt+arrows."""

    columns: list[float] = field(default_factory=lambda: [1.0, 1.8, 1.3])
    top: float = 1.2
    bottom: float = 1.0
    chosen: bool = False  # the person resized: the terminal's size no longer picks the shares

    def fit(self, width: int, height: int) -> None:
        """Shares for the terminal's size: in a short window (an SSH session's 24 or 30 rows) the chat and
        the editor take most of the height; in a narrow one the chat and rungs columns get wider."""
        if self.chosen:
            return
        self.top = 2.4 if height < 32 else 1.6 if height < 44 else 1.2
        self.columns = [1.1, 1.4, 1.3] if width < 110 else [1.0, 1.8, 1.3]

    def resize(self, pane: str, how: str) -> None:
        self.chosen = True
        step = 0.15
        if how in ("wider", "narrower"):
            col = COLUMN_OF[pane]
            delta = step if how == "wider" else -step
            self.columns[col] = max(0.3, min(4.0, self.columns[col] + delta))
        else:
            grow_top = (how == "taller") == (pane in TOP_ROW)
            delta = step if grow_top else -step
            self.top = max(0.2, min(5.0, self.top + delta))


@dataclass(frozen=True)
class PaneWidgets:
    """The panes' widgets, found once they are mounted (while a pane is maximised, queries from the
    screen no longer see the others)."""

    editor: KernelEditor
    rungs: RungsPanel
    chat: ChatPane
    chart: HistoryChart
    asm: AsmPane
    status: StatusLine
    chat_input: ChatInput
    rung_table: RungTable
    asm_lines: AsmLines


class MainScreen(Screen[None]):
    # A maximised pane keeps the PASS/FAIL status line, the replay's bar and the key hints.
    ALLOW_IN_MAXIMIZED_VIEW = "StatusLine, ReplayBar, Footer"
    DEFAULT_CSS = """
    MainScreen #columns { height: 1fr; }
    MainScreen #col-left, MainScreen #col-middle, MainScreen #col-right { height: 1fr; }
    """

    def __init__(self, *, editor: KernelEditor, rungs: list[RungRow], chat_label: str, ui_settings: UiSettings,
                 on_ready: Callable[[], None], clock: Callable[[], float]) -> None:
        super().__init__()
        self._clock = clock
        self._on_ready = on_ready  # called each time the panes are built (also after a task switch)
        self._editor = editor
        self._rung_rows = rungs
        self._chat_label = chat_label
        self._chart_unit = ui_settings.chart_unit
        self._asm_filters = {"directives": ui_settings.asm_hide_directives,
                             "comments": ui_settings.asm_hide_comments, "hex": ui_settings.asm_hide_hex}
        self.layout_state = Layout()
        self.columns: dict[str, Widget] = {}  # filled once the panes are mounted (``_collect``)
        self.tabbed = False  # a narrow terminal: one column on screen at a time
        self.tab = 1  # the column shown while tabbed (the editor's at first)

    def compose(self) -> ComposeResult:
        with Horizontal(id="columns"):
            with Vertical(id="col-left"):
                with Pane(id="pane-chat") as p:
                    p.border_title = "agent [dim]F2[/]"
                    yield ChatPane(label=self._chat_label, clock=self._clock, id="chat")
                with Pane(id="pane-chart") as p:
                    p.border_title = "history [dim]F5[/]"
                    yield HistoryChart(unit=self._chart_unit, id="chart")
            with Vertical(id="col-middle"):
                with Pane(id="pane-editor") as p:
                    p.border_title = f"{self._editor.path.name} [dim]F3[/]"
                    yield self._editor
                with Pane(id="pane-asm") as p:
                    p.border_title = "asm [dim]F6[/]"
                    yield AsmPane(hide_directives=self._asm_filters.get("directives", True),
                                  hide_comments=self._asm_filters.get("comments", False),
                                  hide_hex=self._asm_filters.get("hex", True), id="asm")
            with Vertical(id="col-right"):
                with Pane(id="pane-rungs") as p:
                    p.border_title = "rungs [dim]F4[/]"
                    yield RungsPanel(self._rung_rows, id="rungs")
        yield StatusLine(id="status")
        yield Footer()

    async def reset(self, editor: KernelEditor, rungs: list[RungRow], chat_label: str) -> None:
        """Show another task: compose the panes again around a new editor and rung list."""
        if self.maximized is not None:
            self.minimize()
        self._editor, self._rung_rows, self._chat_label = editor, rungs, chat_label
        await self.recompose()
        # The new panes compose their own children: collect references once those are mounted.
        self.call_after_refresh(self._collect)

    def on_mount(self) -> None:
        self._collect()

    def _collect(self) -> None:
        self.widgets = PaneWidgets(
            editor=self.query_one(KernelEditor), rungs=self.query_one(RungsPanel), chat=self.query_one(ChatPane),
            chart=self.query_one(HistoryChart), asm=self.query_one(AsmPane), status=self.query_one(StatusLine),
            chat_input=self.query_one(ChatInput), rung_table=self.query_one(RungTable),
            asm_lines=self.query_one(AsmLines),
        )
        self.panes: dict[str, Pane] = {name: self.query_one(f"#pane-{name}", Pane) for name in PANES}
        self.columns = {name: self.query_one(f"#{name}") for name in ("col-left", "col-middle", "col-right")}
        self.apply_layout()
        self._editor.focus()
        self._on_ready()

    # -- panes --------------------------------------------------------------------------------

    def pane_target(self, name: str) -> Widget:
        """The widget that takes focus for a pane."""
        w = self.widgets
        targets: dict[str, Widget] = {"chat": w.chat.log_widget, "editor": w.editor, "rungs": w.rung_table,
                                      "chart": w.chart, "asm": w.asm_lines}
        return targets[name]

    def focused_pane(self) -> str | None:
        widget = self.focused
        while widget is not None:
            if isinstance(widget, Pane) and widget.id:
                return widget.id.removeprefix("pane-")
            widget = widget.parent if isinstance(widget.parent, Widget) else None
        return None

    def focus_pane(self, name: str) -> None:
        if self.maximized is not None and self.maximized.id != f"pane-{name}":
            self.minimize()
        pane = self.panes[name]
        pane.display = True
        self.tab = COLUMN_OF[name]
        self._column_visibility()
        self.pane_target(name).focus()

    def toggle_pane(self, name: str) -> None:
        pane = self.panes[name]
        visible = [p for p in self.panes.values() if p.display]
        if pane.display and len(visible) == 1:
            self.notify("at least one pane stays visible", severity="warning")
            return
        pane.display = not pane.display
        self._column_visibility()

    def _column_visibility(self) -> None:
        for index, col_id in enumerate(COLUMN_IDS):
            col = self.columns[col_id]
            shown = any(p.display for p in self.panes.values() if p.parent is col)
            col.display = shown and (not self.tabbed or index == self.tab)

    def toggle_maximise(self, name: str | None = None) -> None:
        if self.maximized is not None:
            self.minimize()
            # A run that ended while the rungs were hidden laid nothing out: do it at the pane's width.
            self.call_after_refresh(self.widgets.rungs.relayout)
            return
        name = name or self.focused_pane() or "editor"
        pane = self.panes[name]
        pane.display = True
        self.maximize(pane, container=False)
        self.pane_target(name).focus()

    def on_resize(self) -> None:
        if self.columns:  # the panes are there
            self.apply_layout()

    def _tab_titles(self) -> None:
        """While tabbed, each top pane's lower border says where the other tabs are."""
        hint = "[dim]F2 agent · F3 kernel · F4 rungs[/]" if self.tabbed else ""
        for name in ("chat", "editor", "rungs"):
            self.panes[name].border_subtitle = hint

    def resize(self, how: str) -> None:
        pane = self.focused_pane() or "editor"
        self.layout_state.resize(pane, how)
        self.apply_layout()

    def apply_layout(self) -> None:
        width, height = self.app.size.width, self.app.size.height
        self.layout_state.fit(width, height)
        tabbed = width < TABS_BELOW
        if tabbed != self.tabbed:
            self.tabbed = tabbed
            # Short as well: the lower panes (history, asm) wait for F5/F6, so the chat and the editor
            # get the height; wide again, every pane comes back.
            for name in ("chart", "asm"):
                self.panes[name].display = not (tabbed and height < 32)
            self._column_visibility()
            self._tab_titles()
        cols = self.layout_state.columns
        for col_id, frac in zip(COLUMN_IDS, cols, strict=True):
            self.columns[col_id].styles.width = "1fr" if self.tabbed else f"{frac:g}fr"
        for name in ("chat", "editor"):
            self.panes[name].styles.height = f"{self.layout_state.top:g}fr"
        for name in ("chart", "asm"):
            self.panes[name].styles.height = f"{self.layout_state.bottom:g}fr"
