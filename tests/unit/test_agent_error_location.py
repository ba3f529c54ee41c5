"""Errors point at the candidate's own line: through wrapping exceptions, with the task's frames only."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltui.core.worker.child.errors import describe_exception
from kerneltui.core.worker.child.state import WorkerState

KERNEL = """\
def body(x):
    y = x + 1
    return y + undefined_name


def custom_kernel(x, launch):
    return launch(body, x)
"""


class InterpreterError(Exception):
    """Named as Triton's interpreter names the error it raises at the launch, around the real one."""


def launch(fn, x):
    """A library's launcher (outside the task), wrapping what the kernel body raised."""
    try:
        return fn(x)
    except Exception as exc:
        raise InterpreterError(repr(exc)) from exc


@pytest.fixture
def state(tmp_path: Path):
    s = WorkerState("torch")
    shutil.rmtree(s.workdir, ignore_errors=True)
    s.task_dir = tmp_path / "task"
    s.task_dir.mkdir()
    return s


def raise_from_task(state: WorkerState, source: str, *args) -> BaseException:
    path = state.task_dir / "kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("kernel_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.pop("kernel_under_test", None)
    try:
        spec.loader.exec_module(module)
        module.custom_kernel(*args)
    except BaseException as exc:  # noqa: BLE001 - the exception is what the test looks at
        return exc
    raise AssertionError("the kernel did not raise")


def test_a_wrapped_error_is_located_in_the_kernel_body_not_at_the_launch(state):
    error = describe_exception(raise_from_task(state, KERNEL, 1, launch), state)
    assert (error["file"], error["line"]) == ("kernel.py", 3)
    assert error["type"] == "InterpreterError"  # what was raised; the message is what it wraps
    assert error["message"] == "NameError: name 'undefined_name' is not defined"
    trace = error["traceback"].splitlines()
    assert trace[0].startswith("Traceback (the task's frames; ") and "left out" in trace[0]
    assert trace[1:] == [
        '  File "kernel.py", line 7, in custom_kernel',
        "    return launch(body, x)",
        '  File "kernel.py", line 3, in body',
        "    return y + undefined_name",
        "NameError: name 'undefined_name' is not defined",
    ]
    assert str(state.task_dir) not in error["traceback"] and __file__ not in error["traceback"]


def test_an_error_raised_inside_a_library_names_the_library_frame_relative(state):
    error = describe_exception(raise_from_task(state, "import json\n\ndef custom_kernel():\n    json.loads('{')\n"),
                               state)
    assert (error["file"], error["line"]) == ("kernel.py", 4)
    trace = error["traceback"]
    assert '  File "kernel.py", line 4, in custom_kernel' in trace
    assert "  (raised in json/decoder.py:" in trace and "/lib/python" not in trace


def test_a_syntax_error_points_at_its_line(state):
    error = describe_exception(raise_from_task(state, "def custom_kernel(:\n    pass\n"), state)
    assert (error["file"], error["line"]) == ("kernel.py", 1)
    assert 'File "kernel.py", line 1' in error["traceback"] and "frozen" not in error["traceback"]


JIT_KERNEL = """\
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x + undefined_name, mask=offs < n)
"""

# Triton's JIT front end (no GPU needed to reach it), in a process of its own: whether triton.jit
# makes a JIT or an interpreted function is decided by TRITON_INTERPRET when it decorates.
JIT_PROBE = """\
import importlib.util, json, shutil, sys
from pathlib import Path
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kerneltui.core.backends import backend_for
from kerneltui.core.worker.child.errors import describe_exception
from kerneltui.core.worker.child.state import WorkerState

state = WorkerState("triton")
shutil.rmtree(state.workdir)  # the task is the test's folder; the worker's scratch folder is not used
state.task_dir, state.backend = Path(sys.argv[1]), backend_for("triton")
spec = importlib.util.spec_from_file_location("kernel", state.task_dir / "kernel.py")
module = importlib.util.module_from_spec(spec)
sys.modules["kernel"] = module
spec.loader.exec_module(module)
signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
try:
    triton.compile(ASTSource(module.add_kernel, signature, constexprs={"BLOCK": 128}),
                   target=GPUTarget("cuda", 90, 32))
except Exception as exc:
    print(json.dumps(describe_exception(exc, state)))
"""


def test_a_jit_compile_error_reads_at_the_file_line_not_the_kernel_relative_one(tmp_path):
    (tmp_path / "kernel.py").write_text(JIT_KERNEL)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    proc = subprocess.run([sys.executable, "-c", JIT_PROBE, str(tmp_path)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    error = json.loads(proc.stdout)
    assert (error["file"], error["line"]) == ("kernel.py", 10)
    assert error["message"].startswith("CompilationError: at kernel.py:10:33:\n")  # Triton said "at 5:33"
    assert error["traceback"].endswith("CompilationError: at kernel.py:10:33: …\n")
    assert str(tmp_path) not in error["traceback"]
