"""`kerneltui ask` end to end: the scripted demo, --apply, --json, --auto, and provider failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.paths import package_dir
from tests.conftest import ROOT, run_cli
from tests.llm_server import LLMServer, anthropic_error, openai_chat_stream, openai_error

DEMO = package_dir() / "data" / "agent" / "vector_add_demo.toml"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No user config, a private cache, one seed per case in trials, and no keys unless a test adds one."""
    return {"KERNELTUI_CONFIG": str(tmp_path / "no-config.toml"), "KERNELTUI_CACHE_DIR": str(tmp_path / "cache"),
            "KERNELTUI_AGENT_TRIAL_SEEDS": "1", "KERNELTUI_AGENT_MAX_RETRIES": "0",
            "KERNELTUI_AGENT_CONTEXT_DIR": str(ROOT / "context"),
            "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}


def test_scripted_demo_prints_the_turn_and_applies_nothing(example_task, env):
    task = example_task("vector_add")
    before = (task / "kernel.py").read_text()
    proc = run_cli("ask", str(task), "make it faster", "--provider", "scripted", "--script", str(DEMO), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "scripted replay" in out and "(scripted) I'll read the kernel" in out
    assert "→ read_file('kernel.py')  ok" in out and "→ latest_results()  ok  PASS" in out
    assert "→ search_context('BLOCK_SIZE num_warps memory-bound')  ok" in out
    assert "proposal p1 (trial_done)" in out and "+    BLOCK = 4096" in out and "[correctness] ok" in out
    assert "nothing applied to kernel.py" in out and "tokens: 14,800 in · 275 out · $0.0000" in out
    assert (task / "kernel.py").read_text() == before


def test_apply_and_json(example_task, env):
    task = example_task("vector_add")
    proc = run_cli("ask", str(task), "make it faster", "--provider", "scripted", "--script", str(DEMO),
                   "--apply", "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["applied"] == ["p1"] and data["kernel_changed"] is True
    assert data["provider"] == "scripted" and data["usage"]["input_tokens"] == 14_800
    p1 = data["proposals"][0]
    assert p1["state"] == "accepted" and p1["trial"]["correct"] is True
    assert [c["name"] for c in data["tool_calls"]] == ["read_file", "latest_results", "search_context", "propose_edit"]
    assert "BLOCK = 4096" in (task / "kernel.py").read_text()


def test_auto_without_apply_keeps_the_file(example_task, env, tmp_path):
    task = example_task("vector_add")
    kernel = task / "kernel.py"
    good = kernel.read_text()
    kernel.write_text(good.replace("x + y, mask=mask", "x - y, mask=mask"))
    script = tmp_path / "auto.json"
    script.write_text(json.dumps({"name": "fix", "turns": [
        {"text": "Fixing the sign.", "tool_calls": [{"name": "propose_edit", "arguments": {
            "rationale": "add, not subtract", "source": good}}]},
        {"text": "Done."},
    ]}))
    proc = run_cli("ask", str(task), "make it correct", "--provider", "scripted", "--script", str(script),
                   "--auto", "2", "--json", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["auto"]["kept"] == ["p1"] and data["kernel_changed"] is False
    assert "+    tl.store(out_ptr + offs, x + y, mask=mask)" in data["final_diff"]
    assert "x - y" in kernel.read_text()  # without --apply the best version is only printed


def test_no_key_is_one_line_and_exit_3(example_task, env):
    proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", "anthropic", env=env)
    assert proc.returncode == 3
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kerneltui ask: no_key: no API key for anthropic")
    assert "ANTHROPIC_API_KEY" in lines[0]


@pytest.mark.parametrize(("reply", "kind"), [
    (openai_error(401, "Incorrect API key provided: sk-live-abcd****wxyz.", "invalid_api_key"), "auth"),
    (openai_error(429, "Rate limit reached for requests", "rate_limit_exceeded", "requests"), "rate_limit"),
])
def test_openai_errors_exit_3_without_the_key(example_task, env, reply, kind):
    server = LLMServer().start()
    try:
        server.push(reply)
        env = dict(env, OPENAI_API_KEY="sk-live-abcdefghijklmnopwxyz")
        proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", "openai", "--model", "gpt-test",
                       "--base-url", server.url + "/v1", env=env)
    finally:
        server.stop()
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kerneltui ask: {kind}: ")
    assert "sk-live-abcd" not in proc.stderr + proc.stdout


def test_anthropic_rate_limit_with_json(example_task, env):
    server = LLMServer().start()
    try:
        server.push(anthropic_error(429, "rate_limit_error", "Number of request tokens has exceeded your limit"))
        env = dict(env, ANTHROPIC_API_KEY="sk-ant-test-0123456789")
        proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", "anthropic",
                       "--base-url", server.url, "--json", env=env)
    finally:
        server.stop()
    assert proc.returncode == 3
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["error"]["kind"] == "rate_limit"
    assert "exceeded your limit" in data["error"]["message"]


def test_no_network_exit_3(example_task, env):
    env = dict(env, OPENAI_API_KEY="sk-test-0123456789")
    proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", "openai",
                   "--base-url", "http://127.0.0.1:9/v1", env=env)
    assert proc.returncode == 3
    assert proc.stderr.startswith("kerneltui ask: network: cannot reach openai at http://127.0.0.1:9/v1")


def test_a_real_sdk_turn_through_the_cli(example_task, env):
    server = LLMServer().start()
    try:
        server.push(openai_chat_stream(text=["The kernel ", "looks fine."], usage=(1_000_000, 100_000, 0)))
        env = dict(env, OPENAI_API_KEY="sk-test-0123456789")
        proc = run_cli("ask", str(example_task("vector_add")), "review it", "--provider", "openai", "--model",
                       "gpt-5", "--base-url", server.url + "/v1", env=env)
        body = server.requests[0].body
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    assert "The kernel looks fine." in proc.stdout
    assert "tokens: 1,000,000 in · 100,000 out · $2.2500" in proc.stdout  # gpt-5: $1.25 in, $10 out per million
    assert body["model"] == "gpt-5" and "vector_add" in body["messages"][0]["content"]


def test_usage_errors(example_task, env):
    task = str(example_task("vector_add"))
    proc = run_cli("ask", task, "hi", "--target", "90", env=env)
    assert proc.returncode == 2 and "add --auto N" in proc.stderr
    proc = run_cli("ask", task, "hi", "--provider", "gemini", env=env)
    assert proc.returncode == 3 and "unknown agent provider 'gemini'" in proc.stderr
