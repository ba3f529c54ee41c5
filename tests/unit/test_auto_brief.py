"""Auto mode's per-iteration brief reads as a sentence whatever the reason speed cannot be judged."""

from __future__ import annotations

import pytest

from kerneltui.core.agent import prompts
from kerneltui.core.agent.auto import KEEP_CORRECT

REASONS = ["there is no GPU here and the benchmark needs one",
           "the trial rungs leave out the benchmark ([agent] trial_rungs)",
           "the task has no [[benchmarks]] cases in task.toml"]


@pytest.mark.parametrize("reason", REASONS)
def test_the_reason_speed_cannot_be_judged_is_one_clause(reason):
    brief = prompts.auto_brief(1, 3, "", "not correct", None, None, KEEP_CORRECT, reason)
    assert f"make the kernel correct; speed cannot be judged, as {reason}." in brief
    assert "Here there" not in brief and "Here the" not in brief


def test_the_kept_file_travels_once_with_its_version():
    kept = prompts.KeptFile("kernel.py", "0123456789abcdef", "def custom_kernel(x):\n    return x\n")
    brief = prompts.auto_brief(2, 3, "", "correct", None, None, KEEP_CORRECT, None, kept)
    assert brief.count("def custom_kernel") == 1 and "kernel.py as kept now (version 0123456789abcdef)" in brief
