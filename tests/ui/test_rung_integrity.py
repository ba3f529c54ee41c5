"""The rung panel's detail names the integrity defences of the selected rung and what they found."""

from __future__ import annotations

from rich.console import Console

from kerneltui.core.rungs.result import RungResult
from kerneltui.ui.widgets.rungs import RungRow, render_detail


def _text(row: RungRow) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(render_detail(row, "red"))
    return console.export_text()


def test_a_caught_hack_is_named_in_the_detail() -> None:
    result = RungResult("correctness", "fail", error="n=1000 seed=3: the kernel modified its input x (n=1000); the task "
                        "does not declare the op in-place")
    text = _text(RungRow("correctness", "every case", state="fail", result=result))
    assert "✗ inputs caught: n=1000 seed=3: the kernel modified its input x" in text
    assert "· poison stopped" in text  # its other defences did not get to run to the end


def test_a_clean_rung_lists_the_defences_that_passed() -> None:
    text = _text(RungRow("benchmark", "time", state="ok", result=RungResult(
        "benchmark", "ok", summary="1.00 ms", metrics={"flush_bytes": 2 << 27, "l2_bytes": 50 << 20,
                                                       "persisting_l2": "reset before every call"})))
    for key in ("recheck", "side_work", "harness_guard", "l2"):
        assert f"✓ {key} passed" in text
