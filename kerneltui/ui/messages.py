"""Textual messages made from core events, by one bridge object.

The loop, the watcher and the agent call :meth:`EventBridge.emit` with plain events (possibly from
another thread); the bridge posts one Textual message per event to the app, which hands state to
the widgets ("attributes down, messages up"). Nothing that produces events touches a widget.
"""

from __future__ import annotations

from textual.message import Message
from textual.message_pump import MessagePump

from kerneltui.core import events as ev
from kerneltui.ui.ports import AsmListing, HistorySeries


class CoreEvent(Message):
    """Base of every message that carries a core event."""

    def __init__(self, event: ev.Event) -> None:
        super().__init__()
        self.event = event


class LoopEvent(CoreEvent):
    """RunStarted, RungStarted, RungProgress, RungFinished, RunFinished."""


class FileEvent(CoreEvent):
    """A task file changed on disk (FileChanged)."""


class NoticeEvent(CoreEvent):
    """Something to read (Notice)."""


class AgentEvent(CoreEvent):
    """UserMessage, AgentTextDelta, AgentMessage, ToolCall*, ProposalEvent, TokenUsage, AgentError."""


_LOOP = (ev.RunStarted, ev.RungStarted, ev.RungProgress, ev.RungFinished, ev.VerdictReached, ev.RunFinished)
_AGENT = (ev.UserMessage, ev.AgentTextDelta, ev.AgentMessage, ev.ToolCallStarted, ev.ToolCallFinished,
          ev.ProposalEvent, ev.TokenUsage, ev.AgentError)


def message_for(event: ev.Event) -> CoreEvent:
    if isinstance(event, _LOOP):
        return LoopEvent(event)
    if isinstance(event, ev.FileChanged):
        return FileEvent(event)
    if isinstance(event, ev.Notice):
        return NoticeEvent(event)
    if isinstance(event, _AGENT):
        return AgentEvent(event)
    return CoreEvent(event)


class EventBridge:
    """Turns core events into messages posted to ``target`` (the app); keeps a log for replay and tests."""

    def __init__(self, target: MessagePump, keep: int = 10_000) -> None:
        self.target = target
        self.keep = keep
        self.log: list[ev.Event] = []
        # Called with every event before it is posted (the session log); never from replay.
        self.subscribers: list[ev.Emit] = []

    def subscribe(self, callback: ev.Emit) -> None:
        self.subscribers.append(callback)

    def unsubscribe(self, callback: ev.Emit) -> None:
        if callback in self.subscribers:
            self.subscribers.remove(callback)

    def emit(self, event: ev.Event, record: bool = True) -> None:
        if record:
            for callback in self.subscribers:
                callback(event)
        self.log.append(event)
        if len(self.log) > self.keep:
            del self.log[: len(self.log) - self.keep]
        # post_message is thread-safe: the loop's task and any agent thread may call this.
        self.target.post_message(message_for(event))


# ---------------------------------------------------------------------------------------------
# Messages between widgets (not core events)
# ---------------------------------------------------------------------------------------------


class JumpToSource(Message):
    """Move the editor's cursor to a line of the kernel file."""

    def __init__(self, line: int, column: int = 1) -> None:
        super().__init__()
        self.line = line
        self.column = column


class EditorCursorMoved(Message):
    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line


class SaveRequested(Message):
    """The editor saved the kernel file (its content is what was written)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class SaveFailed(Message):
    """The editor could not write the kernel file: the file is unchanged, ``text`` stays unsaved."""

    def __init__(self, text: str, error: OSError) -> None:
        super().__init__()
        self.text = text
        self.error = error


class ProposalDecision(Message):
    """``decision``: accept (``hunks``: only these, None: all), edit (accept ``edited_source``), reject
    (``feedback``: the optional reason) or redirect (``feedback``: where to go instead); both texts reach
    the model."""

    def __init__(self, proposal_id: str, decision: str, feedback: str = "", hunks: list[int] | None = None,
                 edited_source: str | None = None) -> None:
        super().__init__()
        self.proposal_id = proposal_id
        self.decision = decision
        self.feedback = feedback
        self.hunks = hunks
        self.edited_source = edited_source  # "edit": the person's version of the proposal, accepted as is


class EditProposal(Message):
    """Open the proposal's text in the editor; ctrl+s there accepts the edited text (again: back out)."""

    def __init__(self, proposal_id: str, text: str) -> None:
        super().__init__()
        self.proposal_id = proposal_id
        self.text = text


class ChatSubmitted(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class OpenProfile(Message):
    def __init__(self, rung: str) -> None:
        super().__init__()
        self.rung = rung


class OpenTrace(Message):
    """Show the trace rung's region table and timeline (running the rung first if needed)."""


class EditStage(Message):
    """Write the shown stage (PTX, TTGIR) of the current version to an override folder and edit it."""

    def __init__(self, stage: str, text: str) -> None:
        super().__init__()
        self.stage = stage
        self.text = text


# ---------------------------------------------------------------------------------------------
# Answers of the app's thread workers
# ---------------------------------------------------------------------------------------------


class AsmLoaded(Message):
    def __init__(self, listing: AsmListing, previous: AsmListing | None) -> None:
        super().__init__()
        self.listing = listing
        self.previous = previous


class HistoryLoaded(Message):
    def __init__(self, series: HistorySeries) -> None:
        super().__init__()
        self.series = series
