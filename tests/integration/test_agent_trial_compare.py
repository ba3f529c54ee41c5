"""A proposal's trial on a machine without a GPU: the comparison step runs and says nothing about
speed, on the card and in what the model reads (tests/gpu/test_trial_compare_gpu.py compares on a GPU)."""

from __future__ import annotations

from kerneltui.core.events import ProposalEvent
from kerneltui.ui.proposal_view import verdict_of
from tests.integration.agent_helpers import BLOCK_2048, NO_DUMP, last_sent, make_chat, propose


async def test_a_trial_without_a_gpu_says_nothing_about_speed(example_task, tmp_path):
    turns = [{"tool_calls": [propose("BLOCK 2048", diff=BLOCK_2048)]}, {"text": "ok"}]
    session, rec, provider = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs=NO_DUMP)
    try:
        await session.send("go")
    finally:
        await session.close()
    card = [e for e in rec.of(ProposalEvent) if e.state == "trial_done"][0].proposal
    comparison = card["trial"]["comparison"]
    assert comparison["kind"] == "no_gpu" and comparison["sentence"] == "" and comparison["cases"] == []
    assert verdict_of(card).headline == "trial passed · correct (no benchmark)"
    assert session.book.get("p1").trial.comparison.feedback() == ""
    sent = last_sent(provider)  # the trial's tool result
    assert "trial on a scratch copy" in sent and "no benchmark numbers exist" in sent
    assert "speed against" not in sent and "significant" not in sent and "within noise" not in sent
