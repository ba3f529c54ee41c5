"""The engine's warm workers: one pool per (backend, arch), each keeping spare candidate workers and
judges ready, and the rule that lets runs of several clients share one GPU without timing each other.

Workers stay single-use (``core.worker.parent.pool``): the engine only keeps the *next* ones started, so
the cost of importing torch and the DSL is paid between runs instead of inside them.

Timing needs the GPU to itself. A run that times something (benchmark, profile, trace) on a machine
with a GPU holds the GPU exclusively: it waits for the runs in flight and the next runs wait for it;
runs that only check share it. While any pool times (``quiet``), no pool of the engine starts a
worker (a worker's start creates a CUDA context and warms its DSL on the GPU).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kerneltui.core.worker.parent.pool import WorkerPool, few_cores
from kerneltui.core.worker.parent.runner import Runner

TIMED_RUNGS = frozenset({"benchmark", "profile", "trace"})


class EnginePool(WorkerPool):
    """A pool whose quiet blocks quiet every pool of the engine."""

    def __init__(self, registry: EnginePools, backend: str, arch: str | None, runner: Runner,
                 spares: dict[str, int]) -> None:
        # The engine serves people waiting for a verdict (check, watch, the TUI).
        super().__init__(backend, arch=arch, runner=runner, spares=spares, replenish=True,
                         hold_during_runs=few_cores())
        self.registry = registry

    @contextlib.asynccontextmanager
    async def quiet(self) -> AsyncIterator[float]:
        async with contextlib.AsyncExitStack() as stack:
            waited = 0.0
            for pool in self.registry.pools():
                waited += await stack.enter_async_context(WorkerPool.quiet(pool))
            yield waited


class GpuAccess:
    """Shared for runs that only check, exclusive for runs that time (a readers-writer lock, FIFO
    for the exclusive ones so a stream of checks cannot starve a benchmark)."""

    def __init__(self) -> None:
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def hold(self, exclusive: bool) -> AsyncIterator[bool]:
        """Yields whether the holder had to wait."""
        waited = False
        async with self._changed:
            if exclusive:
                self._waiting_exclusive += 1
                try:
                    while self._exclusive or self._shared:
                        waited = True
                        await self._changed.wait()
                finally:
                    self._waiting_exclusive -= 1
                self._exclusive = True
            else:
                while self._exclusive or self._waiting_exclusive:
                    waited = True
                    await self._changed.wait()
                self._shared += 1
        try:
            yield waited
        finally:
            async with self._changed:
                if exclusive:
                    self._exclusive = False
                else:
                    self._shared -= 1
                self._changed.notify_all()

    @property
    def busy(self) -> bool:
        return self._exclusive or self._shared > 0


class EnginePools:
    def __init__(self, runner: Runner, spares: dict[str, int]) -> None:
        self.runner = runner
        self.spares = spares
        self._pools: dict[tuple[str, str | None], EnginePool] = {}
        self.gpu = GpuAccess()

    def pools(self) -> list[EnginePool]:
        return list(self._pools.values())

    def get(self, backend: str, arch: str | None) -> EnginePool:
        key = (backend, arch)
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = EnginePool(self, backend, arch, self.runner, dict(self.spares))
            pool.prestart()
        return pool

    async def needs_gpu_alone(self, pool: WorkerPool, rungs: list[str]) -> bool:
        """Whether a run of these rungs must have the GPU to itself (known once a worker has said
        whether there is a GPU: until then, assume there is)."""
        if not TIMED_RUNGS.intersection(rungs):
            return False
        info = await pool.device()
        return info.get("gpu") is not False

    def describe(self) -> list[dict[str, Any]]:
        out = []
        for (backend, arch), pool in self._pools.items():
            info = pool.device_info
            out.append({"backend": backend, "arch": arch, "ready": pool.spares_ready(),
                        "wanted": {role: pool.spares_for(role) for role in ("candidate", "judge")},
                        "device": str(info.get("name") or ("CPU" if info and not info.get("gpu") else "?"))})
        return out

    async def close(self) -> None:
        await asyncio.gather(*(pool.close() for pool in self.pools()), return_exceptions=True)
        self._pools.clear()
