"""The ``compile`` rung: import the kernel module in a fresh worker and compile its kernels."""

from __future__ import annotations

from typing import Any

from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.result import RungResult, fail, ok
from kerneltui.core.sandbox.policy import sandbox_note
from kerneltui.core.worker.process import WorkerFailure


async def run(ctx: RunContext) -> RungResult:
    worker = await ctx.check_worker()
    mark = worker.stderr_mark()
    try:
        result = await worker.request("load", ctx.load_args(), timeout=ctx.timeout("compile"),
                                      on_progress=ctx.progress_for("compile"))
    except WorkerFailure as exc:
        loc = ctx.location_from(exc.error)
        where = f"{loc}: " if loc and str(loc) not in exc.message else ""
        return fail("compile", where + exc.message, location=loc,
                    details=(exc.error.get("traceback") or "") + worker.stderr_since(mark),
                    metrics={"failure": exc.kind})
    ctx.data["load"] = result
    kernels = result.get("kernels") or []
    parts = []
    if kernels:
        parts.append(", ".join(kernels[:4]) + (f" +{len(kernels) - 4}" if len(kernels) > 4 else ""))
    parts.append(f"import {result.get('import_s', 0):.2f}s")
    if result.get("first_call_s") is not None:
        parts.append(f"first call {result['first_call_s']:.2f}s")
    if not result.get("can_run", True):
        parts.append("compile-only (no GPU)")
    elif not ctx.has_gpu and ctx.task.backend == "triton":
        parts.append("Triton interpreter (no GPU)")
    if sandbox_note(worker.sandbox):
        parts.append(sandbox_note(worker.sandbox))
    metrics: dict[str, Any] = {k: result[k] for k in ("import_s", "compile_s", "first_call_s", "launch_count") if k in result}
    metrics["kernels"] = kernels
    metrics["sandbox"] = worker.sandbox.to_dict() if worker.sandbox else None
    notes = result.get("notes") or []
    details = "\n".join(notes) + ("\n" if notes else "") + worker.stderr_since(mark)
    return ok("compile", " · ".join(parts), metrics=metrics, details=details)
