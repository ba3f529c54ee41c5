"""The worker that holds both kernels of a comparison (core.worker.ops_compare), on the CPU: a real
judge and candidate's worker. The timed calls need a GPU (tests/gpu/test_compare_gpu.py)."""

from __future__ import annotations

import asyncio

import pytest

from kerneltui.core.rungs.context import RunContext, RunOptions
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.pool import WorkerPool
from kerneltui.core.worker.process import WorkerFailure


async def _load_both(task, second: str) -> tuple[dict, str]:
    pool = WorkerPool(task.backend, replenish=False)
    ctx = RunContext(task=task, source=task.kernel_source(), files=task.read_sources(), options=RunOptions(seeds=1),
                     pool=pool, run_id="cmp", emit=lambda e: None, source_hash="x", version_dir=task.version_dir("x"))
    try:
        judging = await ctx.judging()
        worker = await pool.acquire()
        ctx.hold(worker)
        loaded = await worker.request("compare_load", {**await ctx.load_args(judging), "second": second},
                                      timeout=300)
        try:
            await worker.request("compare_calls", {"order": [0], "kernels": ["a"], "lot": "l1"}, timeout=60)
            after = "no error"
        except WorkerFailure as exc:
            after = exc.message
        return loaded, after
    finally:
        await ctx.release_workers()
        await pool.close()


def test_both_kernels_load_side_by_side_in_one_worker(example_task):
    task = load_task(str(example_task("vector_add")))
    second = task.kernel_source().replace("BLOCK = 1024", "BLOCK = 512")
    loaded, after = asyncio.run(_load_both(task, second))
    assert loaded["second_module"] != "kernel" and "compare_b" in loaded["second_module"]
    assert "no benchmark case is open" in after  # timed calls come only inside a case (bench_begin)


def test_a_second_kernel_that_fails_to_import_fails_the_load(example_task):
    task = load_task(str(example_task("vector_add")))
    with pytest.raises(WorkerFailure, match="ZeroDivisionError"):
        asyncio.run(_load_both(task, "x = 1 / 0\n"))


def test_a_task_with_a_launcher_is_refused_with_a_reason(example_task):
    task = load_task(str(example_task("cuda_elementwise")))
    with pytest.raises(WorkerFailure, match="launcher of .* both would run the same kernel"):
        asyncio.run(_load_both(task, task.kernel_source()))
