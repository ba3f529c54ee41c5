"""The correctness rung's advice names the setting the task's own format has."""

from __future__ import annotations

from kerneltui.core.rungs.correctness import _tighten_tolerance


def test_a_kernelbench_problem_is_told_of_its_comment_lines_not_a_task_toml_section():
    # A published KernelBench problem has no task.toml: "[tolerance]" sent people looking for one.
    assert "# kerneltui: atol" in _tighten_tolerance("kernelbench")
    assert "[tolerance]" not in _tighten_tolerance("kernelbench")
    assert "check_implementation" in _tighten_tolerance("gpumode")
    assert "[tolerance] in task.toml" in _tighten_tolerance("native")
