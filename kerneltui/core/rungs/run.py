"""The ``run`` rung: one call on the first test case; shape, dtype, device and finiteness."""

from __future__ import annotations

from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.result import RungResult, SourceLocation, fail, ok, skip
from kerneltui.core.worker.process import WorkerFailure


async def run(ctx: RunContext) -> RungResult:
    load = ctx.data.get("load") or {}
    if not load.get("can_run", True):
        return skip("run", load.get("run_skipped_reason") or "kernels cannot run here")
    first_error = load.get("first_call_error")
    if first_error:
        loc = ctx.location_from(first_error)
        return fail("run", f"{loc}: {first_error['message']}" if loc else first_error["message"],
                    location=loc, details=first_error.get("traceback", ""), metrics={"failure": "error"})
    worker = await ctx.check_worker()
    mark = worker.stderr_mark()
    try:
        result = await worker.request("run", {}, timeout=ctx.timeout("run"), on_progress=ctx.progress_for("run"))
    except WorkerFailure as exc:
        loc = ctx.location_from(exc.error)
        return fail("run", exc.message, location=loc,
                    details=(exc.error.get("traceback") or "") + worker.stderr_since(mark), metrics={"failure": exc.kind})
    ctx.data["run"] = result
    launches = result.get("launches") or {}
    metrics = {"outputs": result.get("outputs"), "launches": launches, "call_s": result.get("call_s")}
    details = worker.stderr_since(mark)
    if result.get("problems"):
        probs = result["problems"]
        return fail("run", "; ".join(probs), metrics=metrics, details="\n".join(probs) + "\n" + details,
                    location=SourceLocation(ctx.task.entry_file, 1))
    n = sum(launches.values())
    summary = ", ".join(result.get("outputs") or []) or "ran"
    if n:
        summary += f" · {n} launch{'es' if n != 1 else ''}"
    return ok("run", summary, metrics=metrics, details=details)
