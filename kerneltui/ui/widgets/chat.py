"""The agent chat: streamed Markdown replies, tool calls as one-line entries, proposals as cards.

The pane renders agent events (``render_event``) and turns the person's input into messages
(``ChatSubmitted``, ``ProposalDecision``) for the app, which owns the agent controller. Keys for
proposals (a/r/f) live on the history, never on the input, so they cannot fire while typing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible, Input, Static

from kerneltui.core import events as ev
from kerneltui.core.agent.written import Written, marked_diff, written_of
from kerneltui.ui import keys
from kerneltui.ui.messages import ChatSubmitted, EditProposal, ProposalDecision
from kerneltui.ui.proposal_view import FAILED, OUTCOME_MARKS, PASSED, Verdict, verdict_of

if TYPE_CHECKING:
    from rich.syntax import Syntax
    from textual.widgets import Markdown

OPEN_STATES = {"pending", "trial", "trial_done"}
# How long the warning of an armed accept is on screen before a second ``a`` confirms it.
CONFIRM_AFTER_S = 0.5
# Keys that move through the history without deciding anything: the person reads the warning of an
# armed accept, or the diff, before the second ``a``.
READING_KEYS = frozenset({"up", "down", "left", "right", "pageup", "pagedown", "home", "end"})


class ToolCallEntry(Collapsible):
    DEFAULT_CSS = """
    ToolCallEntry { border: none; padding: 0; margin: 0; background: transparent; }
    ToolCallEntry > Contents { padding: 0 0 0 2; }
    """

    def __init__(self, call: ev.ToolCallStarted) -> None:
        self.call = call
        self.output = Static("", classes="tool-output")
        super().__init__(self.output, title=f"⋯ {call.summary}", collapsed=True)

    def finish(self, done: ev.ToolCallFinished, trial_failed: bool = False) -> None:
        """``trial_failed``: the proposal this call made has a failed trial; the tool ran, but a green
        tick beside a failed trial reads as "this edit is fine"."""
        failed = not done.ok or trial_failed
        self.title = f"{'✗' if failed else '✓'} {self.call.summary} — {done.summary}"
        self.set_class(failed, "-failed")
        self.output.update(Text(done.output[-4000:] if done.output else "(no output)", style="dim"))


class ProposalCard(Vertical):
    """A proposal, verdict first: the trial's pass/fail and numbers, then what it changes, then the keys."""

    DEFAULT_CSS = """
    ProposalCard { height: auto; border: round $accent; padding: 0 1; margin: 1 0; }
    ProposalCard.-closed { border: round $panel; }
    ProposalCard.-failed { border: round $error; }
    ProposalCard .proposal-verdict { text-style: bold; }
    ProposalCard.-passed .proposal-verdict { color: $success; }
    ProposalCard.-failed .proposal-verdict { color: $error; }
    ProposalCard .proposal-head { color: $text-muted; }
    ProposalCard .proposal-keys { color: $text-muted; }
    ProposalCard .proposal-armed { color: $warning; text-style: bold; }
    """

    def __init__(self, proposal_id: str, proposal: dict, state: str) -> None:
        super().__init__()
        self.proposal_id = proposal_id
        self.proposal = dict(proposal)
        self.state = state
        self.armed = ""  # the first ``a`` on an unsafe proposal: what it said; a second ``a`` accepts
        self.armed_at = 0.0  # when it was armed, on the chat's clock
        self.left_out: set[int] = set()  # hunks (0-based) toggled out of an accept
        self._shown_diff = ""

    @property
    def verdict(self) -> Verdict:
        return verdict_of(self.proposal)

    def compose(self) -> ComposeResult:
        yield Static(self._verdict_text(), classes="proposal-verdict")
        yield Static(Text(self._head()), classes="proposal-head")
        yield Static(Text(str(self.proposal.get("rationale", ""))), classes="proposal-rationale")
        yield Static(self._rows_text(), classes="proposal-rows")
        self._shown_diff = self._diff()
        if self._shown_diff:
            yield Static(self._diff_renderable(), classes="proposal-diff")
        yield Static(self._keys(), classes="proposal-keys")
        self._set_classes()

    def _diff(self) -> str:
        # Decided, the card shows what reached the disk: the edit written, or the hunks left out marked.
        return marked_diff(self.proposal) if self.written is not None else str(self.proposal.get("diff") or "")

    def _diff_renderable(self) -> Syntax:
        from rich.syntax import Syntax  # pygments is slow to import: only when a diff is shown

        return Syntax(self._shown_diff.rstrip(), "diff", theme="ansi_dark", background_color="default",
                      word_wrap=True)

    @property
    def written(self) -> Written | None:
        """What the accept wrote (None while open, rejected, or for a proposal never accepted)."""
        return written_of(self.proposal, self.proposal_id) if self.state in ("accepted", "undone") else None

    def _verdict_text(self) -> Text:
        written = self.written
        if written is not None and not written.trial_covers_it:
            # The trial checked the proposal's text; the verdict that matters is the written text's.
            ok = written.verdict_ok
            return Text(f"{'…' if ok is None else ('✓' if ok else '✗')} {written.label} · {written.verdict}")
        verdict = self.verdict
        mark = OUTCOME_MARKS.get(verdict.outcome)
        return Text(f"{mark} {verdict.headline}" if mark else verdict.headline)

    def _head(self) -> str:
        written = self.written
        state = written.label if written is not None and self.state == "accepted" else self.state.replace("_", " ")
        trial = f" · {self.verdict.headline} (of the proposal's text)" if written and not written.trial_covers_it else ""
        return f"{self.proposal_id} · {self.proposal.get('file') or 'kernel'} · {self.verdict.diff_stat} · {state}{trial}"

    def _rows_text(self) -> Text:
        text = Text()
        for row in self.verdict.rows:
            mark = {"ok": "✓", "warn": "!", "fail": "✗", "skip": "–"}.get(row.status, "?")
            text.append(f"{mark} {row.rung} ", style="bold" if row.status == "fail" else "")
            text.append(row.text + "\n", style="" if row.status == "fail" else "dim")
        text.rstrip()
        return text

    def _keys(self) -> Text:
        if self.armed:
            return Text(self.armed, style="bold")
        if self.state in OPEN_STATES:
            # The verdict again where a narrow, bottom-anchored chat shows the card first: next to the keys.
            outcome = self.verdict.outcome
            text = Text(f"{OUTCOME_MARKS.get(outcome, '·')} {outcome}  ", style="bold")
            for key, rest in (("a", "ccept"), ("e", "dit"), ("r", "eject"), ("f", "eedback")):
                text.append("[")
                text.append(key, style="bold")
                text.append(f"]{rest}  ")
            hunks = len(self.proposal.get("hunks") or [])
            if hunks > 1:
                chosen = " ".join(f"{n + 1}{'✗' if n in self.left_out else '✓'}" for n in range(hunks))
                text.append(f"hunks {chosen} (1-{min(hunks, 9)} toggle)  ")
            text.append("(typing? esc first)", style="dim")
            return text
        reason = self.proposal.get("decision_reason") or ""
        more = "  [u]ndo" if self.state == "accepted" else ""
        written = self.written
        state = written.label if written is not None and self.state == "accepted" else self.state
        return Text(f"{state}" + (f": {reason}" if reason else "") + more)

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def hunks_to_accept(self) -> list[int] | None:
        """None: every hunk; else the ones not toggled out."""
        if not self.left_out:
            return None
        return [n for n in range(len(self.proposal.get("hunks") or [])) if n not in self.left_out]

    def toggle_hunk(self, number: int) -> bool:
        """Leave hunk ``number`` (1-based) out of an accept, or put it back; False when there is none."""
        if not 1 <= number <= len(self.proposal.get("hunks") or []):
            return False
        self.left_out ^= {number - 1}
        self.armed = ""
        self._refresh()
        return True

    def arm(self, warning: str, now: float) -> None:
        self.armed = warning
        self.armed_at = now
        self._refresh()

    def confirmed(self, now: float) -> bool:
        """Whether an ``a`` at ``now`` confirms the armed accept: the warning has been on screen for
        CONFIRM_AFTER_S. Two ``a`` that reach the app together (typed over a slow SSH link, sent by
        a script) have no key between them to disarm; the pause tells them from a confirmation."""
        return bool(self.armed) and now - self.armed_at >= CONFIRM_AFTER_S

    def disarm(self) -> None:
        if self.armed:
            self.armed = ""
            self._refresh()

    def update_state(self, state: str, proposal: dict) -> None:
        before = self.verdict.outcome
        self.state = state
        self.proposal.update({k: v for k, v in proposal.items() if v not in (None, "")})
        if state not in OPEN_STATES or self.verdict.outcome != before:
            self.armed = ""  # a second a confirms what the first one said, not a verdict that came since
        self._refresh()

    def _set_classes(self) -> None:
        outcome = self.verdict.outcome
        written = self.written
        if written is not None and not written.trial_covers_it:
            ok = written.verdict_ok
            outcome = "" if ok is None else (PASSED if ok else FAILED)
        self.set_class(not self.is_open, "-closed")
        self.set_class(outcome == PASSED, "-passed")
        self.set_class(outcome == FAILED, "-failed")

    def _refresh(self) -> None:
        self._set_classes()
        if self.is_mounted:
            self.query_one(".proposal-verdict", Static).update(self._verdict_text())
            self.query_one(".proposal-head", Static).update(Text(self._head()))
            self.query_one(".proposal-rows", Static).update(self._rows_text())
            diff = self._diff()
            if diff != self._shown_diff and diff:
                self._shown_diff = diff
                found = self.query(".proposal-diff")
                if found:
                    found.first(Static).update(self._diff_renderable())
            keys = self.query_one(".proposal-keys", Static)
            keys.update(self._keys())
            keys.set_class(bool(self.armed), "proposal-armed")


