"""The worker that holds both kernels of a comparison (core.worker.child.ops_compare, loaded through
core.compare_run.loaded_pair), on the CPU: a real judge and candidate's worker. The timed calls
need a GPU (tests/gpu/test_compare_gpu.py)."""

from __future__ import annotations

import asyncio

import pytest

from kerneltui.core.compare_run import CompareError, KernelVersion, loaded_pair
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.parent.pool import WorkerPool
from kerneltui.core.worker.parent.process import WorkerFailure


async def _load_both(task, second: str) -> tuple[dict, str]:
    pool = WorkerPool(task.backend, replenish=False)
    a = KernelVersion("kernel.py", task.kernel_source())
    try:
        async with loaded_pair(task, pool, a, KernelVersion("B", second)) as pair:
            try:
                await pair.worker.request("compare_calls", {"order": [0], "kernels": ["a"], "lot": "l1"}, timeout=60)
                after = "no error"
            except WorkerFailure as exc:
                after = exc.message
            return pair.loaded, after
    finally:
        await pool.close()


def test_both_kernels_load_side_by_side_in_one_worker(example_task):
    task = load_task(str(example_task("vector_add")))
    second = task.kernel_source().replace("BLOCK = 1024", "BLOCK = 512")
    loaded, after = asyncio.run(_load_both(task, second))
    assert loaded["second_module"] != "kernel" and "compare_b" in loaded["second_module"]
    assert "no benchmark case is open" in after  # timed calls come only inside a case (bench_begin)


def test_a_second_kernel_that_fails_to_import_fails_the_load(example_task):
    task = load_task(str(example_task("vector_add")))
    with pytest.raises(CompareError, match="loading both kernels: .*ZeroDivisionError"):
        asyncio.run(_load_both(task, "x = 1 / 0\n"))


def test_a_task_with_a_launcher_is_refused_with_a_reason(example_task):
    task = load_task(str(example_task("cuda_elementwise")))
    with pytest.raises(CompareError, match="launcher of .* both would run the same kernel"):
        asyncio.run(_load_both(task, task.kernel_source()))


def test_a_second_kernel_that_replaces_the_first_ones_function_is_refused(example_task):
    task = load_task(str(example_task("vector_add")))
    saboteur = task.kernel_source() + (
        "\nimport sys\n"
        "_first = sys.modules['kernel']\n"
        "_fast = _first.custom_kernel\n"
        "def _slowed(x, y):\n"
        "    for _ in range(50):\n"
        "        _fast(x, y)\n"
        "    return _fast(x, y)\n"
        "_first.custom_kernel = _slowed\n"
    )
    with pytest.raises(CompareError, match="importing kernel B replaced custom_kernel in kernel A's module"):
        asyncio.run(_load_both(task, saboteur))
