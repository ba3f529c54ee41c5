"""The help screen: every key binding with its id (for ``[keys]`` in the config file)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from kerneltui.ui import keys

INTRO = (
    "Save the kernel (ctrl+s here, or in any editor) and the loop reruns: prechecks, compile, run, "
    "correctness and, on a GPU, benchmark and dump. A save during a run cancels it. ctrl+p opens the "
    "command palette with every action."
)


def key_text(binding: Binding, keymap: dict[str, str]) -> str:
    raw = keymap.get(binding.id or "", binding.key)
    shown = []
    for key in raw.split(","):
        key = key.strip()
        if binding.key_display and raw == binding.key and len(raw.split(",")) == 1:
            shown.append(binding.key_display)
            continue
        key = {"right_square_bracket": "]", "left_square_bracket": "[", "question_mark": "?"}.get(key, key)
        shown.append(key.upper() if len(key) in (2, 3) and key[0] == "f" and key[1:].isdigit() else key)
    return " / ".join(shown)


def bindings_table(keymap: dict[str, str], config_file: str) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    table.add_column(style="dim", no_wrap=True)
    for group in keys.GROUPS:
        table.add_row(Text(group.title, style="bold underline"), Text(group.where, style="dim"), "id")
        for binding in group.bindings:
            table.add_row(key_text(binding, keymap), binding.description, binding.id or "")
        table.add_row("", "", "")
    table.add_row(Text("Built in", style="bold underline"), "", "")
    table.add_row("ctrl+p", "command palette (run rungs, profile, themes, panes, tasks, sessions)", "")
    table.add_row("tab / shift+tab", "next / previous widget (in the editor, tab indents: use F2–F6)", "")
    table.add_row("escape", "close a dialog; leave the chat input; restore a maximised pane; in the chat history, stop the agent's turn", "")
    table.add_row("", "", "")
    table.add_row(Text("Remap", style="bold underline"), Text(f"[keys] in {config_file}, e.g. run_loop = \"f5\"",
                                                               style="dim"), "")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q", "dismiss", "Close", id="help_close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 90%; max-width: 110; height: 90%; border: round $primary;
                            background: $surface; padding: 0 1; }
    HelpScreen #help-intro { color: $text-muted; margin: 0 0 1 0; }
    """

    def __init__(self, keymap: dict[str, str], config_file: str) -> None:
        super().__init__()
        self.keymap = keymap
        self.config_file = config_file

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "kerneltui · keys"
            box.border_subtitle = "esc closes"
            yield Static(INTRO, id="help-intro")
            with VerticalScroll():
                yield Static(bindings_table(self.keymap, self.config_file))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
