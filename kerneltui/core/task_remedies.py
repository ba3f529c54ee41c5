"""What a person changes in a task of each format when its reference cannot run as it is.

A task error says what to do, and what to do depends on the format: a KernelBench problem's sizes
are module constants (``--set``/``--scale``), a GPU MODE problem's are task.yml's ``tests``, a
native task's task.toml's ``[[tests]]``; each keeps its time limits in its own place. The judge
(worker side) and the rungs (parent side) word their task errors from here, so both say the same.
Plain strings only: this module imports nothing.
"""

from __future__ import annotations

# GPU MODE's task.yml knows two limits; kerneltui's other rungs take the default or --timeout.
_GPUMODE_LIMIT = {"compile": "test_timeout", "run": "test_timeout", "correctness": "test_timeout",
                  "benchmark": "benchmark_timeout"}


def smaller_sizes(fmt: str) -> str:
    """How to run the task at smaller sizes."""
    return _run_sizes(fmt, "smaller", ", e.g. --scale 0.01")


def other_sizes(fmt: str) -> str:
    """How to run the task at other sizes (a reference that rejects these, too small or too large)."""
    return _run_sizes(fmt, "other", "")


def _run_sizes(fmt: str, which: str, example: str) -> str:
    if fmt == "kernelbench":
        return (f"run {which} sizes with --set NAME=VALUE (a module constant) or --scale F (every size constant "
                f"times F{example})")
    if fmt == "gpumode":
        return f"use {which} sizes in task.yml's tests"
    return f"use {which} sizes in task.toml's [[tests]]"


def missing_module(fmt: str) -> str:
    """How to provide a module the reference imports and this machine lacks."""
    if fmt == "gpumode":
        return ("install it in the Python environment kerneltui runs in, or, if it is a file of the problem, list it "
                "in task.yml's files: so that it travels with the task")
    if fmt == "native":
        return ("install it in the Python environment kerneltui runs in, or, if it is a file of the task, put it in "
                "the task's folder")
    return "install it in the Python environment kerneltui runs in"


def raise_limit(fmt: str, rung: str, reference_file: str) -> str:
    """How to give a rung more time: the task's own setting, and --timeout."""
    if fmt == "kernelbench":
        own = f"a `# kerneltui: timeouts = {{{rung} = SECONDS}}` line in {reference_file}"
    elif fmt == "gpumode":
        name = _GPUMODE_LIMIT.get(rung)
        own = f"{name}: SECONDS in task.yml" if name else ""
    else:
        own = f"[timeouts] {rung} = SECONDS in task.toml"
    return f"{own} or --timeout SECONDS" if own else "--timeout SECONDS"
