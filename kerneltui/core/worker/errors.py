"""Turn an exception raised by candidate code into a message a person can act on."""

from __future__ import annotations

import re
import traceback
from typing import Any

CUDA_FATAL = re.compile(
    r"illegal memory access|illegal instruction|misaligned address|unspecified launch failure|"
    r"device-side assert|an illegal|CUDA error|cudaError|CUDA_ERROR|launch timed out|uncorrectable ECC",
    re.IGNORECASE,
)


class TaskProblem(Exception):
    """The task itself cannot run here (e.g. its reference needs a GPU): a task error, not the kernel's."""

    harness_message = True


def describe_exception(exc: BaseException, state: Any) -> dict[str, Any]:
    # The harness's own failures read as sentences; everything else keeps its exception type.
    message = str(exc) if getattr(exc, "harness_message", False) else f"{type(exc).__name__}: {exc}".strip()
    tb_text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    task_dir = str(state.task_dir)
    tb_text = tb_text.replace(task_dir + "/", "").replace(task_dir, ".")
    message = message.replace(task_dir + "/", "").replace(task_dir, ".")
    file, line = None, None
    located = None
    if state.backend is not None:
        try:
            located = state.backend.locate_error(exc, state)
        except Exception:
            located = None
    if located:
        file, line = located
    else:
        # A TaskProblem is raised by the harness about the task's code: its place is in the cause.
        origin = exc.__cause__ if isinstance(exc, TaskProblem) and exc.__cause__ is not None else exc
        for frame in reversed(traceback.extract_tb(origin.__traceback__)):
            rel = state.original_path(frame.filename)
            if rel is not None:
                file, line = rel, frame.lineno
                break
        if file is None and isinstance(exc, SyntaxError) and exc.filename:
            rel = state.original_path(exc.filename)
            if rel is not None:
                file, line = rel, exc.lineno
    if CUDA_FATAL.search(message):
        state.poisoned = True
    return {
        "type": type(exc).__name__,
        "message": message,
        "traceback": tb_text,
        "file": file,
        "line": line,
        "cuda_fatal": state.poisoned,
        "task_error": isinstance(exc, TaskProblem),
    }
