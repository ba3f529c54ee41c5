"""Broken kernels fail the right rung with a message that says why; the worker pool survives."""

from __future__ import annotations

import asyncio
import json

import pytest

from kerneltui.core.loop import Loop
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.parent.pool import WorkerPool
from tests.conftest import EXAMPLES, run_cli

GOOD = (EXAMPLES / "vector_add" / "kernel.py").read_text()

# The checks of broken kernels go through warm workers, as a person's shell sends them by default; the
# tests that start a pool of their own show the pool surviving them without an engine.
pytestmark = pytest.mark.usefixtures("commands_share_an_engine")


def variant(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


def check_json(task_dir, kernel_name: str, text: str, *extra: str) -> dict:
    (task_dir / kernel_name).write_text(text)
    proc = run_cli("check", str(task_dir), "--kernel", str(task_dir / kernel_name), "--json", "--seeds", "2",
                   "--rungs", "correctness", "--no-history", *extra)
    report = json.loads(proc.stdout)
    assert proc.returncode == (0 if report["ok"] else 1), proc.stderr
    return report


def rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


def test_zeros_fail_correctness(example_task):
    task = example_task("vector_add")
    report = check_json(task, "zeros.py", variant("    return out", "    return torch.zeros_like(x)"))
    assert not report["ok"]
    c = rung(report, "correctness")
    assert c["status"] == "fail"
    # zeros_like is an allocation and a fill, not a kernel: the record of what wrote the output says so
    assert "never written by a Triton kernel" in c["error"]


def test_input_edit_is_caught(example_task):
    task = example_task("vector_add")
    report = check_json(task, "edit.py", variant("    return out", "    x.zero_()\n    return out"))
    c = rung(report, "correctness")
    assert c["status"] == "fail"
    assert "modified its input x" in c["error"]
    assert "in-place" in c["error"]


def test_first_shape_only_is_caught(example_task):
    # Launches enough blocks for the first test case (n=1) only; the rest stays unwritten.
    task = example_task("vector_add")
    report = check_json(task, "first.py", variant("(triton.cdiv(n, BLOCK),)", "(1,)"))
    c = rung(report, "correctness")
    assert c["status"] == "fail"
    assert "NaN where the reference is finite" in c["error"]
    assert "n=4097" in c["error"] or "n=12289" in c["error"]


def test_hang_is_killed_with_a_message(example_task):
    task = example_task("vector_add")
    text = variant("    out = torch.empty_like(x)", "    import time\n    while True:\n        time.sleep(0.1)\n    out = torch.empty_like(x)")
    report = check_json(task, "hang.py", text, "--timeout", "6")
    c = rung(report, "compile")
    assert c["status"] == "fail"
    assert "no answer after 6 s" in c["error"]
    assert "killed" in c["error"]
    assert rung(report, "correctness")["status"] == "skip"


def test_segfault_names_the_signal(example_task):
    task = example_task("vector_add")
    text = variant("    out = torch.empty_like(x)", "    import ctypes\n    ctypes.string_at(0)\n    out = torch.empty_like(x)")
    report = check_json(task, "segv.py", text)
    c = rung(report, "compile")
    assert c["status"] == "fail"
    assert "SIGSEGV" in c["error"] and "segmentation fault" in c["error"]


def test_abort_names_the_signal(example_task):
    task = example_task("vector_add")
    report = check_json(task, "abort.py", variant("    out = torch.empty_like(x)", "    import os\n    os.abort()\n    out = torch.empty_like(x)"))
    assert "SIGABRT" in rung(report, "compile")["error"]


def test_kill_names_the_signal(example_task):
    # What the out-of-memory killer does to a worker. Before, the box's supervisor failed to die of
    # SIGKILL in turn (its handler cannot be reset) and the rung said "exited with status 1 … OSError".
    task = example_task("vector_add")
    report = check_json(task, "kill.py", variant("    out = torch.empty_like(x)",
                                                 "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n"
                                                 "    out = torch.empty_like(x)"))
    c = rung(report, "compile")
    assert c["status"] == "fail" and c["metrics"]["failure"] == "crash"
    assert "the worker died with SIGKILL (killed (out of memory, or by kerneltui))" in c["error"], c["error"]
    assert "OSError" not in c["error"]


def test_python_error_points_at_the_line(example_task):
    task = example_task("vector_add")
    report = check_json(task, "err.py", variant("    n = x.numel()", "    n = x.numel()\n    raise ValueError('block size must be a power of two')"))
    r = rung(report, "run")
    assert r["status"] == "fail"
    assert "ValueError: block size must be a power of two" in r["error"]
    assert r["location"] == {"file": "err.py", "line": 19}


def test_compile_error_points_at_the_kernel_line(example_task):
    task = example_task("vector_add")
    report = check_json(task, "bad.py", variant("    x = tl.load(x_ptr + offs, mask=mask)", "    x = tl.load(x_ptr + offs, mask=mask, bogus=1)"))
    c = rung(report, "compile")
    assert c["status"] == "fail"
    assert c["location"]["file"] == "bad.py"


def test_missing_entry_point(example_task):
    task = example_task("vector_add")
    report = check_json(task, "noentry.py", GOOD.replace("def custom_kernel", "def my_kernel"))
    c = rung(report, "compile")
    assert c["status"] == "fail"
    assert "defines no custom_kernel()" in c["error"]


def test_task_error_exit_code(tmp_path):
    proc = run_cli("check", str(tmp_path))
    assert proc.returncode == 2
    assert "task error" in proc.stderr and "not a task directory" in proc.stderr


def test_unknown_rung_is_a_usage_error(example_task):
    proc = run_cli("check", str(example_task("vector_add")), "--rungs", "compile,frobnicate")
    assert proc.returncode == 2
    assert "unknown rung" in proc.stderr


@pytest.mark.slow
def test_worker_survives_twenty_faults(example_task):
    """20 crashing, hanging or raising kernels in a row; the 21st, correct, passes."""
    task = load_task(example_task("vector_add"))
    crash = variant("    out = torch.empty_like(x)", "    import ctypes\n    ctypes.string_at(0)\n    out = torch.empty_like(x)")
    raises = variant("    n = x.numel()", "    raise RuntimeError('boom')")
    hang = variant("    out = torch.empty_like(x)", "    import time\n    time.sleep(60)\n    out = torch.empty_like(x)")
    faults = [crash, raises, crash, hang] * 5

    async def go() -> list:
        pool = WorkerPool(task.backend, spares=1)
        loop = Loop(task, pool=pool)
        reports = []
        try:
            for source in faults:
                reports.append(await loop.run(RunOptions(kernel_source=source, rungs=["correctness"], seeds=1, timeout_s=8)))
            reports.append(await loop.run(RunOptions(kernel_source=GOOD, rungs=["correctness"], seeds=1)))
        finally:
            await loop.close()
        return reports

    reports = asyncio.run(go())
    assert len(reports) == 21
    assert all(not r.ok for r in reports[:20])
    assert reports[20].ok, [r.line() for r in reports[20].results]
    errors = " ".join(r.error or "" for rep in reports[:20] for r in rep.results)
    assert "SIGSEGV" in errors and "RuntimeError: boom" in errors and "no answer after 8 s" in errors
