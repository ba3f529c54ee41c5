"""The real openai and anthropic SDK clients against a loopback server speaking their wire formats."""

from __future__ import annotations

import json

import pytest

from kerneltui.core.agent.conversation import Message, ModelRequest, ToolCall, ToolResult, ToolSpec
from kerneltui.core.agent.errors import AUTH, NETWORK, PROVIDER, RATE_LIMIT, REFUSED, ProviderError
from kerneltui.core.agent.providers import build_provider
from kerneltui.core.agent.providers.anthropic_messages import AnthropicProvider
from kerneltui.core.agent.providers.openai_chat import OpenAIChatProvider
from kerneltui.core.agent.providers.openai_responses import OpenAIResponsesProvider
from kerneltui.core.agent.settings import AgentSettings
from tests.llm_server import (
    LLMServer,
    anthropic_error,
    anthropic_stream,
    openai_chat_stream,
    openai_error,
    openai_responses_stream,
)

KEY = "sk-test-abcdefgh12345678"
TOOLS = [ToolSpec("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}},
                                               "required": ["path"]})]


@pytest.fixture
def server():
    s = LLMServer().start()
    yield s
    s.stop()


def request(*messages: Message) -> ModelRequest:
    return ModelRequest(system="be brief", messages=list(messages) or [Message("user", "hi")], tools=TOOLS,
                        max_tokens=512)


def conversation() -> list[Message]:
    return [
        Message("user", "read the kernel"),
        Message("assistant", "Reading it.", tool_calls=[ToolCall("call_1", "read_file", {"path": "kernel.py"})]),
        Message("tool", tool_results=[ToolResult("call_1", "read_file", "1  import torch")]),
        Message("user", "Decision on proposal p1: rejected"),
    ]


def openai(server: LLMServer, retries: int = 0, compatible: bool = False) -> OpenAIChatProvider:
    return OpenAIChatProvider("gpt-test", KEY, "env OPENAI_API_KEY", base_url=server.url + "/v1",
                              compatible=compatible, max_retries=retries, timeout_s=10)


def anthropic(server: LLMServer, retries: int = 0) -> AnthropicProvider:
    return AnthropicProvider("claude-test", KEY, "env ANTHROPIC_API_KEY", base_url=server.url,
                             max_retries=retries, timeout_s=10)


# -- OpenAI chat ------------------------------------------------------------------------------------

async def test_openai_chat_streams_text_tool_calls_and_usage(server):
    server.push(openai_chat_stream(text=["Let me ", "look."],
                                   tool_calls=[("call_7", "read_file", ['{"pa', 'th": "kernel.py"}'])],
                                   usage=(1200, 35, 1000)))
    pieces: list[str] = []
    provider = openai(server)
    reply = await provider.complete(request(), pieces.append)
    await provider.close()
    assert pieces == ["Let me ", "look."]
    assert reply.text == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call_7", "read_file", {"path": "kernel.py"})]
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.cache_read_tokens) == (1200, 35, 1000)
    assert reply.usage.reported and reply.stop_reason == "tool_calls"
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 512 and "max_tokens" not in body
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["tools"][0]["function"]["name"] == "read_file"


async def test_openai_chat_sends_tool_results_back(server):
    server.push(openai_chat_stream(text=["ok"]))
    provider = openai(server)
    await provider.complete(request(*conversation()), lambda _: None)
    await provider.close()
    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[2]["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"path": "kernel.py"}'}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "1  import torch"}


async def test_openai_401_is_an_auth_error_without_the_key(server):
    server.push(openai_error(401, f"Incorrect API key provided: {KEY[:20]}****5678.", "invalid_api_key"))
    provider = openai(server)
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None)
    await provider.close()
    assert info.value.kind == AUTH
    assert "401" in info.value.message and "env OPENAI_API_KEY" in info.value.message
    assert KEY[:10] not in info.value.message


async def test_openai_429_is_a_rate_limit(server):
    server.push(openai_error(429, "Rate limit reached for requests", "rate_limit_exceeded", "requests",
                             headers={"retry-after": "20"}))
    provider = openai(server)
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None)
    await provider.close()
    assert info.value.kind == RATE_LIMIT
    assert "429" in info.value.message and "retry after 20 s" in info.value.message


async def test_openai_retries_a_429_then_succeeds(server):
    server.push(openai_error(429, "slow down", "rate_limit_exceeded", headers={"retry-after-ms": "10"}),
                openai_chat_stream(text=["done"]))
    provider = openai(server, retries=2)
    reply = await provider.complete(request(), lambda _: None)
    await provider.close()
    assert reply.text == "done" and len(server.requests) == 2


async def test_openai_refusal_is_reported(server):
    server.push(openai_chat_stream(refusal="I can't help with that."))
    provider = openai(server)
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None)
    await provider.close()
    assert info.value.kind == REFUSED and "can't help" in info.value.message


async def test_openai_server_error_is_a_provider_error(server):
    server.push(openai_error(500, "boom", "server_error", "server_error"))
    provider = openai(server)
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None)
    await provider.close()
    assert info.value.kind == PROVIDER and "500" in info.value.message


async def test_network_failure_names_the_address():
    provider = OpenAIChatProvider("gpt-test", KEY, "env OPENAI_API_KEY", base_url="http://127.0.0.1:9/v1",
                                  max_retries=0, timeout_s=5)
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None)
    await provider.close()
    assert info.value.kind == NETWORK and "127.0.0.1:9" in info.value.message


