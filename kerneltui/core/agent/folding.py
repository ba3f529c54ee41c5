"""Auto mode's conversation kept to one size: each decided iteration folded into one line.

Without folding every request carries every earlier proposal's whole file and every trial's
feedback, so a long kernel over many iterations sends hundreds of KB a request. Once an iteration
is decided, its messages (the brief, the replies, the proposal with its source, the trial's
feedback) are replaced by one user-side line naming what it proposed, the version's hash and the
verdict; the model reads any version back with ``read_version``. The verdict of the latest
iteration still reaches the model in full, as the decision note that goes with the next brief.

A folded line never changes again, so the requests keep a stable prefix (tools, system prompt,
the folded lines) that the providers' prompt caches serve; only the iteration just folded and the
new one are written anew.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltui.core.agent.conversation import Message

REASON_CHARS = 64  # of a verdict in the folded line (the latest one reaches the model whole, as a decision note)
HASH_CHARS = 12  # of a version's hash: read_version takes a prefix


@dataclass(frozen=True)
class FoldedProposal:
    """One proposal of a folded iteration: its id, the version it proposed, what became of it."""

    proposal_id: str
    version: str
    verdict: str


def folded_line(iteration: int, proposals: list[FoldedProposal], without: str = "") -> str:
    """The one line an iteration leaves in the conversation."""
    if not proposals:
        return f"(iteration {iteration} folded: {without or 'no proposal'})"
    parts = []
    for p in proposals:
        verdict = " ".join(p.verdict.split())
        if len(verdict) > REASON_CHARS:
            verdict = verdict[: REASON_CHARS - 1] + "…"
        parts.append(f"{p.proposal_id} {p.version[:HASH_CHARS]} {verdict}")
    return f"(iteration {iteration} folded: {'; '.join(parts)})"


def fold(messages: list[Message], start: int, line: str) -> None:
    """Replace ``messages[start:]`` (one decided iteration, whole: every tool call with its result)
    by the iteration's folded line."""
    if start < len(messages):
        messages[start:] = [Message(role="user", text=line)]
