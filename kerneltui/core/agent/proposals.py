"""Proposals: an edit the agent offers, verified on a scratch copy, decided by the person.

States (``ProposalEvent.state``)::

    pending ──▶ trial ──▶ trial_done ──▶ accepted ──▶ undone
       │          │           ├────────▶ rejected
       │          │           ├────────▶ redirected      (feedback text goes back to the agent)
       └──────────┴───────────┴────────▶ stale           (the file changed before the decision)
                                         superseded      (a newer proposal for the same file)

A decision may come before the trial ends (it is then cancelled). "Edited then accepted" is
``accepted`` with ``decision.edited = true``; accepting only some hunks is ``accepted`` with
``decision.applied_hunks`` / ``rejected_hunks``. Either way ``applied_source`` holds the text written
(``decision.applied_hash`` its hash), which is what the session, replay and export show as the version.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kerneltui.core.agent.diffs import Hunk, hunks_between, unified_diff

if TYPE_CHECKING:
    from kerneltui.core.agent.trials import TrialSummary

PENDING, TRIAL, TRIAL_DONE = "pending", "trial", "trial_done"
ACCEPTED, REJECTED, REDIRECTED, STALE, SUPERSEDED, UNDONE = (
    "accepted", "rejected", "redirected", "stale", "superseded", "undone",
)
OPEN_STATES = frozenset({PENDING, TRIAL, TRIAL_DONE})
_ENDINGS = {ACCEPTED, REJECTED, REDIRECTED, STALE, SUPERSEDED}
TRANSITIONS: dict[str, frozenset[str]] = {
    PENDING: frozenset({TRIAL} | _ENDINGS),
    TRIAL: frozenset({TRIAL_DONE} | _ENDINGS),
    TRIAL_DONE: frozenset(_ENDINGS),
    ACCEPTED: frozenset({UNDONE}),
    REJECTED: frozenset(),
    REDIRECTED: frozenset(),
    STALE: frozenset(),
    SUPERSEDED: frozenset(),
    UNDONE: frozenset(),
}


class ProposalError(Exception):
    """A decision that cannot be made (unknown id, wrong state, a hunk that does not exist)."""


@dataclass
class Proposal:
    id: str
    file: str  # relative to the task folder
    rationale: str
    kind: str  # "full" (a whole new file) or "diff" (a unified diff from the model)
    base_source: str
    base_hash: str
    new_source: str
    new_hash: str
    origin: str = "chat"  # "chat" or "auto"
    turn_id: str = ""
    call_id: str = ""
    submitted_diff: str = ""  # the model's own diff, when kind == "diff"
    # kind "override": a hand-edited stage (PTX/TTGIR) of the kernel's build, not an edit of the kernel
    # file: {"folder", "stage", "kernel", "base_version", "key"} (core/agent/override_proposals.py)
    override: dict[str, Any] | None = None
    state: str = PENDING
    created_at: float = field(default_factory=time.time)
    trial: TrialSummary | None = None
    decision: dict[str, Any] | None = None
    history: list[tuple[str, float]] = field(default_factory=list)
    hunks: list[Hunk] = field(default_factory=list)
    diff: str = ""
    # What an accept wrote when it was not ``new_source`` (some hunks, the person's edit): the text
    # that reached the disk, so the record shows it rather than the proposal's.
    applied_source: str = ""

    def __post_init__(self) -> None:
        if not self.hunks:
            self.hunks = hunks_between(self.base_source, self.new_source)
        if not self.diff:
            self.diff = unified_diff(self.base_source, self.new_source, self.file)
        if not self.history:
            self.history = [(self.state, self.created_at)]

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def move(self, state: str) -> None:
        if state not in TRANSITIONS.get(self.state, frozenset()):
            raise ProposalError(f"proposal {self.id} is {self.state}; it cannot become {state}")
        self.state = state
        self.history.append((state, time.time()))

    def to_dict(self) -> dict[str, Any]:
        """What ProposalEvent carries: everything the UI card and the session log need."""
        return {
            "id": self.id,
            "file": self.file,
            "rationale": self.rationale,
            "kind": self.kind,
            "state": self.state,
            "origin": self.origin,
            "turn_id": self.turn_id,
            "call_id": self.call_id,
            "base_hash": self.base_hash,
            "new_hash": self.new_hash,
            "new_source": self.new_source,
            "applied_source": self.applied_source or None,
            "diff": self.diff,
            "submitted_diff": self.submitted_diff,
            "override": self.override,
            "hunks": [h.to_dict() for h in self.hunks],
            "added": sum(h.added for h in self.hunks),
            "removed": sum(h.removed for h in self.hunks),
            "trial": self.trial.to_dict() if self.trial else None,
            "decision": self.decision,
            # The reason (or redirect feedback) as one string, for cards that show only that.
            "decision_reason": (self.decision or {}).get("reason") or (self.decision or {}).get("feedback") or "",
            "created_at": self.created_at,
            "history": [[s, t] for s, t in self.history],
        }


@dataclass
class ProposalBook:
    """Every proposal of a session, by id (``p1``, ``p2`` …)."""

    proposals: dict[str, Proposal] = field(default_factory=dict)
    counter: int = 0

    def next_id(self) -> str:
        self.counter += 1
        return f"p{self.counter}"

    def add(self, proposal: Proposal) -> None:
        self.proposals[proposal.id] = proposal

    def get(self, proposal_id: str) -> Proposal:
        try:
            return self.proposals[proposal_id]
        except KeyError:
            known = ", ".join(self.proposals) or "none yet"
            raise ProposalError(f"no proposal {proposal_id!r} (proposals: {known})") from None

    def open_for(self, file: str) -> list[Proposal]:
        return [p for p in self.proposals.values() if p.file == file and p.is_open]

    def open_on_kernel(self, kernel_file: str) -> list[Proposal]:
        """Open proposals whose base is the kernel file as it is: its edits, and hand-edited stages of its build."""
        return [p for p in self.proposals.values() if p.is_open and (p.file == kernel_file or p.override)]

    def latest(self) -> Proposal | None:
        return next(reversed(self.proposals.values()), None) if self.proposals else None
