"""Roofline arithmetic: a kernel's time against what the device can physically do.

Pure Python. Inputs are the work the task declares (``flops`` and ``bytes_moved`` in reference.py),
a measured time, and the device's measured peaks (``core.bench.device_peaks``). Outputs, per benchmark case:
arithmetic intensity, which roof binds (memory or compute), the floor time at the measured peaks,
achieved TFLOP/s and GB/s, and the percentage of the roofline reached.

Two floors, on purpose:

* the **roofline floor** uses the measured peaks as they are: it is the number a kernel engineer
  aims at, and a very good kernel can land a few percent above 100% of it (reads stream slightly
  faster than the copy that measured the bandwidth; a cuBLAS matmul is not the last word);
* the **physical floor** is the one a time may never beat: the peaks raised by a margin that covers
  those effects (``MEMORY_MARGIN``, ``COMPUTE_MARGIN``), and up to one L2 of the declared traffic
  allowed to stay on chip (outputs written to L2 are written back after the timed call ends). A
  time under it means skipped work, a cache the recheck missed, or a task that overstates its work.

Before anything is aggregated across cases, each case's time is clamped at its roofline floor (the
speed-of-light clamp), so one shape timed at ~0 cannot collapse a mean.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import cast

from kerneltui.core.rungs.rung_metrics import RooflinePointData

MEMORY_MARGIN = 1.25  # measured copy bandwidth × this bounds any real kernel's DRAM traffic rate
COMPUTE_MARGIN = 1.5  # measured (cuBLAS) matmul rate × this bounds any real kernel's math rate


@dataclass(frozen=True)
class Roofs:
    """The two roofs for one case: a bandwidth (GB/s) and a math rate (TFLOP/s) with its name."""

    bandwidth_gbps: float | None
    peak_tflops: float | None
    peak_name: str | None = None  # "bf16 tensor-core matmul", …
    l2_bytes: int = 0


@dataclass(frozen=True)
class RooflinePoint:
    flops: float | None
    bytes: float | None
    time_ms: float
    intensity: float | None  # FLOP per byte
    ridge: float | None  # the intensity where the two roofs meet
    bound: str  # "memory" | "compute" | "unknown"
    memory_ms: float | None  # bytes at the measured bandwidth
    compute_ms: float | None  # flops at the measured peak
    floor_ms: float | None  # roofline floor: the larger of the two
    physical_floor_ms: float | None
    achieved_tflops: float | None
    achieved_gbps: float | None
    pct_roofline: float | None  # floor / time × 100
    impossible: bool
    clamped_ms: float  # max(time, floor): what aggregates use
    peak_name: str | None = None
    bandwidth_gbps: float | None = None
    peak_tflops: float | None = None

    def to_dict(self) -> RooflinePointData:
        # A cast: asdict's keys are this class's fields, which RooflinePointData lists.
        return cast(RooflinePointData,
                    {k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in asdict(self).items()})


def _positive(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) and x > 0 else None


def analyse(time_ms: float, flops: float | None, bytes_moved: float | None, roofs: Roofs) -> RooflinePoint:
    """The roofline view of one measured time. ``time_ms`` must be positive."""
    if not (time_ms > 0 and math.isfinite(time_ms)):
        raise ValueError(f"a roofline needs a positive time, not {time_ms!r}")
    f, b = _positive(flops), _positive(bytes_moved)
    bw, peak = _positive(roofs.bandwidth_gbps), _positive(roofs.peak_tflops)
    seconds = time_ms * 1e-3
    memory_ms = b / (bw * 1e9) * 1e3 if b is not None and bw is not None else None
    compute_ms = f / (peak * 1e12) * 1e3 if f is not None and peak is not None else None
    known = [t for t in (memory_ms, compute_ms) if t is not None]
    floor_ms = max(known) if known else None
    if memory_ms is not None and compute_ms is not None:
        bound = "compute" if compute_ms >= memory_ms else "memory"
    elif memory_ms is not None:
        bound = "memory"
    elif compute_ms is not None:
        bound = "compute"
    else:
        bound = "unknown"
    # The physical floor: generous roofs, and up to one L2 of traffic that may never reach DRAM in time.
    phys = []
    if b is not None and bw is not None:
        dram_bytes = max(0.0, b - float(roofs.l2_bytes or 0))
        phys.append(dram_bytes / (bw * MEMORY_MARGIN * 1e9) * 1e3)
    if f is not None and peak is not None:
        phys.append(f / (peak * COMPUTE_MARGIN * 1e12) * 1e3)
    physical_floor_ms = max(phys) if phys else None
    return RooflinePoint(
        flops=f, bytes=b, time_ms=time_ms,
        intensity=(f / b) if f is not None and b is not None else None,
        ridge=(peak * 1e12) / (bw * 1e9) if peak is not None and bw is not None else None,
        bound=bound, memory_ms=memory_ms, compute_ms=compute_ms, floor_ms=floor_ms,
        physical_floor_ms=physical_floor_ms,
        achieved_tflops=f / seconds / 1e12 if f is not None else None,
        achieved_gbps=b / seconds / 1e9 if b is not None else None,
        pct_roofline=floor_ms / time_ms * 100.0 if floor_ms is not None else None,
        impossible=physical_floor_ms is not None and physical_floor_ms > 0 and time_ms < physical_floor_ms,
        clamped_ms=max(time_ms, floor_ms) if floor_ms is not None else time_ms,
        peak_name=roofs.peak_name, bandwidth_gbps=bw, peak_tflops=peak,
    )


def clamp_to_floor(time_ms: float, floor_ms: float | None) -> float:
    """The speed-of-light clamp: no case counts as faster than its roofline floor."""
    if floor_ms is None or not math.isfinite(floor_ms) or floor_ms <= 0:
        return time_ms
    return max(time_ms, floor_ms)


def aggregate_pct(points: list[RooflinePoint]) -> float | None:
    """Geometric mean of the per-case percentages, each capped at 100% (clamped times)."""
    pcts = [min(100.0, p.floor_ms / p.clamped_ms * 100.0) for p in points
            if p.floor_ms is not None and p.clamped_ms > 0]
    pcts = [p for p in pcts if p > 0]
    if not pcts:
        return None
    return math.exp(math.fsum(math.log(p) for p in pcts) / len(pcts))


def impossible_message(label: str, point: RooflinePoint, l2_bytes: int = 0) -> str:
    from kerneltui.core.bench.stats import format_ms

    memory = compute = 0.0
    if point.bytes is not None and point.bandwidth_gbps is not None:
        memory = max(0.0, point.bytes - l2_bytes) / (point.bandwidth_gbps * MEMORY_MARGIN * 1e9) * 1e3
    if point.flops is not None and point.peak_tflops is not None:
        compute = point.flops / (point.peak_tflops * COMPUTE_MARGIN * 1e12) * 1e3
    if memory >= compute and point.bytes is not None and point.bandwidth_gbps is not None:
        l2 = f" beyond one L2 ({l2_bytes / 1e6:.3g} MB)" if l2_bytes else ""
        why = (f"moving {point.bytes / 1e6:.4g} MB{l2} at {point.bandwidth_gbps * MEMORY_MARGIN:.0f} GB/s, "
               f"{MEMORY_MARGIN:g}× the measured copy bandwidth")
    else:
        why = (f"{(point.flops or 0) / 1e9:.4g} GFLOP at {(point.peak_tflops or 0) * COMPUTE_MARGIN:.0f} TFLOP/s, "
               f"{COMPUTE_MARGIN:g}× the measured {point.peak_name or 'matmul rate'}")
    return (
        f"{label}: {format_ms(point.time_ms)} is under the physical floor of {format_ms(point.physical_floor_ms)} "
        f"({why}): no kernel can do the declared work that fast. Either it skips work the checks did not see "
        "(a cache, work left for later), or reference.py's flops()/bytes_moved() overstate the work — check them."
    )
