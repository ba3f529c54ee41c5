"""The kernel's timed series, driven from the parent between the judge and the candidate's worker.

Per benchmark case: the judge makes the input slots (``judge_pool``) and the candidate's worker maps
them (``bench_begin``); then batches, each one call per slot (``bench_calls``), every output rechecked
by the judge and the used slots renewed with unseen data before the next batch (``judge_recheck``).
Warm-up batches first (discarded), then timed batches until the stopping rule of
``core.bench.stats`` says enough; the statistics are computed here, from the raw event times. A
batch lasts about BATCH_S so the rule is consulted often; the first call is alone (it may compile).
Graph mode, where asked for, follows the same way (``bench_graph``). Rechecks and renewals run
between batches, never inside a timed call: the candidate's worker has synchronised the device and
read its events before the judge touches an output. The rung's wall-time bound
(``core.rungs.bench_bound``) caps each case's series; ``watch`` sees the series after every timed
batch (the rung's provisional number).

The result has the shape the report (``core.bench.report``) reads for the kernel's series.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, cast

from kerneltui.core.bench.part_times import add_parts
from kerneltui.core.bench.stats import (
    CONTROL_EVERY,
    STOP_TIME_CAP,
    BenchSettings,
    RunningStats,
    median,
    stop_reason,
    straggle_verdict,
    wants_graph,
)
from kerneltui.core.rungs.bench_bound import WallBound
from kerneltui.core.worker.contract.replies import (
    BenchBeginReply,
    BenchCallsReply,
    BenchEndReply,
    BenchGraphReply,
    CaseSeries,
    GraphSeries,
    PoolReply,
    RecheckReply,
    SeriesData,
    SeriesFailure,
    SeriesReply,
)
from kerneltui.core.worker.parent.process import WorkerProcess

BATCH_S = 0.25  # wall time a batch aims for


@dataclass
class KernelSeries:
    """One case's calls, as the report reads them."""

    times_ms: list[float] = field(default_factory=list)
    host_us: list[float] = field(default_factory=list)
    straggle_us: list[float] = field(default_factory=list)
    control_straggle_us: list[float] = field(default_factory=list)
    warmup_ms: list[float] = field(default_factory=list)
    stopped: str = ""
    warmup_s: float = 0.0
    wall_s: float = 0.0
    failure: SeriesFailure | None = None
    threads_left: int = 0
    confirm_straggle_us: list[float] | None = None  # measured again after a side-work flag
    confirm_control_us: list[float] | None = None

    def to_dict(self) -> SeriesData:
        return {
            "times_ms": self.times_ms, "host_us": self.host_us, "straggle_us": self.straggle_us,
            "control_straggle_us": self.control_straggle_us, "warmup_ms": self.warmup_ms, "stopped": self.stopped,
            "warmup_s": round(self.warmup_s, 4), "wall_s": round(self.wall_s, 4), "failure": self.failure,
            "threads_left": self.threads_left, "confirm_straggle_us": self.confirm_straggle_us,
            "confirm_control_us": self.confirm_control_us,
        }


class CaseDriver:
    """Batches of calls on one case, each rechecked and its slots renewed."""

    def __init__(self, judge: WorkerProcess, worker: WorkerProcess, index: int, pool: PoolReply,
                 timeout: float) -> None:
        self.judge = judge
        self.worker = worker
        self.index = index
        self.sets = max(1, int(pool["sets"]))
        self.timeout = timeout
        self.next_slot = 0
        self.calls = 0
        self.lots = (f"c{index}b{n}" for n in itertools.count(1))
        self.release: list[str] = []
        self.remap: dict[str, object] = {}
        self.last_recheck: RecheckReply = {}
        self.seconds_per_call = 0.0
        # Where the case's wall time went: each side's parts and the two round trips that hold them.
        self.spent: dict[str, float] = {}

    def order(self, size: int) -> list[int]:
        size = max(1, min(size, self.sets))
        slots = [(self.next_slot + k) % self.sets for k in range(size)]
        self.next_slot = (self.next_slot + size) % self.sets
        return slots

    def size(self) -> int:
        if self.calls == 0 or self.seconds_per_call <= 0:
            return 1
        return max(1, min(self.sets, int(BATCH_S / self.seconds_per_call)))

    async def timed(self, size: int, **extra: Any) -> tuple[BenchCallsReply, RecheckReply]:
        """One batch of timed calls and its recheck."""
        reply, check = await self._batch("bench_calls", size, **extra)
        return cast(BenchCallsReply, reply), check

    async def replays(self, size: int) -> tuple[BenchGraphReply, RecheckReply]:
        """One batch of CUDA-graph replays and its recheck (none when the graph could not be made)."""
        reply, check = await self._batch("bench_graph", size)
        return cast(BenchGraphReply, reply), check

    async def _batch(self, op: str, size: int, **extra: Any) -> tuple[dict[str, Any], RecheckReply]:
        order = self.order(size)
        lot = next(self.lots)
        started = time.perf_counter()
        reply = await self.worker.request(op, {"order": order, "lot": lot, "release": self.release,
                                               "remap": self.remap, **extra}, timeout=self.timeout)
        asked = time.perf_counter()
        self.seconds_per_call = (asked - started) / len(order)
        add_parts(self.spent, {"kernel worker": asked - started})
        add_parts(self.spent, reply.get("spent_s"), "kernel worker: ")
        self.release, self.remap = [lot], {}
        if reply.get("error"):
            return reply, {}
        check = cast(RecheckReply, await self.judge.request("judge_recheck", {
            "case": self.index, "slots": order, "outputs": reply["outputs"], "lot": lot, "first_call": self.calls,
        }, timeout=self.timeout))
        add_parts(self.spent, {"judge": time.perf_counter() - asked})
        add_parts(self.spent, check.get("spent_s"), "judge: ")
        self.calls += len(order)
        self.remap = dict(check.get("moved") or {})
        self.last_recheck = check
        return reply, check


