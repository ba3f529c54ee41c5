"""What the app works with on one task, made in one place: the composition root of the UI.

A :class:`Workbench` is the task, its worker pool, the loop behind a ``RunScheduler``, the agent and
the panes' data sources. The pool is the only one in the process: the agent's trials take their
workers from it too, so a benchmark's ``pool.quiet()`` holds for every worker kerneltui starts.
:func:`open_workbench` builds one at start, on a task switch and on a resume (through the switch),
from :class:`Parts`, which says how each task-bound part is made (tests give fixed data);
:meth:`Workbench.close` ends all of it. Nothing here imports Textual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kerneltui import config as config_mod
from kerneltui.core.events import Emit
from kerneltui.core.history import observer_for
from kerneltui.core.loop import Loop
from kerneltui.core.loop_factory import PoolKind, new_loop, new_pool
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.scheduler import RunScheduler
from kerneltui.core.task import Task
from kerneltui.core.worker.parent.pool import WorkerPool
from kerneltui.ui.adapters.asm import DumpFolderAsm
from kerneltui.ui.adapters.history import StoreHistory
from kerneltui.ui.adapters.profile import RungMetricsProfile
from kerneltui.ui.ports import AgentController, AsmSource, HistorySource, ProfileSource

AgentFactory = Callable[[Task, WorkerPool], AgentController]


def dump_folder_asm(task: Task) -> AsmSource:
    return DumpFolderAsm(task.kernel_file)


def rung_metrics_profile(task: Task) -> ProfileSource:
    return RungMetricsProfile()


@dataclass(frozen=True)
class Parts:
    """How each task-bound part is made; a task switch makes them all again for the new task."""

    agent: AgentFactory
    history: Callable[[Task], HistorySource] = StoreHistory
    asm: Callable[[Task], AsmSource] = dump_folder_asm
    profile: Callable[[Task], ProfileSource] = rung_metrics_profile


def real_parts(settings: config_mod.Config) -> Parts:
    """The configured agent (scripted, and labelled so, without an API key) and the real data sources."""

    def agent(task: Task, pool: WorkerPool) -> AgentController:
        # Imported here: the agent engine is not loaded by a replay, which has no agent of its own.
        from kerneltui.ui.adapters.agent_chat import open_agent

        return open_agent(task, pool, settings)

    return Parts(agent=agent)


@dataclass
class Workbench:
    task: Task
    pool: WorkerPool
    loop: Loop
    scheduler: RunScheduler
    agent: AgentController
    history: HistorySource
    asm: AsmSource
    profile: ProfileSource

    def request_run(self, options: RunOptions) -> None:
        """Start a run now; a run in flight is cancelled (its workers killed)."""
        self.scheduler.request(options)

    def reload_task(self, task: Task) -> None:
        """The task's files changed (task.toml, the reference): later runs use the new definition."""
        self.task = task
        self.loop.task = task

    def version_dir(self, digest: str) -> Path:
        return self.task.version_dir(digest)

    async def close(self) -> None:
        """Stop the agent and the run in flight, then every worker (the loop closes the pool)."""
        await self.agent.close()
        await self.scheduler.cancel()
        await self.loop.close()


def open_workbench(task: Task, parts: Parts, emit: Emit) -> Workbench:
    """Every part for ``task``; the loop's events and the agent's go to ``emit``."""
    pool = new_pool(PoolKind.INTERACTIVE, task.backend, task.arch)
    loop = new_loop(task, pool, emit, [observer_for(task)])
    return Workbench(task=task, pool=pool, loop=loop, scheduler=RunScheduler(loop), agent=parts.agent(task, pool),
                     history=parts.history(task), asm=parts.asm(task), profile=parts.profile(task))
