"""Keeps a warm worker ready so that a rerun does not pay for importing torch and the DSL.

Workers are single-use: each verification run takes a fresh one and the pool starts the next
straight away. Candidate code can patch anything in the process it runs in, and a CUDA fault
poisons the context, so no worker that ran candidate code is ever handed out again.
"""

from __future__ import annotations

import asyncio
import contextlib

from kerneltui.core.worker.process import WorkerFailure, WorkerProcess
from kerneltui.core.worker.runner import Runner, default_runner


class WorkerPool:
    def __init__(self, backend: str, arch: str | None = None, runner: Runner | None = None,
                 spares: int = 1, ready_timeout: float = 300.0, replenish: bool = True) -> None:
        self.backend = backend
        self.arch = arch
        self.runner: Runner = runner or default_runner()
        self.spares = spares
        self.replenish = replenish  # start the next spare as soon as one is taken
        self.ready_timeout = ready_timeout
        self._spare: list[asyncio.Task[WorkerProcess]] = []
        self._in_use: set[WorkerProcess] = set()
        self._closed = False
        self.device_info: dict[str, object] = {}

    def prestart(self) -> None:
        """Start spare workers in the background (idempotent)."""
        if self._closed:
            return
        self._spare = [t for t in self._spare if not (t.done() and (t.cancelled() or t.exception() is not None))]
        while len(self._spare) < self.spares:
            self._spare.append(asyncio.create_task(self._start_one()))

    async def _start_one(self) -> WorkerProcess:
        worker = await WorkerProcess.start(self.runner, self.backend, self.arch)
        try:
            await worker.wait_ready(self.ready_timeout)
        except BaseException:
            await worker.close()
            raise
        self.device_info = dict(worker.info)
        return worker

    async def acquire(self) -> WorkerProcess:
        """A ready, never-used worker. Raises WorkerFailure("start") if none can start."""
        if self._closed:
            raise WorkerFailure("start", "the worker pool is closed")
        self.prestart()
        task = self._spare.pop(0)
        try:
            worker = await task
        except WorkerFailure:
            raise
        except Exception as exc:
            raise WorkerFailure("start", f"could not start a worker: {exc}") from exc
        if not worker.alive:
            # It died while idle (OOM killer, a driver reset); try once more with a fresh one.
            await worker.close()
            worker = await self._start_one()
        self._in_use.add(worker)
        if self.replenish:
            self.prestart()
        return worker

    async def release(self, worker: WorkerProcess) -> None:
        self._in_use.discard(worker)
        await worker.close()

    async def close(self) -> None:
        self._closed = True
        for task in self._spare:
            task.cancel()
        for task in self._spare:
            with contextlib.suppress(BaseException):
                worker = await task
                await worker.close()
        self._spare.clear()
        for worker in list(self._in_use):
            await worker.close()
        self._in_use.clear()
