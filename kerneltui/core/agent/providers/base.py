"""What every model provider offers the session: one streamed request at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kerneltui.core.agent.conversation import ModelReply, ModelRequest

TextSink = Callable[[str], None]


class Provider(Protocol):
    name: str  # "anthropic", "openai", "openai-compatible", "scripted"
    model: str

    def describe(self) -> str:
        """One line for the status bar: provider, model, where (never the key)."""
        ...

    def secrets(self) -> list[str]:
        """Strings that must never appear in an event, a log or a message (the API key)."""
        ...

    async def complete(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        """Send the request, call ``on_text`` with each streamed piece of text, return the reply.

        Raises :class:`kerneltui.core.agent.errors.ProviderError` for every failure.
        """
        ...

    async def close(self) -> None:
        ...
