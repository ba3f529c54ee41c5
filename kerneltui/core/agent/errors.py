"""Agent failures a person must see, and keeping secrets out of every message."""

from __future__ import annotations

from collections.abc import Iterable

# The kinds an AgentError event carries (core.events.AgentError.kind).
NO_KEY, AUTH, RATE_LIMIT, NETWORK, REFUSED, PROVIDER, TOOL, CONFIG, SCRIPT, BUDGET = (
    "no_key", "auth", "rate_limit", "network", "refused", "provider", "tool", "config", "script", "budget",
)


class ProviderError(Exception):
    """A model request that failed: ``kind`` says which way, ``message`` what to do about it."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


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
