"""The ``run`` rung: one call on the first test case; the judge checks structure, shape, dtype,
device and finiteness (a task's own check_implementation decides dtype and shape questions)."""

from __future__ import annotations

from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.judging import CaseRef
from kerneltui.core.rungs.result import RungResult, SourceLocation, fail, ok, skip
from kerneltui.core.rungs.rung_metrics import RunMetrics, RunOutcome
from kerneltui.core.worker.contract.replies import LoadReply
from kerneltui.core.worker.parent.process import WorkerFailure


async def run(ctx: RunContext) -> RungResult:
    load: LoadReply = ctx.data.load or {}
    if not load.get("can_run", True):
        return skip("run", load.get("run_skipped_reason") or "kernels cannot run here")
    first = ctx.task.tests[0]
    case = CaseRef(0, dict(first.params), ctx.seed_for(0, 0), first.label)
    timeout = ctx.timeout("run")
    judging = await ctx.judging()
    try:
        # The reference runs on the case first, also where the kernel's first call (made while it
        # compiled) already failed: a reference that fails there too (a KernelBench network scaled below
        # what its pooling layers take) makes it the task's fault, not the kernel's.
        key, inputs = await judging.inputs(case, timeout, limit=ctx.step_limit("run"))
    except WorkerFailure as exc:
        return ctx.failure("run", exc)
    first_error = load.get("first_call_error")
    if first_error:
        loc = ctx.location_from(first_error)
        return fail("run", f"{loc}: {first_error['message']}" if loc else first_error["message"],
                    location=loc, details=first_error.get("traceback", ""), metrics={"failure": "error"})
    worker = await ctx.check_worker()
    mark = worker.stderr_mark()
    try:
        called = await judging.call(worker, key, inputs, timeout, on_progress=ctx.progress_for("run"))
        verdict = await judging.verdict(key, called, timeout, mode="run", limit=ctx.step_limit("run"))
    except WorkerFailure as exc:
        return ctx.failure("run", exc, worker, mark)
    launches = called.get("launches") or {}
    outputs = verdict.get("described") or []
    result: RunOutcome = {"outputs": outputs, "problems": verdict.get("structure") or [],
              "launches": launches, "call_s": called.get("call_s")}
    ctx.data.run = result
    metrics: RunMetrics = {"outputs": outputs, "launches": launches, "call_s": called.get("call_s")}
    details = worker.stderr_since(mark)
    structural = [str(p) for p in verdict.get("structure") or []]
    if structural:
        return fail("run", "; ".join(structural), metrics=metrics, details="\n".join(structural) + "\n" + details,
                    location=SourceLocation(ctx.task.entry_file, 1))
    n = sum(launches.values())
    summary = ", ".join(str(o) for o in verdict.get("described") or []) or "ran"
    if n:
        summary += f" · {n} launch{'es' if n != 1 else ''}"
    return ok("run", summary, metrics=metrics, details=details)

