"""Agent settings: the ``[agent]`` section of the config, command-line overrides, and the API key.

Keys come from the environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, or the variable named by
``api_key_env``) or from ``api_key`` in the config (the file, or ``KERNELTUI_AGENT_API_KEY``). A
``base_url`` other than the provider's own server never gets the standard variable's key: it takes
``api_key``, or the variable ``api_key_env`` names. Keys live only in memory: settings print without
them, no event or session record carries them, and what is said is where a key came from (by name).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from kerneltui import paths
from kerneltui.config import Config
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
    "max_retries": 2,  # retries of a request that got no answer, a 429 or a 5xx; each is shown as it starts
    # Seconds without a byte from the server (connect, first token, between chunks). A streamed reply
    # starts within seconds; two minutes covers a long prompt on a busy local server or a reasoning
    # model's thinking, and a hung server is said (and retried) after two minutes, not ten.
    "timeout_s": 120.0,
    "script": "",  # scripted provider: a .json or .toml file of recorded turns
    "context_dir": "",  # empty: context/ of the source checkout, else <data dir>/context
    "trial_rungs": "",  # comma-separated rungs a proposal's trial runs; empty: the loop's default set
    "trial_seeds": 0,  # seeds per test case in trials; 0: the task's own number
    "index_refresh_s": 300.0,  # re-walk context/ for changed files at most this often
    "search_installed": True,  # search the installed triton, CuTe DSL and TileLang sources beside context/
    "auto_min_gain_pct": 1.0,  # auto mode keeps a version only if it is at least this much faster
}

# Command-line flags that set an [agent] key: (flag, attribute of the parsed arguments, key).
AGENT_FLAGS = (("--provider", "provider", "provider"), ("--model", "model", "model"),
               ("--base-url", "base_url", "base_url"), ("--api", "api", "api"),
               ("--api-key-env", "api_key_env", "api_key_env"), ("--script", "script", "script"))

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5"}
STANDARD_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
# The providers' own servers: the only places their standard variable's key is sent.
OFFICIAL_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}
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

@dataclass
class AgentSettings:
    provider: str = "anthropic"
    model: str = ""
    base_url: str = ""
    api: str = "chat"
    api_key_env: str = ""
    api_key: str = field(default="", repr=False)
    api_key_source: str = ""  # where api_key was set: the config file's path or "env KERNELTUI_AGENT_API_KEY"
    max_tokens: int = 8192
    max_tool_rounds: int = 20
    max_retries: int = 2
    timeout_s: float = 120.0
    script: str = ""
    context_dir: str = ""
    trial_rungs: str = ""
    trial_seeds: int = 0
    index_refresh_s: float = 300.0
    search_installed: bool = True
    auto_min_gain_pct: float = 1.0
    temperature: float | None = None

    @classmethod
    def from_config(cls, config: Config | None = None, **overrides: Any) -> AgentSettings:
        values: dict[str, Any] = dict(AGENT_DEFAULTS)
        if config is not None:
            values.update(config.section("agent"))
        values.update({k: v for k, v in overrides.items() if v is not None})
        if config is not None and "api_key" not in overrides and values.get("api_key"):
            values["api_key_source"] = config.source("agent", "api_key") or "config file"
        names = {f.name for f in fields(cls)}
        if config is not None:  # a misspelt key would otherwise be dropped without a word
            for key in config.section("agent"):
                if key not in names:
                    raise ProviderError(CONFIG, f"{config.where('agent', key)}: [agent] has no setting {key!r} "
                                                f"(known: {', '.join(sorted(n for n in names if n != 'api_key_source'))})")
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


def is_own_server(provider: str, base_url: str) -> bool:
    """Whether ``base_url`` is the provider's own server (or unset, which means it)."""
    official = OFFICIAL_URLS.get(provider)
    return not base_url or (official is not None and base_url.rstrip("/") == official)


def resolve_api_key(settings: AgentSettings, env: dict[str, str] | None = None) -> ApiKey:
    """The key for the provider, or a ``no_key`` ProviderError that says where to put one.

    A server other than the provider's own (``base_url``: a proxy, an OpenAI-compatible server) gets
    a key only when one is given for it (``api_key_env`` or ``api_key``): the person's
    ``OPENAI_API_KEY`` or ``ANTHROPIC_API_KEY`` is never sent to some other server unasked.
    """
    env = dict(os.environ if env is None else env)
    provider = settings.provider
    config_key = ApiKey(str(settings.api_key), settings.api_key_source or "config file") if settings.api_key else None
    if settings.api_key_env:
        value = env.get(settings.api_key_env, "")
        if value:
            return ApiKey(value, f"env {settings.api_key_env}")
        raise ProviderError(NO_KEY, f"no API key: [agent] api_key_env names {settings.api_key_env}, "
                                    f"but that environment variable is empty or unset")
    standard = STANDARD_KEY_ENV.get(provider)
    if standard and not is_own_server(provider, settings.base_url):
        if config_key is not None:
            return config_key
        raise ProviderError(NO_KEY, f"no API key for {settings.base_url}: it is not {provider}'s own server, so "
                                    f"kerneltui does not send {standard} there. Give it its own key "
                                    f"(KERNELTUI_AGENT_API_KEY or [agent] api_key), name a variable with "
                                    f"--api-key-env (--api-key-env {standard} sends that key there on purpose), "
                                    f"or use --provider openai-compatible for a server that needs no key")
    if standard and env.get(standard):
        return ApiKey(env[standard], f"env {standard}")
    if config_key is not None:
        return config_key
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
