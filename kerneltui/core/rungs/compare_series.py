"""Two kernels' calls interleaved on every benchmark case, driven from the parent (``kerneltui compare``).

Per case, the benchmark's own steps (``core.rungs.bench_series``): the judge makes the input slots
(``judge_pool``), the worker that holds both kernels maps them (``bench_begin``), then batches of
calls, one per slot, each of the kernel this module names, in blocks of ABBA or BAAB drawn at random
(``compare_calls``),
every output rechecked by the judge and the used slots renewed before the next batch
(``judge_recheck``), and ``bench_end`` for the guards. Warm-up calls (both kernels, same order) are
discarded; timed batches continue until the ratio's interval is narrow enough or the time cap
(``core.bench.compare.stop_reason``). The times are turned into the verdict here, in the parent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, cast

from kerneltui.core.bench import compare
from kerneltui.core.bench.stats import CONTROL_EVERY, median, straggle_verdict
from kerneltui.core.rungs.bench_series import CaseDriver
from kerneltui.core.worker.contract.replies import BenchBeginReply, BenchCallsReply, PoolReply, RecheckReply
from kerneltui.core.worker.parent.process import WorkerProcess
from kerneltui.settings.bench import BenchSettings


@dataclass
class CompareSettings:
    """How long and how precisely to compare (``--target``, ``--max-seconds``; the rest: ``[benchmark]``)."""

    target: float = compare.DEFAULT_TARGET
    max_seconds: float = compare.DEFAULT_MAX_SECONDS  # per case, timed calls only
    bench: BenchSettings = field(default_factory=BenchSettings)
    level: float = compare.LEVEL  # the intervals' confidence level

    def __post_init__(self) -> None:
        if not 0 < self.target < 0.5:
            raise ValueError(f"the target half-width must be between 0 and 0.5 (0.005 is ±0.5 %), not {self.target!r}")
        if not self.max_seconds > 0:
            raise ValueError(f"the time cap must be a positive number of seconds, not {self.max_seconds!r}")
        if not 0.5 <= self.level < 1:
            raise ValueError(f"the confidence level must be at least 50 % and below 100 %, not {self.level * 100:g} %")


@dataclass
class CaseTimes:
    """One case's raw calls: which kernel, its event time, its side-work gap; and the controls."""

    label: str
    kernels: list[str] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)
    straggle_us: list[float] = field(default_factory=list)
    controls_us: list[float] = field(default_factory=list)
    idle_us: list[float] = field(default_factory=list)
    warmup_calls: int = 0
    stopped: str = ""
    wall_s: float = 0.0
    failure: str | None = None

    def side_work(self, floor_us: float) -> str | None:
        """Which kernel's calls left work running past their end event (the benchmark's detector)."""
        for k in compare.KERNELS_NAMED:
            gaps = [g for g, label in zip(self.straggle_us, self.kernels, strict=True) if label == k]
            times = [t for t, label in zip(self.times_ms, self.kernels, strict=True) if label == k]
            if not gaps:
                continue
            found = straggle_verdict(gaps, self.idle_us, floor_us, kernel_us=1e3 * median(times),
                                     control_us=self.controls_us)
            if found.flagged:
                return k
        return None


class CompareDriver(CaseDriver):
    """The benchmark's batch driver, each batch's calls split between the two kernels in blocks of
    ABBA or BAAB (``compare.BlockOrder``)."""

    def __init__(self, judge: WorkerProcess, worker: WorkerProcess, index: int, pool: PoolReply,
                 timeout: float, order_seed: int | None = None) -> None:
        super().__init__(judge, worker, index, pool, timeout)
        self.block_order = compare.BlockOrder(order_seed)

    async def interleaved(self, size: int, controls_every: int = 0) -> tuple[list[str], BenchCallsReply, RecheckReply]:
        size = max(1, min(size, self.sets))
        kernels = self.block_order.kernels(self.calls, size)
        reply, check = await self._batch("compare_calls", size, kernels=kernels, controls_every=controls_every)
        return kernels, cast(BenchCallsReply, reply), check


