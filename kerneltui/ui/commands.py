"""The command palette (ctrl+p): every action of the app, searchable by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from kerneltui.core import rungs as rung_registry
from kerneltui.ui.screens.main import PANES

if TYPE_CHECKING:
    from kerneltui.ui.app_ports import PaletteHost


@dataclass(frozen=True)
class PaletteItem:
    title: str
    help: str
    run: Callable[[], object]


def palette_items(app: PaletteHost) -> list[PaletteItem]:
    """Every command the palette offers: the app's actions (by their action strings) and the panes' own."""

    def action(title: str, help_text: str, name: str) -> PaletteItem:
        return PaletteItem(title, help_text, partial(app.run_action, name))

    items = [action("Run: all default rungs", "rerun the loop on the file on disk (ctrl+r)", "run_loop")]
    for spec in rung_registry.rung_specs():
        items.append(action(f"Run: {spec.name}", f"{spec.title} (prerequisites run first)", f"run_rungs('{spec.name}')"))
    items.append(action("Profile the current version", "ncu summary of the kernel (needs a GPU and ncu)", "profile"))
    items.append(action("Trace the current version", "region table and timeline inside the kernel (needs a GPU)",
                        "trace"))
    items.append(PaletteItem("Run the hand-edited override", "the loop on the PTX/TTGIR written by the asm view's e",
                             app.stage_edits.run))
    items.append(PaletteItem("Agent: stop the turn", "interrupt the reply in flight (ctrl+c, esc)",
                             app.agent_control.interrupt))
    items.append(PaletteItem("Agent: undo the last accepted edit", "back to the checkpoint before it, then rerun the "
                             "loop (u in the chat history)", app.agent_control.undo))
    items.append(action("Switch task…", "open another task directory", "switch_task"))
    items.append(PaletteItem("Open session…", "replay a saved session log in these panes", app.sessions.ask_to_show))
    items.append(PaletteItem("Resume session…", "continue a saved session: its task, kernel, chat and agent context",
                             app.sessions.pick_to_resume))
    items += [PaletteItem(title, help_text, partial(app.theming.choose, name))
              for name, title, help_text in app.theming.palette_themes()]
    for pane in PANES:
        items.append(action(f"Focus pane: {pane}", "move the keyboard focus there", f"focus_pane('{pane}')"))
        items.append(action(f"Toggle pane: {pane}", "hide or show it", f"toggle_pane('{pane}')"))
        items.append(action(f"Maximise pane: {pane}", "fill the screen with it (again to restore)",
                            f"maximise_pane('{pane}')"))
    items.append(PaletteItem("Chart: µs / % of roofline", "toggle the history chart's y axis", lambda: app.chart.action_toggle_unit()))
    for name in ("directives", "comments", "hex"):
        items.append(PaletteItem(f"Asm: show/hide {name}", "filter the asm listing", partial(_asm_filter, app, name)))
    items.append(PaletteItem("Asm: diff against the previous accepted version", "", lambda: app.asm_pane.toggle_diff()))
    items.append(action("Help: keys", "every key binding and its id", "help"))
    items.append(action("Quit", "", "quit"))
    return items


def _asm_filter(app: PaletteHost, name: str) -> None:
    app.asm_pane.toggle_filter(name)


class KerneltuiCommands(Provider):
    def _items(self) -> list[PaletteItem]:
        # The palette is registered by KernelApp alone (its COMMANDS), so its app is always a PaletteHost.
        return palette_items(cast("PaletteHost", self.app))

    async def discover(self) -> Hits:
        for item in self._items():
            yield DiscoveryHit(item.title, item.run, help=item.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for item in self._items():
            score = matcher.match(item.title)
            if score > 0:
                yield Hit(score, matcher.highlight(item.title), item.run, help=item.help)
