"""Replies of the worker ops the parent reads field by field, as typed dicts.

The protocol carries JSON (``core/worker/protocol.py``); these say which keys a reply has, so that a
rung reading ``load``'s reply is checked by mypy like any other seam. An op adds a key here when it
adds one to its reply.
"""

from __future__ import annotations

from typing import Any, TypedDict


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


class CallReply(TypedDict, total=False):
    """``call`` (``ops_candidate.op_call``): one call of the kernel; its outputs stay in shared memory."""

    outputs: Any  # the outputs' descriptors (``core.worker.wire``), for the judge
    evidence: dict[str, Any]  # what wrote each output (``core.worker.evidence``)
    launches: dict[str, int]  # kernel name → launches during the call
    aliases: list[list[Any]]  # [output name, index of the input it shares memory with]
    subclasses: list[str]  # outputs that are tensor subclasses
    previous_changed: bool  # the previous call's output changed during this one
    call_s: float


class VerdictReply(TypedDict, total=False):
    """``judge_verdict`` (``ops_judge.op_judge_verdict``): the judge's decision on one call's output."""

    key: str
    ok: bool
    reason: str
    problems: list[str]  # tampering, aliasing, evidence of another backend: the check fails at once
    outputs: list[dict[str, Any]]  # per output: name, reason, metrics
    structure: list[str]  # mode "run": what is wrong with the outputs' structure
    described: list[str]  # mode "run": each output as shape and dtype
    identical: bool  # mode "again": bitwise the first call's output
    sanity: dict[str, Any]  # the checker sanity probes (``verdicts.checker_sanity``)
