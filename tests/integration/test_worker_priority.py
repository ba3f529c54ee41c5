"""Workers started for the app run below its priority: a real worker, asked for its pid, is read
from the kernel's process table."""

from __future__ import annotations

import os

from kerneltui.commands.tui import WORKER_NICE_ENV
from kerneltui.core.worker.parent.pool import WorkerPool


async def test_a_worker_runs_at_the_priority_the_app_asks_for(monkeypatch):
    monkeypatch.setenv(WORKER_NICE_ENV, "7")
    pool = WorkerPool("triton", replenish=False)
    try:
        worker = await pool.acquire()
        reply = await worker.request("ping", {}, timeout=60)
        worker_nice = os.getpriority(os.PRIO_PROCESS, int(reply["pid"]))
    finally:
        await pool.close()
    assert worker_nice == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 7)
