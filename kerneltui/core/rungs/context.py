"""What a rung gets to work with during one verification run."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltui.core.events import Emit, RungProgress
from kerneltui.core.rungs.result import RungResult, SourceLocation
from kerneltui.core.task import Task
from kerneltui.core.worker.pool import WorkerPool
from kerneltui.core.worker.process import WorkerFailure, WorkerProcess


@dataclass
class RunOptions:
    rungs: list[str] | None = None  # None: the default set (every rung that is not on demand)
    seeds: int | None = None  # per test case (the hidden seed comes on top)
    timeout_s: float | None = None  # one limit for every rung, overriding the task's
    arch: str | None = None  # target for ahead-of-time compiles with no GPU
    kernel_source: str | None = None  # check this text instead of the kernel file (proposals)
    origin: str = "manual"
    record: bool = True  # store the version in the task's history
    extra: dict[str, Any] = field(default_factory=dict)  # rung-specific options (e.g. profile filters)


@dataclass
class RunContext:
    task: Task
    source: str
    files: dict[str, str]
    options: RunOptions
    pool: WorkerPool
    run_id: str
    emit: Emit
    source_hash: str
    version_dir: Path
    results: dict[str, RungResult] = field(default_factory=dict)
    device: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  # raw op results shared between rungs
    _check_worker: WorkerProcess | None = None
    _workers: list[WorkerProcess] = field(default_factory=list)

    # -- workers --------------------------------------------------------------------------------

    async def check_worker(self) -> WorkerProcess:
        """The worker the compile/run/correctness/dump rungs share for this run."""
        if self._check_worker is None or not self._check_worker.alive:
            if self._check_worker is not None and "load" in self.data:
                raise WorkerFailure("crash", "the check worker is gone (it crashed or was killed in an earlier rung)")
            self._check_worker = await self.pool.acquire()
            self._workers.append(self._check_worker)
            self.device = dict(self._check_worker.info)
        return self._check_worker

    async def loaded_worker(self, purpose: str) -> WorkerProcess:
        """A fresh worker with the task and candidate loaded (e.g. benchmark: separate from checks)."""
        worker = await self.pool.acquire()
        self._workers.append(worker)
        if not self.device:
            self.device = dict(worker.info)
        await worker.request("load", self.load_args(), timeout=self.timeout("compile"),
                             on_progress=self.progress_for(purpose))
        return worker

    def load_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"task": self.task.to_dict(), "files": self.files}
        if self.options.extra.get("override"):  # hand-edited compiler output (core.override)
            args["override"] = self.options.extra["override"]
        return args

    async def release_workers(self) -> None:
        for worker in self._workers:
            await self.pool.release(worker)
        self._workers.clear()
        self._check_worker = None

    # -- helpers --------------------------------------------------------------------------------

    def timeout(self, rung: str) -> float:
        if self.options.timeout_s is not None:
            return float(self.options.timeout_s)
        return self.task.timeouts.for_rung(rung)

    def progress_for(self, rung: str) -> Callable[[str, float | None], None]:
        def progress(message: str, fraction: float | None = None) -> None:
            self.emit(RungProgress(run_id=self.run_id, rung=rung, message=message, fraction=fraction))

        return progress

    @property
    def has_gpu(self) -> bool:
        info = self.device or self.pool.device_info
        return bool(info.get("gpu"))

    @property
    def arch(self) -> str:
        return self.options.arch or str(self.device.get("arch") or self.task.arch)

    def location_from(self, error: dict[str, Any]) -> SourceLocation | None:
        file, line = error.get("file"), error.get("line")
        if file and line:
            return SourceLocation(str(file), int(line))
        return None


RungFn = Callable[[RunContext], Awaitable[RungResult]]


@dataclass(frozen=True)
class RungSpec:
    name: str
    title: str
    run: RungFn
    requires: tuple[str, ...] = ()  # rungs that must pass first (added automatically)
    needs_gpu: bool = False
    on_demand: bool = False  # not part of the default set (profile, trace)
    own_worker: bool = False  # runs in a worker of its own (benchmark: separate from the checks)
    no_gpu_reason: Callable[[RunContext], str] | None = None  # a needs_gpu rung's own "skipped: no GPU" sentence


class Stopwatch:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start
