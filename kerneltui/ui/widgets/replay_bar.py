"""The replay timeline: where the cursor is, which version, play state and speed, and the keys."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.widgets import Static


class ReplayBar(Static):
    DEFAULT_CSS = """
    ReplayBar { height: 2; background: $boost; color: $text; padding: 0 1; }
    """

    def show(self, *, step: int, total: int, version: int, versions: int, playing: bool, speed: float,
             at: float | None, wall_time: Callable[[float], str]) -> None:
        width = max(10, (self.size.width or 80) - 2)
        filled = int(width * step / total) if total else 0
        track = Text("━" * filled, style="bold") + Text("─" * (width - filled), style="dim")
        state = "▶ playing" if playing else "⏸ paused"
        when = wall_time(at) if at is not None else "start"
        line = Text.assemble(
            (f"{state}  ", "bold"), f"step {step}/{total} · version {version}/{versions} · {speed:g} events/s · {when}   ",
            ("F7", "bold"), " back  ", ("F8", "bold"), " forward  ", ("F9", "bold"), " play/pause  ",
            ("F10", "bold"), " jump to version  ", ("F11/F12", "bold"), " slower/faster",
        )
        self.update(Text("\n").join([line, track]))
