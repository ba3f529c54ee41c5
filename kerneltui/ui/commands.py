"""The command palette (ctrl+p): every action of the app, searchable by name."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class KerneltuiCommands(Provider):
    def _items(self) -> list[tuple[str, str, str]]:
        app = self.app
        items = getattr(app, "palette_actions", None)
        return items() if callable(items) else []

    async def discover(self) -> Hits:
        for title, help_text, action in self._items():
            yield DiscoveryHit(title, partial(self.app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._items():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self.app.run_action, action), help=help_text)
