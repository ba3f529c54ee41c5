"""The chat's controller over the agent engine (``core.agent.AgentChat``), the only agent the app has.

``open_agent`` picks what the chat talks to: the configured provider when it can be built; with
no API key, the engine's scripted provider, replaying the recorded demo chat when the task is
the vector_add example and otherwise a short offline script (``offline_script``). Each label says
which, and why. Every chat takes its trials' workers from the app's one pool.

The provider (and with it the label) is built at once; the ``AgentChat`` is made on first use,
which the app makes after its first paint (``attach``): the engine behind it (tools, trials, the
context index over the task's folders) is the largest import of the app's start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kerneltui import config as config_mod
from kerneltui.core.agent import ProviderError, demo_script_path
from kerneltui.core.agent.diffs import unified_diff
from kerneltui.core.agent.prices import PriceTable
from kerneltui.core.agent.providers import Provider, build_provider
from kerneltui.core.agent.providers.scripted import Script, ScriptedProvider
from kerneltui.core.agent.settings import AgentSettings, resolve_api_key
from kerneltui.core.events import AgentError, Emit, Event, Notice
from kerneltui.core.task import Task, TaskError
from kerneltui.core.worker.parent.pool import WorkerPool

if TYPE_CHECKING:
    from kerneltui.core.agent.chat import AgentChat

DEMO_TASK = "vector_add"  # the example the recorded demo chat was made on
OFFLINE_EDIT = ("BLOCK = 1024", "BLOCK = 2048")  # the one move the offline script knows
NO_KEY_HELP = ("I am a scripted agent, so I only know a couple of moves. With an API key configured "
               "(`[agent]` in the config file, or `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`), a model answers "
               "here instead.")


class Relay:
    """The chat's ``emit`` until the app attaches: events go wherever ``target`` points."""

    def __init__(self) -> None:
        self.target: Emit = _drop

    def __call__(self, event: Event) -> None:
        self.target(event)


def _drop(event: Event) -> None:
    return None


class ChatAgent:
    """Forwards the chat to an AgentChat; the chat emits the agent events itself."""

    def __init__(self, make_chat: Callable[[], AgentChat], label: str, relay: Relay, greeting: str = "") -> None:
        self._make_chat = make_chat
        self._chat: AgentChat | None = None
        self.label = label
        self._relay = relay
        self._greeting = greeting  # said in the chat once attached (why the agent is scripted)

    @property
    def chat(self) -> AgentChat:
        """The engine's chat, made on first use (``attach`` at the latest)."""
        if self._chat is None:
            self._chat = self._make_chat()
        return self._chat

    def attach(self, emit: Emit) -> None:
        self._relay.target = emit
        self.chat  # noqa: B018  (made now, after the first paint: its first events go to ``emit``)
        if self._greeting:
            emit(Notice(level="info", source="agent", message=self._greeting))
        # The chat header and status line already say who the agent is (the chat's start notice
        # would repeat it): only the context index is started here.
        self.chat.index_in_background()

    def observe(self, event: Event) -> None:
        self.chat.observe(event)

    async def send(self, text: str) -> None:
        try:
            await self.chat.send(text)
        except Exception as exc:  # a provider failure must reach the chat, not end the app
            self._relay(AgentError(turn_id="", kind="provider", message=f"{type(exc).__name__}: {exc}"))

    @property
    def busy(self) -> bool:
        return self._chat is not None and self._chat.busy

    async def decide(self, proposal_id: str, decision: str, feedback: str = "", hunks: list[int] | None = None,
                     edited_source: str | None = None) -> None:
        try:
            await self.chat.decide(proposal_id, decision, reason=feedback, hunks=hunks, edited_source=edited_source)
        except Exception as exc:
            self._relay(AgentError(turn_id="", kind="tool", message=f"{decision} {proposal_id}: {exc}"))

    async def undo(self) -> None:
        try:
            await self.chat.undo()
        except Exception as exc:
            self._relay(AgentError(turn_id="", kind="tool", message=f"undo: {exc}"))

    def interrupt(self) -> bool:
        return self.chat.interrupt()

    def conversation(self) -> str | None:
        return self.chat.conversation_json()

    def restore(self, conversation: str) -> None:
        self.chat.restore_conversation(conversation)

    async def close(self) -> None:
        if self._chat is not None:  # never made: nothing to stop
            await self._chat.close()