class ChatLog(VerticalScroll, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.CHAT_LOG)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        pane = next((a for a in self.ancestors if isinstance(a, ChatPane)), None)
        if pane is not None:
            pane.scrolled(up=new_value < old_value, at_end=self.max_scroll_y - new_value <= 1)

    def on_mount(self) -> None:
        self.anchor()  # follow new output (released when the person scrolls up, restored at the end)

    def _pane(self) -> ChatPane:
        return next(a for a in self.ancestors if isinstance(a, ChatPane))

    def action_decide(self, decision: str) -> None:
        self._pane().decide(decision)

    def action_feedback(self) -> None:
        self._pane().start_feedback()

    def action_edit(self) -> None:
        self._pane().edit_proposal()

    def action_toggle_hunk(self, number: int) -> None:
        self._pane().toggle_hunk(number)

    def action_follow(self) -> None:
        self._pane().follow()

    def action_compose(self) -> None:
        self._pane().input_widget.focus()


class ChatInput(Input):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.CHAT_INPUT)

    def action_leave(self) -> None:
        """Back to the history (where a second esc stops a turn in flight: leaving the input to press a
        must not stop the trial it is waiting for)."""
        pane = next(a for a in self.ancestors if isinstance(a, ChatPane))
        pane.cancel_feedback()
        pane.log_widget.focus()


