"""Budgets checked before a request, not after: its input estimated from its size, its reply capped.

A request's input tokens are not known until the server answers, so they are estimated from the
request's characters with the characters-per-token ratio of the session's last answered request
(3 before the first: more tokens than most text has, so the first estimate errs on the safe side).
The reply's size is bounded by ``max_tokens``: it is lowered to what the budget has left after the
estimated input, and when not even a short reply fits, no request is made.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from kerneltui.core.agent.conversation import ModelRequest, Usage, conversation_to_json
from kerneltui.core.agent.prices import Price

MIN_REPLY_TOKENS = 512  # a reply shorter than this cannot hold a proposal; not worth a request
FIRST_CHARS_PER_TOKEN = 3.0


@dataclass(frozen=True)
class BudgetCheck:
    """Before a request: why it must not be made (``stop``), or the largest reply it may ask for."""

    stop: str | None = None
    max_output_tokens: int | None = None


def request_chars(request: ModelRequest) -> int:
    """The characters of text a request carries: system prompt, tool schemas and conversation."""
    tools = json.dumps([asdict(t) for t in request.tools])
    return len(request.system) + len(tools) + len(conversation_to_json(request.messages))


class TokenEstimator:
    """Input tokens of a request from its size, calibrated on the last request the server counted."""

    def __init__(self) -> None:
        self.chars_per_token = FIRST_CHARS_PER_TOKEN

    def observe(self, chars: int, usage: Usage) -> None:
        if usage.reported and usage.input_tokens > 0 and chars > 0:
            self.chars_per_token = chars / usage.input_tokens

    def estimate(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)


def check_tokens(limit: int, spent: int, input_estimate: int) -> BudgetCheck:
    left = limit - spent
    if left < input_estimate + MIN_REPLY_TOKENS:
        return BudgetCheck(stop=f"token budget: the next request needs about {input_estimate:,} input tokens and "
                                f"room for a reply, but {max(left, 0):,} of {limit:,} tokens are left")
    return BudgetCheck(max_output_tokens=left - input_estimate)


def check_money(limit: float, spent: float | None, input_estimate: int, price: Price | None, model: str) -> BudgetCheck:
    if spent is None or price is None:
        return BudgetCheck(stop=f"money budget cannot be tracked: a request had no price, or {model} has none "
                                f"in [prices]")
    left = limit - spent
    # Priced as uncached input: what is read from a cache costs less, so this never underestimates.
    input_cost = input_estimate * price.input / 1e6
    reply_room = (left - input_cost) / price.output * 1e6 if price.output > 0 else float("inf")
    if reply_room < MIN_REPLY_TOKENS:
        return BudgetCheck(stop=f"money budget: the next request costs about ${input_cost:.4f} before its reply, "
                                f"but ${max(left, 0):.4f} of ${limit:.4f} is left")
    return BudgetCheck(max_output_tokens=None if math.isinf(reply_room) else int(reply_room))


def combine(*checks: BudgetCheck) -> BudgetCheck:
    for check in checks:
        if check.stop:
            return check
    caps = [c.max_output_tokens for c in checks if c.max_output_tokens is not None]
    return BudgetCheck(max_output_tokens=min(caps) if caps else None)
