"""The app's panes: where each one is (the main screen's widgets) and the actions that move the focus
between them, hide, maximise and resize them. ``KernelApp`` is one; its controllers reach the panes
through ``app_ports.Panes``.
"""

from __future__ import annotations

from textual.app import App

from kerneltui.ui.screens.main import MainScreen
from kerneltui.ui.widgets.asm_view import AsmPane
from kerneltui.ui.widgets.chat import ChatPane
from kerneltui.ui.widgets.editor import KernelEditor
from kerneltui.ui.widgets.history_chart import HistoryChart
from kerneltui.ui.widgets.rungs import RungsPanel
from kerneltui.ui.widgets.status_line import StatusLine


class PaneApp(App[None]):
    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    @property
    def editor(self) -> KernelEditor:
        return self.main.widgets.editor

    @property
    def rungs(self) -> RungsPanel:
        return self.main.widgets.rungs

    @property
    def chat(self) -> ChatPane:
        return self.main.widgets.chat

    @property
    def chart(self) -> HistoryChart:
        return self.main.widgets.chart

    @property
    def asm_pane(self) -> AsmPane:
        return self.main.widgets.asm

    @property
    def status(self) -> StatusLine:
        return self.main.widgets.status

    def action_focus_pane(self, name: str) -> None:
        if self.screen is self.main:
            self.main.focus_pane(name)

    def action_toggle_pane(self, name: str) -> None:
        self.main.toggle_pane(name)

    def action_toggle_maximise(self) -> None:
        if self.screen is self.main:
            self.main.toggle_maximise()

    def action_maximise_pane(self, name: str) -> None:
        self.main.toggle_maximise(name)

    def action_resize(self, how: str) -> None:
        self.main.resize(how)
