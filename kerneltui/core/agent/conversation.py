"""The conversation with the model, independent of any provider's wire format.

Providers translate these into their own messages (OpenAI chat, OpenAI responses, Anthropic) and
their streamed replies back into a :class:`ModelReply`. The session keeps the conversation as a list
of :class:`Message`; it can be saved as JSON and restored (resume).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: ``parameters`` is a JSON schema of its arguments object."""

    name: str
    description: str
    # A JSON schema, passed to the provider as written (each provider's API takes any schema).
    parameters: Mapping[str, object]


# The arguments as the model wrote them: any JSON object, nothing checked yet. Each tool checks
# what it reads (``core.agent.tools``: _text_arg, _int_arg …), hence object, not a typed dict.
ToolArguments = Mapping[str, object]


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: ToolArguments = field(default_factory=dict)
    # The raw argument text as streamed; kept so a malformed call can be reported to the model.
    raw_arguments: str = ""
    argument_error: str | None = None


@dataclass
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass
class Message:
    """One entry of the conversation.

    ``user``: ``text``. ``assistant``: ``text`` and the ``tool_calls`` it made. ``tool``: the
    ``tool_results`` answering the previous assistant message's calls, in the same order.
    """

    role: Role
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)

    def to_dict(self) -> MessageData:
        return {"role": self.role, "text": self.text,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": dict(c.arguments),
                                "raw_arguments": c.raw_arguments, "argument_error": c.argument_error}
                               for c in self.tool_calls],
                "tool_results": [{"call_id": r.call_id, "name": r.name, "content": r.content, "is_error": r.is_error}
                                 for r in self.tool_results]}

    @classmethod
    def from_dict(cls, data: MessageData) -> Message:
        return cls(
            role=data["role"],
            text=data.get("text", ""),
            tool_calls=[ToolCall(**c) for c in data.get("tool_calls", [])],
            tool_results=[ToolResult(**r) for r in data.get("tool_results", [])],
        )


class ToolCallData(TypedDict, total=False):
    """A ``ToolCall`` in the saved conversation (its fields, as ``dataclasses.asdict`` wrote them)."""

    id: str
    name: str
    arguments: dict[str, object]
    raw_arguments: str
    argument_error: str | None


class ToolResultData(TypedDict, total=False):
    """A ``ToolResult`` in the saved conversation."""

    call_id: str
    name: str
    content: str
    is_error: bool


class MessageData(TypedDict):
    """``Message.to_dict()``: one entry of the saved conversation (``conversation_to_json``)."""

    role: Role
    text: NotRequired[str]
    tool_calls: NotRequired[list[ToolCallData]]
    tool_results: NotRequired[list[ToolResultData]]


def conversation_to_json(messages: list[Message], pending_notes: list[str] | None = None) -> str:
    """The messages as a JSON list; with notes not yet sent (a decision's note waits for the next
    turn), an object holding both, so that a resume sends them too."""
    listed = [m.to_dict() for m in messages]
    return json.dumps({"messages": listed, "pending_notes": list(pending_notes)} if pending_notes else listed)


def conversation_from_json(text: str) -> list[Message]:
    data = json.loads(text)
    return [Message.from_dict(d) for d in (data["messages"] if isinstance(data, dict) else data)]


def pending_notes_from_json(text: str) -> list[str]:
    data = json.loads(text)
    return [str(note) for note in data.get("pending_notes", [])] if isinstance(data, dict) else []


@dataclass
class Usage:
    """Tokens of one model request. ``input_tokens`` counts every input token, cached ones included."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reported: bool = True  # False: the server sent no usage, the numbers are unknown (not zero)


@dataclass
class ModelRequest:
    """One request. ``system``, ``tools`` and the conversation's start are the same in every request
    of a session, in that order, so providers can cache them as a prefix; ``cache_key`` names that
    prefix (a session's), for providers that route by it."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    max_tokens: int = 8192
    temperature: float | None = None
    cache_key: str = ""


@dataclass
class ModelReply:
    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    stop_reason: str = ""  # provider's words: "end_turn", "tool_use", "stop", "length", …
    model: str = ""  # the model the server says answered (may carry a date suffix)


def parse_arguments(raw: str) -> tuple[ToolArguments, str | None]:
    """Tool arguments streamed as JSON text: the object, or an error a model can act on."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos}): {raw[:200]!r}"
    if not isinstance(value, dict):
        return {}, f"the arguments must be a JSON object, not {type(value).__name__}"
    return value, None


def merged_user_turns(messages: list[Message]) -> list[list[Message]]:
    """Group the conversation into runs of consecutive same-role entries (``tool`` counts as user).

    Anthropic wants user and assistant to alternate, and tool results travel in the user turn; a
    decision note sent after a tool result must join that turn rather than open a second one.
    """
    groups: list[list[Message]] = []
    for m in messages:
        side = "assistant" if m.role == "assistant" else "user"
        if groups and ("assistant" if groups[-1][0].role == "assistant" else "user") == side:
            groups[-1].append(m)
        else:
            groups.append([m])
    return groups
