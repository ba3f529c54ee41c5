"""`kerneltui ask` end to end: the scripted demo, --apply, --json, --auto, and provider failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.paths import package_dir
from tests.conftest import ROOT, run_cli
from tests.integration.agent_helpers import NO_DUMP
from tests.llm_server import (
    LLMServer,
    anthropic_error,
    anthropic_stream,
    dropped,
    openai_chat_stream,
    openai_error,
    truncated,
)

DEMO = package_dir() / "data" / "agent" / "vector_add_demo.toml"


# The trials of these commands are answered by the test process's shared engine. An engine serves one
# environment for its workers, and the cache and config paths are part of it: they are shared by the file's
# tests (nothing here reads the cache; the config file does not exist), so one engine serves them all.
pytestmark = pytest.mark.usefixtures("commands_share_an_engine")


@pytest.fixture(scope="module")
def private_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ask-cli")


@pytest.fixture
def env(private_dirs: Path) -> dict[str, str]:
    """No user config, a private cache, one seed per case in trials and no dump (NO_DUMP), and no keys unless
    a test adds one."""
    return {"KERNELTUI_CONFIG": str(private_dirs / "no-config.toml"), "KERNELTUI_CACHE_DIR": str(private_dirs / "cache"),
            "KERNELTUI_AGENT_TRIAL_SEEDS": "1", "KERNELTUI_AGENT_TRIAL_RUNGS": NO_DUMP, "KERNELTUI_AGENT_MAX_RETRIES": "0",
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
    assert "nothing applied to kernel.py (use --apply" in out
    assert "tokens: 14,800 in (14,800 uncached · 0 cached) · 275 out · $0.0000" in out
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
    assert proc.returncode == 4, proc.stdout + proc.stderr  # made it correct (no benchmark: no speed claim)
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["outcome"] == "made_correct" and data["auto"]["outcome"] == "made_correct"
    assert data["auto"]["kept"] == ["p1"] and data["kernel_changed"] is False
    assert data["auto"]["stop_reason"].startswith("the kernel is correct now (p1 kept)")
    assert "+    tl.store(out_ptr + offs, x + y, mask=mask)" in data["final_diff"]
    assert "x - y" in kernel.read_text()  # without --apply the best version is only printed


def test_apply_with_no_passing_trial_says_so(example_task, env, tmp_path):
    task = example_task("vector_add")
    before = (task / "kernel.py").read_text()
    script = tmp_path / "wrong.json"
    script.write_text(json.dumps({"name": "wrong", "turns": [
        {"text": "Subtracting.", "tool_calls": [{"name": "propose_edit", "arguments": {
            "rationale": "minus", "source": before.replace("x + y, mask=mask", "x - y, mask=mask")}}]},
        {"text": "It failed."},
    ]}))
    proc = run_cli("ask", str(task), "try", "--provider", "scripted", "--script", str(script), "--apply",
                   env=dict(env, KERNELTUI_AGENT_TRIAL_RUNGS="correctness"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "p1 not applied: its trial did not pass" in proc.stdout
    assert "nothing applied to kernel.py: no proposal passed its trial" in proc.stdout
    assert "use --apply" not in proc.stdout and (task / "kernel.py").read_text() == before


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
                       "--base-url", server.url + "/v1", "--api-key-env", "OPENAI_API_KEY", env=env)
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
        env = dict(env, KERNELTUI_AGENT_API_KEY="sk-ant-test-0123456789")
        proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", "anthropic",
                       "--base-url", server.url, "--json", env=env)
    finally:
        server.stop()
    assert proc.returncode == 3
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["error"]["kind"] == "rate_limit"
    assert "exceeded your limit" in data["error"]["message"]


def test_no_network_exit_3(example_task, env):
    env = dict(env, KERNELTUI_AGENT_API_KEY="sk-test-0123456789")
    proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", "openai",
                   "--base-url", "http://127.0.0.1:9/v1", env=env)
    assert proc.returncode == 3
    assert proc.stderr.startswith("kerneltui ask: network: cannot reach openai at http://127.0.0.1:9/v1")


def test_a_real_sdk_turn_through_the_cli(example_task, env):
    server = LLMServer().start()
    try:
        server.push(openai_chat_stream(text=["The kernel ", "looks fine."], usage=(1_000_000, 100_000, 0)))
        env = dict(env, KERNELTUI_AGENT_API_KEY="sk-test-0123456789")
        proc = run_cli("ask", str(example_task("vector_add")), "review it", "--provider", "openai", "--model",
                       "gpt-5", "--base-url", server.url + "/v1", env=env)
        body = server.requests[0].body
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    assert "The kernel looks fine." in proc.stdout
    # gpt-5: $1.25 in, $10 out per million
    assert "tokens: 1,000,000 in (1,000,000 uncached · 0 cached) · 100,000 out · $2.2500" in proc.stdout
    assert body["model"] == "gpt-5" and "vector_add" in body["messages"][0]["content"]


def test_usage_errors(example_task, env):
    task = str(example_task("vector_add"))
    proc = run_cli("ask", task, "hi", "--target", "90", env=env)
    assert proc.returncode == 2 and "add --auto N" in proc.stderr
    proc = run_cli("ask", task, "hi", "--provider", "gemini", env=env)
    assert proc.returncode == 3 and "unknown agent provider 'gemini'" in proc.stderr


# -- which key goes where --------------------------------------------------------------------------

OPENAI_KEY, OWN_KEY = "sk-openai-personal-0123456789", "sk-proxy-own-9876543210"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_custom_base_url_never_gets_the_standard_key(example_task, env, provider):
    standard = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    server = LLMServer().start()
    try:
        proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", provider, "--model", "m",
                       "--base-url", server.url + "/v1", env=dict(env, **{standard: OPENAI_KEY}))
        requests = list(server.requests)
    finally:
        server.stop()
    assert proc.returncode == 3 and not requests  # nothing was sent anywhere
    line = proc.stderr.strip()
    assert line.startswith(f"kerneltui ask: no_key: no API key for {server.url}/v1: it is not {provider}'s own server")
    assert f"does not send {standard} there" in line and "KERNELTUI_AGENT_API_KEY" in line
    assert f"--api-key-env {standard}" in line and OPENAI_KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_custom_base_url_gets_its_own_key_and_says_so(example_task, env, provider):
    standard = "OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY"
    server = LLMServer().start()
    try:
        server.push(openai_chat_stream(text=["hi"]) if provider == "openai" else anthropic_stream(text=["hi"]))
        url = server.url + ("/v1" if provider == "openai" else "")
        proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", provider, "--model", "m",
                       "--base-url", url, env=dict(env, KERNELTUI_AGENT_API_KEY=OWN_KEY, **{standard: OPENAI_KEY}))
        headers = server.requests[0].headers
        sent = headers.get("authorization", "") + headers.get("x-api-key", "")  # the SDKs use one or the other
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    assert OWN_KEY in sent and OPENAI_KEY not in sent
    assert f"the API key from env KERNELTUI_AGENT_API_KEY is sent to {url}" in proc.stdout
    assert OWN_KEY not in proc.stdout + proc.stderr


def test_the_standard_key_goes_to_a_custom_url_only_when_named(example_task, env):
    server = LLMServer().start()
    try:
        server.push(openai_chat_stream(text=["hi"]))
        proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", "openai", "--model", "m",
                       "--base-url", server.url + "/v1", "--api-key-env", "OPENAI_API_KEY", "--json",
                       env=dict(env, OPENAI_API_KEY=OPENAI_KEY))
        sent = server.requests[0].headers["authorization"]
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr
    assert sent == f"Bearer {OPENAI_KEY}"
    assert json.loads(proc.stdout)["key"] == f"the API key from env OPENAI_API_KEY is sent to {server.url}/v1"


# -- a provider failure after a kept version -------------------------------------------------------

def fix_then_cut_off(server: LLMServer, good: str) -> None:
    """Iteration 1 proposes the fix (its trial passes); the reply after the trial is cut off twice."""
    arguments = json.dumps({"rationale": "add, not subtract", "source": good})
    server.push(openai_chat_stream(text=["Fixing the sign."], tool_calls=[("call_1", "propose_edit", [arguments])]))
    after = openai_chat_stream(text=["The trial passed."])
    server.push(truncated(after, 2), dropped(after, 2))


@pytest.mark.parametrize("apply", [True, False])
def test_a_provider_failure_after_a_kept_version_says_what_was_kept(example_task, env, apply):
    task = example_task("vector_add")
    kernel = task / "kernel.py"
    good = kernel.read_text()
    kernel.write_text(good.replace("x + y, mask=mask", "x - y, mask=mask"))
    server = LLMServer().start()
    try:
        fix_then_cut_off(server, good)
        args = ["ask", str(task), "make it correct", "--provider", "openai", "--model", "gpt-test",
                "--base-url", server.url + "/v1", "--auto", "3"] + (["--apply"] if apply else [])
        env = dict(env, KERNELTUI_AGENT_API_KEY="sk-test-0123456789", KERNELTUI_AGENT_TRIAL_RUNGS="correctness")
        text = run_cli(*args, env=env)
        fix_then_cut_off(server, good)
        kernel.write_text(good.replace("x + y, mask=mask", "x - y, mask=mask"))
        as_json = run_cli(*args, "--json", env=env)
    finally:
        server.stop()
    fixed_line = "+    tl.store(out_ptr + offs, x + y, mask=mask)"
    for proc in (text, as_json):
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert proc.stderr.strip().startswith("kerneltui ask: cut_off: the reply was cut off: openai ")
    assert ("x + y" in kernel.read_text()) is apply
    out = text.stdout
    assert "auto 1/3: p1 kept: correct, and the kept version was not" in out
    assert out.count("kept: correct, and the kept version was not") == 1  # the verdict is said once
    assert fixed_line in out
    if apply:
        assert "applied to kernel.py: p1" in out and "best version found" not in out
    else:
        assert "best version found (not applied; rerun with --apply to write kernel.py):" in out
    data = json.loads(as_json.stdout)
    assert data["ok"] is False and data["error"]["kind"] == "cut_off"
    assert data["auto"]["kept"] == ["p1"] and data["applied"] == (["p1"] if apply else [])
    assert data["kernel_changed"] is apply and fixed_line in data["final_diff"]


# -- auto mode that can judge nothing here -----------------------------------------------------------

def test_auto_refuses_a_speed_goal_without_a_benchmark_before_any_request(example_task, env):
    server = LLMServer().start()
    try:
        proc = run_cli("ask", str(example_task("vector_add")), "make it faster", "--provider", "openai",
                       "--model", "gpt-test", "--base-url", server.url + "/v1", "--auto", "3",
                       env=dict(env, KERNELTUI_AGENT_API_KEY="sk-test-0123456789"))
        requests = list(server.requests)
    finally:
        server.stop()
    assert proc.returncode == 2 and not requests
    assert proc.stderr.strip().startswith("kerneltui ask: auto: nothing auto mode could keep: the kernel is already "
                                          "correct, and there is no GPU here and the benchmark needs one")


# -- the history auto mode leaves ------------------------------------------------------------------

def test_auto_through_the_engine_records_each_verified_version_once(example_task, env):
    """The engine records every run it verifies; the chat must not write the same run again."""
    import sqlite3

    task = example_task("vector_add")
    kernel = task / "kernel.py"
    good = kernel.read_text()
    kernel.write_text(good.replace("x + y, mask=mask", "x - y, mask=mask"))
    wrong = json.dumps({"rationale": "multiply", "source": good.replace("x + y, mask=mask", "x * y, mask=mask")})
    fix = json.dumps({"rationale": "add, not subtract", "source": good})
    server = LLMServer().start()
    try:
        server.push(openai_chat_stream(text=["Trying."], tool_calls=[("call_1", "propose_edit", [wrong])]),
                    openai_chat_stream(text=["That failed."]),
                    openai_chat_stream(text=["The sign."], tool_calls=[("call_2", "propose_edit", [fix])]),
                    openai_chat_stream(text=["Done."]))
        proc = run_cli("ask", str(task), "make it correct", "--provider", "openai", "--model", "gpt-test",
                       "--base-url", server.url + "/v1", "--auto", "3", "--json",
                       env=dict(env, KERNELTUI_AGENT_API_KEY="sk-test-0123456789",
                                KERNELTUI_AGENT_TRIAL_RUNGS="correctness"))
    finally:
        server.stop()
    data = json.loads(proc.stdout)
    assert data["auto"]["kept"] == ["p2"] and data["auto"]["reverted"] == ["p1"], proc.stderr
    with sqlite3.connect(task / ".kerneltui" / "history.sqlite") as conn:
        rows = conn.execute("SELECT run_id, origin FROM runs ORDER BY id").fetchall()
    # The baseline, p1's trial and p2's trial: three runs, one row each.
    assert len({run_id for run_id, _ in rows}) == 3
    assert len(rows) == 3 and {origin for _, origin in rows} == {"auto"}


# -- what auto mode's exit status says ---------------------------------------------------------------

def broken_vector_add(example_task) -> tuple[Path, str]:
    task = example_task("vector_add")
    good = (task / "kernel.py").read_text()
    (task / "kernel.py").write_text(good.replace("x + y, mask=mask", "x - y, mask=mask"))
    return task, good


def run_auto_script(task: Path, turns: list[dict], tmp_path: Path, env: dict[str, str], *extra: str):
    script = tmp_path / "auto.json"
    script.write_text(json.dumps({"name": "auto", "turns": turns}))
    return run_cli("ask", str(task), "make it correct", "--provider", "scripted", "--script", str(script),
                   "--auto", "3", "--json", *extra, env=dict(env, KERNELTUI_AGENT_TRIAL_RUNGS="correctness"))


def test_auto_stopped_by_the_token_budget_with_nothing_kept_is_not_success(example_task, env, tmp_path):
    task, good = broken_vector_add(example_task)
    usage = {"input_tokens": 4000, "output_tokens": 1000}
    wrong = {"name": "propose_edit", "arguments": {"rationale": "multiply",
                                                   "source": good.replace("x + y, mask=mask", "x * y, mask=mask")}}
    proc = run_auto_script(task, [{"text": "Try.", "tool_calls": [wrong], "usage": usage},
                                  {"text": "ok", "usage": usage}], tmp_path, env, "--max-tokens", "8000")
    assert proc.returncode == 6, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["outcome"] == "budget" and data["auto"]["kept"] == []
    assert data["auto"]["stop_reason"].startswith("token budget: ")
    assert "kerneltui ask: budget: " in proc.stderr


def test_auto_that_kept_nothing_is_not_success(example_task, env, tmp_path):
    task, _ = broken_vector_add(example_task)
    proc = run_auto_script(task, [{"text": "No idea."}, {"text": "Still none."}], tmp_path, env)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["outcome"] == "kept_nothing" and data["auto"]["best"]["correct"] is False
    assert "kerneltui ask: kept_nothing: the agent made no proposal in two iterations" in proc.stderr


def test_auto_exit_statuses_are_documented(env):
    proc = run_cli("ask", "--help", env=env)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for line in ("0 kept a faster version", "4 made an incorrect kernel correct", "5 kept nothing",
                 "6 a token or money budget stopped it", "3 the provider failed"):
        assert line in text, text


# -- a model server that does not answer -----------------------------------------------------------

def test_a_hung_server_is_retried_where_the_person_sees_it_and_the_setting_is_named(example_task, env):
    import time

    def hang(_request):
        time.sleep(4)  # past the 1 s timeout below: the client gives up first
        return openai_chat_stream(text=["too late"])

    server = LLMServer().start()
    try:
        server.push(hang, hang)
        proc = run_cli("ask", str(example_task("vector_add")), "hi", "--provider", "openai", "--model", "gpt-test",
                       "--base-url", server.url + "/v1",
                       env=dict(env, KERNELTUI_AGENT_API_KEY="sk-test-0123456789", KERNELTUI_AGENT_TIMEOUT_S="1",
                                KERNELTUI_AGENT_MAX_RETRIES="1"))
        tries = len(server.requests)
    finally:
        server.stop()
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert tries == 2
    assert "· openai did not answer in 1 s, retrying in 1 s (2/2) — [agent] timeout_s" in proc.stdout
    line = proc.stderr.strip()
    assert line.startswith("kerneltui ask: network: openai at ") and "did not answer in 1 s (2 tries)" in line
    assert "[agent] timeout_s" in line and "KERNELTUI_AGENT_TIMEOUT_S" in line


@pytest.mark.slow
def test_a_trial_stopped_by_a_full_disk_is_an_environment_error(example_task, env):
    """A proposal's trial that the full disk stopped is no verdict on the proposal: ``ERROR
    (environment)`` with what to do, exit 3, and nothing applied."""
    from tests.conftest import fill_disk, small_tmpfs

    task = example_task("vector_add")
    before = (task / "kernel.py").read_text()
    with small_tmpfs(task / ".kerneltui" / "versions", "64k") as versions:
        fill_disk(versions)
        proc = run_cli("ask", str(task), "make it faster", "--provider", "scripted", "--script", str(DEMO),
                       "--apply", "--json", env={**env, "KERNELTUI_AGENT_TRIAL_RUNGS": "compile,dump"})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "kerneltui ask: ERROR (environment): no space left on device" in proc.stderr, proc.stderr
    assert "free space" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["error"]["kind"] == "environment", data["error"]
    trial = data["proposals"][0]["trial"]
    assert "no space left on device" in trial["environment"] and trial["correct"] is False, trial
    assert "the machine stopped the trial" in trial["headline"], trial
    assert data["applied"] == [] and (task / "kernel.py").read_text() == before
