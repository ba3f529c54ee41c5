"""Chrome / Perfetto trace JSON (the "Trace Event Format") of traced launches.

Each SM is a process and each CTA a thread in it, so Perfetto (ui.perfetto.dev) and
chrome://tracing show one track per CTA grouped by SM. A region is one complete ("X") event
from its first begin to its last end; its busy time and occurrence count are in ``args``
(a loop body's iterations are not recorded one by one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NotRequired, TypedDict

from kerneltui.core.trace.buffer import TraceBuffer


class ChromeEvent(TypedDict):
    """One event of the Trace Event Format: metadata ("M": a process's or thread's name or order)
    or a complete region ("X", with its start and length in µs)."""

    ph: str
    name: str
    pid: int
    tid: NotRequired[int]
    cat: NotRequired[str]
    ts: NotRequired[float]
    dur: NotRequired[float]
    args: dict[str, str | int]


class ChromeOtherData(TypedDict):
    producer: str
    kernels: list[str]


class ChromeDocument(TypedDict):
    """The JSON object Perfetto and chrome://tracing open."""

    traceEvents: list[ChromeEvent]
    displayTimeUnit: str
    otherData: ChromeOtherData


def events(buffer: TraceBuffer, *, origin_ns: int | None = None, pid_base: int = 0) -> list[ChromeEvent]:
    ran = buffer.ran
    if not ran:
        return []
    t0 = min(r.first_begin_ns for r in ran) if origin_ns is None else origin_ns
    out: list[ChromeEvent] = []
    named: set[int] = set()
    threads: set[tuple[int, int]] = set()
    for r in sorted(ran, key=lambda r: (r.smid, r.cta, r.first_begin_ns)):
        pid = pid_base + r.smid
        if pid not in named:
            named.add(pid)
            out.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"{buffer.kernel} SM {r.smid}"}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
        if (pid, r.cta) not in threads:
            threads.add((pid, r.cta))
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": r.cta, "args": {"name": f"CTA {r.cta}"}})
        args: dict[str, str | int] = {"busy_ns": r.busy_ns, "count": r.count, "cta": r.cta, "smid": r.smid}
        if r.busy_clk:
            args["busy_cycles"] = r.busy_clk
        out.append({"ph": "X", "name": buffer.regions[r.region], "cat": buffer.kernel, "pid": pid, "tid": r.cta,
                    "ts": (r.first_begin_ns - t0) / 1000.0, "dur": max(r.span_ns, 1) / 1000.0, "args": args})
    return out


def document(buffers: list[TraceBuffer]) -> ChromeDocument:
    """One JSON object for all kernels of a run (each kernel's SMs under its own process ids)."""
    trace_events: list[ChromeEvent] = []
    for i, buffer in enumerate(buffers):
        trace_events.extend(events(buffer, pid_base=i * 10_000))
    return {"traceEvents": trace_events, "displayTimeUnit": "ns",
            "otherData": {"producer": "kerneltui trace", "kernels": [b.kernel for b in buffers]}}


def write(path: Path, buffers: list[TraceBuffer]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document(buffers)), encoding="utf-8")
    return path
