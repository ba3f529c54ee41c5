"""The ``trace`` rung: time named regions inside the kernel, per CTA (on demand, needs a GPU).

The kernel marks regions with kerneltui's markers (``kerneltui.ktrace``: the CUDA C++ header
``kerneltui_trace.cuh`` or the Triton helpers) and takes a buffer from ``ktrace.buffer``, or with
its DSL's own tracer (Triton's Proton scopes, CuTe DSL's IKET ranges), which the rung then runs
instead (``core.trace.sources`` says which, and why not where it cannot). In a
fresh worker the candidate runs untraced, then traced; the parent reads the buffers into region
statistics (``core.trace.stats``), a text timeline per SM, and a Chrome/Perfetto trace JSON in
``<version>/trace/``. The traced median is shown beside the untraced one: region times come from
the traced run and are never the kernel's real time.

Options: ``RunOptions.trace`` (``TraceOptions``: the benchmark case, default the first; the reps).
"""

from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Any, cast

from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.judging import CaseRef
from kerneltui.core.rungs.result import RungResult, fail, ok, skip, warn
from kerneltui.core.rungs.rung_metrics import TraceMetrics, trace_metrics
from kerneltui.core.trace import buffer as trace_buffer
from kerneltui.core.trace import chrome, iket_run, sources, summary, timeline
from kerneltui.core.trace.stats import analyse
from kerneltui.core.worker.contract.replies import TraceReply
from kerneltui.core.worker.contract.seeds import seed_for
from kerneltui.core.worker.parent.process import WorkerFailure

NAME = "trace"
NO_BUFFER = ("the kernel asked for no trace buffer: mark regions with kerneltui's markers and pass "
             "kerneltui.ktrace.buffer(kernel, regions, grid).tensor to the launch (README, 'Inside a kernel')")


def no_gpu_reason(ctx: RunContext) -> str:
    return sources.no_gpu_reason(ctx.task.backend, ctx.source)


async def run(ctx: RunContext) -> RungResult:
    if not ctx.has_gpu:
        return skip(NAME, no_gpu_reason(ctx))
    progress = ctx.progress_for(NAME)
    # The DSL's own tracer where the kernel uses one (core/trace/sources.py), else the markers.
    choice = sources.choose(ctx.task.backend, ctx.source, iket_problem=iket_run.unavailable(ctx.pool.runner.name))
    if choice.source == sources.IKET:
        try:
            raw = await iket_run.trace(ctx.task, ctx.files, ctx.version_dir, timeout_s=ctx.timeout("benchmark"),
                                       case_index=ctx.options.trace.case, progress=progress,
                                       override=ctx.options.override_folder)
        except iket_run.IketFailed as exc:
            return fail(NAME, f"IKET: {exc}")
        result = build_result(ctx.version_dir, raw)
        ctx.data.trace = trace_metrics(result)
        return result
    try:
        worker = await ctx.loaded_worker(NAME)
        mark = worker.stderr_mark()
        judging = await ctx.judging()
        index = ctx.options.trace.case or 0
        cases = ctx.task.benchmarks or ctx.task.tests
        if not 0 <= index < len(cases):
            return fail(NAME, f"trace case {index} does not exist: the task has {len(cases)} "
                              f"{'[[benchmarks]]' if ctx.task.benchmarks else '[[tests]]'} cases (0 to {len(cases) - 1})")
        case = cases[index]
        key, inputs = await judging.inputs(CaseRef(index, dict(case.params), seed_for(index, case.seed, 0), case.label),
                                           ctx.timeout("benchmark"), reference=False, rolling=False,
                                           limit=ctx.step_limit("benchmark"))
        raw = cast(TraceReply, await worker.request("trace", {"case": index, "reps": ctx.options.trace.reps,
                                                              "inputs": inputs, "source": choice.source},
                                                    timeout=ctx.timeout("benchmark"), on_progress=progress))
        judging.release([key])
    except WorkerFailure as exc:
        return ctx.failure(NAME, exc)
    result = build_result(ctx.version_dir, raw, worker.stderr_since(mark), fallback=choice.note())
    ctx.data.trace = trace_metrics(result)
    return result


