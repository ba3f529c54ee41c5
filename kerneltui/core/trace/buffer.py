"""The trace buffer: what the device code writes and how the parent reads it.

One record of ``WORDS`` signed 64-bit words per (CTA, region), zero-filled by the harness before
the launch. Only one thread per CTA (the leader, thread 0) writes, so no atomics are needed; a
region entered several times (a loop body) accumulates::

    0 first_begin_ns   %globaltimer when the region was first entered
    1 last_end_ns      %globaltimer when it was last left
    2 busy_ns          sum over occurrences of (end - begin)
    3 count            occurrences (0: the CTA never ran this region)
    4 smid             the SM the CTA ran on
    5 first_begin_clk  clock64 at the first begin (0 where the device code records no cycles)
    6 last_end_clk     clock64 at the last end
    7 busy_clk         sum of clock64 deltas

The CTA index is linear: ``x + gridDim.x * (y + gridDim.y * z)``. The layout must stay in step
with ``kerneltui_trace.cuh`` and ``kerneltui.ktrace.triton`` (``WORDS`` and the field order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

WORDS = 8
FORMAT = "kerneltui-trace/1"
FIELDS = ("first_begin_ns", "last_end_ns", "busy_ns", "count", "smid",
          "first_begin_clk", "last_end_clk", "busy_clk")


class TraceFormatError(ValueError):
    """A trace buffer or recorded file that does not match the layout."""


class TraceBufferData(TypedDict):
    """One kernel's trace as the trace op's reply and ``buffers.json`` carry it. The markers' op
    sends the device's words alone; ``TraceBuffer.to_dict()`` (Proton, IKET, the saved file) says
    every key."""

    kernel: str
    regions: list[str]
    grid: list[int]
    words: list[int]  # ctas × regions × WORDS integers, as the device wrote them
    format: NotRequired[str]  # FORMAT
    ctas: NotRequired[int]
    source: NotRequired[str]  # the tracer: "kerneltui", "proton", "iket"
    notes: NotRequired[list[str]]


@dataclass(frozen=True)
class RegionRecord:
    """One region in one CTA."""

    cta: int
    region: int
    first_begin_ns: int
    last_end_ns: int
    busy_ns: int
    count: int
    smid: int
    first_begin_clk: int = 0
    last_end_clk: int = 0
    busy_clk: int = 0

    @property
    def span_ns(self) -> int:
        return self.last_end_ns - self.first_begin_ns


@dataclass(frozen=True)
class TraceBuffer:
    """One traced launch of one kernel: its region names and the records of every CTA."""

    kernel: str
    regions: tuple[str, ...]
    ctas: int
    records: tuple[RegionRecord, ...]
    grid: tuple[int, int, int] = (0, 0, 0)
    source: str = "kerneltui"  # which device helper wrote it (kerneltui header, Triton markers)
    notes: tuple[str, ...] = ()

    @property
    def ran(self) -> list[RegionRecord]:
        return [r for r in self.records if r.count > 0]

    def to_dict(self) -> TraceBufferData:
        words: list[int] = []
        by_key = {(r.cta, r.region): r for r in self.records}
        for cta in range(self.ctas):
            for region in range(len(self.regions)):
                rec = by_key.get((cta, region))
                words.extend([0] * WORDS if rec is None else [getattr(rec, name) for name in FIELDS])
        return {"format": FORMAT, "kernel": self.kernel, "regions": list(self.regions), "ctas": self.ctas,
                "grid": list(self.grid), "source": self.source, "notes": list(self.notes), "words": words}


def from_words(words: list[int], regions: list[str] | tuple[str, ...], ctas: int, *, kernel: str = "kernel",
               grid: tuple[int, int, int] | list[int] = (0, 0, 0), source: str = "kerneltui",
               notes: tuple[str, ...] = ()) -> TraceBuffer:
    """Read a flat buffer (``ctas × regions × WORDS`` integers, as the device wrote it)."""
    regions = tuple(str(r) for r in regions)
    if not regions:
        raise TraceFormatError(f"{kernel}: the trace names no regions")
    if len(set(regions)) != len(regions):
        raise TraceFormatError(f"{kernel}: region names repeat: {', '.join(regions)}")
    want = ctas * len(regions) * WORDS
    if len(words) != want:
        raise TraceFormatError(
            f"{kernel}: the trace buffer has {len(words)} words; {ctas} CTAs × {len(regions)} regions × {WORDS} "
            f"words = {want}. Allocate it with kerneltui.ktrace.buffer(ctas, regions) for the grid you launch.")
    records = []
    for cta in range(ctas):
        for region in range(len(regions)):
            base = (cta * len(regions) + region) * WORDS
            values = [int(v) for v in words[base:base + WORDS]]
            if values[3] < 0:
                raise TraceFormatError(f"{kernel}: CTA {cta} region {regions[region]!r} has a negative count "
                                       f"({values[3]}): the buffer was not zero-filled or was overwritten")
            if values[3] == 0:
                continue
            if values[1] < values[0]:
                raise TraceFormatError(f"{kernel}: CTA {cta} region {regions[region]!r} ends before it begins "
                                       f"({values[1]} < {values[0]} ns): a begin/end pair is mismatched")
            records.append(RegionRecord(cta, region, *values))
    g = [int(x) for x in grid] + [1, 1, 1]
    dims = (g[0], g[1], g[2]) if grid else (0, 0, 0)
    return TraceBuffer(kernel=kernel, regions=regions, ctas=ctas, records=tuple(records),
                       grid=dims, source=source, notes=tuple(notes))


def from_dict(data: dict[str, Any]) -> TraceBuffer:
    if data.get("format") != FORMAT:
        raise TraceFormatError(f"not a kerneltui trace (format {data.get('format')!r}, expected {FORMAT!r})")
    try:
        return from_words(list(data["words"]), data["regions"], int(data["ctas"]), kernel=str(data.get("kernel", "kernel")),
                          grid=tuple(data.get("grid") or (0, 0, 0)), source=str(data.get("source", "kerneltui")),
                          notes=tuple(data.get("notes") or ()))
    except KeyError as exc:
        raise TraceFormatError(f"the trace has no {exc.args[0]!r} field") from None


def load(path: Path) -> list[TraceBuffer]:
    """A recorded file: one trace object, or ``{"traces": [...]}`` for several kernels."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TraceFormatError(f"cannot read the trace {path}: {exc}") from exc
    items = data["traces"] if isinstance(data, dict) and isinstance(data.get("traces"), list) else [data]
    return [from_dict(item) for item in items]


def save(path: Path, traces: list[TraceBuffer], **extra: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"traces": [t.to_dict() for t in traces], **extra}), encoding="utf-8")

