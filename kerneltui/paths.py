"""Where kerneltui keeps things: XDG locations, overridable by environment variables."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def config_dir() -> Path:
    return Path(os.environ.get("KERNELTUI_CONFIG_DIR") or _xdg("XDG_CONFIG_HOME", ".config") / "kerneltui")


def data_dir() -> Path:
    return Path(os.environ.get("KERNELTUI_DATA_DIR") or _xdg("XDG_DATA_HOME", ".local/share") / "kerneltui")


def cache_dir() -> Path:
    return Path(os.environ.get("KERNELTUI_CACHE_DIR") or _xdg("XDG_CACHE_HOME", ".cache") / "kerneltui")


def config_file() -> Path:
    return config_dir() / "config.toml"


def user_themes_dir() -> Path:
    return config_dir() / "themes"


def package_dir() -> Path:
    return Path(__file__).resolve().parent


def examples_dir() -> Path:
    return package_dir() / "examples"
