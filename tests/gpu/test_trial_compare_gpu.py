"""A proposal's trial compared with the file on disk on a real GPU, end to end: the card's sentence,
the word the model reads, and auto mode keeping only what the interval shows faster.

Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_trial_compare_gpu.py``.
"""

from __future__ import annotations

import re

import pytest

from kerneltui.core.agent.auto import AutoLimits
from kerneltui.core.events import ProposalEvent
from kerneltui.ui.proposal_view import verdict_of
from tests.gpu.test_compare_gpu import TWICE
from tests.integration.agent_helpers import last_sent, make_chat, propose

pytestmark = pytest.mark.gpu
RUNGS = "correctness,benchmark"


@pytest.mark.runs_long(60)
async def test_a_proposal_made_twice_as_slow_is_compared_slower_on_its_card(example_task, tmp_path):
    task_dir = example_task("vector_add")
    source = (task_dir / "kernel.py").read_text()
    assert TWICE[0] in source
    turns = [{"tool_calls": [propose("launch twice", source=source.replace(*TWICE))]}, {"text": "ok"}]
    session, rec, provider = make_chat(task_dir, turns, tmp_path, trial_rungs=RUNGS)
    try:
        await session.send("go")
    finally:
        await session.close()
    card = [e for e in rec.of(ProposalEvent) if e.state == "trial_done"][0].proposal
    comparison = card["trial"]["comparison"]
    assert comparison["kind"] == "compared", comparison
    assert [c["direction"] for c in comparison["cases"]] == ["slower"], comparison
    assert 0.7 < comparison["cases"][0]["change"] < 1.3 and comparison["word"] == "significant"
    headline = verdict_of(card).headline
    assert re.match(r"trial passed · p1 is [\d.]+ % slower than the file on disk \(95 % CI [\d.]+–[\d.]+ %, "
                    r"[\d,]+ calls each\)", headline), headline
    assert re.search(r"speed against the file on disk, interleaved on one GPU: p1 is [\d.]+ % slower .* — significant",
                     last_sent(provider))


@pytest.mark.runs_long(90)
async def test_auto_keeps_the_faster_version_and_reverts_the_slower_one(example_task, tmp_path):
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    fast = kernel.read_text()
    kernel.write_text(fast.replace(*TWICE))  # the file on disk launches twice: the proposal undoes it
    turns = [{"tool_calls": [propose("launch once", source=fast)]}, {"text": "done"},
             {"tool_calls": [propose("launch twice again", source=fast.replace(*TWICE))]}, {"text": "done"}]
    session, rec, _ = make_chat(task_dir, turns, tmp_path, trial_rungs=RUNGS)
    try:
        result = await session.run_auto("", AutoLimits(iterations=2))
    finally:
        await session.close()
    assert [v["keep"] for v in result.verdicts] == [True, False], result.verdicts
    kept, reverted = (v["reason"] for v in result.verdicts)
    assert re.match(r"kept: p1 is [\d.]+ % faster than the file on disk \(95 % CI .*— significant$", kept), kept
    assert re.match(r"reverted: p2 is [\d.]+ % slower than the file on disk \(95 % CI .*— significant$", reverted)
    assert kernel.read_text() == fast
