"""What a proposal card says first: the trial's verdict, read from the proposal a ``ProposalEvent``
carries (``core.agent.proposals.Proposal.to_dict``, its ``trial`` from ``core.agent.trials.summarise``).

A tool line's ✓ only says that a tool ran; whether the edit is any good is the trial's verdict, so
the card leads with it: pass or fail, the failing rung and its reason in one line, the speed against
the file on disk as an interleaved comparison with its interval (``core.agent.trial_compare``; else
the trial's own time against the reference) and the share of the roofline when benchmarked, the diff stat.
Nothing here imports Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kerneltui.core.rungs.rung_metrics import BenchmarkMetrics

RUNNING, PASSED, FAILED, NO_TRIAL = "running", "passed", "failed", "no trial"
UNCHECKED = "not checked"  # the trial ran and nothing failed, but correctness was not among its rungs
OUTCOME_MARKS = {PASSED: "✓", FAILED: "✗", RUNNING: "…"}


@dataclass(frozen=True)
class TrialRow:
    """One rung of the trial, as the card lists it (the trial's own rows, never the rung pane's)."""

    rung: str
    status: str  # ok | warn | fail | skip
    text: str  # the summary, or the error of a failed rung


@dataclass(frozen=True)
class Verdict:
    outcome: str  # RUNNING | PASSED | FAILED | NO_TRIAL
    headline: str  # "trial FAILED · correctness: max_abs 3.1 > 1e-05"
    diff_stat: str  # "2 hunks +3 −1"
    rows: list[TrialRow] = field(default_factory=list)

    @property
    def safe_to_accept(self) -> bool:
        """Only a finished, passing trial; anything else asks for a second key press."""
        return self.outcome == PASSED

    def warning(self, proposal_id: str, file: str) -> str:
        """What the first ``a`` on an unsafe proposal says."""
        why = {RUNNING: "its trial is still running", NO_TRIAL: "it has no trial result",
               UNCHECKED: "its trial did not check correctness",
               FAILED: f"its trial failed ({self.headline.removeprefix('trial FAILED · ')})"}[self.outcome]
        return f"{proposal_id}: {why}. Press a again to write it to {file} anyway (u undoes it)."


def _first_line(text: object, limit: int = 160) -> str:
    lines = str(text or "").strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _speed(trial: dict[str, Any]) -> str:
    """The trial's speed: its interleaved comparison with the file on disk where one was made (two
    medians measured apart are never set against each other), else its own time and the reference's."""
    comparison = trial.get("comparison") or {}
    pct = trial.get("pct_roofline")
    roofline = [f"{pct:.0f}% of roofline"] if isinstance(pct, (int, float)) else []
    if comparison.get("kind") == "compared" and comparison.get("sentence"):
        return " · ".join([str(comparison["sentence"]), *roofline])
    median = trial.get("median_s")
    if not isinstance(median, (int, float)) or median <= 0:
        return ""
    from kerneltui.core.agent.trials import format_time  # pure; no torch behind it

    parts = [format_time(float(median))]
    bench = next((r for r in trial.get("rungs") or [] if r.get("name") == "benchmark"), None)
    bench_metrics: BenchmarkMetrics = (bench or {}).get("metrics", {})
    ref = bench_metrics.get("speedup_vs_reference")
    if isinstance(ref, (int, float)):
        parts.append(f"{ref:.2f}× vs the reference")
    if comparison.get("sentence"):  # not compared: why
        parts.append(str(comparison["sentence"]))
    return " · ".join(parts + roofline)


def diff_stat(proposal: dict[str, Any]) -> str:
    hunks = len(proposal.get("hunks") or [])
    return f"{hunks} hunk{'s' if hunks != 1 else ''} +{proposal.get('added', 0)} −{proposal.get('removed', 0)}"


def verdict_of(proposal: dict[str, Any]) -> Verdict:
    """The card's first line for ``proposal``."""
    trial = proposal.get("trial") or {}
    stat = diff_stat(proposal)
    rows = [TrialRow(str(r.get("name")), str(r.get("status")),
                     _first_line(r.get("error") if r.get("status") == "fail" and r.get("error") else r.get("summary")))
            for r in trial.get("rungs") or []]
    if not trial:
        return Verdict(NO_TRIAL, "no trial yet", stat)
    if trial.get("running"):  # with rungs: the checks passed and the comparison with the file on disk runs
        return Verdict(RUNNING, _first_line(trial.get("headline")) if rows else "trial running on a scratch copy…",
                       stat, rows)
    if trial.get("cancelled"):
        return Verdict(NO_TRIAL, _first_line(trial.get("headline") or "trial cancelled"), stat, rows)
    if trial.get("ok") and trial.get("correct"):
        speed = _speed(trial)
        return Verdict(PASSED, "trial passed" + (f" · {speed}" if speed else " · correct (no benchmark)"), stat, rows)
    failed = next((row for row in rows if row.status == "fail"), None)
    if failed is None and trial.get("ok"):
        return Verdict(UNCHECKED, f"trial not verified · {_first_line(trial.get('headline') or 'correctness not checked')}",
                       stat, rows)
    if failed is not None:
        reason = f"{failed.rung}: {failed.text}"
    else:
        reason = _first_line(trial.get("error") or trial.get("headline") or "not correct")
    return Verdict(FAILED, f"trial FAILED · {reason}", stat, rows)
