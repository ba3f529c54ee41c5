"""Reruns the loop on request; saves coalesce.

A request cancels the run in flight (its workers are killed) with the reason ``OVERTAKEN``, which the
loop's ``RunFinished`` carries to every front end. Requests that arrive while a cancelled run is
still releasing its workers collapse into one: the newest options win, and one run serves them all.
A save whose files are byte for byte those of the last run this scheduler completed with the same
options is not run again (one history row per version); a run asked for by hand always runs.

A run checks the kernel's text as it was when the scheduler started the run (``pinned``), not as it is
when the run gets round to reading it: through the engine a run may wait behind another front end's
run of the task while the person saves again. So the scheduler knows what the run in flight checks,
and a save whose files are byte for byte those (the save the run already read, told by the watcher a
moment later) joins that run instead of cancelling it: a run is cancelled only by a request for
something else.

Every request is answered by a future: the report of the run that served it, or None when that run
was cancelled (overtaken by a newer request, or ``cancel``). A run the engine had finished before the
cancel reached it returns its report (``core.engine.client``): it is a completed run, answered and
remembered as the last one like any other, as the front end showed its verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import Task, TaskError

OVERTAKEN = "overtaken by a newer save"
OVERTAKEN_BY_RUN = "overtaken by a newer run"  # a run asked for by hand, a proposal's trial
STOPPED = "stopped"


class RunsChecks(Protocol):
    """What the scheduler drives: a ``core.loop.Loop`` or the engine's ``EngineLoop``."""

    task: Task

    async def run(self, options: RunOptions | None = None) -> RunReport: ...


def request_key(task: Task, options: RunOptions) -> str | None:
    """What a run of ``options`` would check: the options (the kernel's text among them once ``pinned``)
    and the bytes of every task file the run reads from disk (None when a file cannot be read: the run
    itself says why)."""
    digest = hashlib.sha256(
        json.dumps(
            {k: v for k, v in options.to_dict().items() if k != "origin"}, sort_keys=True, default=str
        ).encode()
    )
    try:
        paths = task.watched_paths()
        if options.kernel_source is None:
            paths = [task.kernel_path, *paths]
        else:  # the run checks the text in the options, whatever the kernel file holds
            paths = [path for path in paths if path != task.kernel_path]
        for path in paths:
            digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    except (OSError, TaskError):
        return None
    return digest.hexdigest()


def pinned(task: Task, options: RunOptions) -> tuple[RunOptions, str | None]:
    """``options`` with the kernel's text as it is now (unless they bring their own), and what a run of
    them checks (``request_key``). A kernel that cannot be read is not pinned: the run reads it and
    says why."""
    if options.kernel_source is None:
        try:
            options = replace(options, kernel_source=task.kernel_source())
        except TaskError:
            pass
    return options, request_key(task, options)


class RunScheduler:
    def __init__(self, loop: RunsChecks, on_report: Callable[[RunReport], None] | None = None) -> None:
        self.loop = loop
        self.on_report = on_report
        self.started_at: float | None = None
        self._current: asyncio.Task[RunReport] | None = None  # the run in flight
        self._current_key: str | None = None  # what it checks (``request_key``)
        self._serving: list[asyncio.Future[RunReport | None]] = []  # the callers it answers
        self._told: asyncio.Task[RunReport] | None = None  # the run already told to stop
        self._driver: asyncio.Task[None] | None = None  # runs the pending request, then the next
        self._pending: RunOptions | None = None  # the newest request not yet started
        self._waiting: list[asyncio.Future[RunReport | None]] = []  # its callers (collapsed requests)
        self._last_key: str | None = None  # what the last completed run checked

    @property
    def running(self) -> bool:
        return self._driver is not None and not self._driver.done()

    def request(self, options: RunOptions | None = None) -> asyncio.Future[RunReport | None]:
        """Run ``options`` as soon as the run in flight (cancelled now) has released its workers; a save
        of exactly what the run in flight checks is answered by that run instead."""
        answer: asyncio.Future[RunReport | None] = asyncio.get_running_loop().create_future()
        options = options or RunOptions()
        if self._checks_already(options):
            self._serving.append(answer)
            return answer
        self._pending = options
        self._waiting.append(answer)
        self._stop_current(OVERTAKEN if options.origin == "save" else OVERTAKEN_BY_RUN)
        if self._driver is None or self._driver.done():
            self._driver = asyncio.create_task(self._drive())
        return answer

    def _checks_already(self, options: RunOptions) -> bool:
        """Whether the run in flight, not told to stop, checks exactly what a save of ``options`` would
        now: the watcher telling of a save the run had already read when it started."""
        run = self._current
        if (options.origin != "save" or run is None or run.done() or run is self._told or self._pending is not None
                or self._current_key is None):
            return False
        return pinned(self.loop.task, options)[1] == self._current_key

    async def _drive(self) -> None:
        while self._pending is not None:
            options, waiting = self._pending, self._waiting
            self._pending, self._waiting = None, []
            options, key = pinned(self.loop.task, options)
            if options.origin == "save" and key is not None and key == self._last_key:
                _answer(waiting, None)  # nothing changed since the last completed run
                continue
            self.started_at = asyncio.get_running_loop().time()
            run = asyncio.create_task(self.loop.run(options))
            self._current, self._current_key, self._serving = run, key, waiting
            try:
                # asyncio.wait, not ``await run``: a run cancelled by a newer request must not read as
                # this driver's own cancellation (nor the other way round).
                await asyncio.wait({run})
            except asyncio.CancelledError:
                self._stop_current(STOPPED)
                await asyncio.wait({run})
                _answer(waiting, None)
                raise
            if run.cancelled():
                _answer(waiting, None)
                continue
            error = run.exception()
            if error is not None:
                for future in waiting:
                    if not future.done():
                        future.set_exception(error)
                continue
            report = run.result()
            # A run the machine stopped checked nothing: the same files saved again run again.
            self._last_key = None if report.cancelled or report.environment else key
            if self.on_report is not None:
                self.on_report(report)
            _answer(waiting, report)

    def _stop_current(self, reason: str) -> None:
        """Cancel the run in flight, once: a second cancel would land in its clean-up (releasing its
        workers, passing on the engine's last events) and cut it short, leaving a run that never says
        how it ended and workers nobody released."""
        run = self._current
        if run is not None and not run.done() and run is not self._told:
            self._told = run
            run.cancel(reason)

    async def cancel(self) -> None:
        """Cancel the run in flight and every request not yet started; returns once it has ended."""
        self._pending = None
        driver = self._driver
        if driver is not None and not driver.done():
            driver.cancel(STOPPED)
            await asyncio.wait({driver})
        if self._current is not None and not self._current.done():
            self._stop_current(STOPPED)
            await asyncio.wait({self._current})
        _answer(self._waiting, None)
        self._waiting = []

    async def wait(self) -> RunReport | None:
        """The report of the last run once no request is left (None if it was cancelled)."""
        report: RunReport | None = None
        while self._driver is not None and not self._driver.done():
            await asyncio.wait({self._driver})
        if self._current is not None and self._current.done() and not self._current.cancelled():
            with contextlib.suppress(Exception):
                report = self._current.result()
        return report


def _answer(waiting: list[asyncio.Future[RunReport | None]], report: RunReport | None) -> None:
    for future in waiting:
        if not future.done():
            future.set_result(report)
