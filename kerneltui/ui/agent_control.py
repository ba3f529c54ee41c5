"""The person's side of the agent: messages, decisions on proposals, undo and interrupt.

Each call runs as a background task of the app (never on its event loop), and the conversation is
kept in the session log after it (``SessionRecorder.after``). An accept or an undo writes the kernel
file; the editor then shows the file on disk and the loop reruns on it, so the rung pane and the
status line describe the file, never a trial.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from kerneltui.core import events as ev
from kerneltui.core.agent.written import written_of
from kerneltui.core.task import TaskError, source_hash
from kerneltui.ui.agent_activity import AgentActivity
from kerneltui.ui.messages import EditProposal, ProposalDecision
from kerneltui.ui.screens.main import COLUMN_OF

if TYPE_CHECKING:
    from kerneltui.ui.app_ports import AppHost

WRITING_STATES = {"accepted": "accept", "undone": "undo"}  # proposal states that changed a file -> run origin


class AgentControl:
    def __init__(self, app: AppHost) -> None:
        self.app = app
        self.activity = AgentActivity()

    def show(self, event: ev.Event) -> None:
        """The agent's event in the panes (called while they exist): the chat, the usage in the status
        line, a decided proposal's file in the editor."""
        app = self.app
        self.activity.observe(event, app.options.clock())
        if isinstance(event, ev.TokenUsage):
            app.status.show_usage(event)
            return
        app.chat.render_event(event)
        if isinstance(event, ev.ProposalEvent):
            self.proposal_changed(event)
            main = app.main
            if event.state == "trial_done" and main.tabbed and main.tab != COLUMN_OF["chat"]:
                # A narrow terminal shows one tab: say that a card waits in the agent's.
                card = app.chat.cards.get(event.proposal_id)
                verdict = card.verdict.headline if card is not None else "trial done"
                app.notify(f"{event.proposal_id}: {verdict} · F2 to review it", timeout=8)

    def show_activity(self) -> None:
        """The line above the chat's input: what the agent is doing and for how long (while busy)."""
        if self.app.ready:
            self.app.chat.show_activity(self.activity.line(self.app.options.clock(), self.app.agent.busy))

    def _run(self, call: Awaitable[None]) -> None:
        app = self.app
        app.run_worker(app.recorder.after(call, app.agent), group="agent", exit_on_error=False)

    def send(self, text: str) -> None:
        self._run(self.app.agent.send(text))

    def decide(self, message: ProposalDecision) -> None:
        self._run(self.app.agent.decide(message.proposal_id, message.decision, message.feedback, message.hunks,
                                        message.edited_source))

    def edit(self, message: EditProposal) -> None:
        """The proposal's text into the editor, to change before accepting (ctrl+s accepts it); asked
        again for the proposal being edited, the editor goes back to the file on disk."""
        app = self.app
        if app.refuse_writes():
            return
        editor = app.editor
        if editor.editing_proposal == message.proposal_id:
            editor.stop_proposal_edit()
            app.notify(f"{message.proposal_id}: edit dropped; the editor shows the file on disk", timeout=4)
            return
        if editor.dirty and not editor.editing_proposal:
            saved = app.task_files.backup(app.kernel_task.kernel_path.name, editor.text)
            app.notify(f"your unsaved edits are kept in {saved}", timeout=8)
        editor.start_proposal_edit(message.proposal_id, message.text)
        app.main.focus_pane("editor")

    def undo(self) -> None:
        """Put the kernel back to the checkpoint before the last accept, then rerun the loop."""
        if self.app.refuse_writes():
            return
        self._run(self._undo())

    async def _undo(self) -> None:
        await self.app.agent.undo()
        self.show_disk("undo")  # a checkpoint of an earlier session has no proposal event to say so

    def interrupt(self) -> None:
        """Stop the agent's turn in flight (its partial reply is kept and marked)."""
        if self.app.agent.interrupt():
            self.app.notify("agent interrupted", timeout=3)
        else:
            self.app.notify("the agent is not working on anything (ctrl+q quits)", timeout=4)

    def proposal_changed(self, event: ev.ProposalEvent) -> None:
        origin = WRITING_STATES.get(event.state)
        if origin is not None and not event.proposal.get("override"):
            written = written_of(event.proposal, event.proposal_id) if event.state == "accepted" else None
            self.show_disk(origin, written.author if written is not None else "")

    def show_disk(self, origin: str, author: str = "") -> None:
        """The kernel file changed under the editor (an accept, an undo): show it and check it
        (``author``: who made the text written, for its history row)."""
        app = self.app
        if app.replay is not None or app.replaying or not app.ready:
            return  # a replay or a resume shows what was, and writes or runs nothing
        path = app.kernel_task.kernel_path
        try:
            text = app.kernel_task.kernel_source()
        except TaskError as exc:
            app.notify(str(exc), severity="error")
            return
        editor = app.editor
        if editor.editing_proposal and editor.text == text:  # the person's edit of a proposal, now accepted
            editor.stop_proposal_edit(text)
            app.runs.request(origin, author=author)
            return
        if source_hash(text) == source_hash(editor.disk_text) and not editor.dirty:
            if not app.runs.started_for(path.resolve(), text):
                app.runs.request(origin, author=author)
            return
        if editor.dirty:
            saved = app.task_files.backup(path.name, editor.text)
            app.notify(f"your unsaved edits of {path.name} are kept in {saved}", timeout=10)
        editor.replace_from_disk(text)
        app.runs.request(origin, author=author)
