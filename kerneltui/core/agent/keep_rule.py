"""Auto mode's keep rule: a change is kept when it is faster by more than its interval, never because a
median moved.

The speed question is answered by the trial's interleaved comparison with the file on disk, which in
auto mode is the kept version (``core.agent.trial_compare``): kept only when the whole 95 % interval
of the time ratio lies below zero and its slow end is at least ``min_gain_pct`` faster
(``core.bench.compare.keeps_change``). Where no comparison could be made (no GPU, side work, the
comparison failed) the change is reverted and the reason says so; the one exception, as before, is a
kernel made correct where the kept version was not: correctness is progress, and no speed is claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltui.core.agent.comparison import TrialComparison
from kerneltui.core.agent.trials import Perf
from kerneltui.core.bench import compare


@dataclass(frozen=True)
class KeepVerdict:
    keep: bool
    reason: str


def keep_verdict(candidate: Perf, best: Perf | None, comparison: TrialComparison | None,
                 min_gain_pct: float) -> KeepVerdict:
    """Keep ``candidate`` (the trial's outcome) over the kept version ``best``, or revert it, and why."""
    if not candidate.correct:
        return KeepVerdict(False, f"reverted: {candidate.reason or 'not correct'}")
    if best is None or not best.correct:
        return KeepVerdict(True, "kept: correct, and the kept version was not")
    verdict = comparison.verdict if comparison is not None else None
    if verdict is None:
        why = comparison.reason if comparison is not None and comparison.reason else (
            "no interleaved comparison with it was made")
        return KeepVerdict(False, f"reverted: correct, but its speed could not be compared with the kept version "
                                  f"({why}); a median that moved is not a comparison, so the kept version stays")
    word = compare.feedback_word(verdict)
    if compare.keeps_change(verdict, min_gain_pct / 100):
        return KeepVerdict(True, f"kept: {verdict.text} — {word}")
    if verdict.direction == "faster":
        return KeepVerdict(False, f"reverted: {verdict.text}, but the interval's slow end is not {min_gain_pct:g} % "
                                  f"faster (the least gain kept)")
    return KeepVerdict(False, f"reverted: {verdict.text} — {word}")
