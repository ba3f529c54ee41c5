"""The model's view of a run: failing line with an excerpt, each correctness failure once, relative paths."""

from __future__ import annotations

from kerneltui.core.agent.feedback import PathScrub, failing_cases, run_feedback, source_excerpt
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.result import SourceLocation, fail, ok, skip

CORRECTNESS_DETAILS = """\
n=1 seed=1000: out: 1 of 1 elements outside atol=0.0001 (max abs 0.786)
n=1 (hidden seed): out: 1 of 1 elements outside atol=0.0001 (max abs 1.68)
n=4097 (hidden seed): out: 9 of 4097 elements outside — every published seed of this case passed
the output returned for n=1 seed=1000 changed when the kernel was called again

{'n': 1} seed=1000: FAIL — out: 1 of 1 elements
{'n': 1} seed=1519713614 (hidden): FAIL — out: 1 of 1 elements
"""


def test_each_failing_case_once_and_no_hidden_seed():
    lines = failing_cases(CORRECTNESS_DETAILS)
    assert lines[0] == "failing cases:"
    assert lines[1] == "  n=1: out: 1 of 1 elements outside atol=0.0001 (max abs 0.786) (the hidden seed fails too)"
    assert lines[2].startswith("  n=4097 (hidden seed only): out: 9 of 4097")
    assert lines[3] == "  the output returned for n=1 seed=1000 changed when the kernel was called again"
    assert "1519713614" not in "\n".join(lines)


def test_excerpt_marks_the_line_and_stays_in_the_file():
    text = "a\nb\nc\nd\ne\nf\n"
    assert source_excerpt(text, 1) == [">    1  a", "     2  b", "     3  c"]
    assert source_excerpt(text, 6)[-1] == ">    6  f" and len(source_excerpt(text, 6)) == 3
    assert source_excerpt(text, 40) == [] and source_excerpt(None, 2) == []


def test_paths_are_shown_relative():
    scrub = PathScrub("/home/u/tasks/va", "/home/u/kerneltui/context")
    text = ("refused: /etc/passwd is outside /home/u/tasks/va and /home/u/kerneltui/context; "
            "see /home/u/kerneltui/context/triton/notes.md and /home/u/tasks/va/kernel.py; "
            "warning from /opt/venv/lib/python3.11/site-packages/triton/language/core.py:12")
    assert scrub(text) == ("refused: /etc/passwd is outside . and context; see context/triton/notes.md and "
                           "kernel.py; warning from triton/language/core.py:12")


def test_a_failed_compile_reads_at_its_line_with_later_rungs_folded():
    report = RunReport(run_id="r", task="t", ok=False, source_hash="abc", duration_s=1.0,
                       device={"gpu": False, "interpreter": True},
                       results=[ok("prechecks", "clean"),
                                fail("compile", "kernel.py:3: NameError: name 'q' is not defined",
                                     location=SourceLocation("kernel.py", 3),
                                     details="Traceback (the task's frames):\n  File \"kernel.py\", line 3\n"),
                                skip("run", "compile failed"), skip("correctness", "run was skipped"),
                                skip("benchmark", "correctness was skipped")])
    text = run_feedback(report, "trial", lambda f: "x = 1\ny = 2\nz = q\n" if f == "kernel.py" else None,
                        note_no_gpu=False)
    assert text.splitlines() == [
        "trial: FAIL on no GPU (CPU, Triton interpreter) (source abc)",
        "[prechecks] ok  clean",
        "[compile] FAILED  kernel.py:3: NameError: name 'q' is not defined",
        "[run, correctness, benchmark] skipped: compile failed",
        "kernel.py:3 (the failing line):",
        "     1  x = 1",
        "     2  y = 2",
        ">    3  z = q",
        "details of compile:",
        "Traceback (the task's frames):",
        '  File "kernel.py", line 3',
    ]


def test_install_paths_are_stripped_from_long_slash_rich_text_without_backtracking():
    """A kernel that prints its environment hands the model long runs of slashes; the scrub must
    stay linear on them (a regular expression with repeated path segments never returned)."""
    from kerneltui.core.agent.feedback import PathScrub

    scrub = PathScrub("/work/task", "/work/context")
    noise = "PATH=" + "/segment" * 80 + ":"
    text = noise * 50 + " see /usr/lib/python3.11/site-packages/triton/runtime/jit.py:12 and /work/task/kernel.py"
    out = scrub(text)
    assert out.endswith("see triton/runtime/jit.py:12 and kernel.py")
    assert out.startswith(noise)
