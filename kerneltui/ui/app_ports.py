"""What the app's controllers use of the app and of each other, as ports.

``KernelApp`` (``ui.app``) builds the controllers (``run_view``, ``task_files``, ``session_control``,
``stage_edit``, ``agent_control``, ``theming``, the replay's driver and the palette's ``commands``) and
hands itself to each; they read it through these shapes, so none imports the app
(tests/unit/test_import_cycles.py). A controller another one calls is seen through a port of its own
(``RunRequests``, ``Backups``), never its class. A member added here is a dependency added on the app.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.theme import Theme
    from textual.timer import Timer

    from kerneltui import config as config_mod
    from kerneltui.core.task import Task
    from kerneltui.ui.messages import EventBridge
    from kerneltui.ui.options import AppOptions
    from kerneltui.ui.ports import AgentController
    from kerneltui.ui.recording import SessionRecorder
    from kerneltui.ui.screens.main import MainScreen
    from kerneltui.ui.widgets.asm_view import AsmPane
    from kerneltui.ui.widgets.chat import ChatPane
    from kerneltui.ui.widgets.editor import KernelEditor
    from kerneltui.ui.widgets.history_chart import HistoryChart
    from kerneltui.ui.widgets.rungs import RungsPanel
    from kerneltui.ui.widgets.status_line import StatusLine
    from kerneltui.ui.workbench import Workbench


class Screens(Protocol):
    """The Textual app's own calls the controllers make: notices, screens, workers, timers."""

    def notify(self, message: str, *, severity: Any = ..., timeout: float | None = ...) -> None: ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None] | None = ...) -> object: ...

    def run_worker(self, work: Coroutine[Any, Any, Any], *, group: str = ..., exit_on_error: bool = ...,
                   exclusive: bool = ...) -> object: ...

    def call_after_refresh(self, callback: Callable[..., object], *args: Any) -> bool: ...

    def set_interval(self, interval: float, callback: Callable[[], object] | None = ...) -> Timer: ...

    def suspend(self) -> AbstractContextManager[None]: ...

    @property
    def is_headless(self) -> bool: ...

    @property
    def is_running(self) -> bool: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...


class Panes(Protocol):
    """The main screen and its panes, which exist while ``ready``."""

    @property
    def ready(self) -> bool: ...

    @property
    def main(self) -> MainScreen: ...

    @property
    def editor(self) -> KernelEditor: ...

    @property
    def rungs(self) -> RungsPanel: ...

    @property
    def chat(self) -> ChatPane: ...

    @property
    def chart(self) -> HistoryChart: ...

    @property
    def asm_pane(self) -> AsmPane: ...

    @property
    def status(self) -> StatusLine: ...


class RunRequests(Protocol):
    """The runs in the panes (``ui.run_view.RunView``) as the other controllers ask for them."""

    current_run: str | None

    def request(self, origin: str, rungs: list[str] | None = ..., override_folder: str | None = ...,
                author: str = ...) -> None: ...

    def expect(self, path: Path, text: str) -> None: ...

    def started_for(self, path: Path, text: str) -> bool: ...


class Backups(Protocol):
    """Copies of a person's text kept before it is replaced (``ui.task_files.TaskFiles``)."""

    def backup(self, name: str, text: str) -> Path | str: ...


class AppHost(Screens, Panes, Protocol):
    """The app as its controllers use it: the task on screen and its workbench, the event bridge, the
    session log, the other controllers, and whether it shows a replay."""

    replaying: bool  # saved events are being fed (a replay's step, a resume): nothing of theirs is live

    @property
    def settings(self) -> config_mod.Config: ...

    @property
    def options(self) -> AppOptions: ...

    @property
    def bridge(self) -> EventBridge: ...

    @property
    def bench(self) -> Workbench: ...

    @property
    def recorder(self) -> SessionRecorder: ...

    @property
    def runs(self) -> RunRequests: ...

    @property
    def task_files(self) -> Backups: ...

    @property
    def replay(self) -> object | None: ...  # the replay's driver; None in a live app

    @property
    def kernel_task(self) -> Task: ...

    @property
    def agent(self) -> AgentController: ...

    def load_history(self) -> object: ...

    def load_asm(self, version_dir: Path | None, previous_dir: Path | None) -> object: ...

    def refuse_writes(self) -> bool: ...

    def warn(self, problem: str) -> None: ...

    def stop_recording(self) -> None: ...

    async def switch_task(self, path: str) -> bool: ...


class ThemeHost(Screens, Panes, Protocol):
    """What ``ui.theming`` uses: Textual's theme registry and the panes it repaints."""

    theme: str

    @property
    def available_themes(self) -> dict[str, Theme]: ...

    @property
    def current_theme(self) -> Theme: ...

    def register_theme(self, theme: Theme) -> None: ...


class PaletteHost(Protocol):
    """What the command palette (``ui.commands``) offers: the app's actions, and the controllers' and
    panes' own commands."""

    async def run_action(self, action: str) -> bool: ...

    @property
    def stage_edits(self) -> OverrideRun: ...

    @property
    def agent_control(self) -> AgentActions: ...

    @property
    def sessions(self) -> SessionPicking: ...

    @property
    def theming(self) -> ThemeChoice: ...

    @property
    def chart(self) -> HistoryChart: ...

    @property
    def asm_pane(self) -> AsmPane: ...


class OverrideRun(Protocol):
    def run(self) -> None: ...  # the hand-edited override, through the loop


class AgentActions(Protocol):
    def interrupt(self) -> None: ...

    def undo(self) -> None: ...


class SessionPicking(Protocol):
    def ask_to_show(self) -> None: ...

    def pick_to_resume(self) -> None: ...


class ThemeChoice(Protocol):
    def choose(self, name: str) -> None: ...

    def palette_themes(self) -> list[tuple[str, str, str]]: ...
