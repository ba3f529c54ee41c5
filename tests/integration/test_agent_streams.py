"""Streams that cannot be trusted, and prompt caching, with the real openai and anthropic SDKs on loopback.

A reply is whole only when its end marker arrives (OpenAI: ``finish_reason``; Responses:
``response.completed``; Anthropic: ``message_stop``). A body that ends before it, or a connection
closed mid-stream, is "the reply was cut off" for every provider: asked again once, then reported;
a half-streamed tool call never runs.
"""

from __future__ import annotations

import json

import pytest

from kerneltui.core.agent.errors import CUT_OFF, ProviderError
from kerneltui.core.agent.providers.anthropic_messages import AnthropicProvider
from kerneltui.core.agent.providers.openai_chat import OpenAIChatProvider
from kerneltui.core.agent.providers.openai_responses import OpenAIResponsesProvider
from kerneltui.core.events import AgentError, Notice, ToolCallFinished, ToolCallStarted
from tests.integration.agent_helpers import make_chat
from tests.integration.test_agent_providers import KEY, request
from tests.llm_server import (
    SSE,
    LLMServer,
    anthropic_stream,
    dropped,
    openai_chat_stream,
    openai_responses_stream,
    truncated,
    without_marks,
)


@pytest.fixture
def server():
    s = LLMServer().start()
    yield s
    s.stop()


def openai_provider(server: LLMServer) -> OpenAIChatProvider:
    return OpenAIChatProvider("gpt-test", KEY, "env OPENAI_API_KEY", base_url=server.url + "/v1", max_retries=0,
                              timeout_s=10)


def anthropic_provider(server: LLMServer) -> AnthropicProvider:
    return AnthropicProvider("claude-test", KEY, "env ANTHROPIC_API_KEY", base_url=server.url, max_retries=0,
                             timeout_s=10)


def sdk_provider(kind: str, server: LLMServer) -> OpenAIChatProvider | AnthropicProvider:
    return openai_provider(server) if kind == "openai" else anthropic_provider(server)


READ = ('call_1', 'read_file', ['{"path": ', '"kernel.py"}'])


def read_call(kind: str, usage: tuple[int, int] = (100, 20)) -> SSE:
    """A reply streaming some text and then a read_file call, as each API streams it."""
    if kind == "openai":
        return openai_chat_stream(text=["Reading."], tool_calls=[READ], usage=(*usage, 0))
    return anthropic_stream(text=["Reading."], tool_uses=[READ], usage=usage)


def text_reply(kind: str, text: str = "Done.", usage: tuple[int, int] = (100, 20), cached: int = 0) -> SSE:
    if kind == "openai":
        return openai_chat_stream(text=[text], usage=(*usage, cached))
    return anthropic_stream(text=[text], usage=usage, cache=(cached, 0))


async def one_turn(provider, example_task, tmp_path):
    """A session on vector_add with ``provider``, one turn asking it to read the kernel."""
    session, rec, _ = make_chat(example_task("vector_add"), [], tmp_path, provider=provider)
    try:
        turn = await session.send("read the kernel")
    finally:
        await session.close()
    return session, rec, turn


async def failure(provider) -> ProviderError:
    """The error a request to the queued reply ends with."""
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None)
    await provider.close()
    return info.value


def first_argument_piece(reply: SSE) -> int:
    """How many events to keep so the stream stops inside the tool call's arguments."""
    for n, (_, data) in enumerate(reply.events):
        if json.dumps('{"path": ')[1:-1] in json.dumps(data):
            return n + 1
    raise AssertionError("no argument piece in the stream")


# -- each provider on its own ---------------------------------------------------------------------

FAULTS = {"truncated": truncated, "dropped": dropped}
END_MARKERS = {"openai": "its finish_reason", "anthropic": "message_stop"}


