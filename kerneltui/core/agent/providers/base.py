"""What every model provider offers the session: one streamed request at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kerneltui.core.agent.conversation import ModelReply, ModelRequest

TextSink = Callable[[str], None]
WaitSink = Callable[[str], None]  # one line per retry, as it starts


class Provider(Protocol):
    name: str  # "anthropic", "openai", "openai-compatible", "scripted"
    model: str

    def describe(self) -> str:
        """One line for the status bar: provider, model, where (never the key)."""
        ...

    def secrets(self) -> list[str]:
        """Strings that must never appear in an event, a log or a message (the API key)."""
        ...

    def key_note(self) -> str:
        """Which key is sent where: its source by name (``env OPENAI_API_KEY``), never its value."""
        ...

    async def complete(self, request: ModelRequest, on_text: TextSink, on_wait: WaitSink | None = None) -> ModelReply:
        """Send the request, call ``on_text`` with each streamed piece of text, return the reply;
        ``on_wait`` hears of each retry as it starts (``providers.retries``).

        Raises :class:`kerneltui.core.agent.errors.ProviderError` for every failure.
        """
        ...

    async def close(self) -> None:
        ...


def key_note(key_source: str, where: str) -> str:
    if key_source.startswith("none"):
        return f"no API key is sent to {where} ({key_source})"
    return f"the API key from {key_source} is sent to {where}"
