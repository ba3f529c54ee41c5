"""A provider that replays recorded turns from a file: for tests and the offline demo.

No model is called, and every reply says so (it starts with "(scripted)"). A script is JSON or
TOML::

    name = "vector_add demo"
    chunk_delay_s = 0.02          # optional: pause between streamed pieces (for the demo)

    [[turns]]                     # one entry per model request, in order
    text = "Let me read the kernel first."   # a string (streamed in pieces) or a list of pieces
    expect = "kernel.py"          # optional: the last message sent must contain this
    usage = { input_tokens = 1200, output_tokens = 40 }   # optional, default 0 (nothing was spent)
    [[turns.tool_calls]]
    name = "read_file"
    arguments = { path = "kernel.py" }

When the script runs out, the reply says so and makes no tool call.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltui.core.agent.conversation import ModelReply, ModelRequest, ToolArguments, ToolCall, Usage
from kerneltui.core.agent.errors import CONFIG, SCRIPT, ProviderError
from kerneltui.core.agent.providers.base import TextSink, WaitSink

PREFIX = "(scripted) "


@dataclass
class ScriptTurn:
    text: list[str]
    tool_calls: list[tuple[str, ToolArguments]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    expect: str | None = None


@dataclass
class Script:
    name: str
    turns: list[ScriptTurn]
    chunk_delay_s: float = 0.0
    source: str = ""

    @classmethod
    def load(cls, path: str | Path) -> Script:
        p = Path(path).expanduser()
        if not p.is_file():
            raise ProviderError(CONFIG, f"no agent script at {p}: give a .json or .toml file of turns "
                                        f"([agent] script or --script)")
        try:
            raw = tomllib.loads(p.read_text(encoding="utf-8")) if p.suffix == ".toml" else \
                json.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            raise ProviderError(CONFIG, f"{p}: the agent script is not valid {p.suffix[1:].upper()}: {exc}") from exc
        return cls.from_dict(raw, source=str(p))

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str = "(inline)") -> Script:
        turns: list[ScriptTurn] = []
        for i, item in enumerate(raw.get("turns", [])):
            where = f"{source}: turn {i + 1}"
            if not isinstance(item, dict):
                raise ProviderError(CONFIG, f"{where} must be a table")
            text = item.get("text", "")
            pieces = [text[j:j + 24] for j in range(0, len(text), 24)] if isinstance(text, str) else [str(t) for t in text]
            calls: list[tuple[str, ToolArguments]] = []
            for call in item.get("tool_calls", []):
                if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                    raise ProviderError(CONFIG, f"{where}: every tool call needs a name")
                arguments = call.get("arguments", {})
                if not isinstance(arguments, dict):
                    raise ProviderError(CONFIG, f"{where}: the arguments of {call['name']} must be a table")
                calls.append((call["name"], arguments))
            u = item.get("usage", {})
            usage = Usage(input_tokens=int(u.get("input_tokens", 0)), output_tokens=int(u.get("output_tokens", 0)))
            turns.append(ScriptTurn(text=pieces, tool_calls=calls, usage=usage, expect=item.get("expect")))
        return cls(name=str(raw.get("name", Path(source).stem)), turns=turns,
                   chunk_delay_s=float(raw.get("chunk_delay_s", 0.0)), source=source)


class ScriptedProvider:
    def __init__(self, script: Script) -> None:
        self.name = "scripted"
        self.model = "scripted"
        self.script = script
        self.position = 0
        self.requests: list[ModelRequest] = []  # what was sent, for tests and the demo's transcript

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedProvider:
        return cls(Script.load(path))

    def describe(self) -> str:
        return f"scripted replay of {self.script.name} ({len(self.script.turns)} turns) — no model is called"

    def secrets(self) -> list[str]:
        return []

    def key_note(self) -> str:
        return "no API key is used (scripted replay)"

    async def complete(self, request: ModelRequest, on_text: TextSink, on_wait: WaitSink | None = None) -> ModelReply:
        self.requests.append(request)
        if self.position >= len(self.script.turns):
            text = PREFIX + f"The script {self.script.name!r} has no more turns."
            on_text(text)
            return ModelReply(text=text, tool_calls=[], usage=Usage(), stop_reason="end_of_script", model=self.model)
        turn = self.script.turns[self.position]
        number = self.position + 1
        self.position += 1
        if turn.expect is not None:
            last = _last_sent(request)
            if turn.expect not in last:
                raise ProviderError(SCRIPT, f"script {self.script.name!r} turn {number} expected the last message to "
                                            f"contain {turn.expect!r}, but it was: {last[:300]!r}")
        pieces = [PREFIX, *turn.text]
        for piece in pieces:
            if self.script.chunk_delay_s:
                await asyncio.sleep(self.script.chunk_delay_s)
            on_text(piece)
        calls = [ToolCall(id=f"script_{number}_{i}", name=name, arguments=dict(arguments),
                          raw_arguments=json.dumps(arguments))
                 for i, (name, arguments) in enumerate(turn.tool_calls)]
        usage = Usage(input_tokens=turn.usage.input_tokens, output_tokens=turn.usage.output_tokens)
        return ModelReply(text="".join(pieces), tool_calls=calls, usage=usage,
                          stop_reason="tool_use" if calls else "end_turn", model=self.model)

    async def close(self) -> None:
        return None


def _last_sent(request: ModelRequest) -> str:
    if not request.messages:
        return ""
    last = request.messages[-1]
    if last.role == "tool":
        return "\n".join(r.content for r in last.tool_results)
    return last.text
