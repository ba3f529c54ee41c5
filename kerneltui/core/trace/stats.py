"""Per-region statistics of one traced launch: duration across CTAs, share of the kernel, overlap.

Durations are the *busy* time of a region in a CTA (the sum of its occurrences, as seen by the
CTA's leader thread). The spread across CTAs is the 10th-90th percentile range; the share is the
region's busy time over the CTAs' own spans (first begin to last end of any region), summed over
CTAs. Overlap of two regions is per CTA the intersection of their [first begin, last end] spans
over the shorter span, median over the CTAs that ran both: in a pipelined loop where loads are
issued while the previous tile computes it is high, in a load-then-compute kernel near zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import TypedDict

from kerneltui.core.trace.buffer import RegionRecord, TraceBuffer


class RegionStatsData(TypedDict):
    """A region's stats in ``TraceReport.to_dict()``, with its ``spread``."""

    name: str
    ctas: int
    occurrences: float
    median_ns: float
    p10_ns: float
    p90_ns: float
    min_ns: float
    max_ns: float
    share: float
    span_median_ns: float
    median_cycles: float | None
    spread: float


class OverlapData(TypedDict):
    first: str
    second: str
    fraction: float
    ctas: int


class TraceReportData(TypedDict):
    """``TraceReport.to_dict()``: one kernel's regions as the trace rung's metrics carry them."""

    kernel: str
    ctas: int
    ctas_traced: int
    sms: int
    kernel_ns: float
    cta_span_median_ns: float
    regions: list[RegionStatsData]
    overlaps: list[OverlapData]
    has_cycles: bool
    source: str


@dataclass(frozen=True)
class RegionStats:
    name: str
    ctas: int  # CTAs that ran the region
    occurrences: float  # median per CTA
    median_ns: float  # busy time per CTA
    p10_ns: float
    p90_ns: float
    min_ns: float
    max_ns: float
    share: float  # of the CTAs' summed spans, 0..1
    span_median_ns: float  # first begin to last end, per CTA
    median_cycles: float | None  # busy clock64 cycles per CTA; None where none were recorded

    @property
    def spread(self) -> float:
        """p90 / p10 - 1: how uneven the CTAs are (0: all alike)."""
        return self.p90_ns / self.p10_ns - 1.0 if self.p10_ns > 0 else 0.0


@dataclass(frozen=True)
class Overlap:
    first: str
    second: str
    fraction: float  # median over CTAs of intersection / shorter span
    ctas: int


@dataclass(frozen=True)
class TraceReport:
    kernel: str
    ctas: int
    ctas_traced: int  # CTAs with at least one region
    sms: int
    kernel_ns: float  # earliest begin to latest end over the whole grid
    cta_span_median_ns: float
    regions: tuple[RegionStats, ...]
    overlaps: tuple[Overlap, ...]
    has_cycles: bool
    source: str = "kerneltui"

    def region(self, name: str) -> RegionStats:
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(f"{self.kernel} has no traced region {name!r}; regions: {', '.join(r.name for r in self.regions)}")

    def to_dict(self) -> TraceReportData:
        return {"kernel": self.kernel, "ctas": self.ctas, "ctas_traced": self.ctas_traced, "sms": self.sms,
                "kernel_ns": self.kernel_ns, "cta_span_median_ns": self.cta_span_median_ns,
                "regions": [{"name": r.name, "ctas": r.ctas, "occurrences": r.occurrences, "median_ns": r.median_ns,
                             "p10_ns": r.p10_ns, "p90_ns": r.p90_ns, "min_ns": r.min_ns, "max_ns": r.max_ns,
                             "share": r.share, "span_median_ns": r.span_median_ns, "median_cycles": r.median_cycles,
                             "spread": r.spread} for r in self.regions],
                "overlaps": [{"first": o.first, "second": o.second, "fraction": o.fraction, "ctas": o.ctas}
                             for o in self.overlaps],
                "has_cycles": self.has_cycles, "source": self.source}


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), for a sorted copy."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def cta_spans(buffer: TraceBuffer) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for r in buffer.ran:
        lo, hi = spans.get(r.cta, (r.first_begin_ns, r.last_end_ns))
        spans[r.cta] = (min(lo, r.first_begin_ns), max(hi, r.last_end_ns))
    return spans


def analyse(buffer: TraceBuffer) -> TraceReport:
    ran = buffer.ran
    spans = cta_spans(buffer)
    total_span = sum(hi - lo for lo, hi in spans.values())
    by_region: dict[int, list[RegionRecord]] = {}
    for r in ran:
        by_region.setdefault(r.region, []).append(r)
    has_cycles = any(r.busy_clk > 0 for r in ran)
    regions = []
    for index, name in enumerate(buffer.regions):
        recs = by_region.get(index, [])
        busy = [float(r.busy_ns) for r in recs]
        cycles = [float(r.busy_clk) for r in recs if r.busy_clk > 0]
        regions.append(RegionStats(
            name=name, ctas=len(recs),
            occurrences=float(median([r.count for r in recs])) if recs else 0.0,
            median_ns=float(median(busy)) if busy else 0.0,
            p10_ns=percentile(busy, 0.10), p90_ns=percentile(busy, 0.90),
            min_ns=min(busy, default=0.0), max_ns=max(busy, default=0.0),
            share=sum(busy) / total_span if total_span > 0 else 0.0,
            span_median_ns=float(median([r.span_ns for r in recs])) if recs else 0.0,
            median_cycles=float(median(cycles)) if cycles else None,
        ))
    overlaps = []
    per_cta = {(r.cta, r.region): r for r in ran}
    for i in range(len(buffer.regions)):
        for j in range(i + 1, len(buffer.regions)):
            fractions = []
            for cta in spans:
                a, b = per_cta.get((cta, i)), per_cta.get((cta, j))
                if a is None or b is None:
                    continue
                shorter = min(a.span_ns, b.span_ns)
                inter = min(a.last_end_ns, b.last_end_ns) - max(a.first_begin_ns, b.first_begin_ns)
                fractions.append(max(0, inter) / shorter if shorter > 0 else 0.0)
            if fractions:
                overlaps.append(Overlap(buffer.regions[i], buffer.regions[j], float(median(fractions)), len(fractions)))
    kernel_ns = (max(hi for _, hi in spans.values()) - min(lo for lo, _ in spans.values())) if spans else 0
    return TraceReport(
        kernel=buffer.kernel, ctas=buffer.ctas, ctas_traced=len(spans), sms=len({r.smid for r in ran}),
        kernel_ns=float(kernel_ns),
        cta_span_median_ns=float(median([hi - lo for lo, hi in spans.values()])) if spans else 0.0,
        regions=tuple(regions), overlaps=tuple(overlaps), has_cycles=has_cycles, source=buffer.source,
    )
