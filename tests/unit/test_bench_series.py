"""The kernel's series as the parent drives it: batches, rechecks, renewals, the stopping rule.

The ops it drives need a GPU; here two stand-ins play the judge and the candidate's worker with the
replies those ops give (their own tests cover the ops on the GPU), so the driver's control flow —
warm-up then timed batches, every output rechecked before its slots are reused, a failing recheck
ending the series with the call named, slots the judge moved re-sent — runs on the CPU.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kerneltui.core.bench.stats import STOP_WALL_BOUND
from kerneltui.core.rungs.bench_bound import MIN_SERIES_S, WallBound
from kerneltui.core.rungs.bench_series import time_kernel
from kerneltui.settings.bench import BenchSettings


class Judge:
    def __init__(self, sets: int, fail_at: int | None = None, move: int | None = None) -> None:
        self.sets = sets
        self.fail_at = fail_at
        self.move = move
        self.rechecked: list[list[int]] = []
        self.checked = 0

    async def request(self, op: str, args: dict[str, Any], timeout: float = 0, on_progress: Any = None) -> dict[str, Any]:
        if op == "judge_pool":
            return {"case": args["case"], "label": "n=8", "params": {"n": 8}, "slots": [{"slot": i} for i in range(self.sets)],
                    "sets": self.sets, "set_bytes": 96, "out_bytes": 32, "dtypes": ["float32"], "dtype": "float32"}
        assert op == "judge_recheck"
        assert len(args["outputs"]) == len(args["slots"])
        self.rechecked.append(list(args["slots"]))
        failure = None
        for n, _ in enumerate(args["slots"]):
            call = args["first_call"] + n + 1
            if self.fail_at is not None and call == self.fail_at:
                failure = {"call": call, "seed": 99, "reason": "out: 8 of 8 elements outside atol"}
                break
            self.checked += 1
        moved = {str(self.move): {"slot": "new"}} if self.move is not None and len(self.rechecked) == 1 else {}
        return {"failure": failure, "checked": self.checked, "quick": self.checked, "full": 0, "moved": moved,
                "pool": {"sets": self.sets}, "spent_s": {"verify": 0.001 * len(args["slots"])}}


class Kernel:
    def __init__(self) -> None:
        self.orders: list[list[int]] = []
        self.remaps: list[dict[str, Any]] = []

    async def request(self, op: str, args: dict[str, Any], timeout: float = 0, on_progress: Any = None) -> dict[str, Any]:
        if op == "bench_begin":
            return {"idle_straggle_us": [5.0] * 30, "flush_bytes": 1 << 27, "l2_bytes": 1 << 26, "persisting_l2": "reset"}
        if op == "bench_end":
            return {"busy_straggle_us": [6.0] * 30, "stream_changes": 0, "threads_started_by_kernel": []}
        assert op == "bench_calls"
        self.orders.append(list(args["order"]))
        self.remaps.append(dict(args.get("remap") or {}))
        await asyncio.sleep(0.002 * len(args["order"]))
        return {"samples": [[0.1, 20.0, 5.0] for _ in args["order"]], "controls": [5.0],
                "outputs": [{"out": i} for i in args["order"]], "threads_left": 0, "stream_changes": 0,
                "spent_s": {"calls": 0.002 * len(args["order"])}}


SETTINGS = BenchSettings.from_mapping({"warmup_runs": 4, "warmup_ms": 1, "min_runs": 20, "min_kernel_ms": 1,
                                       "max_seconds": 5, "graph": "off"})


def run(judge: Judge, kernel: Kernel) -> dict[str, Any]:
    return asyncio.run(time_kernel(judge, kernel, 1, 7, SETTINGS, 60, lambda *a, **k: None))  # type: ignore[arg-type]


def test_every_call_is_rechecked_before_its_slot_is_used_again():
    judge, kernel = Judge(sets=4), Kernel()
    result = run(judge, kernel)
    (case,) = result["cases"]
    assert case["failure"] is None and case["stopped"]
    assert len(case["times_ms"]) >= SETTINGS.min_runs and len(case["warmup_ms"]) >= SETTINGS.warmup_runs
    assert kernel.orders[0] == [0]  # the first call alone (it may compile)
    # batch by batch, the judge saw exactly what the kernel ran, before the next batch started
    assert judge.rechecked == kernel.orders
    # a slot comes round again only after the judge renewed it: consecutive batches rotate the pool
    flat = [s for order in kernel.orders for s in order]
    assert flat[:6] == [0, 1, 2, 3, 0, 1][: len(flat[:6])]
    assert case["recheck"]["checked"] == len(flat)


def test_the_case_says_where_its_wall_time_went():
    judge, kernel = Judge(sets=4), Kernel()
    (case,) = run(judge, kernel)["cases"]
    spent = case["spent_s"]
    calls = sum(len(order) for order in kernel.orders)
    # each side's own parts, summed over every batch (warm-up included) ...
    assert abs(spent["kernel worker: calls"] - 0.002 * calls) < 1e-6
    assert abs(spent["judge: verify"] - 0.001 * calls) < 1e-6
    # ... inside the round trips that carried them (the stand-in kernel sleeps 2 ms a call)
    assert spent["kernel worker"] >= 0.002 * calls and spent["judge"] > 0


def test_a_wrong_output_ends_the_series_and_names_the_call():
    judge, kernel = Judge(sets=4, fail_at=9), Kernel()
    result = run(judge, kernel)
    (case,) = result["cases"]
    failure = case["failure"]
    assert failure["reason"].startswith("out: 8 of 8") and failure["seed"] == 99
    assert failure["phase"] in ("warm-up", "timed")


def test_slots_the_judge_moved_are_sent_again():
    judge, kernel = Judge(sets=2, move=1), Kernel()
    run(judge, kernel)
    assert kernel.remaps[1] == {"1": {"slot": "new"}} and not kernel.remaps[2]


class SlowKernel(Kernel):
    """A kernel whose timings never settle (noisy samples), so only a cap ends its series."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    async def request(self, op: str, args: dict[str, Any], timeout: float = 0, on_progress: Any = None) -> dict[str, Any]:
        reply = await super().request(op, args, timeout, on_progress)
        if op == "bench_calls":
            samples = []
            for _ in args["order"]:
                self.n += 1
                samples.append([0.1 * (1 + 0.5 * (self.n % 3)), 20.0, 5.0])
            reply["samples"] = samples
        return reply


