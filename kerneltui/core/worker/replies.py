"""Replies of the worker ops the parent reads field by field, as typed dicts.

The protocol carries JSON (``core/worker/protocol.py``); these say which keys a reply has, so that a
rung reading ``load``'s reply is checked by mypy like any other seam. An op adds a key here when it
adds one to its reply.
"""

from __future__ import annotations

from typing import TypedDict


class WorkerError(TypedDict, total=False):
    """An exception in the worker (``core.worker.errors.describe_exception``)."""

    type: str
    message: str
    traceback: str  # the task's frames only, paths relative to the task
    file: str | None  # the failing line of a task file, where there is one
    line: int | None
    cuda_fatal: bool  # the CUDA context is poisoned: the worker is not reused
    task_error: bool  # the task cannot run here (a TaskProblem), not a fault of the kernel


class LoadReply(TypedDict, total=False):
    """``load`` (``ops_candidate.op_load``): the kernel imported and compiled on the first test case."""

    import_s: float
    compile_s: float
    total_s: float
    first_call_s: float
    launch_count: int
    kernels: list[str]
    notes: list[str]
    can_run: bool  # False: compile only (no GPU for this backend); run_skipped_reason says why
    run_skipped_reason: str
    first_call_error: WorkerError  # the first call raised: the run rung fails with it
