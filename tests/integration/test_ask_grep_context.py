"""`kerneltui ask`: the scripted agent asks grep_context for a function of the installed triton and gets its
signature with file and line."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kerneltui.core.agent.search.installed import installed_packages
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")


def test_the_agent_greps_the_installed_triton_for_a_signature(example_task, tmp_path: Path):
    triton = next(p for p in installed_packages() if p.name == "triton")
    core = (triton.root / "language" / "core.py").read_text().splitlines()
    line = next(n for n, text in enumerate(core, 1) if text.startswith("def program_id("))
    expected = f"installed/triton/language/core.py:{line}: {core[line - 1]}"
    script = tmp_path / "grep.json"
    script.write_text(
        json.dumps(
            {
                "name": "grep",
                "turns": [
                    {
                        "text": "Where is program_id defined, and how is it called?",
                        "tool_calls": [
                            {
                                "name": "grep_context",
                                "arguments": {"pattern": r"def program_id\(", "source": "triton"},
                            }
                        ],
                    },
                    # the provider refuses to go on unless the tool's output holds the signature with its file and line
                    {"text": "Found it.", "expect": expected},
                ],
            }
        )
    )
    env = {
        "KERNELTUI_CONFIG": str(tmp_path / "no-config.toml"),
        "KERNELTUI_CACHE_DIR": str(tmp_path / "cache"),
        "KERNELTUI_AGENT_CONTEXT_DIR": str(ROOT / "context"),
        "KERNELTUI_ENGINE_ENABLED": "0",
        "OPENAI_API_KEY": "",
        "ANTHROPIC_API_KEY": "",
    }
    task = example_task("vector_add")
    proc = run_cli(
        "ask",
        str(task),
        "how do I get the program id?",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--json",
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    [call] = data["tool_calls"]
    assert call["name"] == "grep_context" and call["ok"], call
    assert " matches in " in call["summary"], call
    assert "Found it." in data["reply"]
