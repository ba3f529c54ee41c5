"""The session log of the task on screen (``core.session.SessionLog``), written from the event stream.

The recorder is subscribed to the app's ``EventBridge`` for the app's whole life and writes to the
log of the moment: one new log per task opened, the saved one again on a resume, none while
recording is off. Each method returns a sentence for the person when something went wrong, else "".
Nothing here imports Textual.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path

from kerneltui import config as config_mod
from kerneltui.core.events import Event
from kerneltui.core.session import SessionError, SessionLog
from kerneltui.core.session.store import open_log_for
from kerneltui.core.task import Task
from kerneltui.ui.ports import AgentController


class SessionRecorder:
    def __init__(self, settings: config_mod.Config, enabled: bool) -> None:
        self.settings = settings
        self.enabled = enabled  # [sessions] record = false turns it off as well
        self.log: SessionLog | None = None
        self.kept: Path | None = None  # the last session closed with something in it

    def write(self, event: Event) -> None:
        if self.log is not None:
            self.log.write(event)

    def start(self, task: Task) -> str:
        """A new log for ``task``, unless one is open or recording is off."""
        if self.log is not None or not self.enabled:
            return ""
        try:
            self.log = open_log_for(task, "tui", self.settings)
        except SessionError as exc:
            return f"not recording this session: {exc}"
        return ""

    def resume(self, folder: Path, task: Task) -> str:
        """Append to a saved session from now on (the log open before is closed first)."""
        problem = self.stop()
        try:
            self.log = SessionLog.reopen(folder, task, "tui")
        except (SessionError, OSError) as exc:
            return f"resumed, but not recording: {exc}"
        return problem

    async def after(self, call: Awaitable[None], agent: AgentController) -> None:
        """Await the agent's turn (or decision), then keep the conversation as the model saw it (what a
        resume gives back to the agent)."""
        await call
        conversation = agent.conversation()
        if self.log is not None and conversation is not None:
            self.log.write_context(conversation)

    def stop(self) -> str:
        """Close the log; a session this app made in which nothing happened (a launch and its first
        run) is removed rather than listed. ``kept`` says which session was kept, for the goodbye."""
        log, self.log = self.log, None
        if log is None:
            return ""
        if log.created and not log.eventful and not log.lost_events:
            log.discard()
            return ""
        log.close()
        self.kept = log.folder
        return log.problem()
