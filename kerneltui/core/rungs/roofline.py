"""The ``roofline`` rung: the benchmarked times against the device's measured peaks (``core.bench.roofline``).

Per benchmark case: arithmetic intensity, the binding roof, the floor time, achieved TFLOP/s and
GB/s and the percentage of the roofline; the aggregate over cases is taken after each case is
clamped at its floor. A time under the physical floor fails the rung as impossible.
"""

from __future__ import annotations

from kerneltui.core.bench import roofline
from kerneltui.core.bench.stats import format_ms
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.result import RungResult, fail, ok, skip
from kerneltui.core.rungs.rung_metrics import RooflineCase, RooflineMetrics

NAME = "roofline"
NO_WORK = ("reference.py defines no flops(**params) or bytes_moved(**params): add them (the work one call "
           "must do: floating-point operations and the bytes it must read and write) to get a roofline")


def _rate(point: roofline.RooflinePoint) -> str:
    if point.bound == "compute" and point.achieved_tflops is not None and point.peak_tflops:
        return f"{point.achieved_tflops:.1f} of {point.peak_tflops:.1f} TFLOP/s ({point.peak_name})"
    if point.achieved_gbps is not None and point.bandwidth_gbps:
        return f"{point.achieved_gbps / 1e3:.2f} of {point.bandwidth_gbps / 1e3:.2f} TB/s copy bandwidth"
    return ""


def case_line(label: str, p: roofline.RooflinePoint, mode: str = "") -> str:
    parts = [f"{label}{mode}: {format_ms(p.time_ms)}"]
    if p.pct_roofline is not None:
        parts.append(f"{p.pct_roofline:.0f}% of roofline ({p.bound}-bound, floor {format_ms(p.floor_ms)})")
    if p.intensity is not None:
        ridge = f", ridge {p.ridge:.1f}" if p.ridge is not None else ""
        parts.append(f"intensity {p.intensity:.3g} FLOP/B{ridge}")
    if p.achieved_tflops is not None:
        parts.append(f"{p.achieved_tflops:.2f} TFLOP/s")
    if p.achieved_gbps is not None:
        parts.append(f"{p.achieved_gbps:.0f} GB/s")
    return " · ".join(parts)


async def run(ctx: RunContext) -> RungResult:
    bench = ctx.data.benchmark
    if not bench:
        return skip(NAME, "no benchmark numbers from this run")
    peaks = ctx.data.device_peaks
    if peaks is None:
        return skip(NAME, "the device's peaks are unknown (they could not be measured)")
    points: list[tuple[str, roofline.RooflinePoint]] = []
    cases_out: list[RooflineCase] = []
    lines: list[str] = []
    problems: list[str] = []
    missing: list[str] = []
    for case in bench.get("cases") or []:
        label = case.get("label", "")
        median = (case.get("candidate") or {}).get("median_ms")
        if not median:
            continue
        errors = [case[k] for k in ("flops_error", "bytes_error") if case.get(k)]
        problems.extend(errors)
        if case.get("flops") is None and case.get("bytes") is None:
            missing.append(label)
            continue
        peak, peak_name = peaks.compute_peak(case.get("dtype"))
        roofs = roofline.Roofs(bandwidth_gbps=peaks.copy_gbps, peak_tflops=peak, peak_name=peak_name,
                               l2_bytes=peaks.l2_bytes)
        point = roofline.analyse(median, case.get("flops"), case.get("bytes"), roofs)
        points.append((label, point))
        entry: RooflineCase = {"label": label, **point.to_dict()}
        lines.append(case_line(label, point))
        if point.impossible:
            problems.insert(0, roofline.impossible_message(label, point, peaks.l2_bytes))
        graph_ms = (case.get("graph") or {}).get("median_ms")
        if graph_ms and graph_ms > 0:
            gpoint = roofline.analyse(graph_ms, case.get("flops"), case.get("bytes"), roofs)
            entry["graph"] = gpoint.to_dict()
            lines.append(case_line(label, gpoint, " (CUDA graph)"))
            if gpoint.impossible:
                problems.append(roofline.impossible_message(f"{label} (CUDA graph)", gpoint, peaks.l2_bytes))
        if case.get("work_estimated"):
            entry["work_estimated"] = case["work_estimated"]
            lines.append(f"{label}: work estimated ({case['work_estimated']})")
        cases_out.append(entry)
    if not points and not problems:
        return skip(NAME, NO_WORK)
    pct = roofline.aggregate_pct([p for _, p in points]) if points else None
    metrics: RooflineMetrics = {
        "pct_roofline": pct,
        "cases": cases_out,
        "peaks": {"copy_gbps": peaks.copy_gbps, "matmul_tflops": peaks.matmul_tflops, "l2_bytes": peaks.l2_bytes,
                  "device": peaks.name, "key": peaks.key},
        "floor_ms": points[0][1].floor_ms if len(points) == 1 else None,
        "no_work_declared": missing,
        "margins": {"memory": roofline.MEMORY_MARGIN, "compute": roofline.COMPUTE_MARGIN},
    }
    if missing:
        lines.append(f"no roofline for {', '.join(missing)}: {NO_WORK}")
    details = "\n".join(lines)
    impossible = any(p.impossible for _, p in points) or any("graph" in c and c["graph"].get("impossible") for c in cases_out)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return fail(NAME, problems[0] + more, metrics=metrics, details=details + "\n\n" + "\n".join(problems),
                    summary=("impossible: " if impossible else "") + problems[0][:150])
    estimated = " · work estimated from the reference" if any(c.get("work_estimated") for c in cases_out) else ""
    if len(points) == 1:
        label, p = points[0]
        above = " (above the measured roof)" if (p.pct_roofline or 0) > 100 else ""
        summary = (f"{p.pct_roofline:.0f}% of roofline{above} · {p.bound}-bound · {_rate(p)} · floor {format_ms(p.floor_ms)}"
                   if p.pct_roofline is not None else "no roof for this case's dtype")
    else:
        summary = f"{pct:.0f}% of roofline (geomean of {len(points)} cases, each clamped at its floor)" if pct else "no roof"
    return ok(NAME, summary + estimated, metrics=metrics, details=details)
