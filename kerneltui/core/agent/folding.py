"""The conversation kept to a size: decided proposals' texts replaced by their version, and in auto
mode each decided iteration folded into one line.

In every chat, once a proposal is decided, the whole file (or diff) in its ``propose_edit`` call is
replaced by its version's hash and state (``without_decided_texts``).

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

from dataclasses import dataclass, replace

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


def placeholder(version: str, state: str) -> str:
    """What stands for a decided proposal's text in its tool call once it is decided."""
    short = version[:HASH_CHARS]
    return f"[version {short}, {state}: its text left the conversation; read_version('{short}') shows it]"


def without_decided_texts(messages: list[Message], decided: dict[str, tuple[str, str]]) -> None:
    """Replace the text (``source`` or ``diff``) of every decided proposal's call, by call id:
    ``decided`` maps a call id to (version, state). Messages are replaced, never changed in place (a
    request already sent holds the old ones); a replaced call stays the same from then on, so the
    conversation before it remains a stable cached prefix."""
    for n, message in enumerate(messages):
        if message.role != "assistant" or not any(c.id in decided for c in message.tool_calls):
            continue
        calls = []
        for call in message.tool_calls:
            found = decided.get(call.id)
            if found is not None and ("source" in call.arguments or "diff" in call.arguments):
                arguments = {k: v for k, v in call.arguments.items() if k not in ("source", "diff")}
                arguments["source"] = placeholder(*found)
                call = replace(call, arguments=arguments, raw_arguments="")
            calls.append(call)
        messages[n] = replace(message, tool_calls=calls)
