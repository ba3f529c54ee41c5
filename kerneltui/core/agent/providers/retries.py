"""Asking a model server again, where the person sees it: each wait is said as it starts.

The SDKs' own retries are silent (a hung server looked like minutes of nothing), so the providers
turn them off and retry here: a request that failed before its reply began (no answer within
``[agent] timeout_s``, no connection, 429, a 5xx) is sent again up to ``[agent] max_retries``
times, after a short backoff, and ``on_wait`` receives one line per retry naming the setting that
governs it. A reply that had begun streaming is never retried here (the chat asks once more for a
cut-off reply). The final failure says how many tries were made and which settings to change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kerneltui.core.agent.conversation import ModelReply
from kerneltui.core.agent.errors import ProviderError

WaitSink = Callable[[str], None]
MAX_BACKOFF_S = 8.0
MAX_SERVER_WAIT_S = 60.0  # a longer Retry-After is not waited out: the failure is reported instead


def backoff_s(retry: int) -> float:
    """Seconds to wait before retry number ``retry`` (1, 2, 4 … capped)."""
    return min(MAX_BACKOFF_S, 2.0 ** (retry - 1))


def setting_for(error: ProviderError) -> str:
    return "[agent] timeout_s" if error.timed_out else "[agent] max_retries"


async def with_retries(attempt: Callable[[], Awaitable[ModelReply]], max_retries: int,
                       on_wait: WaitSink | None) -> ModelReply:
    tries = max(0, max_retries) + 1
    for n in range(1, tries + 1):
        try:
            return await attempt()
        except ProviderError as exc:
            if exc.retry is None:
                raise
            if n == tries or (exc.wait_s is not None and exc.wait_s > MAX_SERVER_WAIT_S):
                raise exc.after_tries(n) from exc
            delay = exc.wait_s if exc.wait_s is not None else backoff_s(n)
            if on_wait is not None:
                on_wait(f"{exc.retry}, retrying in {delay:g} s ({n + 1}/{tries}) — {setting_for(exc)}")
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")
