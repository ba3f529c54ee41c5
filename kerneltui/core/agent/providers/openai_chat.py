"""OpenAI Chat Completions, streamed, with tool calls: OpenAI itself and compatible servers.

The same wire format serves vLLM, Ollama, llama.cpp and most proxies (``base_url``). Usage comes in
a final chunk when ``stream_options.include_usage`` is honoured; a server that sends none is
reported as "usage unknown", never as zero tokens. A stream that ends before its ``finish_reason``
is an error (the reply was cut off), never a shorter reply.

Prompt caching is OpenAI's own, on the longest stable prefix of the prompt: the system message (the
task) and the tools come first and never change within a session, and the conversation only grows.
Cached tokens are read from ``usage.prompt_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from kerneltui.core.agent.conversation import (
    Message,
    ModelReply,
    ModelRequest,
    ToolCall,
    ToolSpec,
    Usage,
    parse_arguments,
)
from kerneltui.core.agent.errors import CONFIG, REFUSED, ProviderError, cut_off
from kerneltui.core.agent.providers.base import TextSink, key_note
from kerneltui.core.agent.providers.retries import WaitSink, with_retries
from kerneltui.core.agent.providers.sdk_errors import provider_error

OPENAI_URL = "https://api.openai.com/v1"


class ChatFunctionCall(TypedDict):
    name: str
    arguments: str  # the JSON text of the arguments object


class ChatToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: ChatFunctionCall


class ChatMessage(TypedDict):
    """One message of Chat Completions' ``messages``, as kerneltui sends them."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None  # None: an assistant message that only calls tools
    tool_calls: NotRequired[list[ChatToolCall]]  # assistant
    tool_call_id: NotRequired[str]  # tool: the call it answers


class ChatFunction(TypedDict):
    name: str
    description: str
    parameters: Mapping[str, object]  # the tool's JSON schema, as written


class ChatTool(TypedDict):
    type: Literal["function"]
    function: ChatFunction


class ChatRequest(TypedDict):
    """The keyword arguments of ``chat.completions.create``."""

    model: str
    messages: list[ChatMessage]
    stream: bool
    stream_options: dict[str, bool]
    tools: NotRequired[list[ChatTool]]
    max_tokens: NotRequired[int]  # OpenAI-compatible servers
    max_completion_tokens: NotRequired[int]  # OpenAI (its reasoning models take only this one)
    temperature: NotRequired[float]
    prompt_cache_key: NotRequired[str]


@dataclass
class _StreamedCall:
    """A tool call as its chunks arrive: the id and name once, the arguments' text in pieces."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def chat_messages(system: str, messages: list[Message]) -> list[ChatMessage]:
    out: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role == "user":
            out.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            entry: ChatMessage = {"role": "assistant", "content": m.text or (None if m.tool_calls else "")}
            if m.tool_calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": c.raw_arguments or json.dumps(c.arguments)}}
                    for c in m.tool_calls
                ]
            out.append(entry)
        else:
            for r in m.tool_results:
                out.append({"role": "tool", "tool_call_id": r.call_id, "content": r.content})
    return out


def chat_tools(tools: list[ToolSpec]) -> list[ChatTool]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in tools]


class OpenAIChatProvider:
    def __init__(self, model: str, api_key: str, key_source: str, base_url: str = "", compatible: bool = False,
                 max_retries: int = 2, timeout_s: float = 120.0) -> None:
        self.name = "openai-compatible" if compatible else "openai"
        self.model = model
        self.base_url = base_url or OPENAI_URL
        self.compatible = compatible
        self._key = api_key
        self._key_source = key_source
        self._max_retries = max_retries
        self._timeout_s = timeout_s
        self._client: Any = None

    def describe(self) -> str:
        return f"{self.name} {self.model} at {self.base_url}"

    def secrets(self) -> list[str]:
        return [self._key]

    def key_note(self) -> str:
        return key_note(self._key_source, self.base_url)

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise ProviderError(CONFIG, "the openai package is not installed: pip install openai") from exc
            self._client = openai.AsyncOpenAI(api_key=self._key, base_url=self.base_url,
                                              max_retries=0, timeout=self._timeout_s)  # retried, where it shows, by with_retries
        return self._client

    async def complete(self, request: ModelRequest, on_text: TextSink, on_wait: WaitSink | None = None) -> ModelReply:
        return await with_retries(lambda: self._complete_once(request, on_text), self._max_retries, on_wait)

    async def _complete_once(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        client = self._get_client()
        kwargs: ChatRequest = {
            "model": self.model,
            "messages": chat_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            kwargs["tools"] = chat_tools(request.tools)
        # OpenAI's reasoning models take only max_completion_tokens; older servers only max_tokens.
        if self.compatible:
            kwargs["max_tokens"] = request.max_tokens
        else:
            kwargs["max_completion_tokens"] = request.max_tokens
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if not self.compatible and request.cache_key:
            # OpenAI caches a prompt's prefix by itself; the key routes a session's requests together.
            kwargs["prompt_cache_key"] = request.cache_key
        text: list[str] = []
        refusal: list[str] = []
        calls: dict[int, _StreamedCall] = {}
        usage = Usage(reported=False)
        stop = ""
        model = self.model
        started = False
        try:
            stream = await client.chat.completions.create(**kwargs)
            started = True
            async for chunk in stream:
                model = getattr(chunk, "model", None) or model
                if getattr(chunk, "usage", None) is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is not None:
                        if delta.content:
                            text.append(delta.content)
                            on_text(delta.content)
                        if getattr(delta, "refusal", None):
                            refusal.append(delta.refusal)
                        for position, tc in enumerate(delta.tool_calls or []):
                            index = tc.index if tc.index is not None else position
                            entry = calls.setdefault(index, _StreamedCall())
                            if tc.id:
                                entry.id = tc.id
                            if tc.function is not None:
                                if tc.function.name:
                                    entry.name += tc.function.name
                                if tc.function.arguments:
                                    entry.arguments.append(tc.function.arguments)
                    if choice.finish_reason:
                        stop = choice.finish_reason
        except ProviderError:
            raise
        except Exception as exc:
            raise provider_error(exc, self.name, self.base_url, self._key_source, self.secrets(), streaming=started,
                                 timeout_s=self._timeout_s, usage=usage if usage.reported else None) from exc
        if not stop:
            # Every reply ends with a finish_reason (before the usage chunk and [DONE]); a body that
            # ends without one was cut short, and its last tool call may be half its arguments.
            raise cut_off(self.name, "ended the stream before its finish_reason", usage if usage.reported else None)
        if refusal and not text:
            raise ProviderError(REFUSED, f"the model refused: {''.join(refusal)[:300]}")
        if stop == "content_filter":
            raise ProviderError(REFUSED, f"{self.name} stopped the reply with its content filter")
        tool_calls = []
        for n, index in enumerate(sorted(calls)):
            entry = calls[index]
            raw = "".join(entry.arguments)
            arguments, error = parse_arguments(raw)
            tool_calls.append(ToolCall(id=entry.id or f"call_{n}", name=entry.name, arguments=arguments,
                                       raw_arguments=raw, argument_error=error))
        return ModelReply(text="".join(text), tool_calls=tool_calls, usage=usage, stop_reason=stop, model=model)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _usage(raw: Any) -> Usage:
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(input_tokens=int(raw.prompt_tokens or 0), output_tokens=int(raw.completion_tokens or 0),
                 cache_read_tokens=int(cached))
