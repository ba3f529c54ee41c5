"""One suite item's verdict, and the results file that lets an interrupted suite resume.

The file (``<suite>/.kerneltui/suite-results.jsonl`` by default) gets one JSON line per finished
item, written and flushed as each finishes, so ``kill -9`` costs at most the line being written.
A line is reused on the next run only when its *fingerprint* matches: the hash of the problem's
and candidate's sources as the worker would receive them and of the options that change a
verdict (rungs, seeds, backend, constants, whether a GPU is used), and the environment that made it
matches this one (the GPU, its driver, kerneltui's and the DSLs' versions). Anything else runs again.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

if TYPE_CHECKING:
    from kerneltui.core.rungs.rung_metrics import BenchmarkMetrics, FailureMetrics

# "environment": a fault of the machine stopped the item's run (core.environment_fault): no verdict.
Status = Literal["correct", "failed", "task error", "no candidate", "environment"]
SCHEMA = 1
RESULTS_NAME = "suite-results.jsonl"


class RungLine(TypedDict):
    """One rung of a suite item's run, as the suite's table and record show it."""

    name: str | None
    status: str | None
    summary: str | None


@dataclass
class ItemResult:
    key: str
    problem: str
    candidate: str
    status: Status
    failure: str | None = None
    speedup: float | None = None  # reference / candidate, geometric mean over the benchmark cases
    candidate_ms: float | None = None  # the benchmark's median (geometric mean over cases)
    reference_ms: float | None = None
    case_means_ms: list[float] = field(default_factory=list)  # the candidate's mean per case (GPU MODE scores means)
    score_us: float | None = None  # GPU MODE's score: ranking_by over case_means_ms
    ranking_by: str = "geom"
    backend: str = ""
    where: str = ""
    duration_s: float = 0.0
    fingerprint: str = ""
    rungs: list[RungLine] = field(default_factory=list)
    # The GPU, driver and versions that made the verdict (core.suite.environment); resume compares them.
    environment: dict[str, str | None] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ItemResult:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def score(case_means_ms: list[float], ranking_by: str) -> float | None:
    """GPU MODE's score in µs: the last case's mean, the mean of the means, or their geometric mean."""
    means = [m for m in case_means_ms if m and m > 0]
    if not means or len(means) != len(case_means_ms):
        return None
    if ranking_by == "last":
        value = means[-1]
    elif ranking_by == "mean":
        value = sum(means) / len(means)
    else:
        value = math.exp(sum(math.log(m) for m in means) / len(means))
    return value * 1e3


def from_report(key: str, problem: str, candidate: str, report: Mapping[str, Any], ranking_by: str, backend: str,
                where: str, duration_s: float, failure: str | None, task_error: bool = False) -> ItemResult:
    """The verdict of one verification run (``RunReport.to_json()``); ``task_error``: the run never
    started because the task could not be loaded where it went."""
    rungs = report.get("rungs") or []
    failed = next((r for r in rungs if r.get("status") == "fail"), None)
    failed_metrics: FailureMetrics = {}
    if failed and failed.get("metrics"):
        failed_metrics = failed["metrics"]
    task_error = task_error or (failed is not None and failed_metrics.get("failure") == "task")
    environment = report.get("environment") or None
    status: Status = ("environment" if environment else "task error" if task_error
                      else "correct" if report.get("ok") and failed is None else "failed")
    bench = next((r for r in rungs if r.get("name") == "benchmark" and r.get("status") in ("ok", "warn")), None)
    metrics: BenchmarkMetrics = {}
    if bench and bench.get("metrics"):
        metrics = bench["metrics"]
    cases = metrics.get("cases") or []
    means = [float((c.get("candidate") or {}).get("mean_ms") or 0.0) for c in cases]
    refs = [float((c.get("reference") or {}).get("median_ms") or 0.0) for c in cases]
    result = ItemResult(
        key=key, problem=problem, candidate=candidate, status=status, failure=environment or failure,
        speedup=_num(metrics.get("speedup_vs_reference")), candidate_ms=_num(metrics.get("median_ms")),
        reference_ms=_geomean(refs), case_means_ms=means if cases else [], ranking_by=ranking_by, backend=backend,
        where=where, duration_s=duration_s,
        rungs=[{"name": r.get("name"), "status": r.get("status"), "summary": r.get("summary")} for r in rungs],
    )
    result.score_us = score(result.case_means_ms, ranking_by) if result.correct else None
    return result


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and value == value and value > 0 else None


def _geomean(values: list[float]) -> float | None:
    if not values or any(v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fingerprint(files: dict[str, str], settings: dict[str, Any]) -> str:
    """What a verdict depends on: the sources the worker receives and the verdict-changing options."""
    blob = json.dumps({"files": files, "settings": settings}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:24]


class ResultsFile:
    """Append-only JSON lines; the last line for a key wins."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.dropped = 0  # unreadable lines (a write cut short)

    def load(self) -> dict[str, ItemResult]:
        found: dict[str, ItemResult] = {}
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return found
        for line in text.splitlines():
            try:
                data = json.loads(line)
                if data.get("schema") != SCHEMA:
                    continue
                result = ItemResult.from_json(data["result"])
            except (ValueError, KeyError, TypeError):
                self.dropped += 1
                continue
            found[result.key] = result
        return found

    def append(self, result: ItemResult) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"schema": SCHEMA, "result": result.to_json()}, default=str, allow_nan=False)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
