"""The region table as text: the trace rung's details and what the agent reads."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import median
from typing import Any

from kerneltui.core.trace import buffer as trace_buffer
from kerneltui.core.trace.stats import TraceReport, analyse


def fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def region_table(report: TraceReport) -> str:
    head = (f"{report.kernel}: {report.ctas_traced}/{report.ctas} CTAs traced on {report.sms} SMs, "
            f"kernel {fmt_ns(report.kernel_ns)} end to end, median CTA {fmt_ns(report.cta_span_median_ns)}")
    rows = [("region", "CTAs", "per CTA", "median", "p10–p90", "share", "cycles")]
    for r in report.regions:
        rows.append((
            r.name, str(r.ctas), f"{r.occurrences:g}×", fmt_ns(r.median_ns),
            f"{fmt_ns(r.p10_ns)}–{fmt_ns(r.p90_ns)}", f"{100 * r.share:.1f}%",
            f"{r.median_cycles:.0f}" if r.median_cycles is not None else "–",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [head] + ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
                      for row in rows]
    if report.overlaps:
        lines.append("overlap (median over CTAs of shared span / shorter span): " + ", ".join(
            f"{o.first}∩{o.second} {100 * o.fraction:.0f}%" for o in report.overlaps))
    return "\n".join(lines)


def overhead_line(untraced_ms: float | None, traced_ms: float | None, source: str = "kerneltui",
                  traced_span_ms: float | None = None) -> str:
    """The traced-vs-untraced line. Under Proton (``source`` "proton") the traced calls' CUDA events
    also hold Proton reading its profile buffer back after every launch (100 ms a call for a 60 µs
    softmax on an H100), which is not the kernel's slowdown: the line says so and gives the traced
    kernel's span in the trace (``traced_span_ms``) beside the untraced call instead of a percentage."""
    if source == "proton" and traced_ms is not None:
        span = f"; the traced kernel spans {traced_span_ms * 1000:.1f} µs in the trace" if traced_span_ms else ""
        plain = f", an untraced call takes {untraced_ms * 1000:.1f} µs (CUDA events)" if untraced_ms else ""
        return (f"tracing overhead: not measured under Proton: its traced calls ({traced_ms * 1000:.1f} µs median) "
                f"include Proton reading its profile buffer after every launch{span}{plain}")
    if not untraced_ms or traced_ms is None:
        return "tracing overhead: not measured"
    pct = 100.0 * (traced_ms / untraced_ms - 1.0)
    return (f"tracing overhead: traced median {traced_ms * 1000:.1f} µs vs untraced {untraced_ms * 1000:.1f} µs "
            f"({pct:+.1f}%): region times come from the traced run, the real time is the untraced one")


def overhead_of(metrics: dict[str, Any]) -> str:
    """The overhead line of a trace rung's metrics (the trace screen, ``kerneltui trace``)."""
    spans = [float(k.get("kernel_ns") or 0.0) for k in metrics.get("kernels") or []]
    return overhead_line(metrics.get("untraced_ms"), metrics.get("traced_ms"), str(metrics.get("source") or "kerneltui"),
                         max(spans) / 1e6 if spans and max(spans) > 0 else None)


def brief(version_dir: Path) -> str | None:
    """The saved trace of a version as text for the agent: overhead, then each kernel's region table.
    None when the version was not traced."""
    path = version_dir / "trace" / "buffers.json"
    if not path.is_file():
        return None
    traces = trace_buffer.load(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    untraced, traced = data.get("untraced_ms") or [], data.get("traced_ms") or []
    reports = [analyse(buf) for buf in traces]
    span_ms = max((r.kernel_ns for r in reports), default=0.0) / 1e6
    lines = [overhead_line(float(median(untraced)) if untraced else None, float(median(traced)) if traced else None,
                           traces[0].source if traces else "kerneltui", span_ms or None)]
    for report in reports:
        lines += ["", region_table(report)]
    lines.append("\nRegions are timed by the CTA's thread 0 (CUDA header) or the issuing thread (Triton markers); "
                 "a region's share is its busy time over the CTAs' spans.")
    return "\n".join(lines)