async def test_compatible_server_without_usage(server):
    server.push(openai_chat_stream(text=["hi"], usage=None))
    settings = AgentSettings(provider="ollama", model="qwen2.5-coder", base_url=server.url + "/v1").normalised()
    provider = build_provider(settings, env={"OPENAI_API_KEY": KEY})
    reply = await provider.complete(request(), lambda _: None)
    await provider.close()
    assert provider.name == "openai-compatible"
    assert reply.text == "hi" and reply.usage.reported is False
    body = server.requests[0].body
    assert body["max_tokens"] == 512 and "max_completion_tokens" not in body
    # The person's OpenAI key is never sent to another server.
    assert KEY not in server.requests[0].headers.get("authorization", "")


# -- OpenAI responses -------------------------------------------------------------------------------

async def test_openai_responses_streams_text_function_calls_and_usage(server):
    server.push(openai_responses_stream(text=["Reading ", "it."],
                                        tool_calls=[("call_9", "read_file", ['{"path":', ' "kernel.py"}'])],
                                        usage=(900, 44)))
    pieces: list[str] = []
    provider = OpenAIResponsesProvider("gpt-test", KEY, "env OPENAI_API_KEY", base_url=server.url + "/v1",
                                       max_retries=0, timeout_s=10)
    reply = await provider.complete(request(*conversation()), pieces.append)
    await provider.close()
    assert "".join(pieces) == "Reading it." == reply.text
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call_9", "read_file", {"path": "kernel.py"})]
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (900, 44)
    sent = server.requests[0]
    assert sent.path == "/v1/responses"
    body = sent.body
    assert body["instructions"] == "be brief" and body["store"] is False and body["stream"] is True
    kinds = [item.get("type", item.get("role")) for item in body["input"]]
    assert kinds == ["user", "assistant", "function_call", "function_call_output", "user"]
    assert body["tools"][0]["name"] == "read_file"


# -- Anthropic --------------------------------------------------------------------------------------

async def test_anthropic_streams_text_tool_use_and_usage(server):
    server.push(anthropic_stream(text=["Let me ", "read it."],
                                 tool_uses=[("toolu_1", "read_file", ['{"path": ', '"kernel.py"}'])],
                                 usage=(300, 60), cache=(1000, 200)))
    pieces: list[str] = []
    provider = anthropic(server)
    reply = await provider.complete(request(), pieces.append)
    await provider.close()
    assert pieces == ["Let me ", "read it."]
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("toolu_1", "read_file", {"path": "kernel.py"})]
    assert reply.usage.input_tokens == 1500 and reply.usage.cache_read_tokens == 1000
    assert reply.usage.cache_write_tokens == 200 and reply.usage.output_tokens == 60
    assert reply.stop_reason == "tool_use"
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert KEY in (sent.headers.get("x-api-key", "") + sent.headers.get("authorization", ""))
    # The system prompt (with the tools before it) is one cached prefix; the conversation's end another.
    assert sent.body["system"] == [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    assert sent.body["stream"] is True and sent.body["tools"][0]["input_schema"]["required"] == ["path"]
    assert sent.body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_anthropic_merges_tool_results_and_notes_into_one_user_turn(server):
    server.push(anthropic_stream(text=["ok"]))
    provider = anthropic(server)
    await provider.complete(request(*conversation()), lambda _: None)
    await provider.close()
    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][1] == {"type": "tool_use", "id": "call_1", "name": "read_file",
                                         "input": {"path": "kernel.py"}}
    last = messages[2]["content"]
    assert last[0]["type"] == "tool_result" and last[0]["tool_use_id"] == "call_1"
    assert last[1] == {"type": "text", "text": "Decision on proposal p1: rejected", "cache_control": {"type": "ephemeral"}}
    assert all("cache_control" not in block for m in messages[:2] for block in m["content"])


@pytest.mark.parametrize(("status", "kind", "expected"), [
    (401, "authentication_error", AUTH), (403, "permission_error", AUTH), (429, "rate_limit_error", RATE_LIMIT),
    (529, "overloaded_error", PROVIDER), (400, "invalid_request_error", PROVIDER),
])
async def test_anthropic_errors(server, status, kind, expected):
    server.push(anthropic_error(status, kind, f"{kind} happened", headers={"x-should-retry": "false"}))
    provider = anthropic(server)
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None)
    await provider.close()
    assert info.value.kind == expected
    assert str(status) in info.value.message and f"{kind} happened" in info.value.message


async def test_anthropic_refusal(server):
    server.push(anthropic_stream(text=["I won't do that."], stop_reason="refusal"))
    provider = anthropic(server)
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None)
    await provider.close()
    assert info.value.kind == REFUSED and "won't" in info.value.message


async def test_malformed_tool_arguments_are_kept_for_the_model(server):
    server.push(anthropic_stream(tool_uses=[("toolu_2", "read_file", ['{"path": '])]))
    provider = anthropic(server)
    reply = await provider.complete(request(), lambda _: None)
    await provider.close()
    call = reply.tool_calls[0]
    assert call.argument_error and "not valid JSON" in call.argument_error
    assert json.loads(json.dumps(call.raw_arguments)) == '{"path": '
