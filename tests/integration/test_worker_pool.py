"""The worker pool keeps the GPU quiet while a benchmark times: real worker processes."""

from __future__ import annotations

import pytest

from kerneltui.core.worker.parent.pool import WorkerPool


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


async def test_a_closed_worker_ends_by_itself_instead_of_being_killed_after_the_grace():
    """Closing a worker waited out its 2 s grace on every close (the interpreter's teardown with
    torch loaded outlasted it) and then killed it: seconds added to every run. The worker now ends
    as soon as the parent is done with it."""
    pool = WorkerPool("torch", spares=1, replenish=False)
    try:
        worker = await pool.acquire()
        await pool.release(worker)
        assert worker.proc.returncode == 0, f"the worker was killed (exit status {worker.proc.returncode})"
    finally:
        await pool.close()


@pytest.mark.parametrize("few_cores", [True, False])
async def test_spares_taken_by_a_checks_only_run_are_replaced_when_it_ends(example_task, few_cores):
    """On a 2-core machine the replacements starting beside a run took the CPU its verdict needed
    (5 s save → verdict instead of under 1 s): there a run of checks alone replaces the spares it
    takes when it ends. With cores to spare they start at once, ready sooner for the next save."""
    from kerneltui.core.events import RungFinished
    from kerneltui.core.loop import Loop
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task_loaders.load import load_task

    task = load_task(example_task("vector_add"))
    pool = WorkerPool(task.backend, spares=1, hold_during_runs=few_cores)
    pending_during: list[int] = []

    def on_event(event: object) -> None:
        if isinstance(event, RungFinished):
            pending_during.append(pool.spares_pending)

    loop = Loop(task, pool=pool, emit=on_event)
    try:
        pool.prestart()
        report = await loop.run(RunOptions(rungs=["correctness"], seeds=1, record=False, origin="check"))
        assert report.ok, [(r.name, r.status, r.summary) for r in report.results]
        assert pending_during and all(n == (0 if few_cores else 2) for n in pending_during), pending_during
        assert pool.spares_pending == 2  # one candidate's and one judge's, started as the run ended
    finally:
        await loop.close()


def test_the_judges_cases_do_not_import_inductor(tmp_path):
    """torch.use_deterministic_algorithms imports torch._inductor (1 s of CPU) to set Inductor's own flag;
    the judge poisons fresh allocations for every case it makes, and neither its start nor its first
    case loads Inductor now: fresh memory is still poisoned."""
    import os
    import subprocess
    import sys

    program = ("import sys; from kerneltui.core.worker.child.state import WorkerState; "
               "from kerneltui.core.worker.child.ops_candidate import poisoned_allocations; "
               "state = WorkerState(backend_name='torch', role='judge'); state.warm_up(); torch = state.torch\n"
               "with poisoned_allocations(torch):\n"
               "    fresh = torch.empty(4)\n"
               "print(bool(fresh.isnan().all()), torch.are_deterministic_algorithms_enabled(), "
               "'torch._inductor' in sys.modules)")
    env = dict(os.environ, KERNELTUI_WORKER_SCRATCH=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", "False", "False"]


async def test_a_batch_pool_tops_its_spares_up_in_one_burst():
    """Each spare started as one was taken was waited out by the next benchmark (nothing starts while
    one times): a batch of benchmark runs on the H200 paid a worker's start on every run. With
    ``top_up_at`` the spares are started together once a role is down to that many."""
    pool = WorkerPool("torch", spares=2, top_up_at=0)
    try:
        pool.prestart()
        assert pool.spares_pending == 4
        first = await pool.acquire()
        assert pool.spares_pending == 3  # one candidate left: nothing starts yet
        second = await pool.acquire()
        # the candidates ran out: both roles are topped up to their spares (the judges already are)
        assert pool.spares_pending == 4
        assert len(pool._spare["candidate"]) == 2 and len(pool._spare["judge"]) == 2
        for worker in (first, second):
            await pool.release(worker)
    finally:
        await pool.close()
