"""Auto mode end to end: the scripted provider proposes, real CPU workers verify, the rule keeps or reverts."""

from __future__ import annotations

import asyncio

from kerneltui.core.agent.auto import AutoLimits
from kerneltui.core.agent.prices import Price, PriceTable
from kerneltui.core.events import AgentError, Notice, RunStarted, UserMessage
from kerneltui.core.history import HistoryStore
from tests.integration.agent_helpers import BLOCK_2048, BLOCK_4096, NO_DUMP, make_chat, propose


def broken_kernel(text: str) -> str:
    return text.replace("x + y, mask=mask", "x - y, mask=mask")


async def test_without_a_benchmark_it_works_toward_correctness_and_stops_once_correct(example_task, tmp_path):
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    good = kernel.read_text()
    kernel.write_text(broken_kernel(good))
    turns = [
        {"text": "Try.", "expect": "make the kernel correct; speed cannot be judged",
         "tool_calls": [propose("oops", source=good.replace("    y = tl.load(y_ptr + offs, mask=mask)",
                                                            "    y = tl.load(y_ptr + offs, mask=mask) + zz"))]},
        {"text": "Done."},
        {"text": "Fix the sign.", "expect": "\"reason\": \"reverted: compile failed: kernel.py:12: NameError",
         "tool_calls": [propose("x + y, not x - y", source=good)]},
        {"text": "Done."},
        {"text": "never reached", "tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]},
    ]
    session, rec, provider = make_chat(task_dir, turns, tmp_path, trial_rungs=NO_DUMP)
    try:
        result = await session.run_auto("make it correct and fast", AutoLimits(iterations=3, target_pct_roofline=90))
    finally:
        await session.close()
    assert result.stop_reason == ("the kernel is correct now (p2 kept), and there is no GPU here and the benchmark "
                                  "needs one, so a faster version could not be told apart")
    assert result.kept == ["p2"] and result.reverted == ["p1"] and len(provider.requests) == 4
    brief = provider.requests[0].messages[0].text
    assert "kept if it is correct (there is no benchmark here" in brief and "faster than the kept" not in brief
    assert "Stop target" not in brief  # a roofline target cannot be reached without a benchmark
    assert result.verdicts[1]["reason"] == "kept: correct, and the kept version was not"
    assert kernel.read_text() == good  # the kept fix, applied and checkpointed
    assert [c.proposal_id for c in session.checkpoints.stack] == ["p2"]
    assert result.baseline.correct is False and result.best.correct is True
    assert {e.origin for e in rec.of(RunStarted)} == {"auto"}  # baseline and trials, all recorded as auto
    history = HistoryStore.for_task(session.task).entries()
    assert sorted(e.origin for e in history) == ["auto"] * 3  # every version tried lands in the history
    assert rec.states("p1")[-1] == "rejected"
    assert rec.of(UserMessage)[0].text == "auto mode (3 iteration(s)): make it correct and fast"
    messages = " | ".join(e.message for e in rec.of(Notice))
    assert "target % of roofline cannot be checked here" in messages
    assert "works toward a correct kernel" in messages
    assert "auto mode stopped: the kernel is correct now" in messages


async def test_a_correct_kernel_without_a_benchmark_is_refused_before_any_request(example_task, tmp_path):
    session, rec, provider = make_chat(example_task("vector_add"), [{"text": "never"}], tmp_path)
    try:
        result = await session.run_auto("make it faster", AutoLimits(iterations=3))
    finally:
        await session.close()
    assert result.refused and not provider.requests and result.iterations == 0
    assert result.stop_reason.startswith("nothing auto mode could keep: the kernel is already correct, and there "
                                         "is no GPU here and the benchmark needs one")


async def test_replaced_proposals_are_counted(example_task, tmp_path):
    turns = [{"text": "Two.", "tool_calls": [propose("a", diff=BLOCK_2048), propose("b", diff=BLOCK_4096)]},
             {"text": "Done."}]
    session, _, _ = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        result = await session.run_auto("", AutoLimits(iterations=1))
    finally:
        await session.close()
    assert result.superseded == ["p1"] and result.reverted == ["p2"]
    assert result.stop_reason == "did 1 iteration(s), the limit"


async def test_token_budget_stops_it(example_task, tmp_path):
    usage = {"input_tokens": 4000, "output_tokens": 1000}
    turns = [{"tool_calls": [propose("a", diff=BLOCK_2048)], "usage": usage}, {"text": "ok", "usage": usage}] * 3
    session, _, provider = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        result = await session.run_auto("", AutoLimits(iterations=5, max_tokens=8000))
    finally:
        await session.close()
    # Checked before each request: the second would need about 4,000 input tokens, with 3,000 left.
    assert result.stop_reason.startswith("token budget: the next request needs about ")
    assert result.stop_reason.endswith("but 3,000 of 8,000 tokens are left")
    assert result.iterations == 1 and result.tokens == 5_000 and len(provider.requests) == 1
    assert provider.requests[0].max_tokens < 8192  # the reply was capped to what the budget had left


async def test_money_budget_stops_it_mid_turn(example_task, tmp_path):
    prices = PriceTable({"scripted": Price(input=10.0, output=10.0)})  # $10 per million tokens
    # The first request (system prompt, tool schemas, brief: about 3,600 tokens as estimated) fits the
    # budget with room for a reply; the server then counts more than the estimate, so the budget is
    # spent (overspent) by the time the turn's second request is due.
    usage = {"input_tokens": 8000, "output_tokens": 2000}
    turns = [{"tool_calls": [propose("a", diff=BLOCK_2048)], "usage": usage}, {"text": "ok", "usage": usage}] * 3
    session, _, provider = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks",
                                        prices=prices)
    try:
        result = await session.run_auto("", AutoLimits(iterations=5, max_cost_usd=0.08))
    finally:
        await session.close()
    assert len(provider.requests) == 1, result.stop_reason
    assert result.stop_reason.startswith("money budget: the next request costs about $")
    assert result.stop_reason.endswith("but $0.0000 of $0.0800 is left")
    assert result.cost_usd == 0.1
    # Before the first request: about its input's price left room for a reply of at most this many tokens.
    assert 512 <= provider.requests[0].max_tokens < session.settings.max_tokens