async def time_kernel(judge: WorkerProcess, worker: WorkerProcess, cases: int, secret: int,
                      settings: BenchSettings, timeout: float, progress: Any, bound: WallBound | None = None,
                      watch: Watch | None = None) -> SeriesReply:
    """Time the kernel on every case; the reply's shape is that of a baseline's (``ops_judge_bench``)."""
    t0 = time.perf_counter()
    out_cases: list[CaseSeries] = []
    facts: SeriesReply = {}
    threads: list[str] = []
    for index in range(cases):
        pool = cast(PoolReply, await judge.request("judge_pool", {"case": index, "secret": secret,
                                                                  "settings": settings.to_dict()},
                                                   timeout=timeout, on_progress=progress))
        begin = cast(BenchBeginReply, await worker.request("bench_begin", {"case": index, "slots": pool["slots"],
                                                                           "settings": settings.to_dict()},
                                                           timeout=timeout))
        facts = {"flush_bytes": begin["flush_bytes"], "l2_bytes": begin["l2_bytes"],
                 "persisting_l2": begin["persisting_l2"]}
        driver = CaseDriver(judge, worker, index, pool, timeout)
        label = str(pool.get("label") or index)
        raw: CaseSeries = {"index": index, "label": label, "params": pool.get("params") or {}, "target": "candidate",
                               "idle_straggle_us": begin.get("idle_straggle_us") or [], "dtypes": pool.get("dtypes") or [],
                               "dtype": pool.get("dtype")}
        if pool.get("out_bytes"):
            raw["out_bytes"] = pool["out_bytes"]
        case_settings = bound.settings_for(settings, cases - index) if bound else settings
        series = await _series(driver, case_settings, progress, f"kernel {label}",
                               partial(watch, index, label) if watch else None)
        series.stopped = WallBound.relabel(series.stopped, settings, case_settings)
        raw.update(series.to_dict())
        end = cast(BenchEndReply, await worker.request("bench_end", {
            "median_ms": median(series.times_ms) if series.times_ms else 0.0, "release": driver.release,
        }, timeout=timeout))
        driver.release = []
        raw["busy_straggle_us"] = end.get("busy_straggle_us") or []
        raw["stream_changes"] = end.get("stream_changes") or 0
        threads = list(end.get("threads_started_by_kernel") or [])
        if series.failure is None and series.times_ms and wants_graph(settings, series.times_ms, series.host_us):
            raw["graph"] = await _graph_series(driver, case_settings, progress, label)
            raw["graph"]["stopped"] = WallBound.relabel(raw["graph"].get("stopped") or "", settings, case_settings)
        raw["spent_s"] = driver.spent
        check = driver.last_recheck
        raw["recheck"] = {"checked": check.get("checked", 0), "quick": check.get("quick", 0), "full": check.get("full", 0),
                          "one_pass": check.get("one_pass", 0)}
        if check.get("pool"):
            raw["pool"] = check["pool"]
        out_cases.append(raw)
        if series.failure or (raw.get("graph") or {}).get("failure"):
            break  # a wrong output ends the benchmark: the next cases would say the same
    return {"target": "candidate", "cases": out_cases, **facts, "threads_started_by_kernel": threads,
            "seconds": round(time.perf_counter() - t0, 4)}


# Called with the case index, its label and the series so far; returns a note for the progress line.
Watch = Callable[[int, str, "KernelSeries"], "str | None"]


