"""A suite's runs answered by the background engine: its warm workers instead of new ones per problem.

Each item is one run request, the problem and its candidate named by path and loaded by the engine
as ``prepare`` loaded them (the same ``load_task`` call and load options), with the candidate's text
as it was when its fingerprint was taken (``kernel_source``), so the verdict recorded is the verdict
of the text fingerprinted. The slots still say how many runs are asked at once; the engine keeps
runs that time the GPU alone and runs the rest side by side.

When the engine cannot serve (it will not start, it refuses a request, it dies mid-run), the suite
says so once and verifies that item and every later one with workers of its own, as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kerneltui.core.batch import (
    Candidate,
    CandidateResult,
    Placement,
    Slot,
    failed_result,
    result_from_report,
    verify_one,
)
from kerneltui.core.engine.client import EngineClient, EngineLost, EngineRunError, EngineUnavailable
from kerneltui.core.engine.messages import RunRequest
from kerneltui.core.events import Event, Notice
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.suite.prepare import Prepared
from kerneltui.core.task import Task, TaskError

Landed = Callable[[CandidateResult], None]
Say = Callable[[str], None]  # a warning for the person (the command prints it on stderr)


class _Fallback:
    """Whether the engine failed once in this suite (then every later item runs without it)."""

    def __init__(self, say: Say) -> None:
        self.reason: str | None = None
        self._say = say

    def engage(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self._say(f"{reason}; verifying the rest of the suite without the engine")


async def verify_through_engine(items: list[tuple[Prepared, Task]], slots: list[Slot], options: RunOptions,
                                client: EngineClient, landed: Landed, say: Say) -> None:
    """Verify each prepared item (``Prepared``, its task) through ``client``, as many at once as there
    are slots; ``landed`` gets each result as it lands."""
    queue: asyncio.Queue[tuple[Prepared, Task]] = asyncio.Queue()
    for item in items:
        queue.put_nowait(item)
    fallback = _Fallback(say)

    def emit(event: Event) -> None:
        # The run's own events stay in its report; what the engine says of itself reaches the person.
        if isinstance(event, Notice) and event.source == "engine" and event.level == "warning":
            say(event.message)

    async def drain(slot: Slot) -> None:
        while True:
            try:
                prepared, task = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            landed(await _one(prepared, task, slot, options, client, emit, fallback))

    await asyncio.gather(*(drain(slot) for slot in slots))


async def _one(prepared: Prepared, task: Task, slot: Slot, options: RunOptions, client: EngineClient,
               emit: Callable[[Event], None], fallback: _Fallback) -> CandidateResult:
    item = prepared.item
    opts = replace(options, kernel_source=prepared.source, origin="batch")
    if fallback.reason is None:
        request = RunRequest.make(item.path, item.candidate, task.load, opts)
        started_at = time.time()
        try:
            report = await client.run(request, emit)
        except TaskError as exc:  # loaded here, not there: the files changed since `prepare`
            return failed_result(item.key, f"task error: {exc}", slot.label, task_error=True)
        except (EngineUnavailable, EngineLost, EngineRunError) as exc:
            fallback.engage(str(exc))
        else:
            placement: Placement = {"host": "engine", "gpu": slot.gpu, "started_at": started_at, "finished_at": time.time()}
            return result_from_report(item.key, report.to_json(), slot.label, placement)
    candidate = Candidate(name=item.key, path=item.candidate or Path(), source=prepared.source)
    return await verify_one(task, candidate, slot.runner(), options, slot.label, None, slot.gpu)
