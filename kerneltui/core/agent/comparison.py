"""A trial's comparison with the file on disk, as data: what the card shows, the model reads and auto
mode keeps a change on. ``core.agent.trial_compare`` makes it; ``TrialSummary.comparison`` carries it.

Without a GPU nothing is timed, so nothing is said about speed (kind ``no_gpu``); a comparison that
cannot be made (the file on disk fails its checks, side work, a hand-edited stage) says why
(kind ``not_compared``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

from kerneltui.core.bench import compare

if TYPE_CHECKING:
    from kerneltui.core.compare_run import CompareReport

Kind = Literal["compared", "no_gpu", "not_compared"]
DISK = "the file on disk"


class CaseVerdictData(compare.VerdictData):
    label: str


class ComparisonData(TypedDict):
    """``TrialComparison.to_dict()``: a trial's comparison with the file on disk, in the trial's record."""

    kind: Kind
    against_hash: str
    reason: str
    sentence: str
    word: str | None
    cases: list[CaseVerdictData]
    mean: compare.VerdictData | None


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

    def to_dict(self) -> ComparisonData:
        return {"kind": self.kind, "against_hash": self.against_hash, "reason": self.reason,
                "sentence": self.sentence(), "word": compare.feedback_word(self.verdict) if self.verdict else None,
                "cases": [{"label": c.label, **c.verdict.to_dict()} for c in self.cases],
                "mean": self.mean.to_dict() if self.mean else None}

    @classmethod
    def from_dict(cls, data: ComparisonData) -> TrialComparison:
        cases = tuple(CaseVerdict(str(c["label"]), _verdict(c)) for c in data.get("cases") or [])
        mean = data.get("mean")
        return cls(data["kind"], str(data.get("against_hash") or ""), cases, _verdict(mean) if mean else None,
                   str(data.get("reason") or ""))


def _verdict(data: compare.VerdictData) -> compare.Verdict:
    return compare.Verdict(data["direction"], data.get("change"), data.get("low"), data.get("high"),
                           int(data.get("calls_each") or 0), str(data.get("text") or ""))
