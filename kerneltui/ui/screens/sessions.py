"""The session picker: saved sessions, newest first; enter continues the one highlighted."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kerneltui.core.session.store import SessionInfo


def describe(info: SessionInfo) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created_at)) if info.created_at else "?"
    s = info.summary
    if s is None:
        what = f"{'(no summary)':<34}"
    else:
        versions = f"{s.versions} version{'s' if s.versions != 1 else ''}"
        proposals = f"{s.proposals} proposal{'s' if s.proposals != 1 else ''}" + (
            f" ({s.accepted} accepted)" if s.accepted else "")
        what = f"{s.verdict or '—':<4} {versions:<11} {proposals:<18}"
    return f"{when}  {info.task:<16} {info.origin:<6} {what} {info.name}"


class SessionPicker(ModalScreen[Path | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="sessions_cancel")]
    DEFAULT_CSS = """
    SessionPicker { align: center middle; }
    SessionPicker > Vertical { width: 110; height: 24; border: round $primary; background: $surface; padding: 0 1; }
    SessionPicker Static { color: $text-muted; }
    SessionPicker OptionList { height: 1fr; }
    """

    def __init__(self, sessions: list[SessionInfo]) -> None:
        super().__init__()
        self.sessions = sessions

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Resume a session"
            if self.sessions:
                yield Static("enter: continue it (task, kernel, chat, agent context) · esc: cancel")
            else:
                yield Static("no saved sessions yet: every run of the app, check, watch and ask records one "
                             "([sessions] dir in the config file)")
            yield OptionList(*[Option(describe(s), id=str(i)) for i, s in enumerate(self.sessions)])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.sessions[int(event.option.id or 0)].folder)

    def action_cancel(self) -> None:
        self.dismiss(None)
