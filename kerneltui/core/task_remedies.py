"""What a person changes in a task of each format when its reference cannot run as it is.

A task error says what to do, and what to do depends on the format: a KernelBench problem's sizes
are module constants (``--set``/``--scale``), a GPU MODE problem's are task.yml's ``tests``, a
native task's task.toml's ``[[tests]]``. The judge (worker side) and the rungs (parent side) word
their task errors from here, so both say the same. Plain strings only: this module imports nothing.
"""

from __future__ import annotations


def smaller_sizes(fmt: str) -> str:
    """How to run the task at smaller sizes."""
    if fmt == "kernelbench":
        return ("run smaller sizes with --set NAME=VALUE (a module constant) or --scale F (every size constant "
                "times F, e.g. --scale 0.01)")
    if fmt == "gpumode":
        return "use smaller sizes in task.yml's tests"
    return "use smaller sizes in task.toml's [[tests]]"


def missing_module(fmt: str) -> str:
    """How to provide a module the reference imports and this machine lacks."""
    if fmt == "gpumode":
        return ("install it in the Python environment kerneltui runs in, or, if it is a file of the problem, list it "
                "in task.yml's files: so that it travels with the task")
    if fmt == "native":
        return ("install it in the Python environment kerneltui runs in, or, if it is a file of the task, put it in "
                "the task's folder")
    return "install it in the Python environment kerneltui runs in"