def open_agent(task: Task, pool: WorkerPool, settings: config_mod.Config) -> ChatAgent:
    try:
        agent_settings = AgentSettings.from_config(settings)
        provider = build_provider(agent_settings)
        return chat_agent(task, pool, provider, agent_settings, settings, live_label(provider, agent_settings))
    except ProviderError as exc:
        reason = str(exc).splitlines()[0]
    script = demo_script_path()
    if task.name == DEMO_TASK and script.is_file():
        try:
            agent_settings = AgentSettings.from_config(settings, provider="scripted", script=str(script))
            return chat_agent(task, pool, build_provider(agent_settings), agent_settings, settings,
                              f"scripted demo agent · {reason}")
        except ProviderError:
            pass  # the recorded demo cannot be read: the offline script still can
    return scripted_agent(task, pool, offline_script(task), reason, settings)


def chat_agent(task: Task, pool: WorkerPool, provider: Provider, agent_settings: AgentSettings,
               settings: config_mod.Config | None, label: str, greeting: str = "") -> ChatAgent:
    """The controller over a chat with ``provider``, made when first needed (``ChatAgent.chat``)."""
    relay = Relay()

    def make_chat() -> AgentChat:
        # Imported here, not at the top: the engine loads after the app's first paint (module docstring).
        from kerneltui.core.agent.chat import AgentChat

        return AgentChat(task, provider, relay, settings=agent_settings, pool=pool,
                         prices=PriceTable.from_config(settings))

    return ChatAgent(make_chat, label, relay, greeting)


def live_label(provider: Provider, settings: AgentSettings) -> str:
    """Provider, model, where the key comes from, then the server (cut first in a narrow status line):
    the one line that says what is talked to."""
    try:
        key = resolve_api_key(settings).source
    except ProviderError:
        key = "none"  # a provider that takes no key (the scripted one)
    return f"{provider.name} {settings.model} · key: {key} · {settings.base_url or 'the official API'}"


def scripted_agent(task: Task, pool: WorkerPool, script: Script, reason: str,
                   settings: config_mod.Config | None = None) -> ChatAgent:
    """An AgentChat replaying ``script``, labelled as scripted and why."""
    agent_settings = AgentSettings.from_config(settings, provider="scripted", script=script.source)
    return chat_agent(task, pool, ScriptedProvider(script), agent_settings, settings, f"scripted agent · {reason}",
                         greeting=f"The agent is scripted: {reason}. Replies come from a fixed script.")


def offline_script(task: Task) -> Script:
    """What the agent says without a model: it reads the kernel, proposes the one edit it knows when
    the kernel has that line (checked by a trial like any proposal), then says how to get a model."""
    try:
        kernel = task.kernel_source()
    except TaskError:
        kernel = ""
    old, new = OFFLINE_EDIT
    turns: list[dict[str, object]] = [
        {"text": "Let me read the kernel first.",
         "tool_calls": [{"name": "read_file", "arguments": {"path": task.kernel_file}}]},
    ]
    if old in kernel:
        diff = unified_diff(kernel, kernel.replace(old, new, 1), task.kernel_file)
        turns.append({
            "text": ("This kernel is **memory-bound**: each element moves 12 bytes for one add, so the roofline "
                     f"floor is the copy bandwidth. A larger block means fewer programs and fewer tail masks: I "
                     f"propose `{new}`; the harness checks it on every shape before you keep it."),
            "tool_calls": [{"name": "propose_edit", "arguments": {
                "rationale": "Use 2048-element blocks: half the programs, same memory traffic.", "diff": diff}}],
        })
        turns.append({"text": "The trial has run on a scratch copy: accept, reject or tell me where to go instead."})
    else:
        turns.append({"text": f"The one move I know (`{old}` → `{new}`) does not apply to this kernel."})
    turns.append({"text": NO_KEY_HELP})
    return Script.from_dict({"name": "offline agent", "turns": turns}, source="offline script")
