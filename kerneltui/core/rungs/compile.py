"""The ``compile`` rung: start the run's judge (the reference loaded there), then import the
kernel module in a fresh candidate worker and compile its kernels on the first test case."""

from __future__ import annotations

import asyncio
from typing import cast

from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.result import RungResult, fail, ok
from kerneltui.core.rungs.rung_metrics import CompileMetrics
from kerneltui.core.sandbox.policy import sandbox_note
from kerneltui.core.worker.contract.replies import LoadReply
from kerneltui.core.worker.parent.process import WorkerFailure


async def run(ctx: RunContext) -> RungResult:
    # The judge and the candidate's worker start side by side; the judge loads the reference.
    worker_task = asyncio.ensure_future(ctx.check_worker())
    try:
        judging = await ctx.judging()
    except WorkerFailure as exc:
        worker_task.cancel()
        if exc.kind == "task":  # the judge's words already name the reference's file and line
            return fail("compile", exc.message, location=ctx.location_from(exc.error),
                        details=(exc.error.get("traceback") or "") + exc.stderr, metrics={"failure": "task"})
        where = f"{exc.error.get('file')}:{exc.error.get('line')}: " if exc.error.get("file") else ""
        return fail("compile", f"the reference could not be loaded: {where}{exc.message}",
                    details=(exc.error.get("traceback") or "") + exc.stderr,
                    metrics={"failure": "reference" if exc.kind == "error" else exc.kind})
    except BaseException:  # an environment fault, a cancel: the worker's start ends here too
        worker_task.cancel()
        await asyncio.wait({worker_task})
        if not worker_task.cancelled():
            worker_task.exception()  # retrieved: the judge's fault is the one to report
        raise
    worker = await worker_task
    mark = worker.stderr_mark()
    try:
        result = cast(LoadReply, await worker.request("load", await ctx.load_args(judging),
                                                      timeout=ctx.timeout("compile"),
                                                      on_progress=ctx.progress_for("compile")))
    except WorkerFailure as exc:
        loc = ctx.location_from(exc.error)
        where = f"{loc}: " if loc and str(loc) not in exc.message else ""
        return ctx.failure("compile", exc, worker, mark, message=where + exc.message)
    ctx.data.load = result
    kernels = result.get("kernels") or []
    parts = []
    if kernels:
        parts.append(", ".join(kernels[:4]) + (f" +{len(kernels) - 4}" if len(kernels) > 4 else ""))
    parts.append(f"import {result.get('import_s', 0):.2f}s")
    if result.get("first_call_s") is not None:
        parts.append(f"first call {result['first_call_s']:.2f}s")
    if not result.get("can_run", True):
        parts.append("compile-only (no GPU)")
    elif not ctx.has_gpu and ctx.task.backend_spec.interpreted_without_gpu:
        parts.append(f"{ctx.task.backend_spec.label} interpreter (no GPU)")
    if sandbox_note(worker.sandbox):
        parts.append(sandbox_note(worker.sandbox))
    # The reply's times and launch count, in the reply's order (a key the reply lacks stays out).
    metrics = cast(CompileMetrics, {k: v for k, v in result.items()
                                    if k in ("import_s", "compile_s", "first_call_s", "launch_count")})
    metrics["kernels"] = kernels
    metrics["sandbox"] = worker.sandbox.to_dict() if worker.sandbox else None
    notes = result.get("notes") or []
    details = "\n".join(notes) + ("\n" if notes else "") + worker.stderr_since(mark)
    return ok("compile", " · ".join(parts), metrics=metrics, details=details)
