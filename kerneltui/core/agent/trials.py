"""What a verification run says, condensed: for proposals (the UI card, ``TrialSummary``) and for auto
mode (``Perf``: correct? how fast? how close to the roofline?). The model's text form of a whole run
is ``feedback.run_feedback``.

The benchmark and roofline rungs report their numbers in ``RungResult.metrics`` (``median_ms``: the
geometric mean over benchmark cases of the medians; ``pct_roofline``), read here through their typed
views (``rungs.rung_metrics``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from kerneltui.core.agent.feedback import device_line
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.rungs.rung_metrics import benchmark_metrics, roofline_metrics

if TYPE_CHECKING:
    from kerneltui.core.agent.comparison import ComparisonData, TrialComparison

@dataclass(frozen=True)
class Perf:
    """How a version did: ``correct`` only when the correctness rung ran and passed and nothing failed."""

    correct: bool
    median_s: float | None = None
    pct_roofline: float | None = None
    failed_rung: str | None = None
    reason: str = ""

    def describe(self) -> str:
        if not self.correct:
            return f"not correct ({self.reason})" if self.reason else "not correct"
        parts = ["correct"]
        if self.median_s is not None:
            parts.append(format_time(self.median_s))
        else:
            parts.append("no benchmark")
        if self.pct_roofline is not None:
            parts.append(f"{self.pct_roofline:.0f}% of roofline")
        return " · ".join(parts)


def format_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} µs"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def median_seconds(result: RungResult | None) -> float | None:
    if result is None or not result.passed:
        return None
    value = _number(benchmark_metrics(result).get("median_ms"))
    return value * 1e-3 if value is not None else None


def pct_roofline(report: RunReport) -> float | None:
    """Percent of the roofline (0-100) from a passed roofline rung."""
    result = report.result("roofline")
    if result is None or not result.passed:
        return None
    return _number(roofline_metrics(result).get("pct_roofline"))


def perf_of(report: RunReport) -> Perf:
    failed = next((r for r in report.results if r.status == "fail"), None)
    if report.cancelled:
        return Perf(correct=False, reason="the run was cancelled")
    if report.environment:  # the machine stopped the run: nothing is known of the kernel
        return Perf(correct=False, reason=f"the machine stopped the trial, not the kernel: {report.environment}")
    if failed is not None:
        what = ((failed.error or failed.summary).strip().splitlines() or [""])[0][:300]
        return Perf(correct=False, failed_rung=failed.name, reason=f"{failed.name} failed: {what}")
    correctness = report.result("correctness")
    if correctness is None:
        return Perf(correct=False, reason="the correctness rung did not run")
    if not correctness.passed:
        return Perf(correct=False, reason=f"correctness {correctness.status}: {correctness.summary}")
    return Perf(correct=True, median_s=median_seconds(report.result("benchmark")), pct_roofline=pct_roofline(report))


@dataclass(frozen=True)
class TrialRung:
    """One rung of a trial, as the proposal card and the model's text show it."""

    name: str
    status: str
    summary: str = ""
    error: str | None = None
    metrics: Mapping[str, object] = field(default_factory=dict)  # the rung's (rung_metrics)
    location: str | None = None  # "file:line"

    def to_dict(self) -> TrialRungData:
        return {"name": self.name, "status": self.status, "summary": self.summary, "error": self.error,
                "metrics": copy.deepcopy(dict(self.metrics)), "location": self.location}

    @classmethod
    def of(cls, result: RungResult) -> TrialRung:
        return cls(name=result.name, status=result.status, summary=result.summary, error=result.error,
                   metrics=result.metrics, location=str(result.location) if result.location else None)


class TrialRungData(TypedDict):
    """``TrialRung.to_dict()``."""

    name: str
    status: str
    summary: str
    error: str | None
    metrics: dict[str, object]  # the rung's metrics record (``core.rungs.rung_metrics``), as a dict
    location: str | None


class TrialData(TypedDict, total=False):
    """``TrialSummary.to_dict()``: what ``ProposalEvent`` and the session log carry of a trial; the
    fields that are None are left out (see ``to_dict``)."""

    run_id: str
    ok: bool
    correct: bool
    source_hash: str
    duration_s: float
    cancelled: bool
    running: bool
    median_s: float | None
    pct_roofline: float | None
    headline: str
    device: str
    error: str
    environment: str  # the machine stopped the trial (core.environment_fault): what to do
    comparison: ComparisonData
    rungs: list[TrialRungData]


