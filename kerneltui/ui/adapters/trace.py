"""The trace rung's result as what the timeline view shows: the traced launches and the overhead.

The rung writes every buffer to ``<version>/trace/buffers.json`` (``metrics["buffers"]``); the view
re-reads it so that the timeline can be redrawn at any width and by SM or by CTA.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kerneltui.core.rungs.result import RungResult
from kerneltui.core.rungs.rung_metrics import trace_metrics
from kerneltui.core.trace import buffer as trace_buffer
from kerneltui.core.trace import summary


@dataclass(frozen=True)
class TraceData:
    traces: tuple[trace_buffer.TraceBuffer, ...]
    overhead: str  # the traced-vs-untraced line
    chrome_trace: str | None


def trace_data(result: RungResult) -> TraceData | str:
    """The view's data, or why there is none (a sentence for a notification)."""
    if result.status in ("fail", "skip"):
        return f"trace: {result.error or result.summary}"
    metrics = trace_metrics(result)
    path = metrics.get("buffers")
    if not path:
        return "trace: this result has no recorded buffers (run the trace rung again)"
    try:
        traces = trace_buffer.load(Path(str(path)))
    except trace_buffer.TraceFormatError as exc:
        return f"trace: {exc}"
    overhead = summary.overhead_of(metrics)
    chrome = metrics.get("chrome_trace")
    return TraceData(tuple(traces), overhead, str(chrome) if chrome else None)
