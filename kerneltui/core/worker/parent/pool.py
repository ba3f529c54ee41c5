"""Keeps warm workers ready so that a rerun does not pay for importing torch and the DSL.

Two kinds (roles): the candidate's worker (imports the kernel) and the judge (imports the
reference, never the kernel; ``core.worker.child.ops_judge``). A run takes one of each.

Workers are single-use: each verification run takes fresh ones and the pool starts the next
straight away. Candidate code can patch anything in the process it runs in, and a CUDA fault
poisons the context, so no worker that ran candidate code is ever handed out again (a judge is
not reused either: it held the memory a kernel wrote into).

A worker starting up creates a CUDA context and warms its DSL on the GPU, which a kernel being
timed at that moment would pay for (contexts of different processes time-share the GPU). Timing
therefore runs inside ``quiet()``: no worker starts until it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Iterator

from kerneltui.core.environment_fault import EnvironmentFault
from kerneltui.core.worker.contract.replies import DeviceInfo
from kerneltui.core.worker.contract.wire import exchange_root
from kerneltui.core.worker.parent.process import WorkerFailure, WorkerProcess
from kerneltui.core.worker.parent.runner import Runner, default_runner

ROLES = ("candidate", "judge")
FEW_CORES = 4  # a run's parent, judge and candidate each want a core; spares starting beside them too


def few_cores() -> bool:
    """Whether spares importing torch beside a run would take the CPU its verdict needs (a machine of
    FEW_CORES cores or fewer); with cores to spare it costs the run nothing, and holding the spares
    would only make a quick next save wait for one still starting."""
    return (os.cpu_count() or 1) <= FEW_CORES


class WorkerPool:
    def __init__(self, backend: str, arch: str | None = None, runner: Runner | None = None,
                 spares: int | dict[str, int] = 1, ready_timeout: float = 300.0, replenish: bool = True,
                 hold_during_runs: bool = False, top_up_at: int | None = None) -> None:
        self.backend = backend
        self.arch = arch
        self.runner: Runner = runner or default_runner()
        # How many ready workers to keep per role (one number for both, or per role: a full check
        # takes two candidate workers, the checks' and the benchmark's, and one judge).
        self.spares = spares
        self.replenish = replenish  # start the next spare as soon as one is taken
        # Whether hold_spares() holds (interactive pools pass few_cores()): a person waits for each
        # verdict, a batch for the last one, whose runs overlap better with spares starting beside them.
        self.hold_during_runs = hold_during_runs
        # A batch pool's spares are topped up only when a role is down to this many (None: after every
        # take). Each start of a spare is waited out by the next benchmark (``quiet``), so a batch that
        # replaced each spare as it was taken paid a worker's start on every run; started together,
        # on a machine of many cores, a burst of starts costs about one start's wait.
        self.top_up_at = top_up_at
        self.ready_timeout = ready_timeout
        self._spare: dict[str, list[asyncio.Task[WorkerProcess]]] = {role: [] for role in ROLES}
        self._in_use: set[WorkerProcess] = set()
        self._closed = False
        self._quiet = 0  # nesting depth of quiet() blocks
        self._held = 0  # nesting depth of hold_spares() blocks
        self._deferred = False  # a spare was wanted while quiet or held
        self.device_info: DeviceInfo = {}

    @property
    def spares_pending(self) -> int:
        """Spare workers (of both roles) started or ready, not yet handed out."""
        return sum(len(tasks) for tasks in self._spare.values())

    def prestart(self, roles: tuple[str, ...] = ROLES, count: int | None = None) -> None:
        """Start spare workers in the background, ``count`` of each role (default: the pool's
        spares); idempotent; deferred while quiet; with ``top_up_at``, only once a role is down to it."""
        if self._closed:
            return
        if self._quiet or self._held:
            self._deferred = True
            return
        if count is None and self.top_up_at is not None and all(
                self._starting_or_ready(role) > self.top_up_at for role in roles):
            return
        # Topped up together: a run takes one of each role, so the burst is one wait, not one per role.
        for role in roles:
            self._fill(role, count or self.spares_for(role))

    def spares_for(self, role: str) -> int:
        return self.spares.get(role, 1) if isinstance(self.spares, dict) else self.spares

    def spares_ready(self) -> dict[str, int]:
        """Per role, how many spare workers are started and ready to hand out."""
        return {role: sum(1 for t in tasks if t.done() and not t.cancelled() and t.exception() is None)
                for role, tasks in self._spare.items()}

    async def device(self) -> dict[str, object]:
        """What the workers report about the device, waiting for the first worker if none is ready."""
        if not self.device_info and not self._closed:
            self.prestart(("judge",))
            starting = [t for tasks in self._spare.values() for t in tasks]
            if starting:
                await asyncio.wait(starting, return_when=asyncio.FIRST_COMPLETED)
        return dict(self.device_info)

    def _starting_or_ready(self, role: str) -> int:
        return sum(1 for t in self._spare[role] if not (t.done() and (t.cancelled() or t.exception() is not None)))

    def _fill(self, role: str, count: int) -> None:
        spare = [t for t in self._spare[role] if not (t.done() and (t.cancelled() or t.exception() is not None))]
        while len(spare) < count:
            spare.append(asyncio.create_task(self._start_one(role)))
        self._spare[role] = spare

    @contextlib.asynccontextmanager
    async def quiet(self) -> AsyncIterator[float]:
        """A block in which no worker starts (for timing on the GPU); yields the seconds it waited.

        Spares already starting are waited for first, so none is half-way through its warm-up when
        the block begins; spares taken inside the block are replaced when it ends.
        """
        self._quiet += 1
        started = time.perf_counter()
        try:
            starting = [t for tasks in self._spare.values() for t in tasks if not t.done()]
            if starting:
                # A spare that fails to start fails the acquire that takes it, not this wait.
                await asyncio.wait(starting, timeout=self.ready_timeout)
            yield time.perf_counter() - started
        finally:
            self._quiet -= 1
            self._start_deferred()

    @contextlib.contextmanager
    def hold_spares(self) -> Iterator[None]:
        """A block during which spares taken are replaced only when it ends: a short run (the checks
        up to the correctness verdict) uses the CPU for itself instead of sharing it with workers
        importing torch (on a 2-core machine that sharing took save → verdict from 1.3–2.6 s to
        4.7–5.2 s). Workers asked for inside the block still start. A no-op unless the pool holds
        during runs (interactive pools on machines of few cores)."""
        if not self.hold_during_runs:
            yield
            return
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            self._start_deferred()

    def _start_deferred(self) -> None:
        if not self._quiet and not self._held and self._deferred:
            self._deferred = False
            self.prestart()

    async def _start_one(self, role: str = "candidate") -> WorkerProcess:
        worker = await WorkerProcess.start(self.runner, self.backend, self.arch, role,
                                           writable=[str(exchange_root(create=True))])
        try:
            await worker.wait_ready(self.ready_timeout)
        except BaseException:
            await worker.close()
            raise
        self.device_info = worker.info.copy()
        return worker

    async def acquire(self, role: str = "candidate") -> WorkerProcess:
        """A ready, never-used worker of ``role``. Raises WorkerFailure("start") if none can start."""
        if self._closed:
            raise WorkerFailure("start", "the worker pool is closed")
        if role not in ROLES:
            raise ValueError(f"unknown worker role {role!r}")
        if self._quiet or self._held or not self.replenish:
            self._fill(role, 1)  # the worker asked for must start even while quiet or held; spares wait
        else:
            self.prestart()
        task = self._spare[role].pop(0)
        try:
            worker = await task
        except (WorkerFailure, EnvironmentFault):
            raise
        except Exception as exc:
            raise WorkerFailure("start", f"could not start a worker: {exc}") from exc
        if not worker.alive:
            # It died while idle (OOM killer, a driver reset); try once more with a fresh one.
            await worker.close()
            worker = await self._start_one(role)
        self._in_use.add(worker)
        if self.replenish:
            self.prestart()
        return worker

    async def release(self, worker: WorkerProcess) -> None:
        self._in_use.discard(worker)
        await worker.close()

    async def close(self) -> None:
        self._closed = True
        tasks = [t for ts in self._spare.values() for t in ts]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                worker = await task
                await worker.close()
        for ts in self._spare.values():
            ts.clear()
        for worker in list(self._in_use):
            await worker.close()
        self._in_use.clear()