class ChatPane(Vertical):
    DEFAULT_CSS = """
    ChatPane #chat-label { height: auto; max-height: 6; color: $text-muted; padding: 0 1; text-overflow: ellipsis; }
    ChatPane ChatLog { height: 1fr; min-height: 3; padding: 0 1; }
    ChatPane ChatInput { height: 3; }
    ChatPane #chat-activity { height: auto; max-height: 2; padding: 0 1; color: $warning; display: none; }
    ChatPane #chat-activity.-busy { display: block; }
    ChatPane .user { color: $text; text-style: bold; margin: 1 0 0 0; }
    ChatPane .notice { color: $text-muted; }
    ChatPane .agent-error { color: $error; }
    ChatPane Markdown { margin: 0; padding: 0; background: transparent; }
    """

    def __init__(self, label: str = "", *, clock: Callable[[], float] = time.monotonic,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.clock = clock  # the app's (AppOptions.clock): how long an armed accept's warning has been shown
        self.replies: dict[str, Markdown] = {}
        self.reply_text: dict[str, str] = {}
        self.tools: dict[str, ToolCallEntry] = {}
        self.cards: dict[str, ProposalCard] = {}
        self.new_below = False  # output arrived below the view while the person reads further up
        self.reading = False  # the person scrolled up (the history's anchor is released)
        self.feedback_for: str | None = None
        self.feedback_kind = "redirect"  # what the input's text is while feedback_for is set: redirect | reject
        self._pending: set[str] = set()  # streaming replies waiting to be re-rendered
        self.activity = ""  # the agent's activity line as shown

    def compose(self) -> ComposeResult:
        self.label_widget = Static(Text(self.label), id="chat-label")
        self.log_widget = ChatLog(id="chat-log")
        self.input_widget = ChatInput(placeholder="ask the agent… (enter sends)", id="chat-input")
        self.activity_widget = Static("", id="chat-activity")
        yield self.label_widget
        yield self.log_widget
        yield self.activity_widget
        yield self.input_widget

    def show_activity(self, line: str) -> None:
        """What the agent is doing ("● waiting for the model · 3 s"), or "" to hide the line."""
        if line == self.activity:
            return
        self.activity = line
        self.activity_widget.update(Text(line))
        self.activity_widget.set_class(bool(line), "-busy")

    def set_label(self, label: str) -> None:
        self.label = label
        self.label_widget.update(self._label_text())

    def clear(self) -> None:
        """Empty the conversation (a replay going back in time rebuilds it)."""
        self.log_widget.remove_children()
        self.replies.clear()
        self.reply_text.clear()
        self.tools.clear()
        self.cards.clear()
        self._pending.clear()
        self.new_below = self.reading = False

    # -- rendering events ---------------------------------------------------------------------

    def _append(self, widget: Widget) -> None:
        self.log_widget.mount(widget)
        self._grew()

    def _grew(self) -> None:
        """New output: the history is anchored to its end (Textual keeps it there until the person scrolls
        up); when it is not at the end once laid out, the label says that there is more below."""
        self.log_widget.call_after_refresh(self._check_below)

    def _check_below(self) -> None:
        log = self.log_widget
        below = log.max_scroll_y - log.scroll_y > 1
        if self.reading and below and not self.new_below:
            self.new_below = True
            self.label_widget.update(self._label_text())

    def follow(self) -> None:
        """Back to the newest output, and keep following it (after a decision, a message, or ``end``)."""
        self.reading = False
        self.log_widget.anchor()
        self._show_caught_up()

    def _show_caught_up(self) -> None:
        if self.new_below:
            self.new_below = False
            self.label_widget.update(self._label_text())

    def scrolled(self, up: bool, at_end: bool) -> None:
        """The person scrolled the history: up, they are reading (new output is marked); back at the end,
        the marker goes. Following the output only ever scrolls down."""
        if at_end:
            self.reading = False
            self._show_caught_up()
        elif up:
            self.reading = True

    def _label_text(self) -> Text:
        text = Text(self.label)
        if self.new_below:
            text.append("  ↓ new below (end)", style="bold reverse")
        return text

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
                md = reply_markdown(event.text)
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
            made = [c for c in self.cards.values() if c.proposal.get("call_id") == event.call_id]
            started.finish(event, trial_failed=any(c.verdict.outcome == FAILED for c in made))
        elif isinstance(event, ev.ProposalEvent):
            card = self.cards.get(event.proposal_id)
            if card is None:
                card = ProposalCard(event.proposal_id, event.proposal, event.state)
                self.cards[event.proposal_id] = card
                self._append(card)
            else:
                card.update_state(event.state, event.proposal)
                self._grew()
        elif isinstance(event, ev.AgentError):
            self._append(Static(Text(f"agent error ({event.kind}): {event.message}"), classes="agent-error"))
        elif isinstance(event, ev.Notice):
            self._append(Static(Text(event.message), classes="notice" if event.level == "info" else "agent-error"))

    def _delta(self, turn_id: str, text: str) -> None:
        self.reply_text[turn_id] = self.reply_text.get(turn_id, "") + text
        if turn_id not in self.replies:
            md = reply_markdown("")
            self.replies[turn_id] = md
            self._append(md)
        # Deltas arrive faster than a frame: re-render each streaming reply at most every 50 ms.
        if not self._pending:
            self.set_timer(0.05, self._flush)
        self._pending.add(turn_id)

    def _flush(self) -> None:
        pending, self._pending = self._pending, set()
        for turn_id in pending:
            md = self.replies.get(turn_id)
            if md is not None:
                _update_markdown(md, self.reply_text[turn_id])
        self._grew()

    # -- input --------------------------------------------------------------------------------

    def open_proposal(self) -> ProposalCard | None:
        for card in reversed(list(self.cards.values())):
            if card.is_open:
                return card
        return None

    def armed_proposal(self) -> ProposalCard | None:
        """The open proposal whose accept waits for its confirming ``a``, if any."""
        card = self.open_proposal()
        return card if card is not None and card.armed else None

    def key_between(self, key: str) -> None:
        """A key that is not the accept: the second ``a`` that writes a failed proposal must follow the
        first with nothing typed in between but scrolling (a message typed into the history by
        mistake, "again" is a, g, a, is not a confirmation)."""
        card = self.armed_proposal()
        if card is not None and key not in READING_KEYS:
            card.disarm()

    def decide(self, decision: str) -> None:
        card = self.open_proposal()
        if card is None:
            self.notify("no open proposal to decide on", severity="warning")
            return
        if decision == "reject":
            self._ask(card, "reject", f"why reject {card.proposal_id}? (optional, sent to the model; enter rejects, "
                                      "esc cancels)")
            return
        if decision == "accept":
            verdict = card.verdict
            now = self.clock()
            if not verdict.safe_to_accept and not card.confirmed(now):
                # A failed (or unfinished) trial is never one key away from the file, nor two keys typed
                # together.
                if not card.armed:
                    card.arm(verdict.warning(card.proposal_id, str(card.proposal.get("file") or "the kernel")), now)
                return
        card.disarm()
        self.follow()  # what the decision brings (the agent's answer, the next proposal) shows below
        self.post_message(ProposalDecision(card.proposal_id, decision, hunks=card.hunks_to_accept()))

    def edit_proposal(self) -> None:
        card = self.open_proposal()
        if card is None or not card.proposal.get("new_source"):
            self.notify("no open proposal to edit", severity="warning")
            return
        card.disarm()
        self.post_message(EditProposal(card.proposal_id, str(card.proposal["new_source"])))

    def toggle_hunk(self, number: int) -> None:
        card = self.open_proposal()
        if card is None or not card.toggle_hunk(number):
            self.notify(f"no hunk {number} in an open proposal", severity="warning")

    def start_feedback(self) -> None:
        card = self.open_proposal()
        if card is None:
            self.notify("no open proposal to give feedback on", severity="warning")
            return
        self._ask(card, "redirect", f"feedback on proposal {card.proposal_id}: where should it go instead? "
                                    "(esc cancels)")

    def _ask(self, card: ProposalCard, decision: str, placeholder: str) -> None:
        card.disarm()
        self.feedback_for = card.proposal_id
        self.feedback_kind = decision
        box = self.input_widget
        box.placeholder = placeholder
        box.focus()

    def cancel_feedback(self) -> None:
        self.feedback_for = None
        self.input_widget.placeholder = "ask the agent… (enter sends)"

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if self.feedback_for is not None and (text or self.feedback_kind == "reject"):
            event.input.value = ""
            pid = self.feedback_for
            self.cancel_feedback()
            self.log_widget.focus()
            self.follow()
            self.post_message(ProposalDecision(pid, self.feedback_kind, text))
            return
        if not text:
            return
        event.input.value = ""
        self.follow()
        self.post_message(ChatSubmitted(text))


def reply_markdown(text: str) -> Markdown:
    """A reply's widget. Textual's Markdown (markdown-it behind it) is imported with the first reply,
    not with the pane: the app's first paint shows no reply, and that import costs about as much as
    the rest of the pane's."""
    from textual.widgets import Markdown

    return Markdown(text)


def _update_markdown(md: Markdown, text: str) -> None:
    """Set a reply's text; one not mounted yet would overwrite it with its initial text when it mounts,
    so the update waits in its queue behind the mount (replies that complete within a frame: replay)."""
    if md.is_mounted:
        md.update(text)
    else:
        md.call_later(md.update, text)