@dataclass(frozen=True)
class TrialSummary:
    """What a proposal's trial (or auto mode's baseline) says: one shape for every way a trial ends.

    ``ok``/``correct`` are None while the trial runs; ``to_dict`` (what ``ProposalEvent`` and the
    session log carry) leaves out the fields that are None, as the dicts before it did."""

    headline: str
    ok: bool | None = None
    correct: bool | None = None
    running: bool = False
    cancelled: bool = False
    error: str | None = None  # the trial could not run: why
    # A fault of the machine stopped the trial (core.environment_fault): what to do. No verdict.
    environment: str | None = None
    run_id: str | None = None
    source_hash: str | None = None
    duration_s: float | None = None
    median_s: float | None = None
    pct_roofline: float | None = None
    device: str | None = None
    rungs: tuple[TrialRung, ...] = ()
    comparison: TrialComparison | None = None  # against the file on disk, interleaved (core.agent.comparison)

    @classmethod
    def started(cls) -> TrialSummary:
        return cls(headline="trial running", running=True)

    @classmethod
    def stopped(cls, headline: str) -> TrialSummary:
        """A trial cancelled before its end (a decision, a newer proposal, the file changed)."""
        return cls(headline=headline, ok=False, correct=False, cancelled=True)

    @classmethod
    def could_not_run(cls, exc: BaseException) -> TrialSummary:
        return cls(headline=f"the trial could not run: {exc}", ok=False, correct=False,
                   error=f"{type(exc).__name__}: {exc}")

    @classmethod
    def of(cls, report: RunReport, comparison: TrialComparison | None = None) -> TrialSummary:
        perf = perf_of(report)
        return cls(headline=perf.describe(), ok=report.ok, correct=perf.correct, cancelled=report.cancelled,
                   environment=report.environment or None, run_id=report.run_id, source_hash=report.source_hash, duration_s=round(report.duration_s, 3),
                   median_s=perf.median_s, pct_roofline=perf.pct_roofline, device=device_line(report.device),
                   rungs=tuple(TrialRung.of(r) for r in report.results), comparison=comparison)

    def to_dict(self) -> TrialData:
        # The fields that are set, in this order; a trial that ran adds its rungs, and says whether
        # it was cancelled and its timing even when they are False or None.
        out: TrialData = {}
        if self.run_id is not None:
            out["run_id"] = self.run_id
        if self.ok is not None:
            out["ok"] = self.ok
        if self.correct is not None:
            out["correct"] = self.correct
        if self.source_hash is not None:
            out["source_hash"] = self.source_hash
        if self.duration_s is not None:
            out["duration_s"] = self.duration_s
        if self.cancelled:
            out["cancelled"] = True
        if self.running:
            out["running"] = True
        if self.median_s is not None:
            out["median_s"] = self.median_s
        if self.pct_roofline is not None:
            out["pct_roofline"] = self.pct_roofline
        out["headline"] = self.headline
        if self.device is not None:
            out["device"] = self.device
        if self.error is not None:
            out["error"] = self.error
        if self.environment is not None:
            out["environment"] = self.environment
        if self.comparison:
            out["comparison"] = self.comparison.to_dict()
        if self.run_id is not None:
            out["cancelled"] = self.cancelled
            out["median_s"] = self.median_s
            out["pct_roofline"] = self.pct_roofline
            out["rungs"] = [r.to_dict() for r in self.rungs]
        return out

    def text(self) -> str:
        """The trial in the model's text form (a finished trial: its rungs; else its headline)."""
        if not self.rungs:
            return f"trial: {self.headline}"
        lines = [f"trial: {'PASS' if self.ok else 'FAIL'} · {self.headline} on {self.device}"]
        for r in self.rungs:
            text = r.error if r.status == "fail" else r.summary
            lines.append(f"[{r.name}] {'FAILED' if r.status == 'fail' else r.status}  {text or ''}".rstrip())
        if self.comparison is not None and self.comparison.feedback():
            lines.append(self.comparison.feedback())
        return "\n".join(lines)