async def test_money_budget_needs_a_price(example_task, tmp_path):
    session, rec, provider = make_chat(example_task("vector_add"), [], tmp_path, prices=PriceTable({}))
    try:
        result = await session.run_auto("", AutoLimits(iterations=2, max_cost_usd=1.0))
    finally:
        await session.close()
    assert "needs a price for scripted" in result.stop_reason and result.error["kind"] == "budget"
    assert rec.of(AgentError)[0].kind == "budget" and not provider.requests


async def test_stops_when_the_agent_stops_proposing(example_task, tmp_path):
    turns = [{"text": "I have no idea."}, {"text": "Still nothing."}, {"text": "never reached"}]
    session, _, provider = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        result = await session.run_auto("", AutoLimits(iterations=5))
    finally:
        await session.close()
    assert result.stop_reason == ("the agent made no proposal in two iterations in a row (the last: no proposal; "
                                  "the reply called no tool)")
    assert len(provider.requests) == 2
    assert "Last iteration: no proposal; the reply called no tool." in provider.requests[1].messages[-1].text


async def test_a_provider_failure_stops_it(example_task, tmp_path):
    turns = [{"text": "x", "expect": "something the brief never says"}]
    session, rec, _ = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        result = await session.run_auto("", AutoLimits(iterations=3))
    finally:
        await session.close()
    assert result.stop_reason.startswith("the provider failed") and result.error["kind"] == "script"


async def test_interrupt_stops_it_and_reverts_the_open_proposal(example_task, tmp_path):
    turns = [{"text": "Trying.", "tool_calls": [propose("a", diff=BLOCK_2048)]}, {"text": "x" * 5000}] * 2
    session, rec, _ = make_chat(example_task("vector_add"), turns, tmp_path, chunk_delay_s=0.01,
                                   trial_rungs="prechecks")
    try:
        run = asyncio.create_task(session.run_auto("", AutoLimits(iterations=5)))
        while "trial_done" not in rec.states("p1"):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # the agent is now streaming its comment on the trial
        assert session.interrupt()
        result = await run
    finally:
        await session.close()
    assert result.stop_reason == "interrupted by the person"
    assert rec.states("p1")[-1] == "rejected"
    assert session.book.get("p1").decision["reason"] == "auto mode was interrupted"
    assert not session.busy


async def test_a_budget_without_a_price_says_the_cost_is_unknown(example_task, tmp_path):
    usage = {"input_tokens": 4000, "output_tokens": 1000}
    turns = [{"tool_calls": [propose("a", diff=BLOCK_2048)], "usage": usage}, {"text": "ok", "usage": usage}]
    session, rec, _ = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks",
                                prices=PriceTable({}))
    try:
        result = await session.run_auto("", AutoLimits(iterations=5, max_tokens=100))
    finally:
        await session.close()
    assert result.stop_reason.startswith("token budget: ") and result.cost_usd is None
    stopped = [e.message for e in rec.of(Notice) if e.message.startswith("auto mode stopped")]
    assert stopped and stopped[0].endswith("in 0 request(s), cost unknown")
