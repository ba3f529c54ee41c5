"""Asked when the kernel file changed on disk while the editor holds unsaved edits."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class FileChangedScreen(ModalScreen[str]):
    """Dismisses with "reload" (take the disk version; your edits are saved aside) or "keep"."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "choose('reload')", "Load disk version", id="changed_reload"),
        Binding("k,escape", "choose('keep')", "Keep my edits", id="changed_keep"),
    ]
    DEFAULT_CSS = """
    FileChangedScreen { align: center middle; }
    FileChangedScreen > Vertical { width: 72; height: auto; border: thick $warning; background: $surface;
                                   padding: 1 2; }
    FileChangedScreen Horizontal { height: auto; margin: 1 0 0 0; }
    FileChangedScreen Button { margin: 0 2 0 0; }
    """

    def __init__(self, name: str, backup_hint: str) -> None:
        super().__init__()
        self.file_name = name
        self.backup_hint = backup_hint

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"{self.file_name} changed on disk"
            yield Static(
                f"Another program saved {self.file_name}, and you have unsaved edits here.\n\n"
                f"[b]l[/b]  load the disk version; your edits are kept in {self.backup_hint}\n"
                f"[b]k[/b]  keep my edits (saving will overwrite the disk version)\n\n"
                "The loop is checking the disk version meanwhile."
            )
            with Horizontal():
                yield Button("Load disk version (l)", id="reload", variant="warning")
                yield Button("Keep my edits (k)", id="keep", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(str(event.button.id))

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)
