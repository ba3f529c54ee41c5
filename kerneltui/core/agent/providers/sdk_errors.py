"""Turn the SDKs' exceptions into one plain :class:`ProviderError` a person can act on."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from kerneltui.core.agent.conversation import Usage
from kerneltui.core.agent.errors import AUTH, NETWORK, PROVIDER, RATE_LIMIT, ProviderError, cut_off, redact


def _sdk_classes(name: str, modules: tuple[str, ...] = ("openai", "anthropic")) -> tuple[type, ...]:
    """The SDKs' exception classes of that name, from the SDKs already loaded (importing one to
    classify an error of the other would cost seconds)."""
    found: list[type] = []
    for module_name in modules:
        module = sys.modules.get(module_name)
        cls = getattr(module, name, None) if module is not None else None
        if isinstance(cls, type):
            found.append(cls)
    return tuple(found)


def _body_message(exc: BaseException) -> str:
    """The server's own words: ``{"error": {"message": …}}`` in both APIs."""
    body: Any = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            kind = inner.get("type") or inner.get("code")
            return f"{kind}: {inner['message']}" if isinstance(kind, str) and kind else inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    message = getattr(exc, "message", None) or str(exc)
    return str(message)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_transport_failure(exc: BaseException) -> bool:
    """A connection that failed or closed: the SDKs' own class, or the HTTP library's underneath."""
    transport = _sdk_classes("APIConnectionError") + _sdk_classes("TransportError", ("httpx", "httpx2"))
    return isinstance(exc, (*transport, ConnectionError))


RETRIES_HINT = "[agent] max_retries (KERNELTUI_AGENT_MAX_RETRIES)"


def _is_timeout(exc: BaseException) -> bool:
    return any("Timeout" in type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e is not None)


def provider_error(exc: BaseException, provider: str, where: str, key_source: str,
                   secrets: Iterable[str], streaming: bool = False, usage: Usage | None = None,
                   timeout_s: float | None = None) -> ProviderError:
    """Classify an SDK exception: network, auth (401/403), rate limit (429), or another refusal.

    ``streaming``: the reply had started (headers received), so a connection that fails now cut
    the reply off; ``usage`` is what the stream had reported by then. Failures that may pass when
    asked again carry what to say while retrying (``providers.retries``); ``timeout_s`` is the
    limit in force, named when it fires.
    """
    secrets = list(secrets)
    if isinstance(exc, ProviderError):
        return ProviderError(exc.kind, redact(exc.message, secrets), exc.usage, exc.retry, exc.timed_out, exc.final,
                             exc.wait_s)
    connection = _sdk_classes("APIConnectionError")
    status_cls = _sdk_classes("APIStatusError")
    limit = f"{timeout_s:g} s" if timeout_s is not None else "the time limit"
    if streaming and _is_transport_failure(exc) or streaming and _is_timeout(exc):
        if _is_timeout(exc):
            return cut_off(provider, f"sent nothing for {limit} mid-stream ([agent] timeout_s)", usage)
        underneath = exc.__cause__ or exc.__context__ or exc
        detail = _one_line(f"{type(underneath).__name__}: {underneath}", 160)
        return cut_off(provider, f"closed the connection mid-stream ({redact(detail, secrets)})", usage)
    if connection and isinstance(exc, connection):
        if _is_timeout(exc):
            final = (f"{provider} at {where} did not answer in {limit} ({{tries}}); raise [agent] timeout_s "
                     f"(KERNELTUI_AGENT_TIMEOUT_S) for a slow server, or check that it is serving")
            return ProviderError(NETWORK, redact(final.replace("({tries})", "(1 try)"), secrets),
                                 retry=f"{provider} did not answer in {limit}", timed_out=True,
                                 final=redact(final, secrets))
        cause = exc.__cause__ or exc.__context__
        detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
        message = f"cannot reach {provider} at {where} ({_one_line(detail, 160)}); check the network, the server, or --base-url"
        return ProviderError(NETWORK, redact(message, secrets), retry=f"cannot reach {provider} at {where}",
                             final=redact(f"{message} ({{tries}}; {RETRIES_HINT})", secrets))
    status = getattr(exc, "status_code", None)
    if status_cls and isinstance(exc, status_cls) or isinstance(status, int):
        detail = _one_line(_body_message(exc))
        if status in (401, 403):
            verb = "refused the API key" if status == 401 else "denied access with the API key"
            message = f"{provider} {verb} from {key_source} ({status} {detail}); check the key and its permissions"
            return ProviderError(AUTH, redact(message, secrets))
        if status == 429:
            retry = ""
            wait_s: float | None = None
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None)
            if headers is not None and headers.get("retry-after"):
                retry = f"; the server asks to retry after {headers.get('retry-after')} s"
                try:
                    wait_s = max(0.0, float(headers.get("retry-after")))
                except ValueError:
                    wait_s = None  # an HTTP date: the usual backoff
            message = f"rate limited by {provider} (429 {detail}){retry}; wait and retry, or use a smaller model"
            return ProviderError(RATE_LIMIT, redact(message, secrets), retry=f"rate limited by {provider} (429)",
                                 final=redact(f"{message} ({{tries}}; {RETRIES_HINT})", secrets), wait_s=wait_s)
        if status == 404:
            message = f"{provider} at {where} answered 404 ({detail}); check --model and --base-url"
            return ProviderError(PROVIDER, redact(message, secrets))
        if status == 529 or (isinstance(status, int) and status >= 500):
            message = f"{provider} failed on its side ({status} {detail}); retry later"
            return ProviderError(PROVIDER, redact(message, secrets), retry=f"{provider} failed on its side ({status})",
                                 final=redact(f"{message} ({{tries}}; {RETRIES_HINT})", secrets))
        message = f"{provider} rejected the request ({status} {detail})"
        return ProviderError(PROVIDER, redact(message, secrets))
    message = f"{provider} request failed: {type(exc).__name__}: {_one_line(str(exc))}"
    return ProviderError(PROVIDER, redact(message, secrets))
