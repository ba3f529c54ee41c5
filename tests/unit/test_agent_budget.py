"""Budgets checked before a request: the input estimated from the request's size, the reply capped."""

from __future__ import annotations

from kerneltui.core.agent.budget import (
    MIN_REPLY_TOKENS,
    TokenEstimator,
    check_money,
    check_tokens,
    combine,
    request_chars,
)
from kerneltui.core.agent.conversation import Message, ModelRequest, ToolSpec, Usage
from kerneltui.core.agent.prices import Price


def test_the_estimate_is_calibrated_on_the_last_counted_request():
    request = ModelRequest(system="s" * 900, messages=[Message("user", "hi")],
                           tools=[ToolSpec("t", "d", {"type": "object"})])
    chars = request_chars(request)
    assert chars > 900
    estimator = TokenEstimator()
    assert estimator.estimate(3000) == 1000  # 3 characters per token before any answer: errs high
    estimator.observe(4000, Usage(input_tokens=1000, output_tokens=5))
    assert estimator.estimate(8000) == 2000
    estimator.observe(4000, Usage(reported=False))  # a server without usage teaches nothing
    assert estimator.estimate(8000) == 2000


def test_token_budget_caps_the_reply_and_refuses_a_request_that_cannot_fit():
    check = check_tokens(limit=10_000, spent=4_000, input_estimate=2_000)
    assert check.stop is None and check.max_output_tokens == 4_000
    check = check_tokens(limit=10_000, spent=8_000, input_estimate=1_600)
    assert check.stop == ("token budget: the next request needs about 1,600 input tokens and room for a reply, "
                          "but 2,000 of 10,000 tokens are left")
    assert check_tokens(10_000, 12_000, 10).stop.endswith("but 0 of 10,000 tokens are left")


def test_money_budget_prices_the_input_and_caps_the_reply():
    price = Price(input=10.0, output=20.0)  # per million tokens
    check = check_money(limit=0.10, spent=0.02, input_estimate=1_000, price=price, model="m")
    assert check.stop is None and check.max_output_tokens == 3_500  # ($0.08 − $0.01) / $20 per million
    assert check_money(0.10, 0.0999, 1_000, price, "m").stop.startswith("money budget: the next request costs about")
    assert check_money(0.10, None, 1_000, price, "m").stop.startswith("money budget cannot be tracked")
    assert check_money(0.10, 0.0, 1_000, None, "m").stop.startswith("money budget cannot be tracked")


def test_combined_checks_take_the_first_stop_and_the_smallest_cap():
    a, b = check_tokens(10_000, 0, 1_000), check_tokens(5_000, 0, 1_000)
    assert combine(a, b).max_output_tokens == 4_000
    refused = check_tokens(1_000, 0, 1_000)
    assert combine(a, refused).stop == refused.stop
    assert combine().max_output_tokens is None and MIN_REPLY_TOKENS > 0
