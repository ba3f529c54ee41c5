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
from typing import TYPE_CHECKING, TypedDict

from kerneltui.core.agent.diffs import Hunk, HunkData, hunks_between, unified_diff

if TYPE_CHECKING:
    from kerneltui.core.agent.trials import TrialData, TrialSummary

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


class OverrideTarget(TypedDict):
    """A proposal of kind "override": where its hand-edited stage goes (``core.agent.override_proposals``)."""

    folder: str  # the override folder, relative to the task folder
    file: str  # the edited stage's file in it
    stage: str  # "PTX" or "TTGIR"
    kernel: str
    base_version: str  # the version whose compiler output was edited
    key: str | None  # Triton's cache key of that build (None for CUDA C++)


class TrialVerdict(TypedDict):
    ok: bool | None
    headline: str | None


class VerifiedVerdict(TypedDict):
    """The run of an accepted text that was not the trial's (``AgentChat._after_apply``)."""

    ok: bool
    correct: bool | None
    headline: str


class Decision(TypedDict, total=False):
    """What happened to a proposal and why, as the session log keeps it and the model reads it
    (``prompts.decision_note``); the person's decisions, auto mode's, and the file's (stale)."""

    proposal: str | None
    file: str
    by: str  # "person", "auto", "agent" (superseded), "file" (stale)
    trial: TrialVerdict
    decision: str  # accepted, accepted_with_edits, partially_accepted, rejected, redirected, stale, superseded, undone
    reason: str | None
    feedback: str | None  # redirected: what the person asked for instead
    edited: bool
    person_edits: str | None  # the person's edit, as a diff of the proposal's text
    applied_hunks: list[int]
    rejected_hunks: list[int]
    applied_hash: str
    written_diff: str
    verified_after_apply: VerifiedVerdict
    override: str  # an override's folder: the text went there, the kernel file is unchanged
    kernel_file_unchanged: bool
    restored_hash: str  # undone: the text the kernel file has again
    at: float  # when (time.time()), for the session log


class ProposalData(TypedDict):
    """``Proposal.to_dict()``: what ``ProposalEvent`` carries, for the card and the session log."""

    id: str
    file: str
    rationale: str
    kind: str
    state: str
    origin: str
    turn_id: str
    call_id: str
    base_hash: str
    new_hash: str
    new_source: str
    applied_source: str | None
    diff: str
    submitted_diff: str
    override: OverrideTarget | None
    hunks: list[HunkData]
    added: int
    removed: int
    trial: TrialData | None
    decision: Decision | None
    decision_reason: str
    created_at: float
    history: list[list[str | float]]  # [state, time] in order


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
    override: OverrideTarget | None = None
    state: str = PENDING
    created_at: float = field(default_factory=time.time)
    trial: TrialSummary | None = None
    decision: Decision | None = None
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

    def to_dict(self) -> ProposalData:
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
