"""From raw benchmark samples to the benchmark rung's verdict (parent side, pure Python).

The worker sends event times, host-side gaps and recheck outcomes; this module computes the
statistics (``core.bench.stats``), speedups against the baselines, the aggregate over cases (each
case clamped at its roofline floor first), and decides: a wrong output in a timed call or work left
running after the timed stream finished fails the rung; a series that hit its time cap before
settling, a thread left behind or a changed current stream is a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kerneltui.core.bench import roofline
from kerneltui.core.bench.device_peaks import DevicePeaks
from kerneltui.core.bench.stats import (
    BenchSettings,
    StraggleVerdict,
    converged,
    format_ms,
    geomean,
    graph_kernel_samples,
    median,
    side_work_finding,
    summarize,
)
from kerneltui.core.rungs.rung_metrics import BenchCase, BenchMetrics, GraphStats, RecheckCounts, SeriesStats
from kerneltui.core.worker.contract.replies import (
    BenchSetupCase,
    BenchSetupReply,
    CaseSeries,
    GraphSeries,
    SeriesReply,
)


@dataclass
class BenchVerdict:
    status: str  # "ok" | "warn" | "fail"
    summary: str
    error: str | None
    metrics: BenchMetrics
    details: str
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def series_summary(raw: CaseSeries, settings: BenchSettings) -> SeriesStats:
    """Statistics of one target on one case, from its raw samples (None-safe for failed series)."""
    out: SeriesStats = {}
    if raw.get("error"):
        return {"error": raw["error"]}
    times = raw.get("times_ms") or []
    if times:
        stats = summarize(times)
        out.update(stats.to_dict())
        out["converged"] = converged(stats, settings)
    out["stopped"] = raw.get("stopped") or ""
    out["warmup_runs"] = len(raw.get("warmup_ms") or [])
    out["wall_s"] = raw.get("wall_s")
    out["warmup_s"] = raw.get("warmup_s")
    if raw.get("host_us"):
        out["host_us"] = median(raw["host_us"])
    if raw.get("pool"):
        out["pool"] = raw["pool"]
    if raw.get("spent_s"):
        out["spent_s"] = raw["spent_s"]
    return out


def graph_summary(raw: GraphSeries | None, settings: BenchSettings) -> GraphStats | None:
    if not raw:
        return None
    if raw.get("error"):
        return {"error": raw["error"]}
    total, flush = raw.get("total_ms") or [], raw.get("flush_ms") or []
    if not total or not flush:
        return {"error": "graph mode produced no timed replays"}
    kernel = graph_kernel_samples(total, flush)
    stats = summarize(kernel)
    out: GraphStats = {**stats.to_dict()}
    out["flush_median_ms"] = summarize(flush).median_ms
    out["replay_median_ms"] = summarize(total).median_ms
    out["stopped"] = raw.get("stopped")
    out["warmup_runs"] = raw.get("warmup_runs")
    if stats.median_ms <= 0:
        out["note"] = ("the flush-only replay took as long as flush + kernel: the kernel is too short for "
                       "graph mode to resolve it")
    return out


def _floor(case: BenchCase, peaks: DevicePeaks | None) -> float | None:
    """The case's speed-of-light time: its declared work at the device's roofs, or, where the task
    declares no work, writing the output once at copy bandwidth (no correct call does less)."""
    if peaks is None:
        return None
    if case.get("flops") is None and case.get("bytes") is None:
        out_bytes = case.get("out_bytes")
        if not out_bytes or not peaks.copy_gbps:
            return None
        return float(out_bytes) / (peaks.copy_gbps * 1e9) * 1e3
    peak, name = peaks.compute_peak(case.get("dtype"))
    roofs = roofline.Roofs(bandwidth_gbps=peaks.copy_gbps, peak_tflops=peak, peak_name=name, l2_bytes=peaks.l2_bytes)
    # The floor does not depend on the time; any positive time gives it.
    return roofline.analyse(1.0, case.get("flops"), case.get("bytes"), roofs).floor_ms


def build(setup: BenchSetupReply, reference: SeriesReply, compiled: SeriesReply | None,
          candidate: SeriesReply, peaks: DevicePeaks | None, settings: BenchSettings,
          compile_note: str | None = None, kept: dict[str, str] | None = None) -> BenchVerdict:
    """The benchmark rung's result from the four worker answers. ``kept``: for each baseline reused
    from an earlier run (``core.rungs.baselines``), its label ("kept from HH:MM"), shown beside
    every number of it."""
    kept = kept or {}
    setup_cases = {c["index"]: c for c in setup["cases"]}
    ref_cases = {c["index"]: c for c in reference.get("cases") or []}
    comp_cases = {c["index"]: c for c in (compiled or {}).get("cases") or []}
    problems: list[str] = []
    warnings: list[str] = []
    cases: list[BenchCase] = []
    lines: list[str] = []
    for raw in candidate.get("cases") or []:
        i = raw["index"]
        label = raw["label"]
        info: BenchSetupCase = setup_cases.get(i) or {}
        case: BenchCase = {
            "index": i, "label": label, "params": raw.get("params") or {},
            "dtype": raw.get("dtype"), "dtypes": raw.get("dtypes") or [],
            "flops": info.get("flops"), "bytes": info.get("bytes"), "out_bytes": raw.get("out_bytes"),
        }
        notes: tuple[Literal["flops_error", "bytes_error", "work_estimated", "work_note"], ...] = (
            "flops_error", "bytes_error", "work_estimated", "work_note")
        for key in notes:
            if note := info.get(key):
                case[key] = note
        cand = series_summary(raw, settings)
        case["candidate"] = cand
        case["recheck"] = raw.get("recheck") or RecheckCounts()
        failure = raw.get("failure") or (raw.get("graph") or {}).get("failure")
        if failure:
            where = {"warm-up": "warm-up call", "timed": "timed call", "graph": "CUDA-graph replay"}.get(
                failure.get("phase", ""), "call")
            problems.append(
                f"{label}: {where} #{failure.get('call')} (input seed {failure.get('seed')}) returned a wrong result: "
                f"{failure.get('reason')}. Every benchmarked call gets inputs it has never seen; a kernel that is right "
                "in the checks but wrong here depends on something other than its inputs (a cache keyed on "
                "pointers or content, state kept between calls, or work finished after it returned)."
            )
        kernel_us = 1e3 * cand["median_ms"] if cand.get("median_ms") else None
        side_work = side_work_finding(raw, settings.straggle_us, kernel_us)
        straggle, again = side_work.first, side_work.again
        case["straggle"] = straggle.to_dict()
        confirmed = side_work.failed
        if again is not None:
            case["straggle_confirmation"] = again.to_dict()
            if not confirmed:
                warnings.append(f"{label}: the side-work check flagged the calls once ({_evidence(straggle)}) and "
                                f"not when measured again ({_evidence(again)}): taken as host noise")
        if confirmed:
            problems.append(
                f"{label}: the GPU was still busy after the timed stream finished on {straggle.over} of {straggle.runs} "
                f"calls (median {straggle.median_us:.0f} µs, threshold {straggle.threshold_us:.0f} µs from an idle "
                f"{straggle.idle_p90_us:.0f} µs and a busy {straggle.busy_p90_us:.0f} µs calibration"
                + (f"; {straggle.excess_us:.0f} µs over {straggle.control_ratio:g}× the median of honest controls "
                   "between the calls, "
                   f"p={straggle.p_value:.1g}, and again when measured a second time"
                   if straggle.excess_us is not None and straggle.p_value is not None else "")
                + "): work on another "
                "stream or thread escapes the timing. Launch on torch.cuda.current_stream(), or make it wait for "
                "your side streams before returning (torch.cuda.current_stream().wait_stream(s))."
            )
        if raw.get("threads_left"):
            warnings.append(f"{label}: the kernel left {raw['threads_left']} thread(s) running after it returned")
        if raw.get("stream_changes"):
            warnings.append(f"{label}: the kernel changed the current CUDA stream and did not restore it "
                            f"({raw['stream_changes']} calls); it was timed on the original stream")
        graph = graph_summary(raw.get("graph"), settings)
        if graph is not None:
            case["graph"] = graph
            if graph.get("error"):
                warnings.append(f"{label}: CUDA-graph mode unavailable: {graph['error']}")
        ref: SeriesStats = series_summary(ref_cases[i], settings) if i in ref_cases else {"error": "not measured"}
        case["reference"] = ref
        if compiled is None:
            case["torch_compile"] = {"error": compile_note or "not measured"}
        else:
            case["torch_compile"] = series_summary(comp_cases.get(i, {"error": "not measured"}), settings)
        if cand.get("median_ms") and not failure:
            if not cand.get("converged"):
                why = cand.get("stopped") or "the cap"
                warnings.append(
                    f"{label}: stopped ({why}) after {cand['runs']} runs and {cand['total_ms']:.1f} ms of kernel time "
                    f"with a standard error of {100 * (cand.get('rel_stderr') or 0):.2f}% (wanted ≥ {settings.min_runs} "
                    f"runs, ≥ {settings.min_kernel_ms:g} ms, < {100 * settings.rel_stderr:g}%): the number is less certain"
                )
            floor = _floor(case, peaks)
            case["floor_ms"] = floor
            clamped = roofline.clamp_to_floor(cand["median_ms"], floor)
            case["clamped_ms"] = clamped
            # Both sides of a speedup meet the same floor: an honest memory-bound kernel can beat the
            # measured copy bandwidth by a few per cent, and clamping only the candidate's time would
            # put the reference run as its own candidate at 0.95x.
            if ref.get("median_ms"):
                case["speedup_vs_reference"] = roofline.clamp_to_floor(ref["median_ms"], floor) / clamped
            if case["torch_compile"].get("median_ms"):
                case["speedup_vs_compile"] = roofline.clamp_to_floor(case["torch_compile"]["median_ms"], floor) / clamped
        cases.append(case)
        lines.append(_case_line(case, kept))
    timed = [c for c in cases if c["candidate"].get("median_ms")]
    metrics: BenchMetrics = {
        "cases": cases,
        "runs": sum(c["candidate"].get("runs", 0) for c in cases),
        "flush_bytes": candidate.get("flush_bytes"),
        "l2_bytes": candidate.get("l2_bytes"),
        "persisting_l2": candidate.get("persisting_l2"),
    }
    if compile_note:
        metrics["torch_compile_note"] = compile_note
    if candidate.get("threads_started_by_kernel"):
        metrics["threads_started_by_kernel"] = candidate["threads_started_by_kernel"]
        lines.append("threads started while the kernel was loaded and still running: "
                     + ", ".join(candidate["threads_started_by_kernel"])
                     + " (work they do outside a call is not timed; the recheck and the side-work check still apply)")
    if timed and not problems:
        # One case: its own median. Several: the geometric mean after the speed-of-light clamp.
        metrics["median_ms"] = timed[0]["candidate"]["median_ms"] if len(timed) == 1 else geomean(
            c["clamped_ms"] for c in timed)
        metrics["speedup_vs_reference"] = geomean(c.get("speedup_vs_reference") for c in timed)
        metrics["speedup_vs_compile"] = geomean(c.get("speedup_vs_compile") for c in timed)
        if len(timed) == 1:
            cand = timed[0]["candidate"]
            metrics.update({"q1_ms": cand["q1_ms"], "q3_ms": cand["q3_ms"], "mean_ms": cand["mean_ms"],
                            "stderr_ms": cand["stderr_ms"], "min_ms": cand["min_ms"]})
    if not problems and not timed:
        problems.append("no timed call completed")
    details = "\n".join(lines + [f"warning: {w}" for w in warnings] + [f"problem: {p}" for p in problems])
    if compile_note:
        details += f"\ntorch.compile baseline: {compile_note}"
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return BenchVerdict("fail", problems[0][:160] + more, problems[0] + more, metrics, details, problems, warnings)
    summary = _summary(cases, metrics, kept)
    if warnings:
        return BenchVerdict("warn", f"{summary} · {warnings[0][:100]}", None, metrics, details, problems, warnings)
    return BenchVerdict("ok", summary, None, metrics, details, problems, warnings)


def _speedup(x: float | None) -> str:
    return f"{x:.2f}×" if x else "—"


def _kept(kept: dict[str, str], key: str) -> str:
    return f" ({kept[key]})" if kept.get(key) else ""


def _case_line(case: BenchCase, kept: dict[str, str]) -> str:
    cand = case["candidate"]
    parts = []
    if cand.get("median_ms"):
        parts.append(
            f"median {format_ms(cand['median_ms'])} (IQR {format_ms(cand['q1_ms'])}–{format_ms(cand['q3_ms'])}, "
            f"mean {format_ms(cand['mean_ms'])} ± {format_ms(cand['stderr_ms'])}, min {format_ms(cand['min_ms'])}, "
            f"{cand['runs']} runs + {cand.get('warmup_runs', 0)} warm-up, {cand.get('stopped')})"
        )
    for key, name, base in (("reference", "reference", case.get("reference")),
                            ("torch_compile", "torch.compile", case.get("torch_compile"))):
        if base and base.get("median_ms"):
            parts.append(f"{name} {format_ms(base['median_ms'])}{_kept(kept, key)}")
        elif base and base.get("error"):
            parts.append(f"{name}: {base['error']}")
    graph = case.get("graph")
    if graph and graph.get("median_ms") is not None:
        parts.append(f"CUDA graph {format_ms(graph['median_ms'])} (flush {format_ms(graph['flush_median_ms'])} subtracted)")
    rc = case.get("recheck")
    if rc:
        parts.append(f"{rc.get('checked', 0)} outputs rechecked")
    return f"{case['label']}: " + " · ".join(parts)


def _summary(cases: list[BenchCase], metrics: BenchMetrics, kept: dict[str, str]) -> str:
    speed = f"{_speedup(metrics.get('speedup_vs_reference'))} vs reference{_kept(kept, 'reference')}"
    if metrics.get("speedup_vs_compile"):
        speed += f" · {_speedup(metrics.get('speedup_vs_compile'))} vs torch.compile{_kept(kept, 'torch_compile')}"
    if len(cases) == 1:
        cand = cases[0]["candidate"]
        rel = cand.get("rel_stderr") or 0.0
        head = f"{format_ms(cand['median_ms'])} ±{100 * rel:.2f}% ({cand['runs']} runs, IQR {100 * cand['iqr_ms'] / cand['median_ms']:.1f}%)"
        graph = cases[0].get("graph")
        if graph and graph.get("median_ms") and graph["median_ms"] > 0:
            head += f" · graph {format_ms(graph['median_ms'])}"
        return f"{head} · {speed}"
    return f"{len(cases)} cases · geomean {format_ms(metrics.get('median_ms'))} · {speed}"


def _evidence(verdict: StraggleVerdict) -> str:
    """What a side-work verdict rested on: the test against the controls, or (too few controls, as
    for a long kernel timed a few times) the count of calls over the calibrated threshold."""
    if verdict.p_value is not None:
        return f"p={verdict.p_value:.1g}"
    return f"{verdict.over} of {verdict.runs} calls over {verdict.threshold_us:.0f} µs"
