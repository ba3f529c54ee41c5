"""Settings: defaults, then the TOML file at the XDG location, then ``KERNELTUI_*`` environment variables.

Every value remembers where it came from so ``kerneltui config`` can show it. Sections are plain
tables (``[ui]``, ``[agent]``, ``[keys]`` …); each part of kerneltui declares its own defaults with
:func:`register_defaults` and reads its section with :func:`section`. An environment variable
``KERNELTUI_<SECTION>_<KEY>`` (upper case) overrides ``[section] key``; values are parsed as TOML
scalars when they look like one (``true``, ``3``, ``0.5``), else kept as strings.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltui import paths
from kerneltui.core.bench.stats import BenchSettings

_DEFAULTS: dict[str, dict[str, Any]] = {"benchmark": BenchSettings().to_dict()}


class ConfigError(Exception):
    pass


@dataclass
class Setting:
    value: Any
    source: str  # "default", a file path, or "env KERNELTUI_X_Y"


@dataclass
class Config:
    settings: dict[str, dict[str, Setting]] = field(default_factory=dict)
    file: Path | None = None

    def section(self, name: str) -> dict[str, Any]:
        return {k: s.value for k, s in self.settings.get(name, {}).items()}

    def get(self, section: str, key: str, default: Any = None) -> Any:
        s = self.settings.get(section, {}).get(key)
        return default if s is None else s.value

    def source(self, section: str, key: str) -> str | None:
        s = self.settings.get(section, {}).get(key)
        return None if s is None else s.source


def register_defaults(section: str, values: dict[str, Any]) -> None:
    _DEFAULTS.setdefault(section, {}).update(values)


def _parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def load_config(file: Path | None = None, env: dict[str, str] | None = None) -> Config:
    env = dict(os.environ if env is None else env)
    file = file or Path(env.get("KERNELTUI_CONFIG") or paths.config_file())
    cfg = Config(file=file)
    for sec, values in _DEFAULTS.items():
        for key, value in values.items():
            cfg.settings.setdefault(sec, {})[key] = Setting(value, "default")
    if file.exists():
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: malformed TOML: {exc}") from exc
        for sec, values in data.items():
            if not isinstance(values, dict):
                raise ConfigError(f"{file}: top-level key {sec!r} must be a [section] table")
            for key, value in values.items():
                cfg.settings.setdefault(sec, {})[key] = Setting(value, str(file))
    prefix = "KERNELTUI_"
    for name, raw in env.items():
        if not name.startswith(prefix) or name.count("_") < 2:
            continue
        rest = name[len(prefix):].lower()
        sec, _, key = rest.partition("_")
        if sec in cfg.settings or sec in _DEFAULTS:
            cfg.settings.setdefault(sec, {})[key] = Setting(_parse_env_value(raw), f"env {name}")
    return cfg


def benchmark_settings(config: Config | None = None, overrides: Mapping[str, Any] | None = None) -> BenchSettings:
    """``[benchmark]`` as configured (defaults, the file, ``KERNELTUI_BENCHMARK_*``), then
    ``overrides``; a wrong key or value raises ValueError naming it, a broken file ConfigError."""
    return BenchSettings.from_mapping((config or load_config()).section("benchmark"), overrides)
