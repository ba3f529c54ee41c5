"""The region table as text: the trace rung's details and what the agent reads."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from statistics import median

from kerneltui.core.rungs.rung_metrics import TraceMetrics
from kerneltui.core.trace import buffer as trace_buffer
from kerneltui.core.trace.sources import MARKERS, PROTON
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


def overhead_pct(untraced_ms: float | None, traced_ms: float | None, source: str = MARKERS) -> float | None:
    """How much slower the traced calls were, in per cent; None when either side was not measured, and
    under Proton, whose traced calls' CUDA events also hold Proton reading its profile buffer back
    after every launch (100 ms a call for a 60 µs softmax on an H100): not the kernel's slowdown."""
    if source == PROTON or not untraced_ms or traced_ms is None:
        return None
    return 100.0 * (traced_ms / untraced_ms - 1.0)


def span_ms(kernel_ns: Iterable[float]) -> float | None:
    """The longest traced kernel's span (first CTA's start to last CTA's end) in ms; None if none."""
    longest = max(kernel_ns, default=0.0)
    return longest / 1e6 if longest > 0 else None


def overhead_line(untraced_ms: float | None, traced_ms: float | None, source: str = MARKERS,
                  traced_span_ms: float | None = None) -> str:
    """The traced-vs-untraced line; under Proton (no percentage, ``overhead_pct``) the traced kernel's
    span in the trace (``traced_span_ms``) beside the untraced call instead."""
    if source == PROTON and traced_ms is not None:
        span = f"; the traced kernel spans {traced_span_ms * 1000:.1f} µs in the trace" if traced_span_ms else ""
        plain = f", an untraced call takes {untraced_ms * 1000:.1f} µs (CUDA events)" if untraced_ms else ""
        return (f"tracing overhead: not measured under Proton: its traced calls ({traced_ms * 1000:.1f} µs median) "
                f"include Proton reading its profile buffer after every launch{span}{plain}")
    pct = overhead_pct(untraced_ms, traced_ms, source)
    if pct is None or untraced_ms is None or traced_ms is None:
        return "tracing overhead: not measured"
    return (f"tracing overhead: traced median {traced_ms * 1000:.1f} µs vs untraced {untraced_ms * 1000:.1f} µs "
            f"({pct:+.1f}%): region times come from the traced run, the real time is the untraced one")


def overhead_of(metrics: TraceMetrics) -> str:
    """The overhead line of a trace rung's metrics (the trace screen, ``kerneltui trace``)."""
    return overhead_line(metrics.get("untraced_ms"), metrics.get("traced_ms"), str(metrics.get("source") or MARKERS),
                         span_ms(float(k.get("kernel_ns") or 0.0) for k in metrics.get("kernels") or []))


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
    lines = [overhead_line(float(median(untraced)) if untraced else None, float(median(traced)) if traced else None,
                           traces[0].source if traces else MARKERS, span_ms(r.kernel_ns for r in reports))]
    for report in reports:
        lines += ["", region_table(report)]
    lines.append("\nRegions are timed by the CTA's thread 0 (CUDA header) or the issuing thread (Triton markers); "
                 "a region's share is its busy time over the CTAs' spans.")
    return "\n".join(lines)
