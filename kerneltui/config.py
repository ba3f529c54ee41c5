"""Settings: defaults, then the TOML file at the XDG location, then ``KERNELTUI_*`` environment variables.

Every value remembers where it came from so ``kerneltui config`` can show it. Sections are plain
tables (``[ui]``, ``[agent]``, ``[keys]`` …), every one of them named in ``SECTIONS``. A section
holds what the file and the environment set; each part of kerneltui applies its own defaults when it
reads its section (its settings dataclass, or the defaults table beside it), and ``kerneltui config``
hands those tables to :func:`load_config` to show every setting. Nothing registers itself on import,
so what a section holds does not depend on what was imported first. An environment variable ``KERNELTUI_<SECTION>_<KEY>`` (upper case) overrides
``[section] key`` whatever was imported first; values are parsed as TOML scalars when they look like
one (``true``, ``3``, ``0.5``), else kept as strings. A section kerneltui does not read, and a
``[benchmark]`` value it cannot use, are refused at load with the file and line or the variable.
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
from kerneltui.core.task_loaders.toml_lines import key_lines

# Every section kerneltui reads. Declared here, not by the modules that read them, so that a
# KERNELTUI_AGENT_* variable is a setting even when the config loads before the agent is imported.
SECTIONS = ("agent", "benchmark", "engine", "keys", "prices", "remote", "sandbox", "sessions", "ui")


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


def _parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def load_config(file: Path | None = None, env: dict[str, str] | None = None,
                defaults: Mapping[str, Mapping[str, Any]] | None = None) -> Config:
    """The settings of the file and the environment; ``defaults`` (section → key → value) under them,
    for a caller that shows every setting (``kerneltui config``)."""
    env = dict(os.environ if env is None else env)
    file = file or Path(env.get("KERNELTUI_CONFIG") or paths.config_file())
    cfg = Config(file=file)
    for sec, values in (defaults or {}).items():
        for key, value in values.items():
            cfg.settings.setdefault(sec, {})[key] = Setting(value, "default")
    lines: dict[tuple[str | int, ...], int] = {}
    if file.exists():
        text = file.read_text(encoding="utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: malformed TOML: {exc}") from exc
        lines = key_lines(text)
        for sec, values in data.items():
            where = f"{file}:{lines[(sec,)]}" if (sec,) in lines else str(file)
            if not isinstance(values, dict):
                raise ConfigError(f"{where}: top-level key {sec!r} must be a [section] table")
            if sec not in SECTIONS:
                raise ConfigError(f"{where}: kerneltui has no settings section [{sec}]; "
                                  f"the sections are {', '.join(f'[{s}]' for s in SECTIONS)}")
            for key, value in values.items():
                cfg.settings.setdefault(sec, {})[key] = Setting(value, str(file))
    prefix = "KERNELTUI_"
    for name, raw in env.items():
        if not name.startswith(prefix) or name.count("_") < 2:
            continue
        rest = name[len(prefix):].lower()
        sec, _, key = rest.partition("_")
        if sec in SECTIONS:
            cfg.settings.setdefault(sec, {})[key] = Setting(_parse_env_value(raw), f"env {name}")
    _check_benchmark(cfg, lines)
    return cfg


def _check_benchmark(cfg: Config, lines: dict[tuple[str | int, ...], int]) -> None:
    """Refuse a ``[benchmark]`` value the benchmark cannot use, naming where it was set."""
    for key, setting in cfg.settings.get("benchmark", {}).items():
        try:
            BenchSettings.from_mapping({key: setting.value})
        except ValueError as exc:
            where = setting.source
            if where == str(cfg.file) and ("benchmark", key) in lines:
                where = f"{where}:{lines[('benchmark', key)]}"
            raise ConfigError(f"{where}: {exc}") from exc
    try:
        benchmark_settings(cfg)
    except ValueError as exc:  # values fine one by one, not together (min_runs > max_runs)
        raise ConfigError(f"{cfg.file} or KERNELTUI_BENCHMARK_*: {exc}") from exc


def benchmark_settings(config: Config | None = None, overrides: Mapping[str, Any] | None = None) -> BenchSettings:
    """``[benchmark]`` as configured (defaults, the file, ``KERNELTUI_BENCHMARK_*``), then
    ``overrides``; a wrong key or value raises ValueError naming it, a broken file ConfigError."""
    return BenchSettings.from_mapping((config or load_config()).section("benchmark"), overrides)
