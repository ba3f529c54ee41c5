"""Provider settings, API keys (never printed) and the price table."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltui.config import load_config
from kerneltui.core.agent.conversation import Message, Usage, conversation_from_json, conversation_to_json
from kerneltui.core.agent.errors import CONFIG, NO_KEY, ProviderError, redact
from kerneltui.core.agent.prices import CostMeter, PriceTable
from kerneltui.core.agent.providers import build_provider
from kerneltui.core.agent.settings import AgentSettings, resolve_api_key


def test_defaults_and_aliases():
    s = AgentSettings.from_config(None)
    assert (s.provider, s.model) == ("anthropic", "claude-sonnet-4-5")
    o = AgentSettings.from_config(None, provider="ollama", model="qwen")
    assert (o.provider, o.base_url) == ("openai-compatible", "http://localhost:11434/v1")
    with pytest.raises(ProviderError) as info:
        AgentSettings.from_config(None, provider="gemini")
    assert info.value.kind == CONFIG and "anthropic" in info.value.message


def test_the_default_timeout_suits_an_interactive_tool():
    """Two minutes of silence before a retry that is shown, not ten minutes of nothing."""
    s = AgentSettings.from_config(None)
    assert (s.timeout_s, s.max_retries) == (120.0, 2)


def test_config_file_and_env_override(tmp_path: Path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[agent]\nprovider = "openai"\nmodel = "gpt-4.1"\n[prices]\n"my-model" = { input = 1.0, output = 2.0 }\n')
    config = load_config(cfg, env={"KERNELTUI_AGENT_MODEL": "gpt-5-mini"})
    s = AgentSettings.from_config(config)
    assert (s.provider, s.model) == ("openai", "gpt-5-mini")
    table = PriceTable.from_config(config)
    assert table.lookup("my-model") is not None and table.lookup("gpt-5") is not None


def test_keys_come_from_the_environment_first():
    s = AgentSettings.from_config(None, provider="openai", api_key="from-config-file-123")
    assert resolve_api_key(s, {"OPENAI_API_KEY": "sk-env-1234567"}).source == "env OPENAI_API_KEY"
    assert resolve_api_key(s, {}).source == "config file"
    named = AgentSettings.from_config(None, provider="anthropic", api_key_env="WORK_KEY")
    assert resolve_api_key(named, {"WORK_KEY": "k-123456789"}).value == "k-123456789"
    with pytest.raises(ProviderError, match="WORK_KEY"):
        resolve_api_key(named, {"ANTHROPIC_API_KEY": "other"})


def test_a_custom_base_url_takes_its_own_key_never_the_standard_one(tmp_path: Path):
    env = {"OPENAI_API_KEY": "sk-personal-123456", "ANTHROPIC_API_KEY": "sk-ant-personal-123"}
    for provider in ("openai", "anthropic"):
        proxy = AgentSettings.from_config(None, provider=provider, base_url="https://proxy.example/v1")
        with pytest.raises(ProviderError) as info:
            resolve_api_key(proxy, env)
        assert info.value.kind == NO_KEY and "KERNELTUI_AGENT_API_KEY" in info.value.message
    # Its own key from the config, said by where it was set (the variable's name, not its value).
    config = load_config(tmp_path / "none.toml", env={"KERNELTUI_AGENT_API_KEY": "sk-proxy-0987654"})
    proxy = AgentSettings.from_config(config, provider="openai", base_url="https://proxy.example/v1")
    key = resolve_api_key(proxy, env)
    assert (key.value, key.source) == ("sk-proxy-0987654", "env KERNELTUI_AGENT_API_KEY")
    # The provider's own address (with or without a trailing slash) is not a custom one.
    own = AgentSettings.from_config(None, provider="openai", base_url="https://api.openai.com/v1/")
    assert resolve_api_key(own, env).source == "env OPENAI_API_KEY"


def test_missing_key_is_a_plain_error():
    with pytest.raises(ProviderError) as info:
        build_provider(AgentSettings.from_config(None, provider="anthropic"), env={})
    assert info.value.kind == NO_KEY
    assert "ANTHROPIC_API_KEY" in info.value.message and "--provider" in info.value.message


def test_settings_never_show_the_key():
    s = AgentSettings.from_config(None, provider="openai", api_key="sk-secret-value-42")
    assert "sk-secret" not in repr(s) and "sk-secret" not in s.describe()
    assert "sk-secret" not in repr(resolve_api_key(s, {}))


def test_compatible_server_needs_url_and_model():
    with pytest.raises(ProviderError, match="--base-url"):
        build_provider(AgentSettings.from_config(None, provider="openai-compatible", model="m"), env={})
    with pytest.raises(ProviderError, match="--model"):
        build_provider(AgentSettings.from_config(None, provider="vllm"), env={})


def test_redact_removes_keys_and_echoed_prefixes():
    key = "sk-proj-abcdefghijklmnop"
    assert redact(f"bad key {key}", [key]) == "bad key [redacted]"
    assert "abcdefgh" not in redact("Incorrect API key provided: sk-proj-abcdefgh****mnop", [key])
    assert redact("short", ["abc"]) == "short"


def test_prices_and_meter():
    table = PriceTable.from_config(None)
    assert table.lookup("claude-sonnet-4-5-20250929") is table.lookup("claude-sonnet-4-5")
    assert table.lookup("gpt-5.1") is None  # a new model does not inherit an old price
    assert table.lookup("gpt-5-mini") is not table.lookup("gpt-5")
    cost = table.cost("claude-sonnet-4-5", Usage(input_tokens=1_000_000, output_tokens=100_000,
                                                 cache_read_tokens=500_000))
    assert cost == pytest.approx(0.5 * 3.0 + 0.5 * 0.30 + 0.1 * 15.0)
    meter = CostMeter(table)
    meter.add("gpt-5", Usage(input_tokens=1000, output_tokens=100))
    assert meter.cost_usd == pytest.approx((1000 * 1.25 + 100 * 10.0) / 1e6)
    meter.add("local-llama", Usage(input_tokens=10, output_tokens=10))
    assert meter.cost_usd is None and "no price for local-llama" in meter.describe()
    meter.add("gpt-5", Usage(reported=False))
    assert "without usage" in meter.describe()


def test_bad_price_entry_is_reported(tmp_path: Path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[prices]\n"x" = 3\n')
    with pytest.raises(ValueError, match="input and output"):
        PriceTable.from_config(load_config(cfg, env={}))


def test_conversation_round_trips_through_json():
    from kerneltui.core.agent.conversation import ToolCall, ToolResult

    messages = [Message("user", "hi"), Message("assistant", "x", tool_calls=[ToolCall("c1", "read_file", {"path": "k"})]),
                Message("tool", tool_results=[ToolResult("c1", "read_file", "text", False)])]
    assert conversation_from_json(conversation_to_json(messages)) == messages


def test_a_misspelt_agent_key_is_refused_with_its_line(tmp_path):
    from kerneltui.config import load_config
    from kerneltui.core.agent.errors import CONFIG, ProviderError
    from kerneltui.core.agent.settings import AgentSettings

    file = tmp_path / "config.toml"
    file.write_text('[agent]\nmodel = "m"\nprovidr = "openai"\n')
    with pytest.raises(ProviderError) as caught:
        AgentSettings.from_config(load_config(file, env={}))
    assert caught.value.kind == CONFIG
    assert f"{file}:3" in caught.value.message and "'providr'" in caught.value.message
    assert "provider" in caught.value.message  # the known keys, so the right one can be picked
