"""Region intervals recorded by a DSL's own tracer, folded into kerneltui's per-CTA records.

Proton and IKET record every occurrence of a region in every warp (or warp group) with a start
and an end time. kerneltui's trace (``buffer.TraceBuffer``) keeps one record per (CTA, region),
as its own markers write it from the CTA's leader thread. The fold, per CTA and region:

* ``first_begin_ns`` / ``last_end_ns``: the earliest start and the latest end over the CTA's warps;
* ``busy_ns``: the length of the union of the warps' intervals (the time at least one warp of the
  CTA was inside the region), so that eight warps inside a region together count once;
* ``count``: the most occurrences any one warp recorded (a loop body entered once per iteration);
* ``smid``: the SM the CTA ran on.

The CTA index is linear (``x + gx * (y + gy * z)``), as in kerneltui's buffers. Regions are
ordered by their earliest start anywhere in the launch. Times are nanoseconds; tracers that write
microseconds (the Chrome trace format) are converted by their reader.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kerneltui.core.trace.buffer import RegionRecord, TraceBuffer, TraceFormatError


@dataclass(frozen=True)
class RegionEvent:
    """One occurrence of a region in one warp of one CTA."""

    region: str
    cta: int  # linear CTA index
    smid: int
    warp: int
    start_ns: int
    end_ns: int


def fold(events: Iterable[RegionEvent], *, kernel: str, source: str, grid: tuple[int, int, int] | None = None,
         notes: tuple[str, ...] = ()) -> TraceBuffer:
    """kerneltui's per-CTA records of one launch from its region events."""
    by_key: dict[tuple[int, str], list[RegionEvent]] = {}
    first_seen: dict[str, int] = {}
    for ev in events:
        if ev.end_ns < ev.start_ns:
            raise TraceFormatError(f"{kernel}: region {ev.region!r} in CTA {ev.cta} warp {ev.warp} ends before it "
                                   f"begins ({ev.end_ns} < {ev.start_ns} ns)")
        by_key.setdefault((ev.cta, ev.region), []).append(ev)
        first_seen[ev.region] = min(first_seen.get(ev.region, ev.start_ns), ev.start_ns)
    if not by_key:
        raise TraceFormatError(f"{kernel}: the {source} trace holds no region of this kernel")
    regions = tuple(sorted(first_seen, key=lambda name: (first_seen[name], name)))
    index = {name: i for i, name in enumerate(regions)}
    records = []
    for (cta, region), group in sorted(by_key.items(), key=lambda kv: (kv[0][0], index[kv[0][1]])):
        per_warp: dict[int, int] = {}
        for ev in group:
            per_warp[ev.warp] = per_warp.get(ev.warp, 0) + 1
        records.append(RegionRecord(
            cta=cta, region=index[region],
            first_begin_ns=min(ev.start_ns for ev in group), last_end_ns=max(ev.end_ns for ev in group),
            busy_ns=_union_length([(ev.start_ns, ev.end_ns) for ev in group]), count=max(per_warp.values()),
            smid=group[0].smid))
    ctas = max(r.cta for r in records) + 1
    if grid is not None and grid[0] * grid[1] * grid[2] >= ctas:
        ctas = grid[0] * grid[1] * grid[2]
    return TraceBuffer(kernel=kernel, regions=regions, ctas=ctas, records=tuple(records),
                       grid=grid or (ctas, 1, 1), source=source, notes=notes)


def _union_length(intervals: list[tuple[int, int]]) -> int:
    total = 0
    end = None
    start = 0
    for a, b in sorted(intervals):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    if end is not None:
        total += end - start
    return total


def linear_cta(x: int, y: int, z: int, grid: tuple[int, int, int]) -> int:
    return x + grid[0] * (y + grid[1] * z)
