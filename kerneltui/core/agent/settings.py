"""Agent settings: the ``[agent]`` section of the config, command-line overrides, and the API key.

Keys come from the environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, or the variable named by
``api_key_env``) or from ``api_key`` in the config file. They live only in memory: settings print
without them, and no event or session record carries them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from kerneltui import paths
from kerneltui.config import Config, register_defaults
from kerneltui.core.agent.errors import CONFIG, NO_KEY, ProviderError

AGENT_DEFAULTS: dict[str, Any] = {
    "provider": "anthropic",  # anthropic | openai | openai-compatible (vllm, ollama, llamacpp) | scripted
    "model": "",  # empty: the provider's default below
    "base_url": "",  # OpenAI-compatible servers (and proxies)
    "api": "chat",  # openai: "chat" (Chat Completions) or "responses" (Responses API)
    "api_key_env": "",  # name of an environment variable holding the key
    "api_key": "",  # a key in the config file (prefer the environment)
    "max_tokens": 8192,  # per model reply
    "max_tool_rounds": 20,  # model requests per turn before the turn is stopped
    "max_retries": 2,  # SDK retries of 429/5xx/connection errors, with its backoff
    "timeout_s": 600.0,
    "script": "",  # scripted provider: a .json or .toml file of recorded turns
    "context_dir": "",  # empty: context/ of the source checkout, else <data dir>/context
    "trial_rungs": "",  # comma-separated rungs a proposal's trial runs; empty: the loop's default set
    "trial_seeds": 0,  # seeds per test case in trials; 0: the task's own number
    "index_refresh_s": 300.0,  # re-walk context/ for changed files at most this often
    "auto_min_gain_pct": 1.0,  # auto mode keeps a version only if it is at least this much faster
}

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5"}
STANDARD_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
PROVIDERS = ("anthropic", "openai", "openai-compatible", "scripted")
# Local servers by name: the provider they speak and where they listen by default.
SERVER_ALIASES = {
    "vllm": "http://localhost:8000/v1",
    "ollama": "http://localhost:11434/v1",
    "llamacpp": "http://localhost:8080/v1",
    "llama.cpp": "http://localhost:8080/v1",
    "compatible": "",
    "openai-compatible": "",
}

register_defaults("agent", AGENT_DEFAULTS)


@dataclass
class AgentSettings:
    provider: str = "anthropic"
    model: str = ""
    base_url: str = ""
    api: str = "chat"
    api_key_env: str = ""
    api_key: str = field(default="", repr=False)
    max_tokens: int = 8192
    max_tool_rounds: int = 20
    max_retries: int = 2
    timeout_s: float = 600.0
    script: str = ""
    context_dir: str = ""
    trial_rungs: str = ""
    trial_seeds: int = 0
    index_refresh_s: float = 300.0
    auto_min_gain_pct: float = 1.0
    temperature: float | None = None

    @classmethod
    def from_config(cls, config: Config | None = None, **overrides: Any) -> AgentSettings:
        values: dict[str, Any] = dict(AGENT_DEFAULTS)
        if config is not None:
            values.update(config.section("agent"))
        values.update({k: v for k, v in overrides.items() if v is not None})
        names = {f.name for f in fields(cls)}
        settings = cls(**{k: v for k, v in values.items() if k in names})
        return settings.normalised()

    def normalised(self) -> AgentSettings:
        """Resolve aliases (``ollama`` → an OpenAI-compatible server at its default port) and models."""
        provider = (self.provider or "anthropic").strip().lower()
        base_url = self.base_url
        if provider in SERVER_ALIASES:
            base_url = base_url or SERVER_ALIASES[provider]
            provider = "openai-compatible"
        if provider not in PROVIDERS:
            raise ProviderError(CONFIG, f"unknown agent provider {self.provider!r}; choose one of "
                                        f"{', '.join(PROVIDERS)} (or vllm, ollama, llamacpp)")
        model = self.model or DEFAULT_MODELS.get(provider, "")
        api = (self.api or "chat").lower()
        if api not in ("chat", "responses"):
            raise ProviderError(CONFIG, f"[agent] api must be \"chat\" or \"responses\", not {self.api!r}")
        return replace(self, provider=provider, base_url=base_url, model=model, api=api)

    def rungs(self) -> list[str] | None:
        names = [r.strip() for r in self.trial_rungs.split(",") if r.strip()] if self.trial_rungs else []
        return names or None

    def describe(self) -> str:
        """One line for the status bar and logs (never the key)."""
        where = f" at {self.base_url}" if self.base_url else ""
        api = " (responses API)" if self.provider == "openai" and self.api == "responses" else ""
        if self.provider == "scripted":
            return f"scripted replay of {self.script or '(no script)'} — no model is called"
        return f"{self.provider} {self.model}{api}{where}"


@dataclass(frozen=True)
class ApiKey:
    value: str = field(repr=False)
    source: str  # "env ANTHROPIC_API_KEY", "config file", "none (local server)"


def resolve_api_key(settings: AgentSettings, env: dict[str, str] | None = None) -> ApiKey:
    """The key for the provider, or a ``no_key`` ProviderError that says where to put one.

    An OpenAI-compatible server gets a key only when one is named for it (``api_key_env`` or
    ``api_key``): the person's OpenAI key is never sent to some other server.
    """
    env = dict(os.environ if env is None else env)
    provider = settings.provider
    if settings.api_key_env:
        value = env.get(settings.api_key_env, "")
        if value:
            return ApiKey(value, f"env {settings.api_key_env}")
        raise ProviderError(NO_KEY, f"no API key: [agent] api_key_env names {settings.api_key_env}, "
                                    f"but that environment variable is empty or unset")
    standard = STANDARD_KEY_ENV.get(provider)
    if standard and env.get(standard):
        return ApiKey(env[standard], f"env {standard}")
    if settings.api_key:
        return ApiKey(settings.api_key, "config file")
    if provider == "openai-compatible":
        # Local servers (vLLM, Ollama, llama.cpp) usually take any key; the SDK needs a non-empty one.
        return ApiKey("not-needed", "none (local server; set api_key_env if it wants one)")
    raise ProviderError(NO_KEY, f"no API key for {provider}: set {standard} in the environment (or name "
                                f"another variable with [agent] api_key_env), or choose another provider "
                                f"with --provider / [agent] provider")


def context_dir(settings: AgentSettings) -> Path:
    """The folder the agent searches: configured, else the checkout's context/, else the data dir's."""
    if settings.context_dir:
        return Path(settings.context_dir).expanduser().resolve()
    checkout = paths.package_dir().parent / "context"
    if checkout.is_dir():
        return checkout.resolve()
    return (paths.data_dir() / "context").resolve()