async def _series(driver: CaseDriver, settings: BenchSettings, progress: Any, label: str,
                  watch: Callable[[KernelSeries], str | None] | None = None) -> KernelSeries:
    """Warm-up, then timed batches until the stopping rule says enough."""
    series = KernelSeries()
    began = time.perf_counter()
    while True:
        reply, check = await driver.timed(driver.size())
        if (wrong := check.get("failure")) is not None:
            series.failure = {"phase": "warm-up", **wrong}
            series.warmup_s = time.perf_counter() - began
            return series
        series.warmup_ms.extend(s[0] for s in reply["samples"])
        elapsed = time.perf_counter() - began
        if (len(series.warmup_ms) >= settings.warmup_runs and elapsed * 1e3 >= settings.warmup_ms) \
                or elapsed >= settings.max_seconds:
            break
    series.warmup_s = time.perf_counter() - began
    running = RunningStats()
    timed_began = time.perf_counter()
    warm_calls = driver.calls
    while True:
        reply, check = await driver.timed(driver.size(), controls_every=CONTROL_EVERY)
        for ms, host_us, straggle_us in reply["samples"]:
            series.times_ms.append(ms)
            series.host_us.append(host_us)
            series.straggle_us.append(straggle_us)
            running.add(ms)
        series.control_straggle_us.extend(reply.get("controls") or [])
        series.threads_left = max(series.threads_left, int(reply.get("threads_left") or 0))
        if (wrong := check.get("failure")) is not None:
            series.failure = {"phase": "timed", **wrong, "call": wrong["call"] - warm_calls}
            break
        wall = time.perf_counter() - timed_began
        series.stopped = stop_reason(running.n, running.total, running.mean, running.stderr, wall, settings) or ""
        if series.stopped:
            break
        note = watch(series) if watch is not None else None
        progress(f"{label}: {running.n} runs, mean {running.mean * 1e3:.1f} µs" + (f" · {note}" if note else ""),
                 min(1.0, wall / settings.max_seconds))
    series.wall_s = time.perf_counter() - timed_began
    if series.failure is None and series.times_ms:
        await _confirm_side_work(driver, series, settings)
    return series


CONFIRM_CALLS = 64  # calls of the confirmation, each followed by an honest control


async def _confirm_side_work(driver: CaseDriver, series: KernelSeries, settings: BenchSettings) -> None:
    """A side-work flag is measured again before anything fails: calls and honest controls one for
    one. The report fails the kernel only when both measurements flag it (``core.bench.report``)."""
    kernel_us = 1e3 * median(series.times_ms)
    first = straggle_verdict(series.straggle_us, [], settings.straggle_us, kernel_us=kernel_us,
                             control_us=series.control_straggle_us)
    if not first.flagged:
        return
    gaps: list[float] = []
    controls: list[float] = []
    while len(gaps) < CONFIRM_CALLS:
        reply, check = await driver.timed(min(driver.size(), CONFIRM_CALLS - len(gaps)), controls_every=1)
        if (wrong := check.get("failure")) is not None:
            series.failure = {"phase": "timed", **wrong}
            return
        gaps.extend(s[2] for s in reply["samples"])
        controls.extend(reply.get("controls") or [])
    series.confirm_straggle_us = gaps
    series.confirm_control_us = controls


async def _graph_series(driver: CaseDriver, settings: BenchSettings, progress: Any, label: str) -> GraphSeries:
    """Graph mode: replays of the captured call and of the flush alone, every output rechecked."""
    total: list[float] = []
    flush: list[float] = []
    warm = 0
    running = RunningStats()
    began = time.perf_counter()
    timed_began: float | None = None
    stopped = ""
    failure: SeriesFailure | None = None
    # The flush-only series has to settle as well, so graph mode asks for twice the minimum runs.
    graph_settings = replace(settings, min_runs=2 * settings.min_runs)
    while True:
        reply, check = await driver.replays(driver.size())
        if reply.get("error"):
            return {"error": reply["error"]}
        if (wrong := check.get("failure")) is not None:
            failure = {"phase": "graph", **wrong}
            break
        for t_ms, f_ms in zip(reply["total_ms"], reply["flush_ms"], strict=True):
            if timed_began is None:
                warm += 1
                continue
            total.append(t_ms)
            flush.append(f_ms)
            running.add(t_ms - f_ms)
        if timed_began is None:
            elapsed = time.perf_counter() - began
            if (warm >= settings.warmup_runs and elapsed * 1e3 >= settings.warmup_ms) or elapsed >= settings.max_seconds:
                timed_began = time.perf_counter()
            continue
        wall = time.perf_counter() - timed_began
        stopped = stop_reason(running.n, running.total, running.mean, running.stderr, wall, graph_settings) or ""
        if stopped:
            break
        progress(f"{label} (CUDA graph): {len(total)} replays", min(1.0, wall / settings.max_seconds))
    return {"total_ms": total, "flush_ms": flush, "warmup_runs": warm, "stopped": stopped or STOP_TIME_CAP,
            "failure": failure, "wall_s": round(time.perf_counter() - began, 4)}