async def compare_case(judge: WorkerProcess, worker: WorkerProcess, index: int, secret: int,
                       settings: CompareSettings, timeout: float, progress: Any,
                       order_seed: int | None = None) -> CaseTimes:
    """Warm-up, then batches of ABBA/BAAB blocks until ``compare.stop_reason`` says enough; raw times only.
    ``order_seed`` makes the blocks' random orders repeatable (tests)."""
    bench = settings.bench
    pool = cast(PoolReply, await judge.request("judge_pool", {"case": index, "secret": secret,
                                                              "settings": bench.to_dict()},
                                               timeout=timeout, on_progress=progress))
    begin = cast(BenchBeginReply, await worker.request("bench_begin", {"case": index, "slots": pool["slots"],
                                                                       "settings": bench.to_dict()},
                                                       timeout=timeout))
    driver = CompareDriver(judge, worker, index, pool, timeout, order_seed)
    case = CaseTimes(label=str(pool.get("label") or index), idle_us=list(begin.get("idle_straggle_us") or []))
    began = time.perf_counter()
    # Warm-up (both kernels compile on their first calls); it ends on a block boundary.
    while True:
        kernels, reply, check = await driver.interleaved(driver.size())
        if (wrong := check.get("failure")) is not None:
            case.failure = _wrong(wrong, driver.block_order)
            return await _end(worker, driver, case)
        elapsed = time.perf_counter() - began
        warm_each = driver.calls // 2
        if (warm_each >= bench.warmup_runs and elapsed * 1e3 >= bench.warmup_ms) or elapsed >= settings.max_seconds:
            break
    while driver.calls % compare.BLOCK_CALLS:
        kernels, reply, check = await driver.interleaved(compare.BLOCK_CALLS - driver.calls % compare.BLOCK_CALLS)
        if (wrong := check.get("failure")) is not None:
            case.failure = _wrong(wrong, driver.block_order)
            return await _end(worker, driver, case)
    case.warmup_calls = driver.calls
    timed_began = time.perf_counter()
    ratios: list[float] = []
    while True:
        kernels, reply, check = await driver.interleaved(driver.size(), controls_every=CONTROL_EVERY)
        if (wrong := check.get("failure")) is not None:
            case.failure = _wrong(wrong, driver.block_order)
            break
        case.kernels.extend(kernels)
        case.times_ms.extend(s[0] for s in reply["samples"])
        case.straggle_us.extend(s[2] for s in reply["samples"])
        case.controls_us.extend(reply.get("controls") or [])
        ratios = compare.blocks_from_calls(case.kernels, case.times_ms)
        wall = time.perf_counter() - timed_began
        case.stopped = compare.stop_reason(ratios, wall, settings.target, settings.max_seconds, settings.level) or ""
        if case.stopped:
            break
        interval = compare.final_interval(ratios, level=settings.level)
        width = f" · ±{compare.half_width(interval) * 100:.2f} %" if interval else ""
        progress(f"case {case.label}: {len(ratios)} blocks of four calls{width}", min(1.0, wall / settings.max_seconds))
    case.wall_s = time.perf_counter() - timed_began
    return await _end(worker, driver, case)


def _wrong(failure: Any, order: compare.BlockOrder) -> str:
    call = int(failure.get("call") or 0)
    kernel = order.kernel(call - 1).upper() if call else "?"
    return (f"kernel {kernel}'s output of call {call} (seed {failure.get('seed')}) is wrong: "
            f"{failure.get('reason')}")


async def _end(worker: WorkerProcess, driver: CaseDriver, case: CaseTimes) -> CaseTimes:
    median_ms = median(case.times_ms) if case.times_ms else 0.0
    await worker.request("bench_end", {"median_ms": median_ms, "release": driver.release}, timeout=driver.timeout)
    driver.release = []
    return case


def judge_case(case: CaseTimes, floor_us: float, a_name: str, b_name: str,
               level: float = compare.LEVEL) -> compare.CaseComparison:
    """The verdict of one case from its raw times (a wrong output or side work: no verdict)."""
    ratios = compare.blocks_from_calls(case.kernels, case.times_ms) if not case.failure else []
    found = compare.compare_case(case.label, ratios, case.stopped, case.wall_s, a_name, b_name, level)
    problem = case.failure
    if problem is None and (k := case.side_work(floor_us)) is not None:
        name = a_name if k == "a" else b_name
        problem = (f"{name} left work running after its calls returned (side work): its time misses that work, "
                   "so the two cannot be compared; `kerneltui check` says more")
    if problem is None:
        return found
    unknown = compare.Verdict("unknown", None, None, None, found.verdict.calls_each, f"cannot compare: {problem}")
    return compare.CaseComparison(found.label, found.log_ratios, found.stopped, found.wall_s, None, unknown)
