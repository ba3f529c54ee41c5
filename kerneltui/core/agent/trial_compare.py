"""A proposal's trial against the file on disk, as an interleaved comparison with its interval.

The trial's loop run checks the proposed text (correctness, its own benchmark). When it passes on a
GPU, the file on disk and the proposal are compared side by side (``core.compare_run.trial_comparison``:
both kernels in one worker, their calls in ABBA/BAAB blocks, every output rechecked by the judge;
docs/compare.md). The outcome is a ``TrialComparison`` (``core.agent.comparison``) carried with the trial:
the card shows its sentence, auto mode keeps a change on it (``core.agent.keep_rule``), the agent reads
it with the word "significant" or "within noise" (``feedback``). Two medians measured minutes apart
are never compared.

Without a GPU nothing is timed, so nothing is said about speed (kind ``no_gpu``); a comparison that
cannot be made (the file on disk fails its checks, side work, a hand-edited stage) says why
(kind ``not_compared``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kerneltui import config
from kerneltui.core import compare_history
from kerneltui.core.agent.comparison import DISK, TrialComparison
from kerneltui.core.agent.trials import TrialSummary, perf_of
from kerneltui.core.compare_run import CompareError, trial_comparison
from kerneltui.core.events import Notice
from kerneltui.core.history import HistoryStore
from kerneltui.core.loop import Loop
from kerneltui.core.rungs.compare_series import CompareSettings
from kerneltui.core.task import source_hash
from kerneltui.core.worker.contract.replies import DeviceInfo

if TYPE_CHECKING:
    from kerneltui.core.agent.host import TrialHost
    from kerneltui.core.agent.proposals import Proposal
    from kerneltui.core.loop import RunReport
    from kerneltui.core.task import Task
    from kerneltui.core.worker.parent.pool import WorkerPool
    from kerneltui.settings.bench import BenchSettings


def _passed_checks(report: RunReport) -> bool:
    return perf_of(report).correct


def _disk_passed(report: RunReport | None, disk_hash: str) -> bool | None:
    """Whether the latest run of the file on disk passed its checks; None where that run is of another
    text or did not check correctness (the comparison then checks it first)."""
    if report is None or report.source_hash != disk_hash or report.cancelled:
        return None
    correctness = report.result("correctness")
    if correctness is None or correctness.status == "skip":
        return None
    return _passed_checks(report)


async def compare_trial(task: Task, pool: WorkerPool, proposal_id: str, proposal_source: str, trial: RunReport,
                        disk_source: str, disk_report: RunReport | None, bench: BenchSettings,
                        hand_edited_stage: bool = False,
                        announce: Callable[[], None] | None = None) -> TrialComparison | None:
    """The comparison step of a trial, after its loop run (``trial``). None where the trial says nothing
    about speed: it failed, or its rungs left out the benchmark. ``disk_report``: the latest run of the
    file on disk, which spares checking it again when it passed; ``announce`` is called once the
    comparison starts (it takes seconds per case)."""
    bench_result = trial.result("benchmark")
    if trial.cancelled or not trial.ok or bench_result is None or not _passed_checks(trial):
        return None
    disk_hash = source_hash(disk_source)
    if not trial.device.get("gpu"):
        return TrialComparison("no_gpu", disk_hash, reason="no GPU here: nothing is timed")
    if bench_result.status == "skip":
        return TrialComparison.not_compared(f"the benchmark was skipped ({bench_result.summary})", disk_hash)
    if hand_edited_stage:
        return TrialComparison.not_compared("a hand-edited compiler stage is built from the kernel file itself, so "
                                            "the two cannot be loaded side by side; the trial's own benchmark stands",
                                            disk_hash)
    if disk_hash == source_hash(proposal_source):
        return TrialComparison.not_compared("the proposal is the same text as the file on disk", disk_hash)
    disk_passed = _disk_passed(disk_report, disk_hash)
    if disk_passed is False:
        return TrialComparison.not_compared(f"{task.kernel_file} on disk does not pass its checks, so there is no "
                                            "speed to compare with", disk_hash)
    settings = CompareSettings(bench=bench)
    if announce is not None:
        announce()
    try:
        report = await trial_comparison(task, proposal_source, settings, pool, disk_source=disk_source,
                                        disk_checked=bool(disk_passed), proposal_name=proposal_id)
    except CompareError as exc:
        if exc.kind == "no_gpu":
            return TrialComparison("no_gpu", disk_hash, reason=exc.message)
        return TrialComparison.not_compared(exc.message, disk_hash)
    except Exception as exc:  # noqa: BLE001 - the trial's own results stand; the card says why there is no comparison
        return TrialComparison.not_compared(f"the comparison failed: {type(exc).__name__}: {exc}", disk_hash)
    return TrialComparison.of_report(report)


def record_in_history(task: Task, comparison: TrialComparison, proposal_source: str, device: DeviceInfo) -> str:
    """Keep a comparison's cases in the task's history, for the chart. Returns what went wrong ("": it
    was recorded): a history that cannot be written loses the comparison's rows, never the trial."""
    if comparison.kind != "compared":
        return ""
    cases = [(c.label, c.verdict) for c in comparison.cases]
    path = HistoryStore.for_task(task).path
    try:
        compare_history.record(path, comparison.against_hash, source_hash(proposal_source), device, cases)
    except (OSError, sqlite3.Error) as exc:
        return f"the comparison could not be kept in {path} ({exc}); the chart will not draw its interval"
    return ""


def _bench_settings(chat: TrialHost) -> BenchSettings:
    """The benchmark settings the trial ran with: its loop's, or the configured ones where the trials
    run in the engine (whose runs carry the command's own configured settings)."""
    if isinstance(chat.loop, Loop):
        return chat.loop.benchmark_settings()
    return config.benchmark_settings()


@dataclass(frozen=True)
class TrialOutcome:
    """A trial's loop run and its comparison with the file on disk (None: the trial says nothing about speed)."""

    report: RunReport
    comparison: TrialComparison | None


async def checked_then_compared(chat: TrialHost, p: Proposal, source: str, origin: str,
                                override_folder: str | None, on_comparing: Callable[[TrialSummary], None]) -> TrialOutcome:
    """A proposal's whole trial: the loop on ``source`` in fresh workers, then, when it passed on a GPU,
    the interleaved comparison with the file on disk (``on_comparing`` gets the card's interim state)."""
    report = await chat.verify_source(source, origin=origin, record=chat.record_trials, override_folder=override_folder,
                                      author=f"agent {p.id}")

    def announce() -> None:
        on_comparing(replace(TrialSummary.of(report), running=True,
                             headline=f"trial passed; comparing with {DISK}, interleaved…"))

    comparison = await compare_trial(chat.task, chat.pool, p.id, p.new_source, report, chat.target.read(), chat.latest,
                                     _bench_settings(chat), hand_edited_stage=p.override is not None,
                                     announce=announce)
    if comparison is not None and (problem := record_in_history(chat.task, comparison, p.new_source, report.device)):
        chat.emit(Notice(level="warning", source="agent", message=problem))
    return TrialOutcome(report, comparison)
