"""Verifying a whole suite, once ``core.suite.prepare`` has loaded it: run the loop on each pending
item, here (one slot per GPU, ``-j`` slots without one; through the engine when given one,
``core.suite.through_engine``) or on a Ray cluster (one Ray task per item, each holding a GPU),
keeping every finished verdict in the results file as it lands. The one runner of a suite: every
way of verifying its items goes through here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltui.core.batch import Candidate, CandidateResult, Slot, verify_pairs
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.suite import record
from kerneltui.core.suite.environment import Environment
from kerneltui.core.suite.prepare import Prepared
from kerneltui.core.suite.record import ItemResult, ResultsFile
from kerneltui.core.task import Task

if TYPE_CHECKING:  # the engine's client is imported only when a suite uses it
    from kerneltui.core.engine.client import EngineClient

# What a suite runs unless told: the verdict and the times; no dump, profile or trace.
SUITE_RUNGS = ["prechecks", "compile", "run", "correctness", "benchmark", "roofline"]

OnResult = Callable[[ItemResult], None]


def _item_result(p: Prepared, run: CandidateResult) -> ItemResult:
    assert p.task is not None
    result = record.from_report(p.item.key, p.item.problem, p.item.label, run.report, p.task.ranking_by,
                                p.task.backend, run.where, run.duration_s, run.failure, task_error=run.task_error)
    result.fingerprint = p.fingerprint
    return result


def _pending(prepared: list[Prepared]) -> list[tuple[Prepared, Task]]:
    return [(p, p.task) for p in prepared if p.done is None and p.task is not None]


def _recorder(prepared: list[Prepared], results: ResultsFile, on_result: OnResult | None,
              environment: Environment | None) -> Callable[[CandidateResult], None]:
    """The callback a runner calls as each run lands: its verdict, kept in the file at once."""
    by_key = {p.item.key: p for p in prepared}

    def landed(run: CandidateResult) -> None:
        p = by_key[run.name]
        p.done = _item_result(p, run)
        p.done.environment = dict(environment or {})
        results.append(p.done)
        if on_result is not None:
            on_result(p.done)

    return landed


def run_local(prepared: list[Prepared], slots: list[Slot], options: RunOptions, results: ResultsFile,
              on_result: OnResult | None = None, engine: EngineClient | None = None,
              say: Callable[[str], None] | None = None, environment: Environment | None = None) -> list[ItemResult]:
    """Verify the pending items here: through ``engine`` (an ``EngineClient``) when given, falling back
    to workers of the suite's own (``say`` tells why), else with fresh workers per item in each slot."""
    options = replace(options, record=False, origin="suite")
    landed = _recorder(prepared, results, on_result, environment)
    if engine is not None:
        from kerneltui.core.suite.through_engine import verify_through_engine

        asyncio.run(verify_through_engine(_pending(prepared), slots, options, engine, landed, say or (lambda _: None)))
    else:
        pairs = [(task, Candidate(name=p.item.key, path=p.item.candidate or Path(), source=p.source))
                 for p, task in _pending(prepared)]
        asyncio.run(verify_pairs(pairs, slots, options, on_result=landed))
    return [p.done for p in prepared if p.done is not None]


def run_ray(prepared: list[Prepared], address: str, options: RunOptions, results: ResultsFile,
            on_result: OnResult | None = None, use_gpus: bool | None = None,
            environment: Environment | None = None) -> tuple[list[ItemResult], dict[str, Any]]:
    from kerneltui.core.remote.ray_runner import task_bundle, verify_bundles

    jobs = [(p.item.key, task_bundle(task), p.source) for p, task in _pending(prepared)]
    started = time.perf_counter()
    _, info = verify_bundles(jobs, address, replace(options, record=False, origin="suite"),
                             on_result=_recorder(prepared, results, on_result, environment), use_gpus=use_gpus)
    info["ray_s"] = round(time.perf_counter() - started, 3)
    return [p.done for p in prepared if p.done is not None], info
