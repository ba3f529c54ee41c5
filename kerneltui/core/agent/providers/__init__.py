"""Model providers: Anthropic, OpenAI (chat or responses), OpenAI-compatible servers, and scripted replay."""

from __future__ import annotations

from kerneltui.core.agent.errors import CONFIG, ProviderError
from kerneltui.core.agent.providers.base import Provider, TextSink
from kerneltui.core.agent.settings import AgentSettings, resolve_api_key

__all__ = ["Provider", "TextSink", "build_provider"]


def build_provider(settings: AgentSettings, env: dict[str, str] | None = None) -> Provider:
    """The provider the settings ask for. Raises ProviderError (no_key, config) with what to fix."""
    if settings.provider == "scripted":
        from kerneltui.core.agent.providers.scripted import ScriptedProvider

        if not settings.script:
            raise ProviderError(CONFIG, "the scripted provider needs a script: --script FILE or [agent] script")
        return ScriptedProvider.from_file(settings.script)
    if settings.provider == "openai-compatible":
        if not settings.base_url:
            raise ProviderError(CONFIG, "an OpenAI-compatible server needs its address: --base-url "
                                        "(e.g. http://localhost:8000/v1 for vLLM, http://localhost:11434/v1 for Ollama)")
        if not settings.model:
            raise ProviderError(CONFIG, "an OpenAI-compatible server needs the model it serves: --model "
                                        "(e.g. what `ollama list` or the server's /v1/models shows)")
    key = resolve_api_key(settings, env)
    retries, timeout = int(settings.max_retries), float(settings.timeout_s)
    if settings.provider == "anthropic":
        from kerneltui.core.agent.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(settings.model, key.value, key.source, settings.base_url, max_retries=retries,
                                 timeout_s=timeout)
    if settings.provider == "openai" and settings.api == "responses":
        from kerneltui.core.agent.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(settings.model, key.value, key.source, settings.base_url, max_retries=retries,
                                 timeout_s=timeout)
    from kerneltui.core.agent.providers.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(settings.model, key.value, key.source, settings.base_url,
                              compatible=settings.provider == "openai-compatible", max_retries=retries, timeout_s=timeout)
