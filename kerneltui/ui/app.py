"""The kerneltui app: one screen for the whole loop, rerun on every save.

The app owns the state and the work: the loop (``core.loop.Loop``) behind a ``RunScheduler`` (a new
run cancels the one in flight and kills its worker), the file watcher, the agent controller and
the data adapters. Core events arrive as messages (``ui.messages``); handlers here hand the data to
the panes. Nothing on the event loop blocks: runs are asyncio tasks talking to worker processes,
and file parsing for the asm view happens in a thread worker.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App
from textual.binding import BindingType
from textual.message import Message

from kerneltui import config as config_mod
from kerneltui import paths
from kerneltui.core import events as ev
from kerneltui.core import rungs as rung_registry
from kerneltui.core.events import event_from_dict
from kerneltui.core.loop import Loop
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.scheduler import RunScheduler
from kerneltui.core.task import Task, TaskError, load_task, source_hash
from kerneltui.core.worker.pool import WorkerPool
from kerneltui.ui import defaults as _defaults  # noqa: F401  (registers the [ui] and [keys] defaults)
from kerneltui.ui import keys, themes
from kerneltui.ui.adapters.asm import DumpFolderAsm
from kerneltui.ui.adapters.history import StoreHistory
from kerneltui.ui.adapters.profile import RungMetricsProfile
from kerneltui.ui.adapters.scripted_agent import ScriptedAgent
from kerneltui.ui.messages import (
    AgentEvent,
    ChatSubmitted,
    EditorCursorMoved,
    EditStage,
    EventBridge,
    FileEvent,
    JumpToSource,
    LoopEvent,
    NoticeEvent,
    OpenProfile,
    OpenTrace,
    ProposalDecision,
    SaveRequested,
)
from kerneltui.ui.ports import (
    AgentController,
    AsmListing,
    AsmSource,
    HistorySeries,
    HistorySource,
    ProfileSource,
)
from kerneltui.ui.screens.main import PANES, MainScreen
from kerneltui.ui.widgets.asm_view import AsmPane
from kerneltui.ui.widgets.chat import ChatPane
from kerneltui.ui.widgets.editor import KernelEditor
from kerneltui.ui.widgets.history_chart import HistoryChart
from kerneltui.ui.widgets.rungs import RungRow, RungsPanel
from kerneltui.ui.widgets.status_line import StatusLine


def _commands_provider() -> type:
    from kerneltui.ui.commands import KerneltuiCommands  # loaded when the palette first opens

    return KerneltuiCommands


class AsmLoaded(Message):
    def __init__(self, listing: AsmListing, previous: AsmListing | None) -> None:
        super().__init__()
        self.listing = listing
        self.previous = previous


class HistoryLoaded(Message):
    def __init__(self, series: HistorySeries) -> None:
        super().__init__()
        self.series = series


class ThemesChanged(Message):
    pass


@dataclass
class AppOptions:
    """How the app runs; tests and snapshots turn off what they do not want."""

    watch: bool = True  # rerun on saves seen by the file watcher
    run_on_start: bool = True
    prestart_worker: bool = True
    run_timeout_s: float | None = None  # overrides the task's per-rung timeouts
    seeds: int | None = None
    rungs: list[str] | None = None  # the rungs a save runs (None: the default set)
    theme_folders: list[Path] | None = None
    watch_themes: bool = True
    clock: Callable[[], float] = time.monotonic
    wall_time: Callable[[float], str] = field(default=lambda at: time.strftime("%H:%M:%S", time.localtime(at)))
    record_session: bool = True  # write the session log ([sessions] record = false turns it off too)
    replay: Any = None  # a core.session.Timeline: open read-only on that session (kerneltui replay)
    resume: Path | None = None  # a session folder to continue (kerneltui --resume)


class KernelApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "kerneltui"
    COMMANDS = App.COMMANDS | {_commands_provider}
    BINDINGS: ClassVar[list[BindingType]] = list(keys.APP)

    def __init__(self, task: Task, *, settings: config_mod.Config, agent: AgentController,
                 history: HistorySource, asm: AsmSource, profile: ProfileSource, options: AppOptions | None = None,
                 pool: WorkerPool | None = None) -> None:
        super().__init__()
        self.kernel_task = task
        self.settings = settings
        self.agent = agent
        self.history = history
        self.asm_source = asm
        self.profile_source = profile
        self.options = options or AppOptions()
        self.bridge = EventBridge(self)
        self.pool = pool or WorkerPool(task.backend, arch=task.arch, spares=1)
        self.loop = Loop(task, pool=self.pool, emit=self.bridge.emit, observers=_history_observers(task))
        self.scheduler = RunScheduler(self.loop)
        self.ui_settings = settings.section("ui")
        self.keymap, self.key_problems = keys.keymap_from_settings(settings.section("keys"))
        self.theme_files: dict[str, themes.ThemeFile] = {}
        self.theme_problems: list[str] = []
        self.requested: dict[str, str] = {}  # path -> content hash of the last run we started for it
        self.last_report_dir: Path | None = None
        self.override_folder: str | None = None  # the hand-edited PTX/TTGIR the palette can run
        self.run_digest = ""  # source hash of the run in flight, from its RunStarted
        self.accepted_dirs: list[Path] = []  # version folders of passing runs, oldest first
        self.current_run: str | None = None
        self.replaying = False
        self.session_log: Any = None  # core.session.SessionLog while recording
        self.replay: Any = None  # ui.replay.ReplayDriver in replay mode
        self.run_hashes: dict[str, str] = {}  # run id -> source hash (replay shows each run's own version)
        self._resuming = False  # a resume switching task: the new panes must not open a log of their own
        self._agent_attached = False
        self._panes_built = False  # the main screen's panes exist
        self._load_themes()

    # -- setup --------------------------------------------------------------------------------

    def _load_themes(self) -> None:
        folders = self.options.theme_folders or themes.default_folders()
        found = themes.load_themes(*folders)
        self.theme_problems = found.problems
        for name, tf in found.themes.items():
            self.register_theme(tf.theme)
            self.theme_files[name] = tf
        wanted = str(self.ui_settings.get("theme") or "kerneltui-dark")
        if wanted not in self.available_themes:
            self.theme_problems.append(f"[ui] theme = {wanted!r}: no such theme; using kerneltui-dark")
            wanted = "kerneltui-dark" if "kerneltui-dark" in self.available_themes else "textual-dark"
        self.theme = wanted

    def get_css_variables(self) -> dict[str, str]:
        variables = super().get_css_variables()
        theme_vars = self.current_theme.variables
        for name, value in themes.app_variables(variables).items():
            if name not in theme_vars:
                variables[name] = value
        self.theme_variables = variables
        return variables

    def get_default_screen(self) -> MainScreen:
        text = self.kernel_task.kernel_source()
        editor = KernelEditor(self.kernel_task.kernel_path, text, id="editor")
        return MainScreen(editor=editor, rungs=self._rung_rows(), chat_label=self.agent.label,
                          chart_unit=str(self.ui_settings.get("chart_unit", "us")),
                          asm_filters={"directives": bool(self.ui_settings.get("asm_hide_directives", True)),
                                       "comments": bool(self.ui_settings.get("asm_hide_comments", False)),
                                       "hex": bool(self.ui_settings.get("asm_hide_hex", True))})

    def _rung_rows(self) -> list[RungRow]:
        return [RungRow(name=s.name, title=s.title, needs_gpu=s.needs_gpu, on_demand=s.on_demand)
                for s in rung_registry.rung_specs()]

    def on_mount(self) -> None:
        self.set_keymap(self.keymap)
        for problem in self.key_problems + self.theme_problems:
            self.notify(problem, severity="warning", timeout=10)
        self.theme_changed_signal.subscribe(self, lambda _theme: self._on_theme_changed())
        if self.options.watch_themes:
            self.watch_theme_files()
        self.set_interval(0.25, self._tick)

    def main_ready(self) -> None:
        """The main screen's panes exist (called from its on_mount, also after switching task)."""
        self._panes_built = True
        if self.options.replay is None and self.options.resume is None and not self._resuming:
            # Before the agent is attached: its first words belong in the log too. A resumed session
            # appends to its own log instead, once restored.
            self._start_session_log()
        if not self._agent_attached:
            self._agent_attached = True
            self.agent.attach(self.bridge.emit)
        self._apply_editor_theme()
        self.status.state.task = f"{self.kernel_task.name} ({self.kernel_task.backend})"
        self.status.show(self.options.clock())
        self.load_history()
        if self.options.replay is not None:
            if self.replay is None:
                from kerneltui.ui.replay import ReplayDriver

                self.replay = ReplayDriver(self, self.options.replay)
            self.replay.mount()
            return
        if self.options.prestart_worker:
            self.pool.prestart()
        if self.options.watch:
            self.watch_task_files()
        if self.options.resume is not None:
            resume, self.options.resume = self.options.resume, None
            self.run_worker(self.resume_session(resume), group="resume", exclusive=True)
        elif self.options.run_on_start:
            self.request_run("start")

    def _start_session_log(self) -> None:
        """Record this task's session (one log per task opened), unless recording is off."""
        if self.session_log is not None or not self.options.record_session:
            return
        from kerneltui.core.session import SessionError
        from kerneltui.core.session.store import open_log_for

        try:
            self.session_log = open_log_for(self.kernel_task, "tui", self.settings)
        except SessionError as exc:
            self.notify(f"not recording this session: {exc}", severity="warning", timeout=10)
            return
        if self.session_log is not None:
            self.bridge.subscribe(self.session_log.write)

    def _stop_session_log(self) -> None:
        if self.session_log is not None:
            self.bridge.unsubscribe(self.session_log.write)
            self.session_log.close()
            if self.session_log.problem() and self.ready:
                self.notify(self.session_log.problem(), severity="warning", timeout=10)
            self.session_log = None

    def _save_agent_context(self) -> None:
        """After each turn, the conversation as the model saw it goes into the log (what resume restores)."""
        session = getattr(self.agent, "session", None)
        conversation = getattr(session, "conversation_json", None)
        if self.session_log is not None and callable(conversation):
            self.session_log.write_context(conversation())

    async def on_unmount(self) -> None:
        self._panes_built = False
        close = getattr(self.agent, "close", None)
        if callable(close):
            await close()
        await self.scheduler.cancel()
        await self.loop.close()
        self._stop_session_log()
        if self.replay is not None:
            self.replay.stop()

    # -- widgets ------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The panes exist: after the main screen is built, until the app starts closing."""
        return self._panes_built and bool(self.screen_stack) and isinstance(self.screen_stack[0], MainScreen)

    @property
    def main(self) -> MainScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    @property
    def editor(self) -> KernelEditor:
        return self.main.refs["editor"]  # type: ignore[return-value]

    @property
    def rungs(self) -> RungsPanel:
        return self.main.refs["rungs"]  # type: ignore[return-value]

    @property
    def chat(self) -> ChatPane:
        return self.main.refs["chat"]  # type: ignore[return-value]

    @property
    def chart(self) -> HistoryChart:
        return self.main.refs["chart"]  # type: ignore[return-value]

    @property
    def asm_pane(self) -> AsmPane:
        return self.main.refs["asm"]  # type: ignore[return-value]

    @property
    def status(self) -> StatusLine:
        return self.main.refs["status"]  # type: ignore[return-value]

    # -- running the loop ---------------------------------------------------------------------

    def request_run(self, origin: str, rungs: list[str] | None = None, extra: dict[str, Any] | None = None) -> None:
        """Start a run of the file on disk now; a run in flight is cancelled (its worker killed)."""
        if self.replay is not None:
            self.notify("a replay is read-only: nothing runs (resume the session to continue it)", timeout=4)
            return
        try:
            text = self.kernel_task.kernel_source()
        except TaskError as exc:
            self.notify(str(exc), severity="error")
            return
        self.requested[str(self.kernel_task.kernel_path.resolve())] = source_hash(text)
        options = RunOptions(rungs=rungs if rungs is not None else self.options.rungs, origin=origin,
                             timeout_s=self.options.run_timeout_s, seeds=self.options.seeds, extra=dict(extra or {}))
        self.scheduler.request(options)

    def action_run_loop(self) -> None:
        self.request_run("manual")

    def action_run_rungs(self, names: str) -> None:
        self.request_run("manual", [n for n in names.split(",") if n])

    def _tick(self) -> None:
        if self.ready and self.status.state.running_since is not None:
            now = self.options.clock()
            self.rungs.tick(now)
            self.status.show(now)

    @on(LoopEvent)
    def _loop_event(self, message: LoopEvent) -> None:
        if not self.ready:
            return  # the panes are gone (closing) or not built yet
        event = message.event
        now = self.options.clock()
        if isinstance(event, ev.RunStarted):
            self.current_run = event.run_id
            self.run_digest = event.source_hash  # the version folder's name (an override's differs from the file's)
            self.run_hashes[event.run_id] = event.source_hash
            self.rungs.run_started(event.rungs, now)
            s = self.status.state
            s.running_since, s.running_rung, s.origin, s.last_cancelled = now, "", event.origin, False
            self.status.show(now)
        elif getattr(event, "run_id", None) != self.current_run and not self.replaying:
            return  # a late event of a cancelled run
        elif isinstance(event, ev.RungStarted):
            self.rungs.rung_started(event.rung, now)
            self.status.state.running_rung = event.rung
            self.status.show(now)
        elif isinstance(event, ev.RungProgress):
            self.rungs.rung_progress(event.rung, event.message, event.fraction)
        elif isinstance(event, ev.RungFinished):
            self.rungs.rung_finished(event.result)
            self._maybe_jump(event.result)
        elif isinstance(event, ev.RunFinished):
            self._run_finished(event, now)

    def _maybe_jump(self, result: Any) -> None:
        """A failure with a place in the kernel moves the cursor there, unless you are mid-edit."""
        loc = result.location
        if result.status != "fail" or loc is None or self.editor.dirty:
            return
        if Path(loc.file).name != self.kernel_task.kernel_path.name:
            return
        self.editor.goto_line(loc.line, loc.column)
        self.rungs.select(result.name)

    def _run_finished(self, event: ev.RunFinished, now: float) -> None:
        self.rungs.run_finished(event.cancelled, event.device)
        s = self.status.state
        s.running_since, s.running_rung = None, ""
        s.last_cancelled = event.cancelled
        if not event.cancelled:
            s.last_ok, s.last_duration_s = event.ok, event.duration_s
            s.last_at = self.options.wall_time(event.at)
            failed = next((r for r in event.results if r.status == "fail"), None)
            s.failed_rung = failed.name if failed else ""
            self._after_run(event)
        self.status.show(now)

    def _after_run(self, event: ev.RunFinished) -> None:
        digest = self.run_digest or self.requested.get(str(self.kernel_task.kernel_path.resolve()), "")
        if self.replay is not None:
            digest = self.run_hashes.get(event.run_id, "")
        record = getattr(self.history, "record", None)
        if callable(record):
            record(digest, event.results, event.device)
        self.load_history()
        version_dir = self.kernel_task.state_dir / "versions" / digest if digest else None
        previous = self.accepted_dirs[-1] if self.accepted_dirs else None
        if event.ok and version_dir is not None and (not self.accepted_dirs or self.accepted_dirs[-1] != version_dir):
            self.accepted_dirs.append(version_dir)
        self.last_report_dir = version_dir
        self.load_asm(version_dir, previous if previous != version_dir else None)

    @work(thread=True, exclusive=True, group="history")
    def load_history(self) -> None:
        """Read the history store off the event loop (SQLite)."""
        self.post_message(HistoryLoaded(self.history.load()))

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        if self.ready:  # a thread worker may answer while the app is closing
            self.chart.show(message.series)

    @work(thread=True, exclusive=True, group="asm")
    def load_asm(self, version_dir: Path | None, previous_dir: Path | None) -> None:
        listing = self.asm_source.load(version_dir)
        previous = self.asm_source.load(previous_dir) if previous_dir is not None else None
        self.post_message(AsmLoaded(listing, previous))

    async def on_asm_loaded(self, message: AsmLoaded) -> None:
        if not self.ready:
            return
        listing = message.listing
        if not listing.stages and "dump" not in self.rungs.rows:
            listing = AsmListing(note="no compiler output: this build of kerneltui has no dump rung")
        try:
            await self.asm_pane.show(listing, message.previous)
        except ValueError:
            if self.is_running:
                raise
            return  # the app closed while the stage tabs were being mounted
        self.asm_pane.link_source_line(self.editor.cursor_location[0] + 1)

    # -- files --------------------------------------------------------------------------------

    @work(exclusive=True, group="watch")
    async def watch_task_files(self) -> None:
        from kerneltui.core.watcher import watch_task

        async for batch in watch_task(self.kernel_task):
            for path, digest in batch:
                self.bridge.emit(ev.FileChanged(path=str(path), source_hash=digest))

    @on(SaveRequested)
    def _saved(self, message: SaveRequested) -> None:
        self.request_run("save")

    @on(FileEvent)
    def _file_changed(self, message: FileEvent) -> None:
        if not self.ready:
            return  # the panes are gone (closing) or not built yet
        event = message.event
        assert isinstance(event, ev.FileChanged)
        path = Path(event.path).resolve()
        if path == self.kernel_task.kernel_path.resolve():
            self._kernel_changed(path, event.source_hash)
        elif path.name == "task.toml" or path == self.kernel_task.reference_path.resolve():
            self._task_changed(path)
        else:
            self.request_run("save")

    def _kernel_changed(self, path: Path, digest: str) -> None:
        editor = self.editor
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            self.notify(f"cannot read {path.name}: {exc.strerror}", severity="error")
            return
        if source_hash(text) == source_hash(editor.disk_text):
            # Our own save: the run already started when it was saved.
            if self.requested.get(str(path)) != source_hash(text):
                self.request_run("save")
            return
        if not editor.dirty:
            editor.replace_from_disk(text)
            self.notify(f"{path.name} changed on disk: reloaded", timeout=3)
        else:
            from kerneltui.ui.screens.file_changed import FileChangedScreen

            backup = self._backup_dir() / path.name
            editor.disk_text = text  # a later ctrl+s knowingly overwrites this version
            if any(isinstance(screen, FileChangedScreen) for screen in self.screen_stack):
                # Already asking: the answer applies to the newest disk version.
                self.request_run("save")
                return

            def answer(choice: str | None) -> None:
                if choice == "reload":
                    saved = self._backup_edits(path.name, editor.text)
                    editor.replace_from_disk(path.read_text(encoding="utf-8"))
                    self.notify(f"your edits are saved in {saved}", timeout=10)
                else:
                    editor.dirty = editor.text != editor.disk_text

            self.push_screen(FileChangedScreen(path.name, str(backup.parent) + "/"), answer)
        self.request_run("save")

    def _backup_dir(self) -> Path:
        return self.kernel_task.state_dir / "unsaved"

    def _backup_edits(self, name: str, text: str) -> Path:
        folder = self._backup_dir()
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{name}.{time.strftime('%Y%m%d-%H%M%S')}"
        target.write_text(text, encoding="utf-8")
        return target

    def _task_changed(self, path: Path) -> None:
        try:
            task = load_task(str(self.kernel_task.root), None)
        except TaskError as exc:
            self.notify(f"{path.name}: {exc}", severity="error", timeout=10)
            return
        self.kernel_task = task
        self.loop.task = task
        self.notify(f"{path.name} changed: task reloaded", timeout=3)
        self.request_run("save")

    # -- editor, asm and rungs ------------------------------------------------------------------

    @on(JumpToSource)
    def _jump(self, message: JumpToSource) -> None:
        self.editor.goto_line(message.line, message.column)
        self.main.focus_pane("editor")

    @on(EditorCursorMoved)
    def _cursor_moved(self, message: EditorCursorMoved) -> None:
        self.asm_pane.link_source_line(message.line)

    @on(KernelEditor.DirtyChanged)
    def _editor_dirty(self, message: KernelEditor.DirtyChanged) -> None:
        if not self.ready:
            return
        mark = " ●" if message.dirty else ""
        if self.replay is not None:
            mark = " [dim](replay, read-only)[/]"
        self.main.panes["editor"].border_title = f"{self.kernel_task.kernel_path.name}{mark} [dim]F3[/]"

    @on(OpenProfile)
    def _open_profile(self, message: OpenProfile) -> None:
        self.action_profile()

    def action_profile(self) -> None:
        row = self.rungs.rows.get("profile")
        if row is None:
            self.notify("this build has no profile rung: profiling needs ncu and a GPU", severity="warning")
            return
        if row.result is None:
            self.notify("no profile of this version yet: running the profile rung", timeout=4)
            self.request_run("manual", ["profile"])
            return
        from kerneltui.ui.screens.profile import ProfileScreen

        table = self.profile_source.table(row.result)
        if table is None:
            self.notify(f"profile: {row.result.summary}", severity="warning")
            return
        self.push_screen(ProfileScreen(table))

    @on(OpenTrace)
    def _open_trace(self, message: OpenTrace) -> None:
        self.action_trace()

    def action_trace(self) -> None:
        row = self.rungs.rows.get("trace")
        if row is None:
            self.notify("this build has no trace rung", severity="warning")
            return
        if row.result is None:
            self.notify("no trace of this version yet: running the trace rung", timeout=4)
            self.request_run("manual", ["trace"])
            return
        from kerneltui.ui.adapters.trace import trace_data
        from kerneltui.ui.screens.trace import TraceScreen

        data = trace_data(row.result)
        if isinstance(data, str):
            self.notify(data, severity="warning")
            return
        self.push_screen(TraceScreen(data))

    # -- hand-edited compiler output ----------------------------------------------------------

    @on(EditStage)
    def _edit_stage(self, message: EditStage) -> None:
        self.edit_stage(message.stage, message.text)

    def edit_stage(self, stage: str, text: str) -> None:
        """Write the shown stage as an override of the current version, open it in $VISUAL/$EDITOR,
        then run the loop on it (core.override)."""
        from kerneltui.core import override

        version_dir = self.last_report_dir
        if version_dir is None:
            self.notify("run the loop first: the override is written from a checked version's output", severity="warning")
            return
        key = override.triton_key(version_dir, stage, text) if self.kernel_task.backend == "triton" else None
        try:
            edited = override.write(self.kernel_task, version_dir.name, stage, text, key=key)
        except override.OverrideError as exc:
            self.notify(str(exc), severity="error")
            return
        self.override_folder = edited.rel_folder
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if editor and not self.is_headless:
            with self.suspend():
                subprocess.run([*shlex.split(editor), str(edited.file)], check=False)
            self.action_run_override()
            return
        self.notify(f"wrote {edited.file}; edit it (no $VISUAL/$EDITOR set), then run it from the palette: "
                    "'Run the hand-edited override'", timeout=10)

    def action_run_override(self) -> None:
        folder = self.override_folder
        if not folder:
            self.notify("no hand-edited override yet: in the asm view, show PTX (or TTGIR) and press e",
                        severity="warning")
            return
        from kerneltui.core import override

        try:
            override.read_files(self.kernel_task, folder)
        except override.OverrideError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"running the loop on the hand-edited {folder}", timeout=4)
        self.request_run("override", None, {"override": folder})

    # -- agent --------------------------------------------------------------------------------

    @on(AgentEvent)
    def _agent_event(self, message: AgentEvent) -> None:
        if not self.ready:
            return  # the panes are gone (closing) or not built yet
        event = message.event
        if isinstance(event, ev.TokenUsage):
            cost = f" · ${event.session_cost_usd:.3f}" if event.session_cost_usd is not None else ""
            self.status.state.cost = (f"{event.session_input_tokens / 1000:.1f}k in · "
                                      f"{event.session_output_tokens / 1000:.1f}k out{cost}")
            self.status.show()
            return
        self.chat.render_event(event)

    @on(NoticeEvent)
    def _notice(self, message: NoticeEvent) -> None:
        if not self.ready:
            return  # the panes are gone (closing) or not built yet
        event = message.event
        assert isinstance(event, ev.Notice)
        if event.source == "agent":
            self.chat.render_event(event)
            return
        self.status.state.message = event.message
        self.status.show()
        if event.level == "warning":
            self.notify(event.message, severity="warning", timeout=8)
        elif event.level == "error":
            self.notify(event.message, severity="error", timeout=8)

    @on(ChatSubmitted)
    def _chat(self, message: ChatSubmitted) -> None:
        self.run_worker(self._agent_call(self.agent.send(message.text)), group="agent", exit_on_error=False)

    @on(ProposalDecision)
    def _decision(self, message: ProposalDecision) -> None:
        self.run_worker(self._agent_call(self.agent.decide(message.proposal_id, message.decision, message.feedback)),
                        group="agent", exit_on_error=False)

    async def _agent_call(self, call: Any) -> None:
        await call
        self._save_agent_context()

    # -- panes, help, themes ------------------------------------------------------------------

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

    def action_help(self) -> None:
        from kerneltui.ui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(HelpScreen(self.keymap, str(self.settings.file or paths.config_file())))

    def action_set_theme(self, name: str) -> None:
        self.theme = name

    def _apply_editor_theme(self) -> None:
        tf = self.theme_files.get(self.theme)
        editor = self.editor
        if tf is not None:
            ta_theme = themes.text_area_theme(tf)
            editor.register_theme(ta_theme)
            editor.theme = ta_theme.name
        else:
            editor.theme = "vscode_dark" if self.current_theme.dark else "github_light"

    def _on_theme_changed(self) -> None:
        if not self.ready:
            return  # main_ready applies the theme to the panes
        self._apply_editor_theme()
        self.rungs.refresh_theme()
        self.asm_pane.lines_widget.refresh_theme()
        self.chart.refresh()
        self.status.show()

    @work(exclusive=True, group="themes")
    async def watch_theme_files(self) -> None:
        from watchfiles import awatch

        folder = paths.user_themes_dir()
        if not folder.is_dir():
            return
        async for _changes in awatch(folder, debounce=200, recursive=False):
            self.post_message(ThemesChanged())

    def on_themes_changed(self, message: ThemesChanged) -> None:
        current = self.theme
        self._load_themes_keep(current)
        for problem in self.theme_problems:
            self.notify(problem, severity="warning", timeout=10)

    def _load_themes_keep(self, current: str) -> None:
        folders = self.options.theme_folders or themes.default_folders()
        found = themes.load_themes(*folders)
        self.theme_problems = found.problems
        for name, tf in found.themes.items():
            self.register_theme(tf.theme)
            self.theme_files[name] = tf
        if current in found.themes:
            # Same name, new colours: re-apply by switching away and back (the watcher only fires on change).
            fallback = "textual-dark" if current != "textual-dark" else "textual-light"
            self.theme = fallback
            self.theme = current

    # -- tasks and sessions ---------------------------------------------------------------------

    def action_switch_task(self) -> None:
        from kerneltui.ui.screens.prompt import PromptScreen

        def chosen(value: str | None) -> None:
            if value:
                self.run_worker(self.switch_task(value), group="switch", exclusive=True)

        self.push_screen(PromptScreen("Switch task", "a task directory, a KernelBench file or a GPU MODE directory",
                                      str(self.kernel_task.root)), chosen)

    async def switch_task(self, path: str) -> None:
        try:
            task = load_task(path, None)
        except TaskError as exc:
            self.notify(f"cannot open {path}: {exc}", severity="error", timeout=10)
            return
        if self.editor.dirty:
            saved = self._backup_edits(self.kernel_task.kernel_path.name, self.editor.text)
            self.notify(f"unsaved edits of {self.kernel_task.kernel_path.name} kept in {saved}", timeout=10)
        await self.scheduler.cancel()
        await self.loop.close()
        self._stop_session_log()
        self._panes_built = False
        self.kernel_task = task
        self.pool = WorkerPool(task.backend, arch=task.arch, spares=1)
        self.loop = Loop(task, pool=self.pool, emit=self.bridge.emit, observers=_history_observers(task))
        self.scheduler = RunScheduler(self.loop)
        self.requested.clear()
        self.accepted_dirs.clear()
        self.history = StoreHistory(task)
        self.profile_source = RungMetricsProfile()
        self.asm_source = DumpFolderAsm(task.kernel_file)
        if isinstance(self.agent, ScriptedAgent):
            self.agent.kernel_path = task.kernel_path
        await self.main.reset(KernelEditor(task.kernel_path, task.kernel_source(), id="editor"), self._rung_rows(),
                              self.agent.label)

    def action_open_session(self) -> None:
        from kerneltui.ui.screens.prompt import PromptScreen

        def chosen(value: str | None) -> None:
            if value:
                self.replay_session(Path(value).expanduser())

        self.push_screen(PromptScreen("Open session", "a session folder or log (.jsonl) to show in these panes (`kerneltui replay` steps through one)"),
                         chosen)

    def replay_session(self, path: Path) -> None:
        """Feed a saved event stream through the same path as live events."""
        from kerneltui.core.session import SessionError, load_session
        from kerneltui.core.session.store import read_header

        folder = path if path.is_dir() else path.parent
        if path.is_dir() or (path.name == "log.jsonl" and read_header(folder) is not None):
            try:
                loaded = load_session(folder)
            except SessionError as exc:
                self.notify(str(exc), severity="error", timeout=10)
                return
            if loaded.lost_bytes:
                self.notify(loaded.lost_note(), severity="warning", timeout=10)
            self._feed_saved(loaded.events)
            self.call_after_refresh(self._end_replay, len(loaded.events), folder.name)
            return
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            self.notify(f"cannot read {path}: {exc.strerror}", severity="error")
            return
        events: list[ev.Event] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                events.append(event_from_dict(json.loads(line)))
            except (ValueError, TypeError, KeyError) as exc:
                self.notify(f"{path.name}:{number}: not an event ({exc})", severity="error", timeout=10)
                return
        self._feed_saved(events)
        self.call_after_refresh(self._end_replay, len(events), path.name)

    def _feed_saved(self, events: list[ev.Event]) -> None:
        """Saved events through the bridge, as live ones, but not written to the log again."""
        self.replaying = True
        for event in events:
            self.bridge.emit(event, record=False)

    def action_resume_session(self) -> None:
        from kerneltui.core.session.store import list_sessions
        from kerneltui.ui.screens.sessions import SessionPicker

        def chosen(folder: Path | None) -> None:
            if folder is not None:
                self.run_worker(self.resume_session(folder), group="resume", exclusive=True)

        self.push_screen(SessionPicker(list_sessions(self.settings, include_examples=True)), chosen)

    async def resume_session(self, folder: Path) -> None:
        """Continue a saved session: its task, the kernel at its last version, the chat, the rungs of its
        last run, the agent's conversation; later events append to the same log."""
        self._resuming = True
        try:
            await self._resume(folder)
        finally:
            self._resuming = False

    async def _resume(self, folder: Path) -> None:
        from kerneltui.core.session import SessionError, SessionLog, Timeline, load_session

        try:
            loaded = load_session(folder)
        except SessionError as exc:
            self.notify(str(exc), severity="error", timeout=10)
            return
        if loaded.lost_bytes:
            self.notify(loaded.lost_note(), severity="warning", timeout=10)
        root = Path(str(loaded.task.get("root") or ""))
        if not (root / str(loaded.task.get("kernel_file") or "")).is_file():
            self.notify(f"cannot resume {loaded.id}: its task folder {root} is gone (replay it instead: "
                        f"`kerneltui replay {loaded.folder}`)", severity="error", timeout=12)
            return
        if root.resolve() != self.kernel_task.root.resolve():
            await self.switch_task(str(root))
            for _ in range(200):  # the panes are composed again; wait for them
                if self.ready:
                    break
                await asyncio.sleep(0.02)
        timeline = Timeline(loaded)
        self._stop_session_log()
        text = timeline.kernel_text_at(len(timeline))
        path = self.kernel_task.kernel_path
        if text is not None and text != path.read_text(encoding="utf-8"):
            saved = self._backup_edits(path.name, path.read_text(encoding="utf-8"))
            path.write_text(text, encoding="utf-8")
            self.editor.replace_from_disk(text)
            self.requested[str(path.resolve())] = source_hash(text)  # the watcher's echo is not a new run
            self.notify(f"{path.name} restored to the session's last version (the file before: {saved})", timeout=10)
        self._feed_saved(timeline.plan(len(timeline)))
        self.call_after_refresh(setattr, self, "replaying", False)
        restore = getattr(getattr(self.agent, "session", None), "restore_conversation", None)
        if loaded.contexts and callable(restore):
            restore(loaded.contexts[-1])
        try:
            self.session_log = SessionLog.reopen(loaded.folder, self.kernel_task, "tui")
            self.bridge.subscribe(self.session_log.write)
        except (SessionError, OSError) as exc:
            self.notify(f"resumed, but not recording: {exc}", severity="warning", timeout=10)
        self.load_history()
        self.notify(f"resumed session {loaded.id}: {len(timeline.versions)} versions, {len(loaded.events)} events",
                    timeout=6)

    def _end_replay(self, count: int, name: str) -> None:
        self.replaying = False
        self.notify(f"replayed {count} events from {name}", timeout=4)

    def palette_actions(self) -> list[tuple[str, str, str]]:
        """(title, help, action string) for every command the palette offers."""
        items = [("Run: all default rungs", "rerun the loop on the file on disk (ctrl+r)", "run_loop")]
        for spec in rung_registry.rung_specs():
            items.append((f"Run: {spec.name}", f"{spec.title} (prerequisites run first)", f"run_rungs('{spec.name}')"))
        items.append(("Profile the current version", "ncu summary of the kernel (needs a GPU and ncu)", "profile"))
        items.append(("Trace the current version", "region table and timeline inside the kernel (needs a GPU)", "trace"))
        items.append(("Run the hand-edited override", "the loop on the PTX/TTGIR written by the asm view's e", "run_override"))
        items.append(("Switch task…", "open another task directory", "switch_task"))
        items.append(("Open session…", "replay a saved session log in these panes", "open_session"))
        items.append(("Resume session…", "continue a saved session: its task, kernel, chat and agent context",
                      "resume_session"))
        for name in sorted(self.available_themes):
            if name in self.theme_files or not name.startswith(("textual", "ansi")):
                desc = self.theme_files[name].description if name in self.theme_files else "Textual theme"
                items.append((f"Theme: {name}", desc, f"set_theme('{name}')"))
        for pane in PANES:
            items.append((f"Focus pane: {pane}", "move the keyboard focus there", f"focus_pane('{pane}')"))
            items.append((f"Toggle pane: {pane}", "hide or show it", f"toggle_pane('{pane}')"))
            items.append((f"Maximise pane: {pane}", "fill the screen with it (again to restore)",
                          f"maximise_pane('{pane}')"))
        items.append(("Chart: µs / % of roofline", "toggle the history chart's y axis", "chart_unit"))
        for name in ("directives", "comments", "hex"):
            items.append((f"Asm: show/hide {name}", "filter the asm listing", f"asm_filter('{name}')"))
        items.append(("Asm: diff against the previous accepted version", "", "asm_diff"))
        items.append(("Help: keys", "every key binding and its id", "help"))
        items.append(("Quit", "", "quit"))
        return items

    # -- replay ---------------------------------------------------------------------------------

    def action_replay_step(self, delta: int) -> None:
        if self.replay is not None:
            self.replay.move(delta)

    def action_replay_play(self) -> None:
        if self.replay is not None:
            self.replay.toggle_play()

    def action_replay_speed(self, delta: int) -> None:
        if self.replay is not None:
            self.replay.change_speed(delta)

    def action_replay_jump(self) -> None:
        if self.replay is None:
            return
        from kerneltui.ui.screens.prompt import PromptScreen

        count = len(self.replay.timeline.versions)

        def chosen(value: str | None) -> None:
            if not value:
                return
            if not value.strip().lstrip("v").isdigit() or not self.replay.jump_to_version(int(value.strip().lstrip("v"))):
                self.notify(f"no version {value!r}: this session has versions 1 to {count}", severity="warning")

        self.push_screen(PromptScreen("Jump to version", f"a version number, 1 to {count}"), chosen)

    def action_chart_unit(self) -> None:
        self.chart.action_toggle_unit()

    def action_asm_filter(self, name: str) -> None:
        self.asm_pane.toggle_filter(name)

    def action_asm_diff(self) -> None:
        self.asm_pane.toggle_diff()


