"""What model requests cost: a price table in the config, and a meter per session.

``[prices]`` maps a model name to USD per million tokens, e.g.::

    [prices]
    "claude-sonnet-4-5" = { input = 3.0, output = 15.0, cache_read = 0.30, cache_write = 3.75 }

A dated model name (``claude-sonnet-4-5-20250929``) uses the entry of its undated name. A model with
no entry has no cost (``None``), and the person is told so, rather than being shown $0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kerneltui.config import Config
from kerneltui.core.agent.conversation import Usage

# List prices (USD per million tokens) as published by the providers in 2025; edit in config.toml.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_read": 0.50, "cache_write": 6.25},
    "claude-opus-4-1": {"input": 15.0, "output": 75.0, "cache_read": 1.50, "cache_write": 18.75},
    "claude-opus-4": {"input": 15.0, "output": 75.0, "cache_read": 1.50, "cache_write": 18.75},
    "claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_write": 3.75},
    "claude-sonnet-4": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_write": 3.75},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cache_read": 0.10, "cache_write": 1.25},
    "gpt-5": {"input": 1.25, "output": 10.0, "cache_read": 0.125},
    "gpt-5-mini": {"input": 0.25, "output": 2.0, "cache_read": 0.025},
    "gpt-5-nano": {"input": 0.05, "output": 0.40, "cache_read": 0.005},
    "gpt-4.1": {"input": 2.0, "output": 8.0, "cache_read": 0.50},
    "gpt-4.1-mini": {"input": 0.40, "output": 1.60, "cache_read": 0.10},
    "gpt-4o": {"input": 2.50, "output": 10.0, "cache_read": 1.25},
    "o3": {"input": 2.0, "output": 8.0, "cache_read": 0.50},
    "o4-mini": {"input": 1.10, "output": 4.40, "cache_read": 0.275},
    "scripted": {"input": 0.0, "output": 0.0},  # the replay provider calls no model
}

_DATE_SUFFIX = re.compile(r"^-(\d{4}-?\d{2}-?\d{2}|\d{8}|latest)$")


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        cache_read = usage.cache_read_tokens
        cache_write = usage.cache_write_tokens
        plain = max(0, usage.input_tokens - cache_read - cache_write)
        total = plain * self.input + usage.output_tokens * self.output
        total += cache_read * (self.input if self.cache_read is None else self.cache_read)
        total += cache_write * (self.input if self.cache_write is None else self.cache_write)
        return total / 1e6


@dataclass
class PriceTable:
    prices: dict[str, Price] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Config | None = None) -> PriceTable:
        raw: dict[str, Any] = dict(DEFAULT_PRICES)
        if config is not None:
            raw.update(config.section("prices"))
        table = cls()
        for model, entry in raw.items():
            if not isinstance(entry, dict) or "input" not in entry or "output" not in entry:
                raise ValueError(f"[prices] {model!r} must be a table with input and output (USD per million "
                                 f"tokens), e.g. {{ input = 3.0, output = 15.0 }}")
            table.prices[str(model)] = Price(
                input=float(entry["input"]), output=float(entry["output"]),
                cache_read=float(entry["cache_read"]) if "cache_read" in entry else None,
                cache_write=float(entry["cache_write"]) if "cache_write" in entry else None,
            )
        return table

    def lookup(self, model: str) -> Price | None:
        if model in self.prices:
            return self.prices[model]
        # "claude-sonnet-4-5-20250929" → "claude-sonnet-4-5"; "gpt-5.1" matches nothing (a new model
        # must not silently inherit an older one's price).
        best: str | None = None
        for name in self.prices:
            if model.startswith(name) and _DATE_SUFFIX.match(model[len(name):]):
                if best is None or len(name) > len(best):
                    best = name
        return self.prices[best] if best else None

    def cost(self, model: str, usage: Usage) -> float | None:
        if not usage.reported:
            return None
        price = self.lookup(model)
        return None if price is None else price.cost(usage)


@dataclass
class CostMeter:
    """Tokens and money of a session; ``cost_usd`` is None once any request had no price.

    Input tokens are split as the providers report them: read from the prompt cache, written to it
    (Anthropic), and the rest (uncached). A reply cut off mid-stream counts what the server had
    reported of it (Anthropic: its input; OpenAI: nothing, its usage comes last).
    """

    table: PriceTable
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    requests: int = 0
    cache_hits: int = 0  # requests that read part of their input from the cache
    cut_off: int = 0  # replies cut off mid-stream (their tokens counted only as far as reported)
    unpriced_models: set[str] = field(default_factory=set)
    unreported: int = 0  # requests whose server sent no usage

    def add(self, model: str, usage: Usage | None, cut_off: bool = False) -> float | None:
        self.requests += 1
        if cut_off:
            self.cut_off += 1
            if usage is None:
                return None  # nothing was reported; the note in describe() says so
        assert usage is not None
        if not usage.reported:
            self.unreported += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.cache_hits += usage.cache_read_tokens > 0
        cost = self.table.cost(model, usage)
        if cost is None:
            if usage.reported:
                self.unpriced_models.add(model)
            self.cost_usd = None
        elif self.cost_usd is not None:
            self.cost_usd += cost
        return cost

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_tokens(self) -> int:
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)

    def describe(self) -> str:
        cost = "cost unknown" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        split = f"{self.uncached_tokens:,} uncached · {self.cache_read_tokens:,} cached"
        if self.cache_write_tokens:
            split += f" · {self.cache_write_tokens:,} written to the cache"
        text = f"{self.input_tokens:,} in ({split}) · {self.output_tokens:,} out · {cost}"
        if self.requests:
            text += f" · cache hits in {self.cache_hits} of {self.requests} request(s)"
        if self.unpriced_models:
            text += f" (no price for {', '.join(sorted(self.unpriced_models))} in [prices])"
        if self.unreported:
            text += f" ({self.unreported} request(s) without usage from the server)"
        if self.cut_off:
            text += f" ({self.cut_off} reply(ies) cut off: counted only as far as the server reported them)"
        return text

    def usage_dict(self) -> dict[str, Any]:
        """The totals for ``--json`` and the bench scripts."""
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "uncached_input_tokens": self.uncached_tokens, "cache_read_tokens": self.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens, "requests": self.requests,
                "cache_hits": self.cache_hits, "cut_off": self.cut_off, "cost_usd": self.cost_usd}
