"""The profile view: the profiler's compact table for the current version."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from kerneltui.ui.ports import ProfileTable


class ProfileScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "Close", id="profile_close")]
    DEFAULT_CSS = """
    ProfileScreen { align: center middle; }
    ProfileScreen > Vertical { width: 90%; height: 85%; border: round $primary; background: $surface; padding: 0 1; }
    ProfileScreen #profile-notes { color: $text-muted; height: auto; }
    """

    def __init__(self, table: ProfileTable) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.table.title
            box.border_subtitle = "esc closes"
            grid: DataTable = DataTable(zebra_stripes=True, cursor_type="row")
            yield grid
            yield Static(Text("\n".join(self.table.notes)), id="profile-notes")

    def on_mount(self) -> None:
        grid = self.query_one(DataTable)
        grid.add_columns(*self.table.columns)
        for row in self.table.rows:
            grid.add_row(*row)
        grid.focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
