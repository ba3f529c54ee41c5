"""The kernel's series as the parent drives it: batches, rechecks, renewals, the stopping rule.

The ops it drives need a GPU; here two stand-ins play the judge and the candidate's worker with the
replies those ops give (their own tests cover the ops on the GPU), so the driver's control flow —
warm-up then timed batches, every output rechecked before its slots are reused, a failing recheck
ending the series with the call named, slots the judge moved re-sent — runs on the CPU.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kerneltui.core.bench.stats import BenchSettings
from kerneltui.core.rungs.bench_series import time_kernel


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
                "pool": {"sets": self.sets}}


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
                "outputs": [{"out": i} for i in args["order"]], "threads_left": 0, "stream_changes": 0}


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
