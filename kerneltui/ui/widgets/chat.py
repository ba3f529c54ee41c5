"""The agent chat: streamed Markdown replies, tool calls as one-line entries, proposals as cards.

The pane renders agent events (``render_event``) and turns the person's input into messages
(``ChatSubmitted``, ``ProposalDecision``) for the app, which owns the agent controller. Keys for
proposals (a/r/f) live on the history, never on the input, so they cannot fire while typing.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible, Input, Markdown, Static

from kerneltui.core import events as ev
from kerneltui.ui import keys
from kerneltui.ui.messages import ChatSubmitted, ProposalDecision

OPEN_STATES = {"pending", "trial", "trial_done"}


class ToolCallEntry(Collapsible):
    DEFAULT_CSS = """
    ToolCallEntry { border: none; padding: 0; margin: 0; background: transparent; }
    ToolCallEntry > Contents { padding: 0 0 0 2; }
    """

    def __init__(self, call: ev.ToolCallStarted) -> None:
        self.call = call
        self.output = Static("", classes="tool-output")
        super().__init__(self.output, title=f"⋯ {call.summary}", collapsed=True)

    def finish(self, done: ev.ToolCallFinished) -> None:
        mark = "✓" if done.ok else "✗"
        self.title = f"{mark} {self.call.summary} — {done.summary}"
        self.set_class(not done.ok, "-failed")
        self.output.update(Text(done.output[-4000:] if done.output else "(no output)", style="dim"))


class ProposalCard(Vertical):
    DEFAULT_CSS = """
    ProposalCard { height: auto; border: round $accent; padding: 0 1; margin: 1 0; }
    ProposalCard.-closed { border: round $panel; }
    ProposalCard .proposal-head { text-style: bold; }
    ProposalCard .proposal-keys { color: $text-muted; }
    """

    def __init__(self, proposal_id: str, proposal: dict, state: str) -> None:
        super().__init__()
        self.proposal_id = proposal_id
        self.proposal = dict(proposal)
        self.state = state

    def compose(self) -> ComposeResult:
        yield Static(Text(self._head()), classes="proposal-head")
        yield Static(Text(str(self.proposal.get("rationale", ""))), classes="proposal-rationale")
        diff = self.proposal.get("diff") or ""
        if diff:
            from rich.syntax import Syntax  # pygments is slow to import: only when a diff is shown

            yield Static(Syntax(diff.rstrip(), "diff", theme="ansi_dark", background_color="default",
                                word_wrap=True), classes="proposal-diff")
        yield Static(self._keys(), classes="proposal-keys")

    def _head(self) -> str:
        kind = self.proposal.get("kind", "edit")
        return f"proposal {self.proposal_id} · {kind} · {self.state}"

    def _keys(self) -> Text:
        if self.state in OPEN_STATES:
            text = Text()
            for key, rest in (("a", "ccept"), ("r", "eject"), ("f", "eedback")):
                text.append("[")
                text.append(key, style="bold")
                text.append(f"]{rest}  ")
            text.append("(typing? esc first)", style="dim")
            return text
        reason = self.proposal.get("decision_reason") or ""
        return Text(f"{self.state}" + (f": {reason}" if reason else ""))

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def update_state(self, state: str, proposal: dict) -> None:
        self.state = state
        self.proposal.update({k: v for k, v in proposal.items() if v not in (None, "")})
        self.set_class(not self.is_open, "-closed")
        if self.is_mounted:
            self.query_one(".proposal-head", Static).update(Text(self._head()))
            self.query_one(".proposal-keys", Static).update(self._keys())


class ChatLog(VerticalScroll, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.CHAT_LOG)

    def _pane(self) -> ChatPane:
        return next(a for a in self.ancestors if isinstance(a, ChatPane))

    def action_decide(self, decision: str) -> None:
        self._pane().decide(decision)

    def action_feedback(self) -> None:
        self._pane().start_feedback()

    def action_compose(self) -> None:
        self._pane().input_widget.focus()


class ChatInput(Input):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.CHAT_INPUT)

    def action_leave(self) -> None:
        pane = next(a for a in self.ancestors if isinstance(a, ChatPane))
        pane.cancel_feedback()
        pane.log_widget.focus()


class ChatPane(Vertical):
    DEFAULT_CSS = """
    ChatPane #chat-label { height: auto; color: $text-muted; padding: 0 1; }
    ChatPane ChatLog { height: 1fr; padding: 0 1; }
    ChatPane ChatInput { height: 3; }
    ChatPane .user { color: $text; text-style: bold; margin: 1 0 0 0; }
    ChatPane .notice { color: $text-muted; }
    ChatPane .agent-error { color: $error; }
    ChatPane Markdown { margin: 0; padding: 0; background: transparent; }
    """

    def __init__(self, label: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.replies: dict[str, Markdown] = {}
        self.reply_text: dict[str, str] = {}
        self.tools: dict[str, ToolCallEntry] = {}
        self.cards: dict[str, ProposalCard] = {}
        self.feedback_for: str | None = None
        self._pending: set[str] = set()  # streaming replies waiting to be re-rendered

    def compose(self) -> ComposeResult:
        self.label_widget = Static(Text(self.label), id="chat-label")
        self.log_widget = ChatLog(id="chat-log")
        self.input_widget = ChatInput(placeholder="ask the agent… (enter sends)", id="chat-input")
        yield self.label_widget
        yield self.log_widget
        yield self.input_widget

    def set_label(self, label: str) -> None:
        self.label = label
        self.label_widget.update(Text(label))

    def clear(self) -> None:
        """Empty the conversation (a replay going back in time rebuilds it)."""
        self.log_widget.remove_children()
        self.replies.clear()
        self.reply_text.clear()
        self.tools.clear()
        self.cards.clear()
        self._pending.clear()

    # -- rendering events ---------------------------------------------------------------------

    def _append(self, widget: Widget) -> None:
        log = self.log_widget
        at_end = log.max_scroll_y - log.scroll_y <= 2
        log.mount(widget)
        if at_end:
            log.call_after_refresh(log.scroll_end, animate=False)

    def render_event(self, event: ev.Event) -> None:
        if isinstance(event, ev.UserMessage):
            self._append(Static(Text("you: ", style="bold") + Text(event.text), classes="user"))
        elif isinstance(event, ev.AgentTextDelta):
            self._delta(event.turn_id, event.text)
        elif isinstance(event, ev.AgentMessage):
            md = self.replies.get(event.turn_id)
            self.reply_text[event.turn_id] = event.text
            self._pending.discard(event.turn_id)
            if md is None:
                md = Markdown(event.text)
                self.replies[event.turn_id] = md
                self._append(md)
            else:
                _update_markdown(md, event.text)
        elif isinstance(event, ev.ToolCallStarted):
            entry = ToolCallEntry(event)
            self.tools[event.call_id] = entry
            self._append(entry)
        elif isinstance(event, ev.ToolCallFinished):
            started = self.tools.get(event.call_id)
            if started is None:
                started = ToolCallEntry(ev.ToolCallStarted(turn_id=event.turn_id, call_id=event.call_id,
                                                           name=event.name, summary=event.name))
                self.tools[event.call_id] = started
                self._append(started)
            started.finish(event)
        elif isinstance(event, ev.ProposalEvent):
            card = self.cards.get(event.proposal_id)
            if card is None:
                card = ProposalCard(event.proposal_id, event.proposal, event.state)
                self.cards[event.proposal_id] = card
                self._append(card)
            else:
                card.update_state(event.state, event.proposal)
        elif isinstance(event, ev.AgentError):
            self._append(Static(Text(f"agent error ({event.kind}): {event.message}"), classes="agent-error"))
        elif isinstance(event, ev.Notice):
            self._append(Static(Text(event.message), classes="notice" if event.level == "info" else "agent-error"))

    def _delta(self, turn_id: str, text: str) -> None:
        self.reply_text[turn_id] = self.reply_text.get(turn_id, "") + text
        if turn_id not in self.replies:
            md = Markdown("")
            self.replies[turn_id] = md
            self._append(md)
        # Deltas arrive faster than a frame: re-render each streaming reply at most every 50 ms.
        if not self._pending:
            self.set_timer(0.05, self._flush)
        self._pending.add(turn_id)

    def _flush(self) -> None:
        pending, self._pending = self._pending, set()
        log = self.log_widget
        at_end = log.max_scroll_y - log.scroll_y <= 2
        for turn_id in pending:
            md = self.replies.get(turn_id)
            if md is not None:
                _update_markdown(md, self.reply_text[turn_id])
        if at_end:
            log.call_after_refresh(log.scroll_end, animate=False)

    # -- input --------------------------------------------------------------------------------

    def open_proposal(self) -> ProposalCard | None:
        for card in reversed(list(self.cards.values())):
            if card.is_open:
                return card
        return None

    def decide(self, decision: str) -> None:
        card = self.open_proposal()
        if card is None:
            self.notify("no open proposal to decide on", severity="warning")
            return
        self.post_message(ProposalDecision(card.proposal_id, decision))

    def start_feedback(self) -> None:
        card = self.open_proposal()
        if card is None:
            self.notify("no open proposal to give feedback on", severity="warning")
            return
        self.feedback_for = card.proposal_id
        box = self.input_widget
        box.placeholder = f"feedback on proposal {card.proposal_id}: where should it go instead? (esc cancels)"
        box.focus()

    def cancel_feedback(self) -> None:
        self.feedback_for = None
        self.input_widget.placeholder = "ask the agent… (enter sends)"

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        event.input.value = ""
        if self.feedback_for is not None:
            pid = self.feedback_for
            self.cancel_feedback()
            self.post_message(ProposalDecision(pid, "redirect", text))
        else:
            self.post_message(ChatSubmitted(text))


def _update_markdown(md: Markdown, text: str) -> None:
    """Set a reply's text; one not mounted yet would overwrite it with its initial text when it mounts,
    so the update waits in its queue behind the mount (replies that complete within a frame: replay)."""
    if md.is_mounted:
        md.update(text)
    else:
        md.call_later(md.update, text)
