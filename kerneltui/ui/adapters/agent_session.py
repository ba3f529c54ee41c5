"""The chat's controller over the agent engine (``core.agent.AgentSession``).

``open_agent`` picks what the chat talks to: the configured provider when it can be built; with no
API key, the engine's scripted provider replaying the recorded demo session when the task is the
vector_add example; otherwise the UI's own scripted agent. Each label says which, and why.
"""

from __future__ import annotations

from typing import Any

from kerneltui import config as config_mod
from kerneltui.core.events import AgentError, Emit, Event
from kerneltui.core.task import Task
from kerneltui.ui.adapters.scripted_agent import ScriptedAgent
from kerneltui.ui.ports import AgentController


class SessionAgent:
    """Forwards the chat to an AgentSession; the session emits the agent events itself."""

    def __init__(self, session: Any, label: str) -> None:
        self.session = session
        self.label = label
        self._emit: Emit = lambda event: None

    def forward(self, event: Event) -> None:
        self._emit(event)

    def attach(self, emit: Emit) -> None:
        self._emit = emit

    async def close(self) -> None:
        await self.session.close()

    async def send(self, text: str) -> None:
        try:
            await self.session.send(text)
        except Exception as exc:  # a provider failure must reach the chat, not end the app
            self._emit(AgentError(turn_id="", kind="provider", message=f"{type(exc).__name__}: {exc}"))

    async def decide(self, proposal_id: str, decision: str, feedback: str = "") -> None:
        try:
            await self.session.decide(proposal_id, decision, reason=feedback)
        except Exception as exc:
            self._emit(AgentError(turn_id="", kind="tool", message=f"{decision} {proposal_id}: {exc}"))


def open_agent(task: Task, settings: config_mod.Config) -> AgentController:
    try:
        from kerneltui.core.agent import ProviderError, demo_script_path, open_session
    except ImportError:
        return ScriptedAgent(kernel_path=task.kernel_path, reason="the agent engine is not installed")
    holder: dict[str, SessionAgent] = {}

    def emit(event: Event) -> None:
        agent = holder.get("agent")
        if agent is not None:
            agent.forward(event)

    try:
        session = open_session(task, emit, settings)
        label = f"{session.provider.name} · {session.settings.model}"
    except ProviderError as exc:
        reason = str(exc).splitlines()[0]
        script = demo_script_path()
        if task.name != "vector_add" or not script.is_file():
            return ScriptedAgent(kernel_path=task.kernel_path, reason=reason)
        try:
            session = open_session(task, emit, settings, provider="scripted", script=str(script))
        except ProviderError:
            return ScriptedAgent(kernel_path=task.kernel_path, reason=reason)
        label = f"scripted demo agent · {reason}"
    holder["agent"] = SessionAgent(session, label)
    return holder["agent"]
