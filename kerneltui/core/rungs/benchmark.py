"""The ``benchmark`` rung: time the kernel, the reference and torch.compile of it, on every
``[[benchmarks]]`` case, in a fresh worker of its own (HARNESS.md, Benchmark; ``core.worker.child.timing``).

In this order: the device's peaks (measured once per device, then cached), the reference's work per
case, the reference and torch.compile baselines timed in the run's judge (a process that never runs
kernel code), then the kernel, loaded into a fresh worker of its own and timed there on input sets
the judge makes, every output rechecked by the judge (``core.rungs.bench_series``). The run's secret
seeds make every input set unpredictable and identical across the three functions timed.
Statistics and the verdict are computed here, in the parent, from the raw event times.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, cast

from kerneltui.config import ConfigError
from kerneltui.core.bench import device_peaks as device
from kerneltui.core.bench import report as benchreport
from kerneltui.core.bench.stats import median
from kerneltui.core.events import BenchmarkProvisional
from kerneltui.core.rungs import baselines
from kerneltui.core.rungs.bench_bound import WallBound
from kerneltui.core.rungs.bench_series import KernelSeries, Watch, time_kernel
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.result import RungResult, fail, ok, skip, warn
from kerneltui.core.rungs.rung_metrics import BenchmarkMetrics
from kerneltui.core.worker.contract.replies import (
    BenchSetupReply,
    SeriesReply,
    WorkEstimateCase,
    WorkEstimateReply,
)
from kerneltui.core.worker.parent.process import WorkerFailure, WorkerProcess
from kerneltui.settings.bench import BenchSettings

NAME = "benchmark"
NO_GPU = "no GPU: benchmarks need one (interpreter wall times are never shown as performance)"
PEAKS_TIMEOUT_S = 180.0


def load_settings(ctx: RunContext) -> BenchSettings:
    """The run's own settings (``RunOptions.benchmark``), else those the loop was configured with
    (``[benchmark]`` in the config file and ``KERNELTUI_BENCHMARK_*``)."""
    return ctx.options.benchmark or ctx.configured_benchmark()


async def run(ctx: RunContext) -> RungResult:
    if not ctx.task.benchmarks:
        return skip(NAME, "the task has no [[benchmarks]] cases: add one to task.toml to time the kernel")
    if not ctx.has_gpu:
        return skip(NAME, NO_GPU)
    try:
        settings = load_settings(ctx)
    except (ValueError, ConfigError) as exc:
        return fail(NAME, f"benchmark settings: {exc}")
    progress = ctx.progress_for(NAME)
    asked = time.perf_counter()
    judging = await ctx.judging()
    judge = judging.judge
    timeout = ctx.timeout("benchmark")
    # No worker starts while this one times: a spare warming up on the same GPU would be timed too.
    async with ctx.pool.quiet():
        started = time.perf_counter()
        # spares still starting up (the quiet block waits for every one that is)
        timings: dict[str, float] = {"worker_wait_s": started - asked}
        phase = "measuring the device's peaks"
        worker: WorkerProcess | None = None
        mark = 0
        try:
            peaks, peaks_note = await _peaks(judge, progress)
            # The bound starts after the device's peaks: measured once per device, then cached.
            bound = WallBound(settings.max_wall_s)
            phase = "reading the reference's work per case"
            setup = cast(BenchSetupReply, await judge.request("judge_bench_setup", {}, timeout=ctx.timeout("compile"),
                                                              on_progress=progress))
            phase = "estimating the reference's work"
            await _estimate_work(judge, setup, ctx, progress)
            secret = secrets.randbits(62)
            phase = "timing the baselines"
            measured = await _baselines(ctx, judge, settings, secret, bound, progress, timings)
            reference = cast(SeriesReply, measured["reference"][0])  # always measured, or found kept
            reference_from = measured["reference"][1]
            compiled, compiled_from = measured["torch_compile"]
            phase = "loading the kernel"
            t0 = time.perf_counter()
            worker = await ctx.pool.acquire()
            ctx.hold(worker)
            mark = worker.stderr_mark()
            load = await worker.request("load", await ctx.load_args(judging), timeout=ctx.timeout("compile"),
                                        on_progress=progress)
            first_error = load.get("first_call_error")
            if first_error:
                loc = ctx.location_from(first_error)
                return fail(NAME, f"the kernel failed when loaded for the benchmark: {first_error['message']}",
                            location=loc, details=first_error.get("traceback", ""), metrics={"failure": "error"})
            phase = "timing the kernel"
            candidate = await time_kernel(judge, worker, len(ctx.task.benchmarks), secret, settings,
                                          timeout, progress, bound, _provisional(ctx, reference, settings))
            timings["candidate_s"] = time.perf_counter() - t0
        except WorkerFailure as exc:
            return ctx.failure(NAME, exc, worker, mark,
                               message=exc.message if exc.kind == "error" else f"{phase}: {exc.message}")
    kept = {t: p.label for t, p in (("reference", reference_from), ("torch_compile", compiled_from)) if p.kept}
    verdict = benchreport.build(setup, reference, compiled, candidate, peaks, settings, compiled_from.describe(), kept)
    timings["total_s"] = time.perf_counter() - started
    # A cast: the timings' keys (reference_s, torch_compile_s when timed, candidate_s, total_s) are built per target.
    metrics = cast(BenchmarkMetrics, {**verdict.metrics, **{k: round(v, 3) for k, v in timings.items()}})
    metrics["device_peaks"] = peaks.key if peaks else None
    # Where each baseline came from (measured now, or kept and when): a --json reader can tell a
    # timed reference from a remembered one without the rung's details.
    metrics["baselines"] = {"reference": reference_from.to_dict(), "torch_compile": compiled_from.to_dict()}
    ctx.data.benchmark = metrics
    ctx.data.benchmark_raw = {"reference": reference, "torch_compile": compiled, "candidate": candidate}
    if peaks is not None:
        ctx.data.device_peaks = peaks
    details = verdict.details
    if peaks_note:
        details += f"\n{peaks_note}"
    details += f"\nreference baseline: {reference_from.describe()}"
    if bound.cut:
        details += (f"\nthe benchmark's wall-time bound ({settings.max_wall_s:g} s, [benchmark] max_wall_s) "
                    "shortened some series")
    details += (f"\nL2 flush {candidate.get('flush_bytes', 0) / 2**20:.0f} MiB before every call; persisting L2 "
                f"{candidate.get('persisting_l2')}; {timings.get('candidate_s', 0):.2f} s to load and time the kernel, "
                f"{timings['total_s']:.2f} s in all")
    details += "\n" + worker.stderr_since(mark)
    if verdict.status == "fail":
        return fail(NAME, verdict.error or verdict.summary, summary=verdict.summary, metrics=metrics, details=details)
    if verdict.status == "warn":
        return warn(NAME, verdict.summary, metrics=metrics, details=details)
    return ok(NAME, verdict.summary, metrics=metrics, details=details)


async def _estimate_work(worker: WorkerProcess, setup: BenchSetupReply, ctx: RunContext, progress: Any) -> None:
    """Cases that declare no work (KernelBench, GPU MODE) get an estimate from the reference
    (``core.worker.child.work_estimate``), marked so: every problem gets a roofline."""
    bare = [c for c in setup["cases"] if c.get("flops") is None and c.get("bytes") is None
            and not c.get("flops_error") and not c.get("bytes_error")]
    if not bare:
        return
    found = cast(WorkEstimateReply, await worker.request("judge_estimate_work", {}, timeout=ctx.timeout("compile"),
                                                         on_progress=progress))
    estimates = {c["index"]: c for c in found["cases"]}
    for case in bare:
        est: WorkEstimateCase = estimates.get(case["index"]) or {}
        if est.get("error") or not est.get("bytes"):
            case["work_note"] = f"no estimate of the work: {est.get('error') or 'the reference moved no bytes'}"
            continue
        case["flops"], case["bytes"] = est.get("flops"), est.get("bytes")
        case["work_estimated"] = est.get("method") or "estimated"


async def _peaks(worker: WorkerProcess, progress: Any) -> tuple[device.DevicePeaks | None, str]:
    cached = device.load_cached(worker.info)
    if cached is not None:
        return cached, f"device peaks from {device.peaks_path(worker.info)}"
    progress("measuring the device's peaks (once per device, then cached)", None)
    raw = await worker.request("device_peaks", {}, timeout=PEAKS_TIMEOUT_S, on_progress=progress)
    peaks = device.from_measurement(worker.info, raw)
    try:
        path = device.save(peaks)
        note = f"device peaks measured now ({raw.get('seconds', 0):.1f} s) and cached in {path}"
    except OSError as exc:
        note = f"device peaks measured now; could not cache them ({exc.strerror}): they will be measured again"
    return peaks, note


PROVISIONAL_EVERY_S = 0.5  # the least time between two provisional numbers


def _provisional(ctx: RunContext, reference: SeriesReply, settings: BenchSettings) -> Watch:
    """Report an early number (``BenchmarkProvisional``) once a case has its minimum of timed calls,
    and every PROVISIONAL_EVERY_S after; the progress line carries it too."""
    ref_ms = {int(c["index"]): median(c["times_ms"]) for c in reference.get("cases") or [] if c.get("times_ms")}
    last = [float("-inf")]

    def watch(index: int, label: str, series: KernelSeries) -> str | None:
        if len(series.times_ms) < settings.min_runs or time.perf_counter() - last[0] < PROVISIONAL_EVERY_S:
            return None
        last[0] = time.perf_counter()
        kernel_ms = median(series.times_ms)
        ref = ref_ms.get(index)
        event = BenchmarkProvisional(run_id=ctx.run_id, case=label, kernel_ms=kernel_ms, runs=len(series.times_ms),
                                     speedup_vs_reference=ref / kernel_ms if ref and kernel_ms > 0 else None)
        ctx.emit(event)
        return event.describe()

    return watch


COMPILE_OFF = baselines.Provenance(note="not measured ([benchmark] torch_compile = false)")


async def _baselines(ctx: RunContext, judge: WorkerProcess, settings: BenchSettings, secret: int, bound: WallBound,
                     progress: Any, timings: dict[str, float]
                     ) -> dict[str, tuple[SeriesReply | None, baselines.Provenance]]:
    """The reference's and torch.compile's times, each kept (``core.rungs.baselines``) or measured
    now within its share of the wall-time bound; with where each came from. ``timings`` gets the
    seconds each took here (``reference_s``, ``torch_compile_s``)."""
    cases = len(ctx.task.benchmarks)
    targets = ["reference"] + (["torch_compile"] if settings.torch_compile else [])
    refused = baselines.unkeepable(judge.sandbox) if settings.baseline_cache else "not kept ([benchmark] baseline_cache = false)"
    keys = {t: baselines.baseline_key(ctx, judge.info, t, settings) for t in targets}
    found = {t: baselines.cached(ctx, keys[t]) if refused is None else None for t in targets}
    to_measure = [t for t in targets if found[t] is None]
    out: dict[str, tuple[SeriesReply | None, baselines.Provenance]] = {"torch_compile": (None, COMPILE_OFF)}
    for target in targets:
        hit = found[target]
        timings[f"{target}_s"] = 0.0
        if hit is not None:
            out[target] = hit
            continue
        t0 = time.perf_counter()
        given = bound.settings_for(settings, cases * (len(to_measure) + 1))
        to_measure.remove(target)
        if target == "torch_compile":
            progress("compiling the reference with torch.compile (once per reference and device)", None)
        raw = cast(SeriesReply, await judge.request("judge_benchmark", {
            "target": target, "secret": secret, "settings": given.to_dict(),
        }, timeout=ctx.timeout("benchmark"), on_progress=progress))
        for case in raw.get("cases") or []:
            case["stopped"] = WallBound.relabel(case.get("stopped") or "", settings, given)
        out[target] = (raw, baselines.keep(ctx, keys[target], target, raw) if refused is None
                       else baselines.Provenance(note=f"measured now; {refused}"))
        timings[f"{target}_s"] = time.perf_counter() - t0
    return out
