"""OpenAI's Responses API, streamed, with function calls (``[agent] api = "responses"``).

Requests are stateless (``store: false``): the whole conversation travels each time, as it does for
the other providers, so a session can move between providers and be resumed from its log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

from kerneltui.core.agent.conversation import (
    Message,
    ModelReply,
    ModelRequest,
    ToolCall,
    Usage,
    parse_arguments,
)
from kerneltui.core.agent.errors import CONFIG, PROVIDER, REFUSED, ProviderError, cut_off
from kerneltui.core.agent.providers.base import TextSink, key_note
from kerneltui.core.agent.providers.openai_chat import OPENAI_URL
from kerneltui.core.agent.providers.retries import WaitSink, with_retries
from kerneltui.core.agent.providers.sdk_errors import provider_error


class InputItem(TypedDict, total=False):
    """One item of the Responses API's ``input``: a message (``role``, ``content``), the model's
    ``function_call`` (``call_id``, ``name``, ``arguments``) or its ``function_call_output``."""

    role: Literal["user", "assistant"]
    content: str
    type: Literal["function_call", "function_call_output"]
    call_id: str
    name: str
    arguments: str  # the JSON text of the arguments object
    output: str


class ResponsesTool(TypedDict):
    type: Literal["function"]
    name: str
    description: str
    parameters: Mapping[str, object]  # the tool's JSON schema, as written
    strict: bool


class ResponsesRequest(TypedDict):
    """The keyword arguments of ``responses.create``."""

    model: str
    input: list[InputItem]
    stream: bool
    store: bool
    max_output_tokens: int
    instructions: NotRequired[str]
    tools: NotRequired[list[ResponsesTool]]
    temperature: NotRequired[float]
    prompt_cache_key: NotRequired[str]


def response_input(messages: list[Message]) -> list[InputItem]:
    items: list[InputItem] = []
    for m in messages:
        if m.role == "user":
            items.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            if m.text:
                items.append({"role": "assistant", "content": m.text})
            for c in m.tool_calls:
                items.append({"type": "function_call", "call_id": c.id, "name": c.name,
                              "arguments": c.raw_arguments or json.dumps(c.arguments)})
        else:
            for r in m.tool_results:
                items.append({"type": "function_call_output", "call_id": r.call_id, "output": r.content})
    return items


class OpenAIResponsesProvider:
    def __init__(self, model: str, api_key: str, key_source: str, base_url: str = "", max_retries: int = 2,
                 timeout_s: float = 120.0) -> None:
        self.name = "openai"
        self.model = model
        self.base_url = base_url or OPENAI_URL
        self._key = api_key
        self._key_source = key_source
        self._max_retries = max_retries
        self._timeout_s = timeout_s
        self._client: Any = None

    def describe(self) -> str:
        return f"openai {self.model} (responses API) at {self.base_url}"

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
        kwargs: ResponsesRequest = {
            "model": self.model,
            "input": response_input(request.messages),
            "stream": True,
            "store": False,
            "max_output_tokens": request.max_tokens,
        }
        if request.system:
            kwargs["instructions"] = request.system
        if request.tools:
            kwargs["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                                "parameters": t.parameters, "strict": False} for t in request.tools]
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.cache_key:
            kwargs["prompt_cache_key"] = request.cache_key  # see openai_chat: OpenAI's own prefix caching
        text: list[str] = []
        refusal: list[str] = []
        calls: dict[str, dict[str, str]] = {}  # item id → call_id, name, arguments
        order: list[str] = []
        usage = Usage(reported=False)
        stop = ""
        model = self.model
        started = False
        try:
            stream = await client.responses.create(**kwargs)
            started = True
            async for event in stream:
                kind = getattr(event, "type", "")
                if kind == "response.output_text.delta":
                    text.append(event.delta)
                    on_text(event.delta)
                elif kind == "response.refusal.delta":
                    refusal.append(event.delta)
                elif kind == "response.output_item.added" and getattr(event.item, "type", "") == "function_call":
                    item = event.item
                    key = item.id or item.call_id
                    calls[key] = {"call_id": item.call_id, "name": item.name, "arguments": item.arguments or ""}
                    order.append(key)
                elif kind == "response.function_call_arguments.delta":
                    if event.item_id in calls:
                        calls[event.item_id]["arguments"] += event.delta
                elif kind == "response.function_call_arguments.done":
                    if event.item_id in calls:
                        calls[event.item_id]["arguments"] = event.arguments
                elif kind == "response.output_item.done" and getattr(event.item, "type", "") == "function_call":
                    item = event.item
                    key = item.id or item.call_id
                    if key not in calls:
                        order.append(key)
                    calls[key] = {"call_id": item.call_id, "name": item.name, "arguments": item.arguments or ""}
                elif kind in ("response.completed", "response.incomplete"):
                    response = event.response
                    model = getattr(response, "model", None) or model
                    if response.usage is not None:
                        usage = _usage(response.usage)
                    stop = "completed"
                    details = getattr(response, "incomplete_details", None)
                    if kind == "response.incomplete" and details is not None:
                        stop = "length" if details.reason == "max_output_tokens" else str(details.reason)
                elif kind == "response.failed":
                    error = getattr(event.response, "error", None)
                    message = getattr(error, "message", None) or "the response failed"
                    raise ProviderError(PROVIDER, f"openai: {message}")
                elif kind == "error":
                    raise ProviderError(PROVIDER, f"openai: {getattr(event, 'message', 'stream error')}")
        except ProviderError:
            raise
        except Exception as exc:
            raise provider_error(exc, self.name, self.base_url, self._key_source, self.secrets(),
                                 streaming=started, timeout_s=self._timeout_s) from exc
        if not stop:
            raise cut_off(self.name, "ended the stream before response.completed")
        if refusal and not text:
            raise ProviderError(REFUSED, f"the model refused: {''.join(refusal)[:300]}")
        if stop == "content_filter":
            raise ProviderError(REFUSED, "openai stopped the reply with its content filter")
        tool_calls = []
        for key in order:
            entry = calls[key]
            arguments, error = parse_arguments(entry["arguments"])
            tool_calls.append(ToolCall(id=entry["call_id"], name=entry["name"], arguments=arguments,
                                       raw_arguments=entry["arguments"], argument_error=error))
        return ModelReply(text="".join(text), tool_calls=tool_calls, usage=usage, stop_reason=stop, model=model)

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _usage(raw: Any) -> Usage:
    details = getattr(raw, "input_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(input_tokens=int(raw.input_tokens or 0), output_tokens=int(raw.output_tokens or 0),
                 cache_read_tokens=int(cached))
