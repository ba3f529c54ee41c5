"""What an accepted proposal wrote, read from the proposal a ``ProposalEvent`` carries.

An accept writes the proposal's text, some of its hunks, or the person's edit of it. The trial ran
on the proposal's text only, so for the other two the text on disk is checked after it is written
(``decision.verified_after_apply``; until that run ends the version is an unverified edit). The
card, the export and the replay's listing all say the same thing through these functions: who made
the version ("agent p4, edited by you"), which hunks went in, and the verdict of the text written.
Pure functions of the dict; nothing here imports Textual or a GPU stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

WHOLE, EDITED, PARTIAL = "whole", "edited", "partial"


@dataclass(frozen=True)
class Written:
    """An accepted proposal's write, as the record tells it."""

    proposal_id: str
    how: str  # WHOLE | EDITED | PARTIAL
    applied_hash: str
    applied_hunks: list[int]
    rejected_hunks: list[int]
    total_hunks: int
    verified: dict[str, Any] | None  # {"ok", "correct", "headline"} of the run of the written text, once ended

    @property
    def author(self) -> str:
        """Who made the version: the agent, or the agent and the person."""
        if self.how == EDITED:
            return f"agent {self.proposal_id}, edited by you"
        if self.how == PARTIAL:
            return f"agent {self.proposal_id}, {len(self.applied_hunks)} of {self.total_hunks} hunks"
        return f"agent {self.proposal_id}"

    @property
    def label(self) -> str:
        """The decision in a few words: "accepted", "accepted with your edits", "accepted 1 of 2 hunks"."""
        if self.how == EDITED:
            return "accepted with your edits"
        if self.how == PARTIAL:
            return f"accepted {len(self.applied_hunks)} of {self.total_hunks} hunks"
        return "accepted"

    @property
    def trial_covers_it(self) -> bool:
        """Whether the proposal's trial checked the text written (only a whole accept)."""
        return self.how == WHOLE

    @property
    def verdict(self) -> str:
        """The verdict of the text written: the trial's for a whole accept; else the run after writing."""
        if self.trial_covers_it:
            return ""
        if self.verified is None:
            return "unverified edit: written, being checked"
        headline = str(self.verified.get("headline") or "")
        if not self.verified.get("ok"):
            word = "FAILED"
        elif self.verified.get("correct"):
            word = "passed"
        else:  # nothing failed, and the run's rungs did not include correctness
            word = "no failure, correctness not checked"
        return f"checked after writing: {word}" + (f" · {headline}" if headline else "")

    @property
    def verdict_ok(self) -> bool | None:
        if self.trial_covers_it or self.verified is None:
            return None
        return bool(self.verified.get("ok"))


def written_of(proposal: Mapping[str, Any], proposal_id: str = "") -> Written | None:
    """The write an accepted (or later undone) proposal made; None when it wrote nothing."""
    decision = proposal.get("decision") or {}
    if not isinstance(decision, dict) or decision.get("decision") not in (
        "accepted",
        "accepted_with_edits",
        "partially_accepted",
    ):
        return None
    total = len(proposal.get("hunks") or [])
    how = {"accepted_with_edits": EDITED, "partially_accepted": PARTIAL}.get(str(decision.get("decision")), WHOLE)
    verified = decision.get("verified_after_apply")
    return Written(
        proposal_id=proposal_id or str(proposal.get("id") or decision.get("proposal") or ""),
        how=how,
        applied_hash=str(decision.get("applied_hash") or proposal.get("new_hash") or ""),
        applied_hunks=[int(h) for h in decision.get("applied_hunks") or []],
        rejected_hunks=[int(h) for h in decision.get("rejected_hunks") or []],
        total_hunks=total,
        verified=verified if isinstance(verified, dict) else None,
    )


def marked_diff(proposal: dict[str, Any]) -> str:
    """The diff a card shows once decided: for a partial accept, the proposal's hunks with those left
    out marked as such (their old lines as unchanged context, their new ones "(not taken)"); for an edited
    accept, the diff that reached the disk; otherwise the proposal's own diff."""
    written = written_of(proposal)
    decision = proposal.get("decision") or {}
    if written is not None and written.how == EDITED and decision.get("written_diff"):
        return str(decision["written_diff"])
    if written is None or written.how != PARTIAL:
        return str(proposal.get("diff") or "")
    left_out = set(written.rejected_hunks)
    lines: list[str] = []
    for n, hunk in enumerate(proposal.get("hunks") or []):
        header = str(hunk.get("header") or "")
        if n in left_out:
            lines.append(f"{header}  hunk {n + 1} LEFT OUT (not written)")
            for line in hunk.get("lines") or []:
                if line.startswith("+"):
                    lines.append(f"  (not taken) {line[1:]}")
                else:
                    lines.append(" " + line[1:] if line.startswith("-") else line)  # the old line stayed
        else:
            lines.append(f"{header}  hunk {n + 1} accepted")
            lines += list(hunk.get("lines") or [])
    return "\n".join(lines) + "\n"
