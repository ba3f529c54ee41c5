"""Auto mode's conversation stays the same size: a 300-line kernel, 20 iterations, the real SDKs on loopback.

Each iteration the model proposes the whole file (a change the trial reverts) and comments on the
trial. The requests the server receives are measured: a settled iteration's requests are as large
as the second iteration's, within 20 %, because decided iterations are folded into one line each
(their proposals' sources replaced by the version's hash and verdict) and the brief carries the
current file once. The model reads any version back with ``read_version``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.core.agent.auto import AutoLimits
from kerneltui.core.agent.providers.anthropic_messages import AnthropicProvider
from kerneltui.core.agent.providers.openai_chat import OpenAIChatProvider
from kerneltui.core.task import source_hash
from tests.integration.agent_helpers import make_chat
from tests.llm_server import LLMServer, Recorded, anthropic_stream, openai_chat_stream

ITERATIONS = 20
KEY = "sk-test-abcdefgh12345678"


def long_kernel(base: str, lines: int = 300) -> str:
    """vector_add's kernel grown to ``lines`` lines with helper functions nobody calls."""
    helpers = []
    n = 0
    while len((base + "\n".join(helpers)).splitlines()) < lines:
        helpers.append(f"\n\ndef _unused_helper_{n}(a, b):\n    # a helper the kernel does not call\n"
                       f"    return a * {n} + b")
        n += 1
    return base.rstrip() + "\n" + "\n".join(helpers) + "\n"


def variant(text: str, i: int) -> str:
    """A proposal the trial rejects: the kernel calls torch's own add (a library op)."""
    return text.replace("return out", f"return torch.add(x, y)  # attempt {i}")


def provider_for(kind: str, server: LLMServer):
    if kind == "openai":
        return OpenAIChatProvider("gpt-test", KEY, "env OPENAI_API_KEY", base_url=server.url + "/v1",
                                  max_retries=0, timeout_s=20)
    return AnthropicProvider("claude-test", KEY, "env ANTHROPIC_API_KEY", base_url=server.url, max_retries=0,
                             timeout_s=20)


def propose_reply(kind: str, i: int, source: str):
    arguments = json.dumps({"rationale": f"attempt {i}: add through torch", "source": source})
    if kind == "openai":
        return openai_chat_stream(text=[f"Attempt {i}."], tool_calls=[(f"call_{i}", "propose_edit", [arguments])])
    return anthropic_stream(text=[f"Attempt {i}."], tool_uses=[(f"toolu_{i}", "propose_edit", [arguments])])


def text_reply(kind: str, text: str):
    return openai_chat_stream(text=[text]) if kind == "openai" else anthropic_stream(text=[text])


def cache_marks(body: dict) -> list[str]:
    """Where a request's cache_control marks are: "system", and "message N" for the conversation."""
    marks = []
    system = body.get("system")
    if isinstance(system, list) and any("cache_control" in block for block in system):
        marks.append("system")
    for n, message in enumerate(body.get("messages", [])):
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and "cache_control" in b for b in content):
            marks.append(f"message {n}")
    return marks


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_request_size_stays_flat_over_twenty_iterations(example_task, tmp_path: Path, kind: str):
    task_dir = example_task("vector_add")
    kernel = task_dir / "kernel.py"
    text = long_kernel(kernel.read_text())
    kernel.write_text(text)
    assert len(text.splitlines()) >= 300
    server = LLMServer().start()
    for i in range(1, ITERATIONS + 1):
        server.push(propose_reply(kind, i, variant(text, i)), text_reply(kind, f"The trial of attempt {i} failed."))
    session, _, _ = make_chat(task_dir, [], tmp_path, provider=provider_for(kind, server), trial_rungs="prechecks")
    try:
        result = await session.run_auto("make it correct", AutoLimits(iterations=ITERATIONS))
    finally:
        await session.close()
        server.stop()
    requests: list[Recorded] = server.requests
    assert result.iterations == ITERATIONS and len(result.reverted) == ITERATIONS, result.stop_reason
    assert len(requests) == 2 * ITERATIONS
    briefs = [r.size for r in requests[0::2]]  # each iteration's first request: the brief
    after_trials = [r.size for r in requests[1::2]]  # its second: the trial's result
    for sizes in (briefs, after_trials):
        low, high = 0.8 * sizes[1], 1.2 * sizes[1]
        assert all(low <= size <= high for size in sizes[1:]), sizes
    assert max(after_trials) < 2.5 * len(text.encode())  + 30_000, after_trials  # one copy of the file, not twenty
    last = json.dumps(requests[-1].body)
    # The folded iterations name their versions; the proposals' texts are gone from the conversation.
    assert f"p3 {source_hash(variant(text, 3))[:12]} reverted: prechecks failed" in last
    assert "# attempt 3" not in last
    assert "# attempt 20" in last  # the open iteration keeps its proposal
    if kind == "anthropic":
        # Caching as before: the system prompt and the conversation's last block carry the marks.
        for request in requests:
            marks = cache_marks(request.body)
            assert marks[0] == "system" and marks[-1] == f"message {len(request.body['messages']) - 1}"
            assert len(marks) == 2


async def test_read_version_returns_a_folded_proposal(example_task, tmp_path: Path):
    task_dir = example_task("vector_add")
    text = (task_dir / "kernel.py").read_text()
    wrong = variant(text, 1)
    server = LLMServer().start()
    server.push(propose_reply("openai", 1, wrong), text_reply("openai", "It failed."))
    session, _, _ = make_chat(task_dir, [], tmp_path, provider=provider_for("openai", server), trial_rungs="prechecks")
    try:
        await session.run_auto("make it correct", AutoLimits(iterations=1))
        from kerneltui.core.agent.conversation import ToolCall
        from kerneltui.core.agent.tools import run_tool

        found = await run_tool(session, ToolCall("c1", "read_version", {"version": source_hash(wrong)[:8]}), "t")
        missing = await run_tool(session, ToolCall("c2", "read_version", {"version": "0123abcd"}), "t")
    finally:
        await session.close()
        server.stop()
    assert found.ok and "# attempt 1" in found.output and f"version {source_hash(wrong)}" in found.output
    assert not missing.ok and "no version 0123abcd" in missing.output
