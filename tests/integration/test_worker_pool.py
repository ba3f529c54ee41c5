"""The worker pool keeps the GPU quiet while a benchmark times: real worker processes."""

from __future__ import annotations

from kerneltui.core.worker.pool import WorkerPool


async def test_no_worker_starts_inside_a_quiet_block():
    pool = WorkerPool("torch", spares=1)
    try:
        pool.prestart()
        async with pool.quiet() as waited:
            # the spare that was starting has finished its warm-up before the block begins
            assert waited > 0
            first = await pool.acquire()
            assert first.alive
            assert pool.spares_pending == 1  # the judge's spare; the candidate's replacement waits
            # a worker asked for inside the block still starts (only spares wait)
            second = await pool.acquire()
            assert second.alive and second is not first
            assert pool.spares_pending == 1
            await pool.release(first)
            await pool.release(second)
        assert pool.spares_pending == 2  # the deferred spare starts on the way out
        third = await pool.acquire()
        assert third.alive
        await pool.release(third)
    finally:
        await pool.close()
