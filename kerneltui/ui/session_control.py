"""Saved sessions in the running app: shown in the panes ("Open session…") or continued (resume).

Showing one feeds its events through the app's ``EventBridge`` without recording them again, the
path live events take. Resuming one switches to its task when it is another (a fresh workbench, the
same factory as at start), puts the kernel file back to the session's last version (the text it
replaces kept as an unsaved-edit backup), feeds the plan of its last step, gives the agent its saved
conversation and appends to the same log.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kerneltui.core import events as ev
from kerneltui.core.session import LoadedSession, SessionError, Timeline, load_session
from kerneltui.core.session.store import list_sessions, read_header
from kerneltui.files import read_utf8, write_text_atomic
from kerneltui.ui.screens.prompt import PromptScreen
from kerneltui.ui.screens.sessions import SessionPicker

if TYPE_CHECKING:
    from kerneltui.ui.app_ports import AppHost


class SessionControl:
    def __init__(self, app: AppHost) -> None:
        self.app = app
        self.resuming = False  # a resume switching task: the new panes must not open a log of their own

    # -- showing a saved session ----------------------------------------------------------------

    def ask_to_show(self) -> None:
        def chosen(value: str | None) -> None:
            if value:
                self.show(Path(value).expanduser())

        self.app.push_screen(PromptScreen("Open session", "a session folder or log (.jsonl) to show in these panes "
                                          "(`kerneltui replay` steps through one)"), chosen)

    def show(self, path: Path) -> None:
        """Feed a saved event stream (a session folder, its log.jsonl or a JSON-lines file of events)
        through the same path as live events."""
        app = self.app
        folder = path if path.is_dir() else path.parent
        if path.is_dir() or (path.name == "log.jsonl" and read_header(folder) is not None):
            loaded = self._load(folder)
            if loaded is None:
                return
            self.feed(loaded.events)
            app.call_after_refresh(self._shown, len(loaded.events), folder.name)
            return
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            app.notify(f"cannot read {path}: {exc.strerror}", severity="error")
            return
        events: list[ev.Event] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                events.append(ev.event_from_dict(json.loads(line)))
            except (ValueError, TypeError, KeyError) as exc:
                app.notify(f"{path.name}:{number}: not an event ({exc})", severity="error", timeout=10)
                return
        self.feed(events)
        app.call_after_refresh(self._shown, len(events), path.name)

    def _load(self, folder: Path) -> LoadedSession | None:
        """The saved session, with a word on what was lost; None (and why, said) when it cannot be read."""
        try:
            loaded = load_session(folder)
        except SessionError as exc:
            self.app.notify(str(exc), severity="error", timeout=10)
            return None
        if loaded.lost_bytes:
            self.app.notify(loaded.lost_note(), severity="warning", timeout=10)
        return loaded

    def feed(self, events: Iterable[ev.Event]) -> None:
        """Saved events through the bridge, as live ones, but not written to the log again."""
        self.app.replaying = True
        for event in events:
            self.app.bridge.emit(event, record=False)

    def _shown(self, count: int, name: str) -> None:
        self.app.replaying = False
        self.app.notify(f"replayed {count} events from {name}", timeout=4)

    # -- resuming ---------------------------------------------------------------------------------

    def pick_to_resume(self) -> None:
        if self.app.refuse_writes():
            return

        def chosen(folder: Path | None) -> None:
            if folder is not None:
                self.app.run_worker(self.resume(folder), group="resume", exclusive=True)

        self.app.push_screen(SessionPicker(list_sessions(self.app.settings, include_examples=True)), chosen)

    async def resume(self, folder: Path) -> None:
        """Continue a saved session: its task, the kernel at its last version, the chat, the rungs of its
        last run, the agent's conversation; later events append to the same log."""
        if self.app.refuse_writes():
            return
        self.resuming = True
        try:
            await self._resume(folder)
        finally:
            self.resuming = False

    def _restore_kept_edits(self, loaded: LoadedSession) -> None:
        """Edits kept as the app closed on a signal (the log's last word on the kernel is ``EditsKept``)
        are back in the editor, unsaved."""
        kept = last_kept_edits(loaded)
        if kept is None:
            return
        app = self.app
        try:
            text = read_utf8(Path(kept.path))
        except (OSError, ValueError) as exc:
            app.notify(f"your unsaved edits kept at {kept.reason} could not be read back: {exc}", severity="warning")
            return
        if text != app.editor.text:
            app.editor.load_text(text)
            app.editor.dirty = text != app.editor.disk_text
            app.notify(f"your unsaved edits of {kept.file}, kept on {kept.reason}, are back in the editor (not saved "
                       f"yet; the copy: {kept.path})", timeout=12)

    async def _resume(self, folder: Path) -> None:
        app = self.app
        loaded = self._load(folder)
        if loaded is None:
            return
        root = Path(str(loaded.task.get("root") or ""))
        if not (root / str(loaded.task.get("kernel_file") or "")).is_file():
            app.notify(f"cannot resume {loaded.id}: its task folder {root} is gone (replay it instead: "
                       f"`kerneltui replay {loaded.folder}`)", severity="error", timeout=12)
            return
        if root.resolve() != app.kernel_task.root.resolve() and not await app.switch_task(str(root)):
            return
        timeline = Timeline(loaded)
        app.stop_recording()
        text = timeline.kernel_text_at(len(timeline))
        path = app.kernel_task.kernel_path
        if text is not None and text != path.read_text(encoding="utf-8"):
            saved = app.task_files.backup(path.name, path.read_text(encoding="utf-8"))
            write_text_atomic(path, text)
            app.editor.replace_from_disk(text)
            app.runs.expect(path, text)
            app.notify(f"{path.name} restored to the session's last version (the file before: {saved})", timeout=10)
        self._restore_kept_edits(loaded)
        self.feed(timeline.plan(len(timeline)))
        app.call_after_refresh(setattr, app, "replaying", False)
        if loaded.contexts:
            app.agent.restore(loaded.contexts[-1])
        app.warn(app.recorder.resume(loaded.folder, app.kernel_task))
        app.load_history()
        app.notify(f"resumed session {loaded.id}: {len(timeline.versions)} versions, {len(loaded.events)} events",
                   timeout=6)


def last_kept_edits(loaded: LoadedSession) -> ev.EditsKept | None:
    """The session's ``EditsKept`` when nothing changed the kernel after it (it is the last word)."""
    events = loaded.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, ev.EditsKept):
            return event
        if isinstance(event, (ev.FileChanged, ev.RunStarted, ev.ProposalEvent)):
            return None
    return None
