"""A proposal's trial against the file on disk, as an interleaved comparison with its interval.

The trial's loop run checks the proposed text (correctness, its own benchmark). When it passes on a
GPU, the file on disk and the proposal are compared side by side (``core.compare_run.trial_comparison``:
both kernels in one worker, their calls in ABBA/BAAB blocks, every output rechecked by the judge;
docs/compare.md). The outcome is a ``TrialComparison`` carried with the trial (``TrialSummary.comparison``):
the card shows its sentence, auto mode keeps a change on it (``core.agent.keep_rule``), the agent reads
it with the word "significant" or "within noise" (``feedback``). Two medians measured minutes apart
are never compared.

Without a GPU nothing is timed, so nothing is said about speed (kind ``no_gpu``); a comparison that
cannot be made (the file on disk fails its checks, side work, a hand-edited stage) says why
(kind ``not_compared``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from kerneltui import config
from kerneltui.core import compare_history
from kerneltui.core.agent.trials import TrialSummary, perf_of
from kerneltui.core.bench import compare
from kerneltui.core.compare_run import CompareError, CompareReport, trial_comparison
from kerneltui.core.events import Notice
from kerneltui.core.history import HistoryStore
from kerneltui.core.loop import Loop
from kerneltui.core.rungs.compare_series import CompareSettings
from kerneltui.core.task import source_hash
from kerneltui.core.worker.replies import DeviceInfo

if TYPE_CHECKING:
    from kerneltui.core.agent.chat import AgentChat
    from kerneltui.core.agent.proposals import Proposal
    from kerneltui.core.loop import RunReport
    from kerneltui.core.task import Task
    from kerneltui.core.worker.pool import WorkerPool
    from kerneltui.settings.bench import BenchSettings

Kind = Literal["compared", "no_gpu", "not_compared"]
DISK = "the file on disk"


@dataclass(frozen=True)
class CaseVerdict:
    """One benchmark case of the comparison: its label and verdict."""

    label: str
    verdict: compare.Verdict


@dataclass(frozen=True)
class TrialComparison:
    """The trial against the file on disk: compared (``cases`` and their geometric ``mean``), or why not."""

    kind: Kind
    against_hash: str = ""  # the file on disk's source hash (A)
    cases: tuple[CaseVerdict, ...] = ()
    mean: compare.Verdict | None = None
    reason: str = ""  # kinds no_gpu and not_compared: why there is no comparison

    @classmethod
    def of_cases(cls, cases: Sequence[compare.CaseComparison], against_hash: str, names: tuple[str, str],
                 level: float = compare.LEVEL) -> TrialComparison:
        return cls("compared", against_hash, tuple(CaseVerdict(c.label, c.verdict) for c in cases),
                   compare.geometric_mean(cases, *names, level=level))

    @classmethod
    def of_report(cls, report: CompareReport) -> TrialComparison:
        return cls("compared", report.a.source_hash, tuple(CaseVerdict(c.label, c.verdict) for c in report.cases),
                   report.mean)

    @classmethod
    def not_compared(cls, reason: str, against_hash: str = "") -> TrialComparison:
        return cls("not_compared", against_hash, reason=reason)

    @property
    def verdict(self) -> compare.Verdict | None:
        """The one verdict decisions read: a case that could not be compared, else the only case's own
        (its sentence counts calls), else the geometric mean over cases; None when nothing was compared."""
        if self.kind != "compared" or not self.cases:
            return None
        unknown = next((c.verdict for c in self.cases if c.verdict.direction == "unknown"), None)
        if unknown is not None:
            return unknown
        if len(self.cases) == 1:
            return self.cases[0].verdict
        return self.mean

    def sentence(self) -> str:
        """What the card says about speed ("" without a GPU: nothing is timed there)."""
        if self.kind == "no_gpu":
            return ""
        verdict = self.verdict
        if verdict is None:
            return f"not compared with {DISK}: {self.reason or 'no comparison was made'}"
        if len(self.cases) > 1 and verdict is self.mean:
            return f"{verdict.text} (geometric mean over {len(self.cases)} cases)"
        return verdict.text

    def feedback(self) -> str:
        """The comparison as the model reads it: each case and the verdict, named significant or within noise."""
        if self.kind == "no_gpu":
            return ""
        verdict = self.verdict
        if verdict is None:
            return f"speed against {DISK}: not compared ({self.reason or 'no comparison was made'})"
        lines = [f"speed against {DISK}, interleaved on one GPU: {self.sentence()} — {compare.feedback_word(verdict)}"]
        if len(self.cases) > 1:
            lines += [f"  {c.label}: {c.verdict.text} — {compare.feedback_word(c.verdict)}" for c in self.cases]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "against_hash": self.against_hash, "reason": self.reason,
                "sentence": self.sentence(), "word": compare.feedback_word(self.verdict) if self.verdict else None,
                "cases": [{"label": c.label, **c.verdict.to_dict()} for c in self.cases],
                "mean": self.mean.to_dict() if self.mean else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialComparison:
        cases = tuple(CaseVerdict(str(c["label"]), _verdict(c)) for c in data.get("cases") or [])
        mean = data.get("mean")
        return cls(data["kind"], str(data.get("against_hash") or ""), cases, _verdict(mean) if mean else None,
                   str(data.get("reason") or ""))


def _verdict(data: dict[str, Any]) -> compare.Verdict:
    return compare.Verdict(data["direction"], data.get("change"), data.get("low"), data.get("high"),
                           int(data.get("calls_each") or 0), str(data.get("text") or ""))


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


def _bench_settings(chat: AgentChat) -> BenchSettings:
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


async def checked_then_compared(chat: AgentChat, p: Proposal, source: str, origin: str,
                                override_folder: str | None, on_comparing: Callable[[TrialSummary], None]) -> TrialOutcome:
    """A proposal's whole trial: the loop on ``source`` in fresh workers, then, when it passed on a GPU,
    the interleaved comparison with the file on disk (``on_comparing`` gets the card's interim state)."""
    report = await chat.verify_source(source, origin=origin, record=chat.record_trials, override_folder=override_folder)

    def announce() -> None:
        on_comparing(replace(TrialSummary.of(report), running=True,
                             headline=f"trial passed; comparing with {DISK}, interleaved…"))

    comparison = await compare_trial(chat.task, chat.pool, p.id, p.new_source, report, chat.target.read(), chat.latest,
                                     _bench_settings(chat), hand_edited_stage=p.override is not None,
                                     announce=announce)
    if comparison is not None and (problem := record_in_history(chat.task, comparison, p.new_source, report.device)):
        chat.emit(Notice(level="warning", source="agent", message=problem))
    return TrialOutcome(report, comparison)
