"""Anthropic Messages, streamed, with tool use.

User and assistant turns must alternate and tool results travel in the user turn, so consecutive
user-side entries of the conversation (tool results, a decision note, the person's next message) are
merged into one user message, tool results first.

Prompt caching: Anthropic caches a prefix up to a ``cache_control`` mark, in the order tools →
system → messages. Two marks: the system prompt (so the tools, the instructions and the task are one
stable cached prefix), and the last block of the conversation (so each request reads the previous
one's conversation from the cache and writes only what is new). Cached and written tokens come back
in ``usage`` and are priced apart.

A reply is whole only when ``message_stop`` arrives; a stream that ends before it (or a connection
that closes) is a cut-off reply, never a shorter one: its tool calls may be half their arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from kerneltui.core.agent.conversation import (
    Message,
    ModelReply,
    ModelRequest,
    ToolCall,
    Usage,
    merged_user_turns,
    parse_arguments,
)
from kerneltui.core.agent.errors import CONFIG, REFUSED, ProviderError, cut_off
from kerneltui.core.agent.providers.base import TextSink, key_note
from kerneltui.core.agent.providers.retries import WaitSink, with_retries
from kerneltui.core.agent.providers.sdk_errors import provider_error

ANTHROPIC_URL = "https://api.anthropic.com"


CACHE_MARK = {"type": "ephemeral"}


class ContentBlock(TypedDict, total=False):
    """One block of a message's content, as kerneltui sends them: ``text``, ``tool_use`` (the
    assistant's call: ``id``, ``name``, ``input``) or ``tool_result`` (``tool_use_id``, ``content``,
    ``is_error``); any of them may carry ``cache_control``."""

    type: Literal["text", "tool_use", "tool_result"]
    text: str
    id: str
    name: str
    input: Mapping[str, object]  # the call's arguments as the model wrote them
    tool_use_id: str
    content: str
    is_error: bool
    cache_control: dict[str, str]


class AnthropicMessage(TypedDict):
    role: Literal["user", "assistant"]
    content: list[ContentBlock]


class AnthropicTool(TypedDict):
    name: str
    description: str
    input_schema: Mapping[str, object]  # the tool's JSON schema, as written


class AnthropicRequest(TypedDict):
    """The keyword arguments of ``messages.create``."""

    model: str
    max_tokens: int
    messages: list[AnthropicMessage]
    stream: bool
    system: NotRequired[list[ContentBlock]]
    tools: NotRequired[list[AnthropicTool]]
    temperature: NotRequired[float]


@dataclass
class _StreamedCall:
    """A tool_use block as its events arrive: the id and name first, the input's JSON in pieces."""

    id: str
    name: str
    json: list[str] = field(default_factory=list)


def anthropic_messages(messages: list[Message], cache_last: bool = False) -> list[AnthropicMessage]:
    """The conversation in Anthropic's form; ``cache_last`` marks its last block as a cache breakpoint."""
    out = _messages(messages)
    if cache_last and out and out[-1]["content"]:
        marked: ContentBlock = {**out[-1]["content"][-1], "cache_control": CACHE_MARK}
        out[-1]["content"][-1] = marked
    return out


def _messages(messages: list[Message]) -> list[AnthropicMessage]:
    kept = [m for m in messages if not (m.role == "assistant" and not m.text and not m.tool_calls)]
    out: list[AnthropicMessage] = []
    for group in merged_user_turns(kept):
        content: list[ContentBlock] = []
        if group[0].role == "assistant":
            for m in group:
                if m.text:
                    content.append({"type": "text", "text": m.text})
                for c in m.tool_calls:
                    content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
            out.append({"role": "assistant", "content": content})
        else:
            for m in group:
                for r in m.tool_results:
                    content.append({"type": "tool_result", "tool_use_id": r.call_id, "content": r.content or "(empty)",
                                    "is_error": r.is_error})
            for m in group:
                if m.role == "user" and m.text:
                    content.append({"type": "text", "text": m.text})
            out.append({"role": "user", "content": content})
    return out


