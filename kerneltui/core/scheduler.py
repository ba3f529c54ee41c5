"""Reruns the loop on request; a new request cancels the run in flight (its worker is killed)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from kerneltui.core.loop import Loop, RunReport
from kerneltui.core.rungs.context import RunOptions


class RunScheduler:
    def __init__(self, loop: Loop, on_report: Callable[[RunReport], None] | None = None) -> None:
        self.loop = loop
        self.on_report = on_report
        self._current: asyncio.Task[RunReport | None] | None = None
        self.started_at: float | None = None

    @property
    def running(self) -> bool:
        return self._current is not None and not self._current.done()

    def request(self, options: RunOptions | None = None) -> asyncio.Task[RunReport | None]:
        """Start a run now, cancelling the one in flight."""
        previous = self._current
        if previous is not None and not previous.done():
            previous.cancel()
        self._current = asyncio.create_task(self._run(previous, options or RunOptions()))
        return self._current

    async def _run(self, previous: asyncio.Task[RunReport | None] | None, options: RunOptions) -> RunReport | None:
        if previous is not None:
            # Wait for the cancelled run to release its workers before starting.
            with contextlib.suppress(BaseException):
                await previous
        loop = asyncio.get_running_loop()
        self.started_at = loop.time()
        try:
            report = await self.loop.run(options)
        except asyncio.CancelledError:
            return None
        if self.on_report is not None:
            self.on_report(report)
        return report

    async def cancel(self) -> None:
        if self._current is not None and not self._current.done():
            self._current.cancel()
            with contextlib.suppress(BaseException):
                await self._current

    async def wait(self) -> RunReport | None:
        if self._current is None:
            return None
        with contextlib.suppress(asyncio.CancelledError):
            return await self._current
        return None
