"""Auto mode end to end: the scripted provider proposes, real CPU workers verify, the rule keeps or reverts."""

from __future__ import annotations

import asyncio

from kerneltui.core.agent.auto import AutoLimits
from kerneltui.core.agent.prices import Price, PriceTable
from kerneltui.core.events import AgentError, Notice, ProposalEvent, RunStarted
from kerneltui.core.history import HistoryStore
from tests.integration.agent_helpers import BLOCK_2048, make_session, propose


def broken_kernel(text: str) -> str:
    return text.replace("x + y, mask=mask", "x - y, mask=mask")


async def test_keeps_a_fix_reverts_the_rest_and_stops_after_n(example_task, tmp_path):
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    good = kernel.read_text()
    kernel.write_text(broken_kernel(good))
    turns = [
        {"text": "Fix the sign.", "tool_calls": [propose("x + y, not x - y", source=good)]},
        {"text": "Done."},
        {"text": "Bigger block.", "expect": "kept: correct", "tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]},
        {"text": "Done."},
        {"text": "Try this.", "expect": "no benchmark here", "tool_calls": [propose("oops", source=broken_kernel(good))]},
        {"text": "Done."},
    ]
    session, rec, provider = make_session(task_dir, turns, tmp_path)
    try:
        result = await session.run_auto("make it correct and fast", AutoLimits(iterations=3, target_pct_roofline=90))
    finally:
        await session.close()
    assert result.stop_reason == "did 3 iteration(s)"
    assert result.kept == ["p1"] and result.reverted == ["p2", "p3"]
    reasons = [v["reason"] for v in result.verdicts]
    assert reasons[0] == "kept: correct, and the kept version was not"
    assert reasons[1].startswith("reverted: correct, but there is no benchmark here")
    assert reasons[2].startswith("reverted: correctness failed")
    assert kernel.read_text() == good  # the kept fix, applied and checkpointed
    assert [c.proposal_id for c in session.checkpoints.stack] == ["p1"]
    assert result.baseline["correct"] is False and result.best["correct"] is True
    assert {e.origin for e in rec.of(RunStarted)} == {"auto"}  # baseline and trials, all recorded as auto
    history = HistoryStore.for_task(session.task).entries()
    assert sorted(e.origin for e in history) == ["auto"] * 4  # every version tried lands in the history
    assert sum(e.ok for e in history) == 2  # the fix and the correct variant; the baseline and p3 failed
    assert rec.states("p2")[-1] == "rejected"
    decisions = [e.proposal["decision"]["by"] for e in rec.of(ProposalEvent) if e.state in ("accepted", "rejected")]
    assert decisions == ["auto", "auto", "auto"]
    messages = " | ".join(e.message for e in rec.of(Notice))
    assert "target % of roofline cannot be checked here" in messages
    assert "auto mode stopped: did 3 iteration(s)" in messages


async def test_token_budget_stops_it(example_task, tmp_path):
    usage = {"input_tokens": 4000, "output_tokens": 1000}
    turns = [{"tool_calls": [propose("a", diff=BLOCK_2048)], "usage": usage}, {"text": "ok", "usage": usage}] * 3
    session, _, provider = make_session(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        result = await session.run_auto("", AutoLimits(iterations=5, max_tokens=8000))
    finally:
        await session.close()
    assert result.stop_reason == "token budget spent (10,000 of 8,000 tokens)"
    assert result.iterations == 1 and result.tokens == 10_000 and len(provider.requests) == 2


async def test_money_budget_stops_it_mid_turn(example_task, tmp_path):
    prices = PriceTable({"scripted": Price(input=10.0, output=10.0)})  # $10 per million tokens
    usage = {"input_tokens": 4000, "output_tokens": 1000}
    turns = [{"tool_calls": [propose("a", diff=BLOCK_2048)], "usage": usage}, {"text": "ok", "usage": usage}] * 3
    session, _, provider = make_session(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks",
                                        prices=prices)
    try:
        result = await session.run_auto("", AutoLimits(iterations=5, max_cost_usd=0.04))
    finally:
        await session.close()
    assert result.stop_reason == "money budget spent ($0.0500 of $0.0400)"
    assert len(provider.requests) == 1 and result.cost_usd == 0.05


async def test_money_budget_needs_a_price(example_task, tmp_path):
    session, rec, provider = make_session(example_task("vector_add"), [], tmp_path, prices=PriceTable({}))
    try:
        result = await session.run_auto("", AutoLimits(iterations=2, max_cost_usd=1.0))
    finally:
        await session.close()
    assert "needs a price for scripted" in result.stop_reason and result.error["kind"] == "budget"
    assert rec.of(AgentError)[0].kind == "budget" and not provider.requests


async def test_stops_when_the_agent_stops_proposing(example_task, tmp_path):
    turns = [{"text": "I have no idea."}, {"text": "Still nothing."}, {"text": "never reached"}]
    session, _, provider = make_session(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        result = await session.run_auto("", AutoLimits(iterations=5))
    finally:
        await session.close()
    assert result.stop_reason == "the agent made no proposal in two iterations in a row"
    assert len(provider.requests) == 2 and "you made no proposal" in provider.requests[1].messages[-1].text


async def test_a_provider_failure_stops_it(example_task, tmp_path):
    turns = [{"text": "x", "expect": "something the brief never says"}]
    session, rec, _ = make_session(example_task("vector_add"), turns, tmp_path, trial_rungs="prechecks")
    try:
        result = await session.run_auto("", AutoLimits(iterations=3))
    finally:
        await session.close()
    assert result.stop_reason.startswith("the provider failed") and result.error["kind"] == "script"


async def test_interrupt_stops_it_and_reverts_the_open_proposal(example_task, tmp_path):
    turns = [{"text": "Trying.", "tool_calls": [propose("a", diff=BLOCK_2048)]}, {"text": "x" * 5000}] * 2
    session, rec, _ = make_session(example_task("vector_add"), turns, tmp_path, chunk_delay_s=0.01,
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
