"""The scripted provider replays recorded turns and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltui.core.agent.conversation import Message, ModelRequest
from kerneltui.core.agent.errors import CONFIG, SCRIPT, ProviderError
from kerneltui.core.agent.providers.scripted import PREFIX, Script, ScriptedProvider
from kerneltui.paths import package_dir


def req(text: str) -> ModelRequest:
    return ModelRequest(system="s", messages=[Message("user", text)], tools=[])


async def test_replays_turns_in_order_and_labels_them(tmp_path: Path):
    path = tmp_path / "s.json"
    path.write_text('{"name": "t", "turns": [{"text": ["Hel", "lo"], "usage": {"input_tokens": 5, "output_tokens": 2},'
                    ' "tool_calls": [{"name": "read_file", "arguments": {"path": "kernel.py"}}]},'
                    ' {"text": "second", "expect": "file text"}]}')
    provider = ScriptedProvider.from_file(path)
    pieces: list[str] = []
    first = await provider.complete(req("hi"), pieces.append)
    assert pieces == [PREFIX, "Hel", "lo"] and first.text == PREFIX + "Hello"
    assert first.tool_calls[0].name == "read_file" and first.tool_calls[0].arguments == {"path": "kernel.py"}
    assert first.usage.input_tokens == 5 and first.stop_reason == "tool_use"
    second = await provider.complete(req("here is the file text"), lambda _: None)
    assert second.text == PREFIX + "second" and not second.tool_calls
    done = await provider.complete(req("more?"), lambda _: None)
    assert "no more turns" in done.text and "scripted replay" in provider.describe()


async def test_expectation_mismatch_is_a_script_error():
    provider = ScriptedProvider(Script.from_dict({"turns": [{"text": "x", "expect": "rejected"}]}))
    with pytest.raises(ProviderError) as info:
        await provider.complete(req("accepted"), lambda _: None)
    assert info.value.kind == SCRIPT and "expected" in info.value.message


def test_bad_scripts_are_config_errors(tmp_path: Path):
    with pytest.raises(ProviderError) as info:
        Script.load(tmp_path / "missing.toml")
    assert info.value.kind == CONFIG
    bad = tmp_path / "bad.toml"
    bad.write_text("[[turns]]\ntool_calls = [{ arguments = {} }]\n")
    with pytest.raises(ProviderError, match="needs a name"):
        Script.load(bad)


def test_the_shipped_demo_script_loads():
    script = Script.load(package_dir() / "data" / "agent" / "vector_add_demo.toml")
    assert len(script.turns) == 6 and script.turns[2].tool_calls[0][0] == "propose_edit"
