"""Auto mode on a real GPU: interleaved comparisons decide what is kept, and the roofline target stops it.

Run on the GPU machine: ``python -m pytest tests/gpu/test_agent_gpu.py -m gpu -q``.
"""

from __future__ import annotations

import re

import pytest

from kerneltui.core.agent.auto import AutoLimits
from kerneltui.core.rungs import rung_names
from tests.integration.agent_helpers import BLOCK_4096, make_chat, propose

pytestmark = pytest.mark.gpu
# The timing rungs by name: they may be on demand in the default set.
RUNGS = "correctness,benchmark,roofline"


def _needs_timing_rungs() -> None:
    missing = {"benchmark", "roofline"} - set(rung_names())
    if missing:
        pytest.skip(f"this build has no {', '.join(sorted(missing))} rung: auto mode cannot measure speed")


@pytest.mark.runs_long(40)
async def test_the_vector_add_baseline_already_meets_a_modest_target(example_task, tmp_path):
    _needs_timing_rungs()
    turns = [{"tool_calls": [propose("BLOCK 4096", diff=BLOCK_4096)]}, {"text": "done"}]
    session, rec, provider = make_chat(example_task("vector_add"), turns, tmp_path, trial_rungs=RUNGS)
    try:
        result = await session.run_auto("", AutoLimits(iterations=2, target_pct_roofline=50.0))
    finally:
        await session.close()
    baseline = result.baseline
    assert baseline is not None and baseline.correct and baseline.median_s and baseline.pct_roofline is not None, baseline
    assert result.stop_reason.startswith("target reached"), result.stop_reason
    assert result.iterations == 0 and not provider.requests


@pytest.mark.runs_long(60)
async def test_measured_times_decide_what_is_kept(example_task, tmp_path):
    _needs_timing_rungs()
    task_dir = example_task("vector_add")
    original = (task_dir / "kernel.py").read_text()
    # Whole files, so each applies whichever of them was kept before.
    block_4096 = original.replace("BLOCK = 1024", "BLOCK = 4096")
    block_2048_8_warps = original.replace("BLOCK = 1024", "BLOCK = 2048").replace(
        "BLOCK=BLOCK)", "BLOCK=BLOCK, num_warps=8)")
    turns = [
        {"tool_calls": [propose("BLOCK 4096", source=block_4096)]}, {"text": "done"},
        {"tool_calls": [propose("BLOCK 2048, 8 warps", source=block_2048_8_warps)]}, {"text": "done"},
    ]
    session, rec, _ = make_chat(task_dir, turns, tmp_path, trial_rungs=RUNGS)
    try:
        # No roofline target: on the H200 the vector_add baseline already measures 100% of the
        # roofline (184 µs, above the measured copy bandwidth), so any target would stop it at once.
        result = await session.run_auto("", AutoLimits(iterations=2))
    finally:
        await session.close()
    assert result.iterations == 2 and len(result.verdicts) == 2, result.to_dict()
    for verdict in result.verdicts:
        # Kept only on an interleaved comparison with the kept version whose interval is entirely faster.
        assert re.match(r"(kept: p\d+ is [\d.]+ % faster than the file on disk \(95 % CI [\d.]+–[\d.]+ %.*— significant$"
                        r"|reverted: )", verdict["reason"]), verdict
    for pid in result.kept:
        assert session.trial_reports[pid].ok
    best = result.best
    assert best is not None and result.baseline is not None and best.median_s <= result.baseline.median_s
