"""Shared pieces of the agent's integration tests: a session on a copy of a bundled example."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kerneltui.core.agent.chat import AgentChat
from kerneltui.core.agent.prices import PriceTable
from kerneltui.core.agent.providers.scripted import Script, ScriptedProvider
from kerneltui.core.agent.search import ContextIndex
from kerneltui.core.agent.settings import AgentSettings
from kerneltui.core.events import Event, ProposalEvent, event_from_dict, event_to_dict
from kerneltui.core.task_loaders.load import load_task

BLOCK_4096 = """\
--- a/kernel.py
+++ b/kernel.py
@@ -17,5 +17,5 @@
     out = torch.empty_like(x)
     n = x.numel()
-    BLOCK = 1024
+    BLOCK = 4096
     add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
     return out
"""
BLOCK_2048 = "@@ -19,1 +19,1 @@\n-    BLOCK = 1024\n+    BLOCK = 2048\n"
# Every default rung but the dump: its ahead-of-time compiles (15-30 s a trial on a CPU) decide nothing
# in an agent's trial here; the dump in a trial is tested by test_agent_override (trial_rungs "compile,dump").
NO_DUMP = "prechecks,compile,run,correctness,benchmark,roofline"


def propose(rationale: str, **arguments: str) -> dict[str, Any]:
    return {"name": "propose_edit", "arguments": {"rationale": rationale, **arguments}}


class Recorder:
    """Collects events, checking on the way that each one survives the session log's JSON round trip."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        data = event_to_dict(event)
        assert event_from_dict(json.loads(json.dumps(data))) == event
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def states(self, pid: str) -> list[str]:
        return [e.state for e in self.events if isinstance(e, ProposalEvent) and e.proposal_id == pid]


def make_chat(task_dir: Path, turns: list[dict[str, Any]], tmp_path: Path, *, trial_rungs: str = "",
                 verify_applied: bool = True, prices: PriceTable | None = None,
                 chunk_delay_s: float = 0.0, provider: Any = None,
                 **kwargs: Any) -> tuple[AgentChat, Recorder, Any]:
    """A session on ``task_dir``: the scripted provider replaying ``turns``, or ``provider`` (a real SDK one)."""
    task = load_task(task_dir)
    if provider is None:
        provider = ScriptedProvider(Script.from_dict({"name": "test", "turns": turns, "chunk_delay_s": chunk_delay_s}))
    recorder = Recorder()
    settings = AgentSettings(provider=provider.name, model=provider.model, trial_seeds=1, trial_rungs=trial_rungs)
    context = tmp_path / "context"
    context.mkdir(exist_ok=True)
    session = AgentChat(task, provider, recorder, settings=settings, prices=prices, context_root=context,
                           index=ContextIndex(context, db_path=tmp_path / "index.sqlite3"),
                           verify_applied=verify_applied, **kwargs)
    return session, recorder, provider


def last_sent(provider: ScriptedProvider) -> str:
    """The text of the last user-side message the model received."""
    message = provider.requests[-1].messages[-1]
    return message.text if message.role == "user" else "\n".join(r.content for r in message.tool_results)
