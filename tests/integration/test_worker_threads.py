"""On a machine without a GPU a run's judge and kernel worker share the cores: each takes half of
them for torch's intra-op threads (on 2 cores, two processes spinning two OpenMP threads each made
vector_add's save → correctness verdict 0.38 s instead of 0.28 s). Real workers of both roles,
asked for their thread count."""

from __future__ import annotations

import os

import pytest

from kerneltui.core.worker.parent.pool import WorkerPool


def cores() -> int:
    return len(os.sched_getaffinity(0))


async def threads_of_both_roles() -> dict[str, int]:
    pool = WorkerPool("triton", replenish=False)
    try:
        got = {}
        for role in ("candidate", "judge"):
            worker = await pool.acquire(role)
            reply = await worker.request("ping", {}, timeout=60)
            if reply["info"]["gpu"]:
                pytest.skip("a GPU machine keeps torch's default thread count")
            got[role] = int(reply["info"]["cpu_threads"])
            await pool.release(worker)
        return got
    finally:
        await pool.close()


async def test_the_judge_and_the_kernel_worker_each_take_half_the_cores(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert await threads_of_both_roles() == {"candidate": max(1, cores() // 2), "judge": max(1, cores() // 2)}


async def test_a_thread_count_the_person_set_stands(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert await threads_of_both_roles() == {"candidate": 3, "judge": 3}
