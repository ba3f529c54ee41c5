"""The comparison's driver as the parent runs it (core.rungs.compare_series) on the CPU.

As in test_bench_series.py, the ops it drives need a GPU, so two stand-ins play the judge and the
worker holding both kernels with the replies those ops give (tests/gpu/test_compare_gpu.py runs the
real ones); the times they return come from a model of the two kernels, so the driver's control
flow — warm-up to a block boundary, the kernels named per call in ABBA/BAAB blocks, the stopping
rule, a wrong output or side work ending in "cannot compare" — runs here.
"""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

from kerneltui.core.bench import compare
from kerneltui.core.rungs.compare_series import CaseTimes, CompareSettings, compare_case, judge_case
from kerneltui.settings.bench import BenchSettings

FAST = BenchSettings(warmup_runs=2, warmup_ms=0.0)


class Judge:
    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at
        self.first_calls: list[int] = []

    async def request(self, op: str, args: dict[str, Any], timeout: float = 0, on_progress: Any = None) -> dict[str, Any]:
        if op == "judge_pool":
            return {"case": 0, "label": "n=8", "params": {"n": 8}, "slots": [{"slot": i} for i in range(16)],
                    "sets": 16, "set_bytes": 96, "out_bytes": 32, "dtypes": ["float32"], "dtype": "float32"}
        assert op == "judge_recheck"
        self.first_calls.append(args["first_call"])
        for n, _ in enumerate(args["slots"]):
            call = args["first_call"] + n + 1
            if self.fail_at is not None and call == self.fail_at:
                return {"failure": {"call": call, "seed": 7, "reason": "out: 8 of 8 elements outside atol"}}
        return {"failure": None, "checked": len(args["slots"])}


class TwoKernels:
    """The worker holding A and B: B takes ``1 + shift`` times A's time; ``b_gap_us``: B's side work."""

    def __init__(self, shift: float, noise: float = 0.01, b_gap_us: float = 0.0, seed: int = 1) -> None:
        self.shift = shift
        self.noise = noise
        self.b_gap_us = b_gap_us
        self.rng = random.Random(seed)
        self.kernels: list[str] = []
        self.ops: list[str] = []

    async def request(self, op: str, args: dict[str, Any], timeout: float = 0, on_progress: Any = None) -> dict[str, Any]:
        self.ops.append(op)
        if op == "bench_begin":
            return {"idle_straggle_us": [4.0] * 30, "flush_bytes": 1 << 20, "l2_bytes": 1 << 19, "persisting_l2": "ok"}
        if op == "bench_end":
            return {"busy_straggle_us": [], "stream_changes": 0, "threads_started_by_kernel": []}
        assert op == "compare_calls" and len(args["kernels"]) == len(args["order"])
        samples = []
        for k in args["kernels"]:
            self.kernels.append(k)
            ms = 0.25 * (1 + self.shift if k == "b" else 1.0) * math.exp(self.rng.gauss(0, self.noise))
            samples.append([ms, 30.0, 5.0 + (self.b_gap_us if k == "b" else 0.0)])
        every = int(args.get("controls_every") or 0)
        controls = [4.0] * (len(samples) // every) if every else []
        return {"samples": samples, "controls": controls, "outputs": [{"o": 1}] * len(samples), "threads_left": 0,
                "stream_changes": 0, "spent_s": {}}


def run(judge: Judge, worker: TwoKernels, settings: CompareSettings) -> CaseTimes:
    return asyncio.run(compare_case(judge, worker, 0, 1234, settings, 30.0, lambda *a: None))  # type: ignore[arg-type]


def test_b_two_percent_slower_is_found_and_every_block_is_abba_or_baab() -> None:
    worker = TwoKernels(0.02)
    times = run(Judge(), worker, CompareSettings(bench=FAST))
    assert times.failure is None and times.stopped == compare.STOP_PLANNED
    assert times.warmup_calls % compare.BLOCK_CALLS == 0 and times.warmup_calls >= 2 * FAST.warmup_runs
    assert worker.kernels[times.warmup_calls:] == times.kernels  # the timed calls, in the worker's order
    assert len(compare.blocks_from_calls(worker.kernels, [1.0] * len(worker.kernels))) == len(worker.kernels) // 4
    assert worker.ops[0] == "bench_begin" and worker.ops[-1] == "bench_end"
    found = judge_case(times, FAST.straggle_us, "A", "B")
    assert found.verdict.direction == "slower" and 0.01 < (found.verdict.change or 0) < 0.03, found.verdict.text


def test_equal_kernels_stop_at_the_cap_when_the_target_is_out_of_reach() -> None:
    times = run(Judge(), TwoKernels(0.0, noise=0.3), CompareSettings(target=0.0001, max_seconds=0.2, bench=FAST))
    assert times.stopped == compare.STOP_TIME_CAP


def test_a_wrong_output_names_the_kernel_and_nothing_is_compared() -> None:
    worker = TwoKernels(0.0)
    times = run(Judge(fail_at=40), worker, CompareSettings(bench=FAST))
    assert times.failure is not None  # call 40 ran whichever kernel the driver's random order named
    assert times.failure.startswith(f"kernel {worker.kernels[39].upper()}'s output of call 40 (seed 7) is wrong")
    found = judge_case(times, FAST.straggle_us, "A", "B")
    assert found.verdict.direction == "unknown" and found.verdict.text.startswith("cannot compare: kernel ")


def test_side_work_of_one_kernel_means_no_comparison() -> None:
    times = run(Judge(), TwoKernels(-0.05, b_gap_us=400.0), CompareSettings(bench=FAST))
    found = judge_case(times, FAST.straggle_us, "v3", "kernel.py")
    assert found.verdict.direction == "unknown"
    assert "kernel.py left work running after its calls returned" in found.verdict.text
