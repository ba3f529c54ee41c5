"""What one turn of the agent came to: its text, the proposals it made, and why it ended early.

Its own module so that auto mode, which reads it, depends on the chat's port (``core.agent.host``)
and not on the chat.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kerneltui.core.agent.errors import ProviderError


@dataclass
class TurnResult:
    text: str = ""
    proposals: list[str] = field(default_factory=list)
    tool_calls: int = 0
    requests: int = 0
    error: ProviderError | None = None
    interrupted: bool = False
    stopped: str | None = None  # why the turn ended early (tool-round limit, budget)
    stopped_by_budget: bool = False  # ``stopped`` is a budget's (auto mode's token or money limit)
    failed_tools: list[str] = field(default_factory=list)  # "call: why" of each tool call that failed
