"""An agent that answers from a fixed script: what the chat uses when no API key is configured.

It speaks the same events as a model-backed agent (user message, streamed reply, tool calls, a
proposal), so the whole chat flow works offline, in the demo and in tests. Its label says plainly
that it is scripted and why. Accepting its proposal writes the proposed source to the kernel file,
which reruns the loop like any other save.
"""

from __future__ import annotations

import asyncio
import difflib
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui.core.events import (
    AgentMessage,
    AgentTextDelta,
    Emit,
    Event,
    Notice,
    ProposalEvent,
    ToolCallFinished,
    ToolCallStarted,
    UserMessage,
)


@dataclass(frozen=True)
class ScriptedEdit:
    """A proposal made by replacing ``old`` with ``new`` in the kernel source."""

    rationale: str
    old: str
    new: str


@dataclass
class ScriptedTurn:
    reply: str
    tool: tuple[str, str] | None = None  # (name, summary) of a tool call made before replying
    edit: ScriptedEdit | None = None


def default_script() -> list[ScriptedTurn]:
    return [
        ScriptedTurn(
            tool=("read_file", "read_file('kernel.py')"),
            reply=(
                "This kernel is **memory-bound**: each element moves 12 bytes for one add, so the "
                "roofline floor is the copy bandwidth.\n\n"
                "A larger block means fewer programs and fewer tail masks. I propose `BLOCK = 2048`; "
                "the harness will check it on every shape before you keep it."
            ),
            edit=ScriptedEdit(rationale="Use 2048-element blocks: half the programs, same memory traffic.",
                              old="BLOCK = 1024", new="BLOCK = 2048"),
        ),
        ScriptedTurn(
            reply=(
                "I am a scripted agent, so I only know a couple of moves. With an API key configured "
                "(`[agent]` in the config file, or `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`), a model "
                "answers here instead."
            ),
        ),
    ]


@dataclass
class ScriptedAgent:
    kernel_path: Path
    reason: str = "no API key configured"
    script: list[ScriptedTurn] = field(default_factory=default_script)
    delay_s: float = 0.02  # between streamed pieces, so the reply visibly streams
    label: str = ""
    _emit: Emit = field(default=lambda event: None, repr=False)
    _turn: int = 0
    _proposals: dict[str, str] = field(default_factory=dict)  # id -> proposed source

    def __post_init__(self) -> None:
        if not self.label:
            self.label = f"scripted agent · {self.reason}"

    def attach(self, emit: Emit) -> None:
        self._emit = emit
        self._emit(Notice(level="info", source="agent",
                          message=f"The agent is scripted: {self.reason}. Replies come from a fixed script."))

    def _send_event(self, event: Event) -> None:
        self._emit(event)

    async def send(self, text: str) -> None:
        self._send_event(UserMessage(text=text))
        turn_id = uuid.uuid4().hex[:8]
        step = self.script[min(self._turn, len(self.script) - 1)]
        self._turn += 1
        if step.tool is not None:
            call_id = uuid.uuid4().hex[:8]
            name, summary = step.tool
            self._send_event(ToolCallStarted(turn_id=turn_id, call_id=call_id, name=name, summary=summary))
            await asyncio.sleep(self.delay_s)
            source = self._read()
            self._send_event(ToolCallFinished(turn_id=turn_id, call_id=call_id, name=name, ok=source is not None,
                                              summary=f"{len((source or '').splitlines())} lines" if source is not None
                                              else f"cannot read {self.kernel_path.name}", output=source or ""))
        words = step.reply.split(" ")
        for i, word in enumerate(words):
            self._send_event(AgentTextDelta(turn_id=turn_id, text=word + (" " if i < len(words) - 1 else "")))
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
        self._send_event(AgentMessage(turn_id=turn_id, text=step.reply, provider="scripted", model="script"))
        if step.edit is not None:
            self._propose(step.edit)

    def _read(self) -> str | None:
        try:
            return self.kernel_path.read_text(encoding="utf-8")
        except OSError:
            return None

    def _propose(self, edit: ScriptedEdit) -> None:
        source = self._read()
        if source is None or edit.old not in source:
            self._send_event(Notice(level="info", source="agent",
                                    message=f"(the scripted proposal does not apply: `{edit.old}` is not in the kernel)"))
            return
        new_source = source.replace(edit.old, edit.new, 1)
        proposal_id = uuid.uuid4().hex[:6]
        self._proposals[proposal_id] = new_source
        diff = "".join(difflib.unified_diff(source.splitlines(True), new_source.splitlines(True),
                                            fromfile=self.kernel_path.name, tofile=self.kernel_path.name + " (proposed)"))
        self._send_event(ProposalEvent(proposal_id=proposal_id, state="pending", proposal={
            "id": proposal_id, "kind": "edit", "rationale": edit.rationale, "new_source": new_source, "diff": diff,
        }))

    async def decide(self, proposal_id: str, decision: str, feedback: str = "") -> None:
        new_source = self._proposals.pop(proposal_id, None)
        if new_source is None:
            self._send_event(Notice(level="warning", source="agent", message=f"no pending proposal {proposal_id}"))
            return
        if decision == "accept":
            self.kernel_path.write_text(new_source, encoding="utf-8")
            self._send_event(ProposalEvent(proposal_id=proposal_id, state="accepted",
                                           proposal={"id": proposal_id, "decision_reason": "accepted by you"}))
        elif decision == "redirect":
            self._send_event(ProposalEvent(proposal_id=proposal_id, state="redirected",
                                           proposal={"id": proposal_id, "decision_reason": feedback}))
            await self.send(feedback)
        else:
            self._send_event(ProposalEvent(proposal_id=proposal_id, state="rejected",
                                           proposal={"id": proposal_id, "decision_reason": feedback or "rejected by you"}))