def _history_observers(task: Task) -> list[Any]:
    """The history store's observer, when that part of kerneltui is installed."""
    try:
        from kerneltui.core.history import observer_for  # type: ignore[import-not-found]
    except ImportError:
        return []
    return [observer_for(task)]


def create_app(task_path: str | Path, *, kernel: str | None = None, settings: config_mod.Config | None = None,
               agent: AgentController | None = None, history: HistorySource | None = None,
               asm: AsmSource | None = None, profile: ProfileSource | None = None,
               options: AppOptions | None = None) -> KernelApp:
    """The app on a task, with real adapters unless given others (tests pass fixed data)."""
    task = load_task(str(task_path), kernel)
    settings = settings or config_mod.load_config()
    ui = settings.section("ui")
    options = options or AppOptions(watch=bool(ui.get("watch", True)), run_on_start=bool(ui.get("run_on_start", True)))
    return KernelApp(
        task, settings=settings, agent=agent or default_agent(task, settings),
        history=history or StoreHistory(task), asm=asm or DumpFolderAsm(task.kernel_file),
        profile=profile or RungMetricsProfile(), options=options,
    )


def create_replay_app(folder: Path, *, settings: config_mod.Config | None = None,
                      options: AppOptions | None = None) -> KernelApp:
    """The app, read-only, on a saved session: its task (the original folder when it still exists, else
    the copy kept in the session), the session's own history for the chart, a replay agent."""
    from kerneltui.core.session import Timeline, load_session
    from kerneltui.ui.replay import ReplayAgent, SessionHistory

    loaded = load_session(folder)
    timeline = Timeline(loaded)
    info = loaded.task
    root = Path(str(info.get("root") or ""))
    kernel_file = str(info.get("kernel_file") or "")
    task_root = root if root.is_dir() and (root / kernel_file).is_file() else loaded.task_dir
    task = load_task(str(task_root), str(task_root / kernel_file) if kernel_file else None)
    settings = settings or config_mod.load_config()
    options = options or AppOptions()
    options.watch, options.run_on_start, options.prestart_worker, options.record_session = False, False, False, False
    options.replay = timeline
    return KernelApp(task, settings=settings, agent=ReplayAgent(loaded.id), history=SessionHistory(timeline),
                     asm=DumpFolderAsm(task.kernel_file), profile=RungMetricsProfile(), options=options)


def default_agent(task: Task, settings: config_mod.Config) -> AgentController:
    """The configured agent; without an API key a scripted one, labelled as such (see adapters.agent_session)."""
    from kerneltui.ui.adapters.agent_session import open_agent

    return open_agent(task, settings)