@pytest.mark.parametrize("fault", ["truncated", "dropped"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_stream_cut_short_is_cut_off(server, kind, fault):
    """The body ends cleanly before its end marker, or the connection closes inside a tool call's arguments."""
    whole = read_call(kind)
    server.push(FAULTS[fault](whole, first_argument_piece(whole)))
    provider = sdk_provider(kind, server)
    error = await failure(provider)
    assert error.kind == CUT_OFF
    if fault == "truncated":
        assert error.message == f"the reply was cut off: {provider.name} ended the stream before {END_MARKERS[kind]}"
    else:
        assert error.message.startswith(f"the reply was cut off: {provider.name} closed the connection mid-stream (")


async def test_anthropic_stream_ending_after_message_delta_is_cut_off(server):
    # Everything but message_stop: the output tokens of message_delta arrived, the end marker did not.
    whole = anthropic_stream(text=["Hello."], usage=(300, 60))
    server.push(truncated(whole, len(whole.events) - 1))
    provider = anthropic_provider(server)
    error = await failure(provider)
    assert error.kind == CUT_OFF and error.usage is not None
    assert error.usage.input_tokens == 300  # what message_start reported is still counted


async def test_responses_stream_without_completed_is_cut_off(server):
    whole = openai_responses_stream(text=["Reading."], tool_calls=[READ])
    server.push(truncated(whole, len(whole.events) - 1))
    provider = OpenAIResponsesProvider("gpt-test", KEY, "env OPENAI_API_KEY", base_url=server.url + "/v1",
                                       max_retries=0, timeout_s=10)
    error = await failure(provider)
    assert error.kind == CUT_OFF and "before response.completed" in error.message


# -- in a session: asked again once, and a partial tool call never runs ---------------------------

@pytest.mark.parametrize("fault", ["truncated", "dropped"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_cut_reply_is_asked_again_then_the_turn_goes_on(server, example_task, tmp_path, kind, fault):
    whole = read_call(kind)
    cut = FAULTS[fault](whole, first_argument_piece(whole))
    server.push(cut, read_call(kind), text_reply(kind))
    session, rec, turn = await one_turn(sdk_provider(kind, server), example_task, tmp_path)
    assert turn.error is None and turn.requests == 2 and len(server.requests) == 3
    started = rec.of(ToolCallStarted)
    assert [(e.name, e.arguments) for e in started] == [("read_file", {"path": "kernel.py"})]
    assert all(e.ok for e in rec.of(ToolCallFinished))
    notices = [e.message for e in rec.of(Notice)]
    assert any(m.startswith("the reply was cut off: ") and m.endswith("; asking again (once)") for m in notices)
    # The second request is the first one again: nothing of the cut reply entered the conversation.
    assert server.requests[1].body["messages"] == server.requests[0].body["messages"]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_reply_cut_twice_is_reported_and_nothing_runs(server, example_task, tmp_path, kind):
    whole = read_call(kind)
    keep = first_argument_piece(whole)
    server.push(truncated(whole, keep), dropped(whole, keep))
    session, rec, turn = await one_turn(sdk_provider(kind, server), example_task, tmp_path)
    assert turn.error is not None and turn.error.kind == CUT_OFF
    assert turn.error.message.startswith("the reply was cut off: ")
    assert turn.error.message.endswith("it was asked again once, and that reply was cut off too")
    assert not rec.of(ToolCallStarted) and len(server.requests) == 2
    assert [e.kind for e in rec.of(AgentError)] == [CUT_OFF]
    assert session.meter.cut_off == 2


# -- prompt caching -------------------------------------------------------------------------------

async def test_anthropic_caches_the_stable_prefix_and_counts_cache_tokens(server, example_task, tmp_path):
    server.push(anthropic_stream(text=["Reading."], tool_uses=[READ], usage=(3000, 30), cache=(0, 2500)),
                anthropic_stream(text=["Done."], usage=(400, 10), cache=(2600, 150)))
    session, _, _ = await one_turn(anthropic_provider(server), example_task, tmp_path)
    first, second = (r.body for r in server.requests)
    assert first["system"] == second["system"] and first["tools"] == second["tools"]
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "Element-wise sum" in first["system"][0]["text"]  # the task is in the cached prefix
    # The conversation only grows: the first request's messages start the second's.
    assert without_marks(second["messages"])[:len(first["messages"])] == without_marks(first["messages"])
    assert second["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    meter = session.meter
    assert (meter.cache_read_tokens, meter.cache_write_tokens, meter.cache_hits) == (2600, 2650, 1)
    assert meter.uncached_tokens == 3000 + 400
    line = meter.describe()
    assert "(3,400 uncached · 2,600 cached · 2,650 written to the cache)" in line
    assert "cache hits in 1 of 2 request(s)" in line


async def test_openai_keeps_a_stable_prefix_and_reads_cached_tokens(server, example_task, tmp_path):
    server.push(read_call("openai", usage=(3000, 30)), text_reply("openai", usage=(3100, 10), cached=2944))
    session, _, _ = await one_turn(openai_provider(server), example_task, tmp_path)
    first, second = (r.body for r in server.requests)
    assert first["prompt_cache_key"] == second["prompt_cache_key"] == session.cache_key
    assert first["tools"] == second["tools"] and first["messages"][0]["role"] == "system"
    assert second["messages"][:len(first["messages"])] == first["messages"]
    assert session.meter.cache_read_tokens == 2944 and session.meter.cache_hits == 1
    assert "(3,156 uncached · 2,944 cached)" in session.meter.describe()


async def test_compatible_servers_get_no_cache_key(server):
    server.push(openai_chat_stream(text=["hi"]))
    provider = OpenAIChatProvider("qwen", "not-needed", "none (local server)", base_url=server.url + "/v1",
                                  compatible=True, max_retries=0, timeout_s=10)
    req = request()
    req.cache_key = "kerneltui-abc"
    await provider.complete(req, lambda _: None)
    await provider.close()
    assert "prompt_cache_key" not in server.requests[0].body


async def test_a_rate_limit_is_retried_after_the_servers_wait_and_said_as_it_starts(server):
    from tests.integration.test_agent_providers import request
    from tests.llm_server import openai_error

    provider = OpenAIChatProvider("gpt-test", KEY, "env OPENAI_API_KEY", base_url=server.url + "/v1", max_retries=1,
                                  timeout_s=10)
    waits: list[str] = []
    server.push(openai_error(429, "slow down", "rate_limit_exceeded", headers={"retry-after": "0"}),
                openai_chat_stream(text=["hi"]))
    reply = await provider.complete(request(), lambda _: None, waits.append)
    assert reply.text == "hi" and len(server.requests) == 2
    assert waits == ["rate limited by openai (429), retrying in 0 s (2/2) — [agent] max_retries"]
    # A wait longer than a person would sit through is not waited out: the failure says so at once.
    server.push(openai_error(429, "slow down", "rate_limit_exceeded", headers={"retry-after": "3600"}))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request(), lambda _: None, waits.append)
    await provider.close()
    assert len(server.requests) == 3 and len(waits) == 1
    assert "retry after 3600 s" in info.value.message and "(1 try; [agent] max_retries" in info.value.message
