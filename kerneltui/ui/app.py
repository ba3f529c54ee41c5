"""The kerneltui app: one screen for the whole loop, rerun on every save.

``KernelApp`` keeps the screens, the bindings and the routing of messages to panes and controllers.
What it works with on the task in front of it is a ``Workbench`` (``ui.workbench``: the loop behind a
``RunScheduler``, the one worker pool, the agent, the panes' data sources), made at start and again
on every task switch. The controllers: ``run_view`` (runs in the panes), ``task_files`` (saves, outside
changes, unsaved-edit backups), ``session_control`` (saved sessions shown or resumed), ``recording``
(the session log), ``stage_edit`` (hand-edited PTX/TTGIR in $EDITOR), ``agent_control`` (the agent's
events and the person's calls) and ``theming``; each sees the app through ``app_ports``. The panes and
their actions are ``pane_app``'s; the agent's place on the event bridge ``agent_attach``'s. Nothing on
the event loop blocks: runs are asyncio tasks talking to worker processes, files are read in threads.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import ClassVar

from textual import events, on, work
from textual.app import App
from textual.binding import BindingType

from kerneltui import config as config_mod
from kerneltui import paths
from kerneltui.core import events as ev
from kerneltui.core.task import Task, TaskError
from kerneltui.core.task_loaders.load import load_task
from kerneltui.settings.ui import KeySettings, UiSettings
from kerneltui.ui import keys
from kerneltui.ui import messages as msg
from kerneltui.ui.agent_attach import AgentAttachment
from kerneltui.ui.agent_control import AgentControl
from kerneltui.ui.options import AppOptions
from kerneltui.ui.pane_app import PaneApp
from kerneltui.ui.ports import AgentController
from kerneltui.ui.recording import SessionRecorder
from kerneltui.ui.replay import READ_ONLY, REPLAY_ACTIONS, REPLAY_KEYS, ReplayActions, ReplayDriver
from kerneltui.ui.run_view import RunView
from kerneltui.ui.screens.help import HelpScreen
from kerneltui.ui.screens.main import MainScreen
from kerneltui.ui.session_control import SessionControl
from kerneltui.ui.stage_edit import StageEdits
from kerneltui.ui.task_files import TaskFiles
from kerneltui.ui.theming import FALLBACK, Theming, with_app_variables
from kerneltui.ui.widgets.editor import KernelEditor
from kerneltui.ui.widgets.rungs import registry_rows
from kerneltui.ui.workbench import Parts, Workbench, open_workbench


def _commands_provider() -> type:
    from kerneltui.ui.commands import KerneltuiCommands  # loaded when the palette first opens

    return KerneltuiCommands


class KernelApp(ReplayActions, PaneApp):
    CSS_PATH = "app.tcss"
    TITLE = "kerneltui"
    COMMANDS = App.COMMANDS | {_commands_provider}
    BINDINGS: ClassVar[list[BindingType]] = [*keys.APP, *REPLAY_KEYS]

    def __init__(self, task: Task, *, settings: config_mod.Config, parts: Parts,
                 options: AppOptions | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.parts = parts
        self.options = options or AppOptions()
        self.bridge = msg.EventBridge(self)
        self.bench: Workbench = open_workbench(task, parts, self.bridge.emit)
        self.ui_settings = settings.read(UiSettings)
        self.keymap, self.key_problems = keys.keymap_from_settings(settings.read(KeySettings))
        self.recorder = SessionRecorder(settings, self.options.record_session)
        self.bridge.subscribe(self.recorder.write)
        self.sessions = SessionControl(self)
        self.task_files = TaskFiles(self)
        self.stage_edits = StageEdits(self)
        self.runs = RunView(self)
        self.agent_control = AgentControl(self)
        self.theming = Theming(self, self.options.theme_folders)
        self.theming.start(self.ui_settings.theme or FALLBACK, settings.source("ui", "theme") or "default")
        self.replaying = False
        self.replay = ReplayDriver(self, self.options.replay) if self.options.replay is not None else None
        self.attachment = AgentAttachment(self.bridge)
        self._panes_built = False  # the main screen's panes exist
        self.closed_by_signal = 0  # SIGHUP or SIGTERM closed the app (``close_on_signal``); the command re-raises it
        self._panes_ready = asyncio.Event()  # set by main_ready: a task switch waits for the new panes

    # -- what the app works with ----------------------------------------------------------------

    @property
    def kernel_task(self) -> Task:
        return self.bench.task

    @property
    def agent(self) -> AgentController:
        return self.bench.agent

    @property
    def ready(self) -> bool:
        """The panes exist: after the main screen is built, until the app starts closing."""
        return self._panes_built and bool(self.screen_stack) and isinstance(self.screen_stack[0], MainScreen)

    @property
    def agent_attached(self) -> bool:
        """The agent sees the app's events: from just after the first frame (``_start_work``); what was
        recorded before then is handed to it as it attaches."""
        return self.attachment.agent is self.agent

    def on_key(self, event: events.Key) -> None:
        """Any key but the accept cancels a failed proposal's first ``a`` (``ChatPane.key_between``).
        Taken here, where the key's binding runs after it (a key reaches the app once it has passed
        through the focused widget): keys that arrive together, typed over a slow SSH link, are taken
        in the order of the actions they trigger, which a handler on the history would not see."""
        if not isinstance(self.screen, MainScreen) or self.chat.armed_proposal() is None:
            return  # every key of the app passes here: nothing to look up unless a confirmation waits
        bound = self.active_bindings.get(event.key)
        if bound is not None and bound.binding.action == keys.ACCEPT_ACTION:
            return
        self.chat.key_between(event.key)

    # -- life cycle -----------------------------------------------------------------------------

    def get_css_variables(self) -> dict[str, str]:
        # Called by App.__init__ as well, before this app's own attributes exist.
        self.theme_variables = with_app_variables(self.current_theme, super().get_css_variables())
        return self.theme_variables

    def get_default_screen(self) -> MainScreen:
        return MainScreen(editor=self._new_editor(), rungs=registry_rows(), chat_label=self.agent.label,
                          ui_settings=self.ui_settings, on_ready=self.main_ready, clock=self.options.clock)

    def _new_editor(self) -> KernelEditor:
        # A replay's editor holds the session's text from the first frame, never the task folder's.
        text = self.replay.kernel_text(0) if self.replay is not None else self.kernel_task.kernel_source()
        return KernelEditor(self.kernel_task.kernel_path, text, id="editor")

    def on_mount(self) -> None:
        self.set_keymap(self.keymap)
        for problem in self.key_problems + self.theming.problems:
            self.notify(problem, severity="warning", timeout=10)
        # Before main_ready the panes are not there; it applies the theme to them itself.
        self.theme_changed_signal.subscribe(self, lambda _theme: self.theming.repaint() if self.ready else None)
        if self.options.watch_themes:
            self.theming.watch()
        self.set_interval(0.25, self.runs.tick)
        self.set_interval(0.5, self.agent_control.show_activity)
        if self.options.handle_signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGHUP, signal.SIGTERM):
                loop.add_signal_handler(sig, self.close_on_signal, sig)

    def close_on_signal(self, sig: int) -> None:
        """SIGHUP (the terminal went away: an SSH link dropped) or SIGTERM: keep the editor's unsaved text
        where a resume finds it, close the session log, then leave as ctrl+q does (Textual restores the
        terminal: the alternate screen left, mouse tracking off)."""
        if self.closed_by_signal:
            return
        self.closed_by_signal = sig
        if self.ready and self.replay is None and self.editor.dirty:
            self.task_files.keep_on_close(signal.Signals(sig).name)
        self.stop_recording()
        self.exit(return_code=128 + sig)

    def main_ready(self) -> None:
        """The main screen's panes exist (at start, and again after each task switch)."""
        self._panes_built = True
        self.theming.apply_to_editor(self.editor)
        self.status.state.task = f"{self.kernel_task.name} ({self.kernel_task.backend})"
        self.status.state.agent = self.agent.label
        self.status.show(self.options.clock())
        self._panes_ready.set()
        if self.replay is not None:
            self._attach_agent()
            self.load_history()
            self.replay.mount()
            return
        self._keep_until_attached()
        # Paint first: the session log, the agent engine and a worker starting (torch's import) would
        # take the CPU the first frame needs. A resumed session appends to its own log instead, once
        # restored (``resuming``: the task switch of a resume).
        self.call_after_refresh(self._start_work, self.options.resume is None and not self.sessions.resuming)

    def _attach_agent(self) -> None:
        if not self.agent_attached:  # once per workbench
            self.attachment.attach(self.agent)

    def _keep_until_attached(self) -> None:
        if not self.agent_attached:
            self.attachment.keep_until_attached()

    def _start_work(self, new_log: bool) -> None:
        """After the first frame of the panes: the session log, the agent, the chart's history, the spare
        workers, the file watcher, the first run."""
        if not self.ready:
            return
        if new_log:  # before the agent is attached: its first words belong in the log too
            self.warn(self.recorder.start(self.kernel_task))
        self._attach_agent()
        self.load_history()
        if self.options.prestart_worker:
            self.bench.pool.prestart()
        if self.options.watch:
            self.task_files.watch()
        if self.options.resume is not None:
            resume, self.options.resume = self.options.resume, None
            self.run_worker(self.sessions.resume(resume), group="resume", exclusive=True)
        elif self.options.run_on_start:
            self.runs.request("start")

    async def _close_workbench(self) -> None:
        self.attachment.detach(self.agent)
        await self.bench.close()
        self.stop_recording()

    async def on_unmount(self) -> None:
        self._panes_built = False
        await self._close_workbench()
        if self.replay is not None:
            self.replay.stop()

    def stop_recording(self) -> None:
        problem = self.recorder.stop()
        self.warn(problem if self.ready else "")

    def warn(self, problem: str) -> None:
        if problem:
            self.notify(problem, severity="warning", timeout=10)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The replay keys exist only in replay mode; ctrl+c and esc stop the agent only while it works
        (else they keep their usual meaning: copy, leave, how to quit)."""
        if action == "agent_interrupt":
            return self.agent.busy
        return self.replay is not None if action in REPLAY_ACTIONS else True

    def refuse_writes(self) -> bool:
        """True (and said) in a replay: nothing there may write a file of the task."""
        if self.replay is not None:
            self.notify(READ_ONLY, severity="warning", timeout=6)
        return self.replay is not None

    # -- running the loop -----------------------------------------------------------------------

    def action_run_loop(self) -> None:
        self.runs.request("manual")

    def action_run_rungs(self, names: str) -> None:
        self.runs.request("manual", [n for n in names.split(",") if n])

    @on(msg.LoopEvent)
    def _loop_event(self, message: msg.LoopEvent) -> None:
        if self.ready:  # not while the panes are gone (closing) or not built yet
            self.runs.show(message.event)

    @work(thread=True, exclusive=True, group="history")
    def load_history(self) -> None:
        """Read the history store off the event loop (SQLite)."""
        self.post_message(msg.HistoryLoaded(self.bench.history.load()))

    def on_history_loaded(self, message: msg.HistoryLoaded) -> None:
        if self.ready:  # a thread worker may answer while the app is closing
            self.chart.show(message.series)

    @work(thread=True, exclusive=True, group="asm")
    def load_asm(self, version_dir: Path | None, previous_dir: Path | None) -> None:
        asm = self.bench.asm
        self.post_message(msg.AsmLoaded(asm.load(version_dir), asm.load(previous_dir) if previous_dir is not None else None))

    async def on_asm_loaded(self, message: msg.AsmLoaded) -> None:
        if self.ready:  # a thread worker may answer while the app is closing
            await self.runs.show_asm(message)

    # -- files ----------------------------------------------------------------------------------

    @on(msg.SaveRequested)
    def _saved(self, message: msg.SaveRequested) -> None:
        self.runs.request("save")

    @on(msg.SaveFailed)
    def _save_failed(self, message: msg.SaveFailed) -> None:
        self.task_files.save_failed(message.text, message.error)

    @on(msg.FileEvent)
    def _file_changed(self, message: msg.FileEvent) -> None:
        if self.ready and isinstance(message.event, ev.FileChanged):  # not while the panes are gone or not built
            self.task_files.changed(message.event)

    # -- editor, asm, rungs, overrides ------------------------------------------------------------

    @on(msg.JumpToSource)  # the rung table's enter and the asm view's enter
    def _jump(self, message: msg.JumpToSource) -> None:
        self.editor.goto_line(message.line, message.column)
        self.main.focus_pane("editor")

    @on(msg.EditorCursorMoved)
    def _cursor_moved(self, message: msg.EditorCursorMoved) -> None:
        self.asm_pane.link_source_line(message.line)

    @on(KernelEditor.DirtyChanged)
    def _editor_dirty(self, message: KernelEditor.DirtyChanged) -> None:
        if self.ready:
            self.main.panes["editor"].border_title = f"{self.kernel_task.kernel_path.name}{self.editor.mark()} [dim]F3[/]"

    @on(msg.OpenProfile)  # from the rung table's p; the palette runs the action itself
    def action_profile(self) -> None:
        self.runs.open_profile()

    @on(msg.OpenTrace)
    def action_trace(self) -> None:
        self.runs.open_trace()

    @on(msg.EditStage)
    def _edit_stage(self, message: msg.EditStage) -> None:
        if not self.refuse_writes():
            self.stage_edits.edit(message.stage, message.text, self.runs.last_report_dir)

    # -- agent ----------------------------------------------------------------------------------

    @on(msg.AgentEvent)
    def _agent_event(self, message: msg.AgentEvent) -> None:
        if self.ready:  # not while the panes are gone (closing) or not built yet
            self.agent_control.show(message.event)

    @on(msg.NoticeEvent)
    def _notice(self, message: msg.NoticeEvent) -> None:
        event = message.event
        if not self.ready or not isinstance(event, ev.Notice):
            return  # the panes are gone (closing) or not built yet
        if event.source == "agent":
            self.agent_control.show(event)
            return
        self.status.show_notice(event)
        if event.level in ("warning", "error"):
            self.notify(event.message, severity="warning" if event.level == "warning" else "error", timeout=8)

    @on(msg.ChatSubmitted)
    def _chat(self, message: msg.ChatSubmitted) -> None:
        self.agent_control.send(message.text)

    @on(msg.ProposalDecision)
    def _decision(self, message: msg.ProposalDecision) -> None:
        self.agent_control.decide(message)

    @on(msg.EditProposal)
    def _edit_proposal(self, message: msg.EditProposal) -> None:
        self.agent_control.edit(message)

    def action_agent_undo(self) -> None:
        self.agent_control.undo()

    def action_agent_interrupt(self) -> None:
        self.agent_control.interrupt()

    # -- help -------------------------------------------------------------------------------------

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(HelpScreen(self.keymap, str(self.settings.file or paths.config_file())))

    # -- tasks and sessions -----------------------------------------------------------------------

    def action_switch_task(self) -> None:
        self.task_files.ask_to_switch()

    async def switch_task(self, path: str) -> bool:
        """Close everything bound to the task on screen and open ``path`` with a new workbench; True
        once its panes are built, False (and why, said) when it cannot be opened."""
        try:
            task = load_task(path, None)
            task.kernel_source()  # the editor opens it: bytes that are not UTF-8 are said here
        except TaskError as exc:
            self.notify(f"cannot open {path}: {exc}", severity="error", timeout=10)
            return False
        self.task_files.keep_unsaved_edits()
        await self._close_workbench()
        self._panes_built = False
        self._panes_ready.clear()
        self.runs.forget()
        self.bench = open_workbench(task, self.parts, self.bridge.emit)
        await self.main.reset(self._new_editor(), registry_rows(), self.agent.label)
        await self._panes_ready.wait()
        return True