class AnthropicProvider:
    def __init__(self, model: str, api_key: str, key_source: str, base_url: str = "", max_retries: int = 2,
                 timeout_s: float = 120.0) -> None:
        self.name = "anthropic"
        self.model = model
        self.base_url = base_url or ANTHROPIC_URL
        self._key = api_key
        self._key_source = key_source
        self._max_retries = max_retries
        self._timeout_s = timeout_s
        self._client: Any = None

    def describe(self) -> str:
        where = "" if self.base_url == ANTHROPIC_URL else f" at {self.base_url}"
        return f"anthropic {self.model}{where}"

    def secrets(self) -> list[str]:
        return [self._key]

    def key_note(self) -> str:
        return key_note(self._key_source, self.base_url)

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import anthropic
            except ImportError as exc:
                raise ProviderError(CONFIG, "the anthropic package is not installed: pip install anthropic") from exc
            self._client = anthropic.AsyncAnthropic(api_key=self._key, base_url=self.base_url,
                                                    max_retries=0, timeout=self._timeout_s)  # retried, where it shows, by with_retries
        return self._client

    async def complete(self, request: ModelRequest, on_text: TextSink, on_wait: WaitSink | None = None) -> ModelReply:
        return await with_retries(lambda: self._complete_once(request, on_text), self._max_retries, on_wait)

    async def _complete_once(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        client = self._get_client()
        kwargs: AnthropicRequest = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": anthropic_messages(request.messages, cache_last=True),
            "stream": True,
        }
        if request.system:
            kwargs["system"] = [{"type": "text", "text": request.system, "cache_control": CACHE_MARK}]
        if request.tools:
            kwargs["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                               for t in request.tools]
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        text: list[str] = []
        blocks: dict[int, _StreamedCall] = {}
        usage = Usage(reported=False)
        stop = ""
        finished = False
        model = self.model
        started = False
        try:
            stream = await client.messages.create(**kwargs)
            started = True
            async for event in stream:
                kind = getattr(event, "type", "")
                if kind == "message_start":
                    message = event.message
                    model = getattr(message, "model", None) or model
                    u = message.usage
                    read = int(getattr(u, "cache_read_input_tokens", None) or 0)
                    write = int(getattr(u, "cache_creation_input_tokens", None) or 0)
                    usage = Usage(input_tokens=int(u.input_tokens or 0) + read + write,
                                  output_tokens=int(getattr(u, "output_tokens", 0) or 0),
                                  cache_read_tokens=read, cache_write_tokens=write)
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = _StreamedCall(block.id, block.name)
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        text.append(delta.text)
                        on_text(delta.text)
                    elif delta.type == "input_json_delta" and event.index in blocks:
                        blocks[event.index].json.append(delta.partial_json)
                elif kind == "message_delta":
                    if event.delta.stop_reason:
                        stop = event.delta.stop_reason
                    if event.usage is not None and getattr(event.usage, "output_tokens", None) is not None:
                        usage.output_tokens = int(event.usage.output_tokens)
                elif kind == "message_stop":
                    finished = True
        except ProviderError:
            raise
        except Exception as exc:
            raise provider_error(exc, self.name, self.base_url, self._key_source, self.secrets(), streaming=started,
                                 timeout_s=self._timeout_s, usage=usage if usage.reported else None) from exc
        if not finished:
            # message_start's usage counts the input and the first output token; the rest was never reported.
            raise cut_off(self.name, "ended the stream before message_stop", usage if usage.reported else None)
        if stop == "refusal":
            said = "".join(text).strip()
            raise ProviderError(REFUSED, "the model refused to continue" + (f": {said[:300]}" if said else ""))
        tool_calls = []
        for index in sorted(blocks):
            entry = blocks[index]
            raw = "".join(entry.json)
            arguments, error = parse_arguments(raw)
            tool_calls.append(ToolCall(id=entry.id, name=entry.name, arguments=arguments, raw_arguments=raw,
                                       argument_error=error))
        return ModelReply(text="".join(text), tool_calls=tool_calls, usage=usage, stop_reason=stop, model=model)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