def test_the_wall_time_bound_ends_every_case_and_says_so():
    unsettled = BenchSettings.from_mapping({"warmup_runs": 2, "warmup_ms": 1, "min_runs": 5, "min_kernel_ms": 1e9,
                                            "max_seconds": 60, "graph": "off", "max_wall_s": 1.0})
    bound = WallBound(unsettled.max_wall_s)
    seen: list[tuple[int, str, int]] = []

    def watch(index: int, label: str, series: Any) -> str:
        seen.append((index, label, len(series.times_ms)))
        return "provisional"

    result = asyncio.run(time_kernel(Judge(sets=4), SlowKernel(), 2, 7, unsettled, 60,  # type: ignore[arg-type]
                                     lambda *a, **k: None, bound, watch))
    cases = result["cases"]
    assert len(cases) == 2
    # each case got a share of the bound (at least MIN_SERIES_S), not its own 60 s cap
    assert [c["stopped"] for c in cases] == [STOP_WALL_BOUND, STOP_WALL_BOUND]
    assert all(c["times_ms"] and c["failure"] is None for c in cases)
    assert bound.cut  # the stop labels above, not a wall-clock number, show the bound ended both series
    assert {i for i, _, _ in seen} == {0, 1} and all(label == "n=8" for _, label, _ in seen)


def test_a_series_within_its_own_cap_is_not_blamed_on_the_bound():
    bound = WallBound(60.0)
    given = bound.settings_for(SETTINGS, 2)
    assert given == SETTINGS and not bound.cut
    assert WallBound.relabel("time cap", SETTINGS, given) == "time cap"
    tight = WallBound(0.1).settings_for(SETTINGS, 4)
    assert tight.max_seconds == MIN_SERIES_S  # always enough for a number
    assert WallBound.relabel("time cap", SETTINGS, tight) == STOP_WALL_BOUND
    assert WallBound.relabel("converged", SETTINGS, tight) == "converged"


def test_a_provisional_number_comes_once_a_case_has_its_minimum_of_runs(example_task):
    from kerneltui.core.events import BenchmarkProvisional, Event
    from kerneltui.core.rungs.bench_series import KernelSeries
    from kerneltui.core.rungs.benchmark import _provisional
    from kerneltui.core.rungs.context import RunContext, RunOptions
    from kerneltui.core.task_loaders.load import load_task

    task = load_task(str(example_task("vector_add")))
    emitted: list[Event] = []
    ctx = RunContext(task=task, source="", files={}, options=RunOptions(), pool=None,  # type: ignore[arg-type]
                     run_id="r7", emit=emitted.append, source_hash="h", version_dir=task.root)
    reference = {"cases": [{"index": 0, "times_ms": [0.4] * 30}]}
    watch = _provisional(ctx, reference, SETTINGS)
    series = KernelSeries(times_ms=[0.2] * (SETTINGS.min_runs - 1))
    assert watch(0, "n=8", series) is None and not emitted  # too few runs to say anything
    series.times_ms.append(0.2)
    note = watch(0, "n=8", series)
    (event,) = emitted
    assert isinstance(event, BenchmarkProvisional) and event.run_id == "r7" and event.runs == SETTINGS.min_runs
    assert event.speedup_vs_reference == 2.0 and note == "provisional 2.00x (n=20, n=8)"
    assert watch(0, "n=8", series) is None and len(emitted) == 1  # not again within PROVISIONAL_EVERY_S
