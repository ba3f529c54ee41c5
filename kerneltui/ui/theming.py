"""Themes in the running app: loaded from their folders at start and again when a user theme is saved.

``ui.themes`` reads theme files; this module registers them with the app, picks the configured one,
watches the user themes folder and keeps the panes drawn with Rich colours (the editor's highlights,
the rung table, the asm view, the chart) in step with the app's theme.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.theme import Theme

from kerneltui import paths
from kerneltui.ui import themes
from kerneltui.ui.widgets.editor import KernelEditor

if TYPE_CHECKING:
    from kerneltui.ui.app_ports import ThemeHost

FALLBACK = "kerneltui-dark"
# Where a theme picked in the palette is kept for the next start (the config file is the person's own
# text, never rewritten); an environment variable or --theme still wins.
CHOSEN_FILE = "theme-chosen"
EXPLICIT_SOURCES = ("env ", "--")


def with_app_variables(theme: Theme, generated: dict[str, str]) -> dict[str, str]:
    """The app's CSS variables with kerneltui's own (``pass``, ``asm-highlight`` …) where ``theme`` sets none."""
    for name, value in themes.app_variables(generated).items():
        if name not in theme.variables:
            generated[name] = value
    return generated


class Theming:
    def __init__(self, app: ThemeHost, folders: list[Path] | None = None) -> None:
        self.app = app
        self.folders = folders or themes.default_folders()
        self.files: dict[str, themes.ThemeFile] = {}
        self.problems: list[str] = []

    def load(self) -> set[str]:
        """Register every theme in the folders (later folders override earlier ones); the names found."""
        found = themes.load_themes(*self.folders)
        self.problems = found.problems
        for name, tf in found.themes.items():
            self.app.register_theme(tf.theme)
            self.files[name] = tf
        return set(found.themes)

    def start(self, wanted: str, source: str = "default") -> None:
        """Load the themes and show ``wanted`` ([ui] theme, from ``source``), or the theme last picked in the
        palette unless ``wanted`` came from the environment or a flag; else say why not and use the fallback."""
        self.load()
        chosen = self.chosen()
        if chosen and chosen in self.app.available_themes and not source.startswith(EXPLICIT_SOURCES):
            wanted = chosen
        if wanted not in self.app.available_themes:
            self.problems.append(f"[ui] theme = {wanted!r}: no such theme; using {FALLBACK}")
            wanted = FALLBACK if FALLBACK in self.app.available_themes else "textual-dark"
        self.app.theme = wanted

    @staticmethod
    def chosen_file() -> Path:
        return paths.data_dir() / CHOSEN_FILE

    def chosen(self) -> str:
        try:
            return self.chosen_file().read_text(encoding="utf-8").strip()
        except OSError:
            return ""

    def choose(self, name: str) -> None:
        """The palette's pick: shown now and kept for the next start."""
        self.app.theme = name
        target = self.chosen_file()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(name + "\n", encoding="utf-8")
        except OSError as exc:
            self.app.notify(f"theme {name} shown, but it cannot be kept for the next start: {exc}", severity="warning")
            return
        self.app.notify(f"theme {name}: kept for the next start (KERNELTUI_UI_THEME or --theme override it)",
                        timeout=4)

    def reload(self) -> None:
        """A user theme file changed: load them all again and re-apply the current one's new colours."""
        current = self.app.theme
        if current in self.load():
            # Same name, new colours: re-apply by switching away and back (the watcher only fires on change).
            self.app.theme = "textual-dark" if current != "textual-dark" else "textual-light"
            self.app.theme = current

    def watch(self) -> None:
        """Reload the themes whenever a file in the user themes folder changes."""
        self.app.run_worker(self._watch(), group="themes", exclusive=True)

    async def _watch(self) -> None:
        folder = paths.user_themes_dir()
        if not folder.is_dir():
            return
        # Imported once there is a folder to watch: the worker starts with the app, before its first paint.
        from watchfiles import awatch

        async for _changes in awatch(folder, debounce=200, recursive=False):
            self.reload()
            for problem in self.problems:
                self.app.notify(problem, severity="warning", timeout=10)

    def repaint(self) -> None:
        """The app's theme changed: redraw what draws its own colours (the panes are there)."""
        app = self.app
        self.apply_to_editor(app.editor)
        app.rungs.refresh_theme()
        app.asm_pane.lines_widget.refresh_theme()
        app.chart.refresh()
        app.status.show()

    def apply_to_editor(self, editor: KernelEditor) -> None:
        tf = self.files.get(self.app.theme)
        if tf is not None:
            ta_theme = themes.text_area_theme(tf)
            editor.register_theme(ta_theme)
            editor.theme = ta_theme.name
        else:
            editor.theme = "vscode_dark" if self.app.current_theme.dark else "github_light"

    def palette_themes(self) -> list[tuple[str, str, str]]:
        """(name, palette title, description) of each theme the palette offers: kerneltui's and Textual's own."""
        items = []
        for name in sorted(self.app.available_themes):
            if name in self.files or not name.startswith(("textual", "ansi")):
                desc = self.files[name].description if name in self.files else "Textual theme"
                items.append((name, f"Theme: {name}", desc))
        return items
