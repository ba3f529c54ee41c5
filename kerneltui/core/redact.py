"""One redaction for everything kerneltui stores or hands to the model.

:func:`redact` removes from a text

* the values of kerneltui's environment variables named like credentials (``*_KEY``, ``*_TOKEN``,
  ``*SECRET*``, ``*PASSWORD*`` …, eight characters or more), keys registered with
  :func:`register_secret` (read from a config file), and the longest prefix of eight characters or
  more of such a value (servers echo keys partly masked: ``sk-abc12345***wxyz``);
* private keys (PEM and OpenSSH blocks, whole or cut off) and tokens of well-known shapes (OpenAI
  and Anthropic ``sk-…``, GitHub, AWS access key ids, Slack, Hugging Face, Google API keys, bearer
  tokens), whoever's they are.

It is the second line: workers never get the keys (``core.sandbox.environment``) and, where the
sandbox is on, cannot read the home folder or other processes' environments. It runs where text
is stored (history, session log, exports) and where tool output goes to the model. Kernel sources
are stored as written: their hash names the version.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from typing import Any, TypeVar

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|COOKIE|(^|_)AUTH)", re.IGNORECASE)
MIN_SECRET = 8
_PATTERNS = [
    # Private keys: the whole block, or from the header to the end when the text was cut off.
    re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
               re.DOTALL),
    re.compile(r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=\s\\]*"),  # an OpenSSH key's body ("openssh-key-v1")
    re.compile(r"(?<![A-Za-z0-9])sk-(?:ant-|proj-|svcacct-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
    re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}"),
    re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{35}"),
    re.compile(r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/\-]{16,}=*"),
]
_registered: set[str] = set()
_lock = threading.Lock()
T = TypeVar("T")


def is_secret_name(name: str) -> bool:
    """A variable name that holds a credential (``OPENAI_API_KEY``, ``HF_TOKEN``, ``DB_PASSWORD`` …)."""
    return bool(_SECRET_NAME.search(name))


def register_secret(value: str | None) -> None:
    """A key kerneltui holds that is not in its environment (e.g. ``[agent] api_key`` in the config)."""
    if value and len(value) >= MIN_SECRET:
        with _lock:
            _registered.add(value)


def known_secrets() -> list[str]:
    """The values to remove, longest first (so a key containing another is removed whole)."""
    values = {v for k, v in os.environ.items() if is_secret_name(k) and len(v) >= MIN_SECRET}
    with _lock:
        values |= _registered
    return sorted(values, key=len, reverse=True)


def _token_like(value: str) -> bool:
    return not any(c.isspace() or c in "/\\:" for c in value)


def redact(text: str, extra: tuple[str, ...] = ()) -> str:
    """``text`` with every secret replaced by ``[redacted]``; ``extra``: more values to remove."""
    if not text:
        return text
    for secret in (*extra, *known_secrets()):
        if len(secret) < MIN_SECRET:
            continue
        if secret in text:
            text = text.replace(secret, REDACTED)
        if _token_like(secret):
            for n in range(len(secret) - 1, MIN_SECRET - 1, -1):
                if secret[:n] in text:
                    text = text.replace(secret[:n], REDACTED)
                    break
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


def redact_tree(value: Any) -> Any:
    """Every string in nested dicts, lists and tuples redacted (dict keys too)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_tree(k): redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_tree(v) for v in value)
    return value


def redacted(record: T) -> T:
    """A copy of a dataclass with every string field redacted (the agent's tool outcomes)."""
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"redacted() takes a dataclass instance, not {type(record).__name__}")
    changes = {f.name: redact_tree(getattr(record, f.name)) for f in dataclasses.fields(record)
               if isinstance(getattr(record, f.name), (str, dict, list, tuple))}
    return dataclasses.replace(record, **changes)