def build_result(version_dir: Path, raw: TraceReply, stderr: str = "", fallback: str = "") -> RungResult:
    """The rung's result from the worker's raw reply; writes ``<version>/trace/``. ``fallback``: why
    the kernel's own DSL tracer was not used (the worker adds its own reason as ``source_note``)."""
    untraced = float(median(times)) if (times := raw.get("untraced_ms")) else None
    traced = float(median(times)) if (times := raw.get("traced_ms")) else None
    source = str(raw.get("source") or sources.MARKERS)
    overhead_pct = summary.overhead_pct(untraced, traced, source)
    if raw.get("source_note"):
        fallback = sources.SourceChoice(sources.MARKERS, sources.PROTON, str(raw["source_note"])).note()
    if not raw.get("buffers"):
        return fail(NAME, f"{fallback}. {NO_BUFFER}" if fallback else NO_BUFFER,
                    metrics=TraceMetrics(untraced_ms=untraced, traced_ms=traced))
    try:
        buffers = [trace_buffer.from_words(b["words"], b["regions"], _ctas(b["grid"]), kernel=b["kernel"],
                                           grid=b["grid"], source=str(b.get("source") or "kerneltui"),
                                           notes=tuple(b.get("notes") or ())) for b in raw["buffers"]]
    except trace_buffer.TraceFormatError as exc:
        return fail(NAME, f"the trace buffer could not be read: {exc}")
    reports = [analyse(b) for b in buffers]
    out_dir = version_dir / "trace"
    files: dict[str, str] = {}
    try:
        trace_buffer.save(out_dir / "buffers.json", buffers, untraced_ms=raw.get("untraced_ms"),
                          traced_ms=raw.get("traced_ms"))
        files["buffers"] = str(out_dir / "buffers.json")
        files["chrome_trace"] = str(chrome.write(out_dir / "trace.json", buffers))
    except OSError as exc:
        files["error"] = f"could not write {out_dir}: {exc.strerror}"
    lines = [summary.overhead_line(untraced, traced, source, summary.span_ms(r.kernel_ns for r in reports))]
    lines.insert(0, f"traced by {sources.LABELS.get(source, source)}" + (f" ({fallback})" if fallback else ""))
    files.update({f"{source}_file_{i}": path for i, path in enumerate(raw.get("source_files") or [])})
    timelines = []
    for buf, rep in zip(buffers, reports, strict=True):
        tl = timeline.build(buf, width=64)
        timelines.append(tl.text())
        lines += ["", summary.region_table(rep), "", tl.text()]
    if files.get("chrome_trace"):
        lines += ["", f"Perfetto / chrome://tracing: {files['chrome_trace']}"]
    if raw.get("traced_output_matches") is False:
        lines.append("warning: the traced run's output differs from the untraced run's: the markers changed the result")
    # A cast: the tracer's own files are named at run time ("<source>_file_<n>"), beside TraceMetrics' keys.
    metrics = cast(TraceMetrics, {
        "untraced_ms": untraced, "traced_ms": traced, "overhead_pct": overhead_pct,
        "case": raw.get("case"), "case_kind": raw.get("case_kind"),
        "kernels": [r.to_dict() for r in reports], "timelines": timelines, **files,
        "traced_output_matches": raw.get("traced_output_matches"),
        "source": source, "source_fallback": fallback or None,
    })
    details = "\n".join(lines) + ("\n" + stderr if stderr.strip() else "")
    head = _headline(reports, overhead_pct)
    if raw.get("traced_output_matches") is False or not any(r.ctas_traced for r in reports):
        why = "no CTA recorded a region" if not any(r.ctas_traced for r in reports) else "traced output differs from untraced"
        return warn(NAME, f"{head} · {why}", metrics=metrics, details=details)
    return ok(NAME, head, metrics=metrics, details=details)


def _ctas(grid: list[int]) -> int:
    n = 1
    for d in grid:
        n *= int(d)
    return n


def _headline(reports: list[Any], overhead_pct: float | None) -> str:
    rep = max(reports, key=lambda r: r.kernel_ns)
    parts = [f"{r.name} {100 * r.share:.0f}%" for r in rep.regions if r.ctas]
    over = f" · overhead {overhead_pct:+.1f}%" if overhead_pct is not None else ""
    return f"{rep.kernel}: " + " ".join(parts) + over

