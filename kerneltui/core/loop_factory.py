"""The one place that builds worker pools and loops: every front end asks for a kind of pool here.

Three kinds, by who waits on the runs:

* ``INTERACTIVE``: a person waits on each verdict (the app, ``kerneltui watch``). One spare per role,
  and on a machine of few cores the spares wait while a run is on (``WorkerPool.hold_spares``), so
  their start never takes the CPU the verdict needs.
* ``ONE_RUN``: one run, then the pool is closed (``check``, ``compare``, ``device``, a batch's
  candidate). No spare is started after one is taken: nothing would use it. The benchmark's own
  worker is started once the loop knows a GPU is there.
* ``STANDING``: runs come as they come and nobody waits on a particular one more than another (the
  agent's chat and ``kerneltui ask``, re-verifying a session, a batch's candidate that needs a second
  worker): the pool's defaults, a spare started as soon as one is taken.

The engine keeps its own pools (``core.engine.pools.EnginePool``), shared by every front end; the
loops it runs on them are built here too.
"""

from __future__ import annotations

from enum import Enum

from kerneltui.core.events import Emit
from kerneltui.core.loop import Loop, RunObserver, RunReport
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import Task
from kerneltui.core.worker.parent.pool import WorkerPool, few_cores
from kerneltui.core.worker.parent.runner import Runner


class PoolKind(Enum):
    INTERACTIVE = "interactive"
    ONE_RUN = "one run"
    STANDING = "standing"


def new_pool(kind: PoolKind, backend: str, arch: str | None = None, runner: Runner | None = None) -> WorkerPool:
    """A pool of ``kind`` for ``backend``'s workers (``runner``: where they run, this machine by default)."""
    if kind is PoolKind.INTERACTIVE:
        # few_cores() is read when the pool is made: the machine does not change under a running app.
        return WorkerPool(backend, arch=arch, runner=runner, spares=1, hold_during_runs=few_cores())
    if kind is PoolKind.ONE_RUN:
        return WorkerPool(backend, arch=arch, runner=runner, replenish=False)
    return WorkerPool(backend, arch=arch, runner=runner)


def new_loop(task: Task, pool: WorkerPool, emit: Emit | None = None,
             observers: list[RunObserver] | None = None) -> Loop:
    """A loop that runs ``task``'s rungs on ``pool`` (closing the loop closes the pool)."""
    return Loop(task, pool=pool, emit=emit, observers=observers)


def open_loop(kind: PoolKind, task: Task, arch: str | None = None, emit: Emit | None = None,
              observers: list[RunObserver] | None = None) -> Loop:
    """A loop on a new pool of ``kind`` for ``task`` (``arch``: a target other than the task's own)."""
    return new_loop(task, new_pool(kind, task.backend, arch or task.arch), emit, observers)


async def check_once(task: Task, options: RunOptions | None = None, emit: Emit | None = None,
                     observers: list[RunObserver] | None = None, pool: WorkerPool | None = None) -> RunReport:
    """Run the loop once, on ``pool`` or on a one-run pool of its own (headless commands)."""
    own_pool = pool is None
    if pool is None:
        pool = new_pool(PoolKind.ONE_RUN, task.backend, (options.arch if options else None) or task.arch)
    loop = new_loop(task, pool, emit, observers)
    try:
        return await loop.run(options)
    finally:
        if own_pool:
            await loop.close()
