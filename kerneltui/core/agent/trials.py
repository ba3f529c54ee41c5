"""What a verification run says, condensed: for proposals (the UI card) and for auto mode (correct?
how fast? how close to the roofline?). The model's text form is ``feedback.run_feedback``.

The benchmark and roofline rungs report their numbers in ``RungResult.metrics`` (``median_ms``: the
geometric mean over benchmark cases of the medians; ``pct_roofline``); the keys read here are listed
in ``TIME_KEYS`` and ``ROOFLINE_KEYS`` (the first one present wins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kerneltui.core.agent.feedback import device_line
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.result import RungResult

# (metric key, factor to seconds), looked up in the benchmark rung's metrics.
TIME_KEYS: tuple[tuple[str, float], ...] = (
    ("median_ms", 1e-3), ("median_s", 1.0), ("median_us", 1e-6), ("median_ns", 1e-9),
    ("time_s", 1.0), ("time_ms", 1e-3), ("time_us", 1e-6),
)
# Percent of the roofline (0-100), looked up in the roofline rung's metrics, then the benchmark's.
ROOFLINE_KEYS: tuple[str, ...] = ("pct_roofline", "pct_of_roofline", "roofline_pct", "percent_of_roofline")


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
    for key, factor in TIME_KEYS:
        value = _number(result.metrics.get(key))
        if value is not None:
            return value * factor
    return None


def pct_roofline(report: RunReport) -> float | None:
    for name in ("roofline", "benchmark"):
        result = report.result(name)
        if result is None or not result.passed:
            continue
        for key in ROOFLINE_KEYS:
            value = _number(result.metrics.get(key))
            if value is not None:
                return value
    return None


def perf_of(report: RunReport) -> Perf:
    failed = next((r for r in report.results if r.status == "fail"), None)
    if report.cancelled:
        return Perf(correct=False, reason="the run was cancelled")
    if failed is not None:
        what = ((failed.error or failed.summary).strip().splitlines() or [""])[0][:300]
        return Perf(correct=False, failed_rung=failed.name, reason=f"{failed.name} failed: {what}")
    correctness = report.result("correctness")
    if correctness is None:
        return Perf(correct=False, reason="the correctness rung did not run")
    if not correctness.passed:
        return Perf(correct=False, reason=f"correctness {correctness.status}: {correctness.summary}")
    return Perf(correct=True, median_s=median_seconds(report.result("benchmark")), pct_roofline=pct_roofline(report))


def summarise(report: RunReport) -> dict[str, Any]:
    """The trial as a JSON-able dict (attached to proposals and their events)."""
    perf = perf_of(report)
    return {
        "run_id": report.run_id,
        "ok": report.ok,
        "correct": perf.correct,
        "source_hash": report.source_hash,
        "duration_s": round(report.duration_s, 3),
        "cancelled": report.cancelled,
        "median_s": perf.median_s,
        "pct_roofline": perf.pct_roofline,
        "headline": perf.describe(),
        "device": device_line(report.device),
        "rungs": [{"name": r.name, "status": r.status, "summary": r.summary, "error": r.error, "metrics": r.metrics,
                   "location": str(r.location) if r.location else None} for r in report.results],
    }


def summary_text(summary: dict[str, Any]) -> str:
    """A trial summary dict (as stored on a proposal) back into the model's text form."""
    lines = [f"trial: {'PASS' if summary.get('ok') else 'FAIL'} · {summary.get('headline', '')} on {summary.get('device')}"]
    for r in summary.get("rungs", []):
        status = r.get("status")
        text = r.get("error") if status == "fail" else r.get("summary")
        lines.append(f"[{r.get('name')}] {'FAILED' if status == 'fail' else status}  {text or ''}".rstrip())
    return "\n".join(lines)
