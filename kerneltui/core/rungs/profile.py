"""The ``profile`` rung: Nsight Compute on one benchmark case, condensed (see ``core/profile``).

On demand (not on every save): a profile replays each kernel dozens of times. It needs a GPU and
a correct kernel. Problems of the machine (no ncu, no permission for the counters, a sandbox, a
tool holding the counters) skip the rung with the fix; problems of the kernel under the profiler
(it failed, hung, or launched nothing) fail it.

Options: ``RunOptions.profile`` (``ProfileOptions``: the benchmark case, a regex over kernel names,
the launch count, a timeout other than the task's ``[timeouts] profile``).
"""

from __future__ import annotations

from kerneltui.core.profile.render import headline, render_brief, render_table
from kerneltui.core.profile.runner import profile_task
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.result import RungResult, fail, ok, skip
from kerneltui.core.rungs.rung_metrics import ProfileMetrics


async def run(ctx: RunContext) -> RungResult:
    asked = ctx.options.profile
    outcome = await profile_task(
        ctx.task, ctx.files, ctx.version_dir, timeout_s=float(asked.timeout_s or ctx.timeout("profile")),
        case_index=asked.case, kernel_name=asked.kernel_name,
        launch_count=asked.launch_count, arch=ctx.arch, on_progress=ctx.progress_for("profile"),
        override=ctx.options.override_folder,
    )
    ctx.data.profile = outcome
    problem = outcome.problem
    if problem is not None:
        details = problem.text() + ("\n\ncommand: " + " ".join(outcome.command) if outcome.command else "")
        if outcome.output:
            details += "\n\noutput:\n" + "\n".join(outcome.output.splitlines()[-40:])
        why: ProfileMetrics = {"failure": "profiler", "problem": problem.kind}
        if problem.environment:
            return skip("profile", f"{problem.message}. Fix: {problem.fix}", details=details, metrics=why)
        return fail("profile", f"{problem.message}. {problem.fix}", details=details, metrics=why)
    assert outcome.result is not None
    s = outcome.result.summary
    metrics: ProfileMetrics = {
        "kernel": s.kernel, "case": s.case, "bound": s.bound, "duration_ns": s.duration_ns,
        "compute_pct": s.compute_pct, "memory_pct": s.memory_pct, "dram_pct": s.dram_pct,
        "occupancy_achieved_pct": s.occupancy_achieved_pct, "occupancy_theoretical_pct": s.occupancy_theoretical_pct,
        "occupancy_limiter": s.occupancy_limiter, "l1_hit_pct": s.l1_hit_pct, "l2_hit_pct": s.l2_hit_pct,
        "dram_bytes": s.dram_bytes, "dram_vs_task": s.dram_vs_task,
        "top_stalls": [st.reason for st in s.stalls], "kernels_profiled": len(outcome.result.kernels),
        "report": outcome.files.get("report"), "summary_file": outcome.files.get("json"),
    }
    details = render_table(s) + "\n\n" + render_brief(s) + f"\n\nreport: {outcome.files.get('report')}"
    return ok("profile", headline(s), metrics=metrics, details=details)
