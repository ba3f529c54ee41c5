"""Themes as TOML files: the bundled ``themes/`` folder plus the user themes folder.

A theme file holds Textual's colours (``primary``, ``background`` …, ``ansi = true`` for the
terminal's own palette), a ``[variables]`` table with kerneltui's own colours (``pass``, ``warn``,
``fail``, ``skip``, ``running``, ``asm-highlight`` …; missing ones are derived from the theme) and
a ``[syntax]`` table of editor highlight styles. Files in the user folder override bundled ones of
the same name and are reloaded when saved (watchfiles, in the app's theme worker).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.style import Style
from textual.color import Color
from textual.theme import Theme
from textual.widgets.text_area import TextAreaTheme

from kerneltui import paths

THEME_KEYS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground", "background",
              "surface", "panel", "boost")
APP_VARIABLES = ("pass", "warn", "fail", "skip", "running", "asm-highlight", "asm-cursor", "chart-point",
                 "chart-current", "chart-baseline", "chart-floor")


def bundled_themes_dir() -> Path:
    return paths.package_dir() / "themes"


def app_variables(generated: dict[str, str]) -> dict[str, str]:
    """kerneltui's variables derived from a theme's generated colours (used where a theme has none)."""

    def blend(name: str, factor: float) -> str:
        try:
            return Color.parse(generated["background"]).blend(Color.parse(generated[name]), factor).hex
        except Exception:  # ansi_default and friends cannot be blended: use the colour itself
            return generated[name]

    return {
        "pass": generated["success"], "warn": generated["warning"], "fail": generated["error"],
        "skip": generated.get("foreground-darken-3", generated["foreground"]), "running": generated["primary"],
        "asm-highlight": blend("primary", 0.25), "asm-cursor": blend("primary", 0.45),
        "chart-point": generated["primary"], "chart-current": generated["accent"],
        "chart-baseline": generated.get("foreground-darken-2", generated["foreground"]),
        "chart-floor": generated["error"],
    }


def rich_colour(variables: dict[str, str], name: str, fallback: str = "default") -> str:
    """A theme variable as a colour Rich understands (for widgets that draw with Rich styles)."""
    value = variables.get(name)
    if not value:
        return fallback
    value = value.split()[0]
    if value.startswith("ansi_"):
        return value[5:] if value != "ansi_default" else "default"
    try:
        return Color.parse(value).hex
    except Exception:
        return fallback


@dataclass
class ThemeFile:
    theme: Theme
    syntax: dict[str, str]
    path: Path
    description: str = ""


@dataclass
class ThemeSet:
    themes: dict[str, ThemeFile] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class ThemeError(Exception):
    pass


def parse_theme(path: Path) -> ThemeFile:
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"{path}: malformed TOML: {exc}") from exc
    except OSError as exc:
        raise ThemeError(f"{path}: cannot read: {exc.strerror}") from exc
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ThemeError(f"{path}: a theme needs `name = \"…\"`")
    if not isinstance(data.get("primary"), str):
        raise ThemeError(f"{path}: a theme needs `primary = \"#rrggbb\"` (or an ansi_ colour)")
    colours = {k: str(data[k]) for k in THEME_KEYS if k in data}
    variables = {str(k): str(v) for k, v in (data.get("variables") or {}).items()}
    syntax = {str(k): str(v) for k, v in (data.get("syntax") or {}).items()}
    try:
        c = colours.get
        theme = Theme(name=name, primary=colours["primary"], secondary=c("secondary"), warning=c("warning"),
                      error=c("error"), success=c("success"), accent=c("accent"), foreground=c("foreground"),
                      background=c("background"), surface=c("surface"), panel=c("panel"), boost=c("boost"),
                      dark=bool(data.get("dark", True)), ansi=bool(data.get("ansi", False)), variables=variables)
        theme.to_color_system().generate()  # parse every colour now, to report the file
        for style in syntax.values():
            Style.parse(style)
    except Exception as exc:
        raise ThemeError(f"{path}: {exc}") from exc
    return ThemeFile(theme=theme, syntax=syntax, path=path, description=str(data.get("description", "")))


def load_themes(*folders: Path) -> ThemeSet:
    """Themes from each folder in turn (later folders override earlier ones by name)."""
    found = ThemeSet()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                tf = parse_theme(path)
            except ThemeError as exc:
                found.problems.append(str(exc))
                continue
            found.themes[tf.theme.name] = tf
    return found


def default_folders() -> list[Path]:
    return [bundled_themes_dir(), paths.user_themes_dir()]


def text_area_theme(tf: ThemeFile) -> TextAreaTheme:
    """The editor's highlight colours for a theme (cursor and gutter come from the app's CSS)."""
    base = TextAreaTheme.get_builtin_theme("vscode_dark" if tf.theme.dark else "github_light")
    styles = dict(base.syntax_styles) if base else {}
    styles.update({name: Style.parse(value) for name, value in tf.syntax.items()})
    return TextAreaTheme(name=tf.theme.name, syntax_styles=styles)
