"""A reply cut off mid-stream still cost tokens: they are counted (the server's usage, else an
estimate marked as such), and a model with no price shows "cost unknown", never $0.000."""

from __future__ import annotations

import pytest

from kerneltui.core.events import TokenUsage
from kerneltui.ui.widgets.status_line import usage_text
from tests.integration.test_agent_streams import first_argument_piece, one_turn, read_call, sdk_provider
from tests.llm_server import LLMServer, dropped, truncated


@pytest.fixture
def server():
    s = LLMServer().start()
    yield s
    s.stop()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_cut_off_reply_counts_its_tokens_and_an_unpriced_model_says_cost_unknown(server, example_task,
                                                                                          tmp_path, kind):
    whole = read_call(kind)
    keep = first_argument_piece(whole)
    server.push(truncated(whole, keep), dropped(whole, keep))
    session, rec, turn = await one_turn(sdk_provider(kind, server), example_task, tmp_path)
    assert turn.error is not None
    last = rec.of(TokenUsage)[-1]
    assert last.session_input_tokens > 0 and last.session_output_tokens > 0  # "Reading." was streamed
    assert last.session_cost_usd is None  # the test models have no price
    shown = usage_text(last)
    assert "cost unknown" in shown and "$0.000" not in shown and not shown.startswith("0.0k in")


def test_usage_text_marks_estimates_and_prices() -> None:
    priced = TokenUsage(turn_id="t", provider="openai", model="m", input_tokens=1200, output_tokens=300,
                        cost_usd=0.004, session_input_tokens=1200, session_output_tokens=300,
                        session_cost_usd=0.004)
    assert usage_text(priced) == "1.2k in · 0.3k out · $0.004"
    estimated = TokenUsage(turn_id="t", provider="openai", model="m", input_tokens=900, output_tokens=40,
                           session_input_tokens=900, session_output_tokens=40, reported=False)
    assert usage_text(estimated) == "≈0.9k in · ≈0.0k out · cost unknown"
