"""Settings: defaults, then the TOML file at the XDG location, then ``KERNELTUI_*`` environment variables.

Every value remembers where it came from so ``kerneltui config`` can show it. Sections are plain
tables (``[ui]``, ``[agent]``, ``[keys]`` …), every one of them named in ``SECTIONS``. A section
holds what the file and the environment set; each part of kerneltui applies its own defaults when it
reads its section (its settings dataclass, or the defaults table beside it), and ``kerneltui config``
hands those tables to :func:`load_config` to show every setting. Nothing registers itself on import,
so what a section holds does not depend on what was imported first. An environment variable ``KERNELTUI_<SECTION>_<KEY>`` (upper case) overrides
``[section] key`` whatever was imported first; values are parsed as TOML scalars when they look like
one (``true``, ``3``, ``0.5``), else kept as strings. Command-line flags (``--theme``, ``--gpu-host``
…) are the last layer, merged here too (``load_config(flags=…)``), so every command layers them alike.

A section kerneltui does not read, and a value its section cannot use, are refused at load with the
file and line, the variable or the flag. The sections with a schema (``kerneltui.settings.schema``:
``[ui]``, ``[keys]``, ``[sessions]``, ``[remote]``) are read as frozen dataclasses with
``Config.read(UiSettings)``; ``[benchmark]`` is checked by ``BenchSettings``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltui import paths
from kerneltui.files import NotUtf8, read_utf8
from kerneltui.settings.bench import BenchSettings
from kerneltui.settings.engine import check_setting
from kerneltui.settings.remote import RemoteSettings
from kerneltui.settings.schema import SchemaT, SettingsSchema, SettingValueError, build
from kerneltui.settings.sessions import SessionSettings
from kerneltui.settings.toml_lines import key_lines
from kerneltui.settings.ui import KeySettings, UiSettings

# Every section kerneltui reads. Declared here, not by the modules that read them, so that a
# KERNELTUI_AGENT_* variable is a setting even when the config loads before the agent is imported.
SECTIONS = ("agent", "benchmark", "engine", "keys", "prices", "remote", "sandbox", "sessions", "ui")


class ConfigError(Exception):
    pass


@dataclass
class Setting:
    value: Any
    source: str  # "default", a file path, "env KERNELTUI_X_Y", or a flag ("--theme")
    line: int | None = None  # where in the file, when it came from one


@dataclass(frozen=True)
class Flag:
    """A command-line flag that sets ``[section] key``; ``value`` None (or empty) leaves it unset."""

    name: str  # "--theme"
    section: str
    key: str
    value: Any


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

    def where(self, section: str, key: str) -> str:
        """Where ``[section] key`` was set, for a message: "FILE:LINE", "env KERNELTUI_X_Y" or a flag."""
        s = self.settings.get(section, {}).get(key)
        if s is None:
            return f"{self.file} or KERNELTUI_{section.upper()}_*"
        return f"{s.source}:{s.line}" if s.line is not None else s.source

    def read(self, schema: type[SchemaT]) -> SchemaT:
        """The schema's section as a frozen dataclass; a value it cannot use raises ConfigError naming
        where it was set."""
        try:
            return build(schema, self.section(schema.SECTION))
        except SettingValueError as exc:
            raise ConfigError(f"{self.where(schema.SECTION, exc.key)}: {exc}") from exc


def flags_from_args(args: Any, section: str, table: Iterable[tuple[str, str, str]]) -> list[Flag]:
    """The flags of ``table`` (flag, attribute of the parsed arguments, key) that set ``[section]``."""
    return [Flag(flag, section, key, getattr(args, attribute, None)) for flag, attribute, key in table]


def _parse_env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def load_config(file: Path | None = None, env: dict[str, str] | None = None,
                defaults: Mapping[str, Mapping[str, Any]] | None = None, flags: Iterable[Flag] = ()) -> Config:
    """The settings of the file, the environment, then the command line's ``flags``; ``defaults``
    (section → key → value) under them, for a caller that shows every setting (``kerneltui config``).
    Every section with a schema is checked: a value it cannot use raises ConfigError naming where."""
    env = dict(os.environ if env is None else env)
    file = file or config_file(env)
    cfg = Config(file=file)
    for sec, values in (defaults or {}).items():
        for key, value in values.items():
            cfg.settings.setdefault(sec, {})[key] = Setting(value, "default")
    lines: dict[tuple[str | int, ...], int] = {}
    if file.exists():
        try:
            text = read_utf8(file)
        except NotUtf8 as exc:
            raise ConfigError(f"{file}:{exc.line}: {exc.reason}") from None
        except OSError as exc:
            raise ConfigError(f"{file}: cannot read it: {exc.strerror or exc}") from None
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
                cfg.settings.setdefault(sec, {})[key] = Setting(value, str(file), lines.get((sec, key)))
    prefix = "KERNELTUI_"
    for name, raw in env.items():
        if not name.startswith(prefix) or name.count("_") < 2:
            continue
        rest = name[len(prefix):].lower()
        sec, _, key = rest.partition("_")
        if sec in SECTIONS:
            cfg.settings.setdefault(sec, {})[key] = Setting(_parse_env_value(raw), f"env {name}")
    for flag in flags:
        if flag.value is not None and flag.value != "":
            cfg.settings.setdefault(flag.section, {})[flag.key] = Setting(flag.value, flag.name)
    _check_benchmark(cfg)
    _check_engine(cfg)
    for schema in schemas():
        cfg.read(schema)
    return cfg


def config_file(env: Mapping[str, str] | None = None) -> Path:
    """The config file read: ``KERNELTUI_CONFIG``, else the config folder's ``config.toml``."""
    env = os.environ if env is None else env
    return Path(env.get("KERNELTUI_CONFIG") or paths.config_file())


def schemas() -> tuple[type[SettingsSchema], ...]:
    """The sections read as schemas, checked at every load."""
    return (UiSettings, KeySettings, SessionSettings, RemoteSettings)


def _check_engine(cfg: Config) -> None:
    """Refuse an ``[engine]`` key or value the engine cannot use, naming where it was set."""
    for key, setting in cfg.settings.get("engine", {}).items():
        if setting.source == "default":
            continue
        try:
            check_setting(key, setting.value)
        except ValueError as exc:
            raise ConfigError(f"{cfg.where('engine', key)}: {exc}") from exc


def _check_benchmark(cfg: Config) -> None:
    """Refuse a ``[benchmark]`` value the benchmark cannot use, naming where it was set."""
    for key, setting in cfg.settings.get("benchmark", {}).items():
        try:
            BenchSettings.from_mapping({key: setting.value})
        except ValueError as exc:
            raise ConfigError(f"{cfg.where('benchmark', key)}: {exc}") from exc
    try:
        benchmark_settings(cfg)
    except ValueError as exc:  # values fine one by one, not together (min_runs > max_runs)
        raise ConfigError(f"{cfg.file} or KERNELTUI_BENCHMARK_*: {exc}") from exc


def benchmark_settings(config: Config | None = None, overrides: Mapping[str, Any] | None = None) -> BenchSettings:
    """``[benchmark]`` as configured (defaults, the file, ``KERNELTUI_BENCHMARK_*``), then
    ``overrides``; a wrong key or value raises ValueError naming it, a broken file ConfigError."""
    return BenchSettings.from_mapping((config or load_config()).section("benchmark"), overrides)
