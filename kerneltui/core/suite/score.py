"""A suite's numbers, as each published set computes them.

* KernelBench's **fast_p**, per *problem*: the fraction of the suite's problems whose counted sample
  is correct and faster than the reference by more than ``p`` (speedup = reference time / candidate
  time > p). A problem weighs one whatever its number of samples; one without a candidate, or whose
  task cannot load, counts as a failure. Which sample counts is stated and chosen (``--sample``):
  ``first`` (the lowest sample, KernelBench's single-sample fast_p; the default) or ``best`` (the
  correct sample with the largest speedup, as a best-of-k count). fast_0 is the correctness rate.
  A problem whose counted sample a fault of the machine stopped (a full disk, a folder kerneltui may
  not write, a bad setting: status ``environment``) has no verdict: it is left out of fast_p's
  problems (neither correct nor a failure) and counted apart, and ``kerneltui suite`` exits 3.
  The **geometric-mean speedup** is over the counted samples of the correct problems. kerneltui's
  times are medians over fresh inputs with L2 flushed (``core.worker.child.timing``), not KernelBench's means.
* GPU MODE's **ranking**: per problem, candidates ordered correct first, then by score
  (``ranking_by`` over the benchmark cases' mean times; lower is better).

Without a GPU there are no times: the suite is correctness only and fast_p is not computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kerneltui.core.suite.record import ItemResult

P_VALUES = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)  # the thresholds KernelBench's analysis reports
SAMPLES = ("first", "best")  # which of a problem's samples counts for it


def counted(results: list[ItemResult], sample: str = "first") -> list[ItemResult]:
    """One item per problem, in suite order: the sample that counts for it (``SAMPLES``)."""
    if sample not in SAMPLES:
        raise ValueError(f"which sample counts: first or best, not {sample!r}")
    by_problem: dict[str, list[ItemResult]] = {}
    for r in results:
        by_problem.setdefault(r.problem, []).append(r)
    chosen = []
    for items in by_problem.values():
        pick = items[0]  # results come in suite order: a problem's samples by number
        if sample == "best":
            correct = [r for r in items if r.correct]
            if correct:
                pick = max(correct, key=lambda r: r.speedup or 0.0)
        chosen.append(pick)
    return chosen


def fast_p(results: list[ItemResult], p: float, sample: str = "first") -> float | None:
    problems = [r for r in counted(results, sample) if r.status != "environment"]
    if not problems:
        return None
    fast = sum(1 for r in problems if r.correct and r.speedup is not None and r.speedup > p)
    return fast / len(problems)


def geomean_speedup(results: list[ItemResult], sample: str = "first") -> float | None:
    speedups = [r.speedup for r in counted(results, sample) if r.correct and r.speedup]
    if not speedups:
        return None
    return math.exp(sum(math.log(s) for s in speedups) / len(speedups))


def ranked(results: list[ItemResult]) -> list[ItemResult]:
    """Problems in suite order; within each, correct first, then by GPU MODE score, then by name."""
    order = {p: i for i, p in enumerate(dict.fromkeys(r.problem for r in results))}
    return sorted(results, key=lambda r: (order[r.problem], not r.correct, r.score_us is None,
                                          r.score_us if r.score_us is not None else 0.0, r.candidate))


def ranks(results: list[ItemResult]) -> dict[str, int]:
    """Each item's place among its problem's candidates (1 = best), GPU MODE style."""
    out: dict[str, int] = {}
    seen: dict[str, int] = {}
    for r in ranked(results):
        seen[r.problem] = seen.get(r.problem, 0) + 1
        out[r.key] = seen[r.problem]
    return out


@dataclass
class SuiteSummary:
    items: int
    problems: int
    correct: int
    failed: int
    task_errors: int
    missing: int
    environment: int  # items a fault of the machine stopped: no verdict, not in correct_rate or fast_p
    timed: bool  # benchmark numbers exist (a GPU ran the suite)
    sample: str = "first"  # which of a problem's samples counts for it
    correct_problems: int = 0  # problems whose counted sample is correct
    fast_p: dict[str, float | None] = field(default_factory=dict)
    geomean_speedup: float | None = None

    def to_json(self) -> dict[str, Any]:
        judged = self.items - self.environment  # the items with a verdict
        return {
            "items": self.items, "problems": self.problems, "correct": self.correct, "failed": self.failed,
            "task_errors": self.task_errors, "no_candidate": self.missing, "environment_errors": self.environment,
            "correct_rate": self.correct / judged if judged else None,
            "sample": self.sample, "correct_problems": self.correct_problems, "fast_p_over": "problems",
            "timed": self.timed, "fast_p": self.fast_p, "geomean_speedup": self.geomean_speedup,
        }


def summarise(results: list[ItemResult], timed: bool, sample: str = "first") -> SuiteSummary:
    summary = SuiteSummary(
        items=len(results), problems=len({r.problem for r in results}),
        correct=sum(r.correct for r in results), failed=sum(r.status == "failed" for r in results),
        task_errors=sum(r.status == "task error" for r in results),
        missing=sum(r.status == "no candidate" for r in results),
        environment=sum(r.status == "environment" for r in results), timed=timed, sample=sample,
        correct_problems=sum(r.correct for r in counted(results, sample)),
    )
    if timed:
        summary.fast_p = {f"{p:g}": fast_p(results, p, sample) for p in P_VALUES}
        summary.geomean_speedup = geomean_speedup(results, sample)
    return summary
