"""The ``correctness`` rung: every test case × several seeds + a hidden seed, against the reference."""

from __future__ import annotations

import secrets

from kerneltui.core import metrics as metric_fns
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.result import RungResult, fail, ok, skip, warn
from kerneltui.core.worker.process import WorkerFailure


async def run(ctx: RunContext) -> RungResult:
    load = ctx.data.get("load") or {}
    if not load.get("can_run", True):
        return skip("correctness", load.get("run_skipped_reason") or "kernels cannot run here")
    worker = await ctx.check_worker()
    mark = worker.stderr_mark()
    # Chosen here, per run, so the candidate cannot know it in advance.
    hidden_seed = secrets.randbelow(2**31 - 1) + 1
    seeds = ctx.options.seeds or ctx.task.seeds
    try:
        result = await worker.request(
            "correctness", {"seeds": seeds, "hidden_seed": hidden_seed},
            timeout=ctx.timeout("correctness"), on_progress=ctx.progress_for("correctness"),
        )
    except WorkerFailure as exc:
        loc = ctx.location_from(exc.error)
        return fail("correctness", exc.message, location=loc,
                    details=(exc.error.get("traceback") or "") + worker.stderr_since(mark), metrics={"failure": exc.kind})
    ctx.data["correctness"] = result
    worst = result.get("worst") or {}
    metrics = {
        "checks": result["checks"], "passed": result["passed"], "cases": result["cases"], "seeds": result["seeds"],
        "launches": result.get("launches", 0), **{f"worst_{k}": v for k, v in worst.items()},
    }
    lines = [f"{c['case']} seed={c['seed']}{' (hidden)' if c.get('hidden') else ''}: {'ok' if c['ok'] else 'FAIL'} — {c['reason']}"
             for c in result.get("details", [])]
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    details = "\n".join(lines) + "\n" + worker.stderr_since(mark)
    head = metric_fns.headline(worst)
    if result.get("problems"):
        problems = result["problems"]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return fail("correctness", problems[0] + more, metrics=metrics, details="\n".join(problems) + "\n\n" + details,
                    summary=f"{result['passed']}/{result['checks']} checks passed · {problems[0][:120]}")
    cases = f"{result['cases']} case{'s' if result['cases'] != 1 else ''}"
    summary = f"{result['checks']} checks ({cases} × {result['seeds']}+1 seeds) · {head}"
    if result.get("warnings"):
        return warn("correctness", summary + f" · {len(result['warnings'])} warning(s): {result['warnings'][0]}",
                    metrics=metrics, details=details)
    return ok("correctness", summary, metrics=metrics, details=details)
