"""Agent failures a person must see, and keeping secrets out of every message."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kerneltui.core.agent.conversation import Usage

# The kinds an AgentError event carries (core.events.AgentError.kind).
NO_KEY, AUTH, RATE_LIMIT, NETWORK, REFUSED, PROVIDER, TOOL, CONFIG, SCRIPT, BUDGET, CUT_OFF = (
    "no_key", "auth", "rate_limit", "network", "refused", "provider", "tool", "config", "script", "budget", "cut_off",
)


class ProviderError(Exception):
    """A model request that failed: ``kind`` says which way, ``message`` what to do about it.

    ``usage``: what the server had reported of the request's tokens before it failed (a reply cut
    off mid-stream was still paid for), or None.
    """

    def __init__(self, kind: str, message: str, usage: Usage | None = None, retry: str | None = None,
                 timed_out: bool = False, final: str | None = None, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.usage = usage
        # A failure before the reply began that may pass when asked again: what to say while waiting
        # ("openai did not answer in 120 s"), and, after the last try, the message (``{tries}`` filled in).
        self.retry = retry
        self.timed_out = timed_out
        self.final = final
        self.wait_s = wait_s  # how long the server asked to wait before asking again (Retry-After)

    def after_tries(self, tries: int) -> ProviderError:
        """The error as reported once every try failed: how many were made, and what to change."""
        message = (self.final or self.message).replace("{tries}", f"{tries} tr{'y' if tries == 1 else 'ies'}")
        return ProviderError(self.kind, message, self.usage)


def cut_off(provider: str, why: str, usage: Usage | None = None) -> ProviderError:
    """The one error every provider raises for a reply that did not arrive whole."""
    return ProviderError(CUT_OFF, f"the reply was cut off: {provider} {why}", usage)


def redact(text: str, secrets: Iterable[str]) -> str:
    """Remove API keys (and any prefix of one that a server echoed back) from a message."""
    for secret in secrets:
        if not secret or len(secret) < 8:
            continue
        text = text.replace(secret, "[redacted]")
        # Servers echo keys partly masked ("sk-abc1***wxyz"); drop any 8+ character prefix of it too.
        for n in range(len(secret) - 1, 7, -1):
            if secret[:n] in text:
                text = text.replace(secret[:n], "[redacted]")
                break
    return text
