"""The agent on the event bridge: it sees every event of its workbench, also those from before it attached.

The app attaches the agent after the panes' first frame (``KernelApp._start_work``); a run pressed
during that frame is recorded before then. Those events are kept here and handed to the agent as it
attaches, so no run of the workbench escapes it. One agent per workbench: a task switch detaches the
old one before the new workbench is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kerneltui.core.events import Event
    from kerneltui.ui.messages import EventBridge
    from kerneltui.ui.ports import AgentController


class AgentAttachment:
    def __init__(self, bridge: EventBridge) -> None:
        self.bridge = bridge
        self.agent: AgentController | None = None  # the agent that has the bridge
        self._early: list[Event] | None = None  # what the bridge carried before it attached

    def keep_until_attached(self) -> None:
        if self._early is None:
            self._early = []
            self.bridge.subscribe(self._early.append)

    def attach(self, agent: AgentController) -> None:
        """The agent's events reach the panes, and it sees the app's. A live agent opens its engine here
        (``ChatAgent.attach``)."""
        self.agent = agent
        agent.attach(self.bridge.emit)
        for event in self._stop_keeping():
            agent.observe(event)
        self.bridge.subscribe(agent.observe)

    def detach(self, agent: AgentController) -> None:
        self.bridge.unsubscribe(agent.observe)
        self._stop_keeping()  # a workbench closed before its agent attached: its events are not the next one's

    def _stop_keeping(self) -> list[Event]:
        early, self._early = self._early or [], None
        self.bridge.unsubscribe(early.append)
        return early
