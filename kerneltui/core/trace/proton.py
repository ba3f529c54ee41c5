"""Proton's intra-kernel trace (Triton's instrumentation mode) read into kerneltui's trace buffers.

A Triton kernel marks regions with ``triton.profiler.language``::

    import triton.profiler.language as pl

    @triton.jit
    def kernel(...):
        with pl.scope("load"):
            x = tl.load(...)

Under ``proton.start(path, backend="instrumentation", data="trace")`` Triton compiles an
instrumented build that records a timestamp pair per scope occurrence in every warp, and
``proton.finalize()`` writes ``path.chrome_trace``: the Chrome trace format, one complete event
(``"ph": "X"``) per occurrence, ``ts`` and ``dur`` in microseconds, ``pid`` naming the kernel, the
SM and the CTA (``"<kernel> Core<sm> CTA<cta>"``) and ``tid`` the warp (``"warp <w> (line <l>)"``,
the line being only Proton's lane for overlapping events). This module reads those events per
kernel and folds them into per-CTA records (``core.trace.regions``). Flow events (``bind_id``) and
metadata events carry no region time and are skipped.
"""

from __future__ import annotations

import re
from typing import Any

from kerneltui.core.trace.buffer import TraceBuffer, TraceFormatError
from kerneltui.core.trace.regions import RegionEvent, fold

SOURCE = "proton"
_PID = re.compile(r"^(?P<kernel>.*?)\s*Core\s*(?P<sm>\d+)\s*CTA\s*(?P<cta>\d+)\s*$")
_WARP = re.compile(r"warp\s*(\d+)")


def read_chrome_trace(doc: Any) -> list[TraceBuffer]:
    """One buffer per kernel in a Proton chrome trace (``{"traceEvents": [...]}``)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceFormatError("not a Proton trace: expected a Chrome trace object with traceEvents")
    per_kernel: dict[str, list[RegionEvent]] = {}
    skipped = 0
    for event in doc["traceEvents"]:
        if not isinstance(event, dict) or event.get("ph") != "X" or "bind_id" in event:
            continue
        pid = _PID.match(str(event.get("pid", "")))
        if pid is None:
            skipped += 1
            continue
        warp = _WARP.search(str(event.get("tid", "")))
        try:
            start = round(float(event["ts"]) * 1000)
            end = start + round(float(event["dur"]) * 1000)
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceFormatError(f"a Proton event without a usable ts/dur: {event}") from exc
        kernel = str(event.get("cat") or pid.group("kernel") or "kernel")
        per_kernel.setdefault(kernel, []).append(RegionEvent(
            region=str(event.get("name", "scope")), cta=int(pid.group("cta")), smid=int(pid.group("sm")),
            warp=int(warp.group(1)) if warp else 0, start_ns=start, end_ns=end))
    if not per_kernel:
        why = f" ({skipped} events named no SM and CTA)" if skipped else ""
        raise TraceFormatError(f"the Proton trace recorded no scope of any kernel{why}: does the kernel enter a "
                               "pl.scope (and was triton.profiler.language's Triton semantic enabled)?")
    notes = ("times from Proton's trace (globaltimer, per warp), folded per CTA",)
    return [fold(events, kernel=name, source=SOURCE, notes=notes) for name, events in per_kernel.items()]
