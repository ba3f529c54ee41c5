"""What a failed trial tells the person and the model: the candidate's own line, short, each failure once.

Real CPU workers verify each proposal (Triton under its interpreter, CUDA C++ compiled by nvcc).
"""

from __future__ import annotations

import re
import shutil

import pytest

from tests.integration.agent_helpers import make_chat, propose

BROKEN_LINE = "    y = tl.load(y_ptr + offs, mask=mask) + undefined_name"
HARNESS_TRACES = ("site-packages", "kerneltui/core", "kerneltui-worker", "serve.py", "interpreter.py")


def model_text(provider) -> str:
    """The tool results of the last request: what the model read about its proposal."""
    return "\n".join(r.content for r in provider.requests[-1].messages[-1].tool_results)


async def propose_once(task_dir, tmp_path, source: str, trial_rungs: str):
    """One turn proposing ``source`` (its trial runs ``trial_rungs``), then a reply to the result."""
    turns = [{"text": "Trying.", "tool_calls": [propose("an edit", source=source)]}, {"text": "Seen."}]
    session, _, provider = make_chat(task_dir, turns, tmp_path, trial_rungs=trial_rungs)
    try:
        await session.send("go")
    finally:
        await session.close()
    return session, provider


async def test_a_triton_error_points_at_the_kernel_line_not_the_launch(example_task, tmp_path):
    task_dir = example_task("vector_add")
    good = (task_dir / "kernel.py").read_text()
    broken = good.replace("    y = tl.load(y_ptr + offs, mask=mask)", BROKEN_LINE)
    assert broken.splitlines()[11] == BROKEN_LINE  # line 12; the launch is on line 20
    session, provider = await propose_once(task_dir, tmp_path, broken, "compile")
    trial = session.book.get("p1").trial
    compile_row = next(r for r in trial.rungs if r.name == "compile")
    # The person's rung row and the verdict: the candidate's line.
    assert compile_row.location == "kernel.py:12"
    assert compile_row.error == "kernel.py:12: NameError: name 'undefined_name' is not defined"
    assert "kernel.py:12" in trial.headline
    # The model: that line first, an excerpt around it, the task's frames only, relative paths.
    text = model_text(provider)
    assert "kernel.py:12 (the failing line):\n" in text
    assert f">   12  {BROKEN_LINE}" in text and "    11      x = tl.load(x_ptr + offs, mask=mask)" in text
    assert 'File "kernel.py", line 20, in custom_kernel' in text and 'File "kernel.py", line 12, in add_kernel' in text
    assert not [t for t in HARNESS_TRACES if t in text] and str(task_dir) not in text
    assert len(text.encode()) < 1500, text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (CUDA toolkit) to compile")
async def test_a_cuda_compile_error_points_at_the_kernel_line(example_task, tmp_path):
    task_dir = example_task("cuda_elementwise")
    source = (task_dir / "kernel.cu").read_text()
    lines = source.splitlines(keepends=True)
    assert lines[14].startswith("    const long long n4 = n / 4;")
    lines[14] = lines[14].replace("n / 4;", "n / 4 + undefined_thing;")
    broken = "".join(lines)
    session, provider = await propose_once(task_dir, tmp_path, broken, "compile")
    compile_row = next(r for r in session.book.get("p1").trial.rungs if r.name == "compile")
    assert compile_row.location == "kernel.cu:15"
    assert compile_row.error.startswith('kernel.cu:15: error: identifier "undefined_thing" is undefined')
    text = model_text(provider)
    assert "kernel.cu:15 (the failing line):\n" in text
    assert ">   15      const long long n4 = n / 4 + undefined_thing;" in text
    assert 'File "launch.py", line 10, in <module>' in text  # the task's own frame; the harness's are left out
    assert not [t for t in HARNESS_TRACES if t in text] and str(task_dir) not in text


async def test_correctness_failures_reach_the_model_once_without_the_hidden_seed(example_task, tmp_path):
    task_dir = example_task("vector_add")
    good = (task_dir / "kernel.py").read_text()
    session, provider = await propose_once(task_dir, tmp_path, good.replace("x + y, mask", "x - y, mask"),
                                           "correctness")
    report = session.trial_reports["p1"]
    person = report.result("correctness").details
    hidden = re.findall(r"seed=(\d+) \(hidden\)", person)
    assert len(hidden) == 4  # the person's details name them, one per case
    text = model_text(provider)
    assert not [seed for seed in hidden if seed in text]
    for case in ("n=1:", "n=1000:", "n=4097:", "n=12289:"):
        assert text.count(f"  {case} ") == 1, text
    assert text.count("(the hidden seed fails too)") == 4
    assert "[correctness] FAILED  0/8 checks passed" in text
    assert len(text.encode()) < 1800, text


async def test_refusals_reach_the_model_with_relative_paths(example_task, tmp_path):
    task_dir = example_task("vector_add")
    turns = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "../outside.txt"}},
                             {"name": "list_files", "arguments": {"path": "context/missing"}}]},
             {"text": "ok"}]
    session, _, provider = make_chat(task_dir, turns, tmp_path)
    try:
        await session.send("go")
    finally:
        await session.close()
    text = model_text(provider)
    assert "outside" in text and "missing" in text
    assert str(task_dir.resolve()) not in text and str((tmp_path / "context").resolve()) not in text
