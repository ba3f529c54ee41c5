"""What the agent is doing right now, for the line above the chat's input.

A model can take a minute before its first token; without a word on screen the app looks hung. The
agent's own events say what it is at: a message sent (waiting for the model), text arriving (writing
its reply), a tool running, a proposal's trial running. The line names that and how long it has
lasted, and goes away once the agent is no longer busy. Nothing here imports Textual.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltui.core import events as ev

WAITING = "waiting for the model"
WRITING = "writing its reply"
TOOL_WORDS = {"propose_edit": "making a proposal", "propose_override": "making a proposal",
              "search_context": "searching the context", "read_file": "reading a file"}


@dataclass
class AgentActivity:
    what: str = ""  # "" until the agent's first event of a turn
    since: float = 0.0  # when ``what`` began (the app's clock)
    _busy_since: float | None = None

    def observe(self, event: ev.Event, now: float) -> None:
        if isinstance(event, ev.UserMessage):
            self._set(WAITING, now)
        elif isinstance(event, ev.AgentTextDelta):
            if self.what != WRITING:
                self._set(WRITING, now)
        elif isinstance(event, ev.ToolCallStarted):
            self._set(f"running {event.name}: {TOOL_WORDS.get(event.name, 'a tool')}", now)
        elif isinstance(event, ev.ProposalEvent) and event.state == "trial":
            self._set(f"trial of {event.proposal_id} running on a scratch copy", now)
        elif isinstance(event, (ev.ToolCallFinished, ev.AgentMessage)):
            self._set(WAITING, now)  # the next request of the turn, if the turn goes on
        elif isinstance(event, ev.Notice) and "asking again" in event.message:
            self._set(WAITING, now)
        elif isinstance(event, ev.AgentError):
            self._set("", now)

    def _set(self, what: str, now: float) -> None:
        self.what, self.since = what, now

    def line(self, now: float, busy: bool) -> str:
        """"● waiting for the model · 3 s", or "" when the agent is not working on anything."""
        if not busy:
            self._busy_since = None
            self.what = ""
            return ""
        if self._busy_since is None:
            self._busy_since = now
        what, since = (self.what, self.since) if self.what else (WAITING, self._busy_since)
        return f"● {what} · {max(0.0, now - since):.0f} s · ctrl+c stops it"
