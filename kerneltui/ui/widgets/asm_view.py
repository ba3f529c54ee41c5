"""The asm viewer: a tab per compiler stage, drawn line by line so 100,000-line SASS scrolls smoothly.

``AsmLines`` is a Line-API ``ScrollView``: it renders only the rows on screen, each from a small
LRU cache, so the cost of a frame does not grow with the listing. Lines that came from the editor's
cursor line are highlighted; Enter on an asm line moves the editor to its source line. Filters hide
directives and comments and strip SASS hex encodings; ``v`` shows a diff against the same stage of
the previous accepted version.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.containers import Vertical
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from kerneltui.ui import keys
from kerneltui.ui.messages import EditStage, JumpToSource
from kerneltui.ui.ports import AsmListing, AsmStage
from kerneltui.ui.themes import rich_colour

_HEX = re.compile(r"\s*/\*\s*0x[0-9a-fA-F]+\s*\*/\s*")
_ONLY_HEX = re.compile(r"^\s*/\*\s*0x[0-9a-fA-F]+\s*\*/\s*$")
_COMMENT_LINE = re.compile(r"^\s*(//|;|#(?!loc))")
_DIRECTIVE = re.compile(r"^\s*(\.(?!visible|entry|func|weak|global)\w+|#loc\w*\s*=|//##|\.loc\b|\.file\b|attributes #)")
_KEEP_DIRECTIVE = re.compile(r"^\s*\.(visible|entry|func|weak)\b")

# Highlighting rules, applied in order (later rules win where they overlap).
_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b0x[0-9a-fA-F]+\b|(?<![\w%$.])-?\d+(\.\d+)?(e[-+]?\d+)?\b"), "number"),
    (re.compile(r"%[a-zA-Z_][\w.]*|\bU?R\d+\b|\bU?P\d+\b|\bRZ\b|\bPT\b|\bSR_\w+"), "register"),
    (re.compile(r"^\s*\.\w+|\btt\.\w+|\bttg\.\w+|\barith\.\w+|\bscf\.\w+"), "directive"),
    (re.compile(r"^\s*[\w$.]+:|^\s*\.L\w+:|\$L\w+"), "label"),
    (re.compile(r"^\s*(?:/\*[0-9a-f]{4}\*/\s*)?(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)\b"), "opcode"),
    (re.compile(r"//.*$|;.*$|/\*.*?\*/"), "comment"),
]


@dataclass(frozen=True)
class ViewLine:
    text: str
    source: int | None  # kernel-file line (1-based)
    number: int | None  # line number in the stage (1-based); None for lines only in the old version
    mark: str = ""  # "+", "-", " " in diff mode


def build_view(stage: AsmStage, hide_directives: bool, hide_comments: bool, hide_hex: bool) -> list[ViewLine]:
    lines = stage.lines()
    sources = stage.source_lines
    out: list[ViewLine] = []
    for i, line in enumerate(lines):
        if hide_hex and _ONLY_HEX.match(line):
            continue
        if hide_directives and _DIRECTIVE.match(line) and not _KEEP_DIRECTIVE.match(line):
            continue
        if hide_comments and _COMMENT_LINE.match(line):
            continue
        text = _HEX.sub("  ", line).rstrip() if hide_hex else line
        out.append(ViewLine(text=text.expandtabs(4), source=sources[i] if i < len(sources) else None, number=i + 1))
    return out


def build_diff(old: list[ViewLine], new: list[ViewLine], context: int = 3) -> list[ViewLine]:
    """A unified-style diff of two filtered views (new lines keep their source map)."""
    matcher = difflib.SequenceMatcher(None, [v.text.strip() for v in old], [v.text.strip() for v in new],
                                      autojunk=True)
    out: list[ViewLine] = []
    for group in matcher.get_grouped_opcodes(context):
        if out:
            out.append(ViewLine(text="⋯", source=None, number=None, mark=" "))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(ViewLine(v.text, v.source, v.number, " ") for v in new[j1:j2])
                continue
            out.extend(ViewLine(v.text, None, None, "-") for v in old[i1:i2])
            out.extend(ViewLine(v.text, v.source, v.number, "+") for v in new[j1:j2])
    if not out:
        out.append(ViewLine(text="(no difference from the previous accepted version)", source=None, number=None))
    return out


class AsmLines(ScrollView, can_focus=True):
    """Line-API view of one stage's (filtered) lines with a cursor and source-linked highlights."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("home", "top", "Top", show=False),
        Binding("end", "bottom", "Bottom", show=False),
        *keys.ASM,
    ]
    DEFAULT_CSS = """
    AsmLines { height: 1fr; background: $surface; }
    """

    cursor: reactive[int] = reactive(0, always_update=True)

    class CursorSource(Message):
        def __init__(self, source: int | None) -> None:
            super().__init__()
            self.source = source

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: list[ViewLine] = []
        self.linked: set[int] = set()  # view indices whose source is the editor's line
        self.source_line: int | None = None
        self._cache: LRUCache[tuple[int, bool, bool, int], list[Segment]] = LRUCache(4096)
        self._gutter = 1
        self._styles: dict[str, Style] = {}

    # -- data ---------------------------------------------------------------------------------

    def set_view(self, view: list[ViewLine], keep_position: bool = False) -> None:
        old_number = self.view[self.cursor].number if keep_position and 0 <= self.cursor < len(self.view) else None
        self.view = view
        self._cache.clear()
        numbers = [v.number for v in view if v.number is not None]
        self._gutter = len(str(max(numbers))) if numbers else 1
        width = max((len(v.text) for v in view), default=0) + self._gutter + 3
        self.virtual_size = Size(width, len(view))
        self._relink()
        target = 0
        if old_number is not None:
            target = next((i for i, v in enumerate(view) if v.number is not None and v.number >= old_number), 0)
        self.cursor = min(target, max(0, len(view) - 1))
        self.scroll_to(y=max(0, self.cursor - self.scrollable_content_region.height // 2), animate=False)
        self.refresh()

    def link_source_line(self, line: int | None) -> None:
        """Highlight the asm lines that came from ``line`` and bring the first into view."""
        self.source_line = line
        self._relink()
        if self.linked:
            top = int(self.scroll_offset.y)
            height = self.scrollable_content_region.height
            if not any(top <= i < top + height for i in self.linked):
                first = min(self.linked)
                self.scroll_to(y=max(0, first - height // 3), animate=False)
        self._cache.clear()
        self.refresh()

    def _relink(self) -> None:
        line = self.source_line
        self.linked = {i for i, v in enumerate(self.view) if line is not None and v.source == line}

    def refresh_theme(self) -> None:
        self._styles = {}
        self._cache.clear()
        self.refresh()

    # -- drawing ------------------------------------------------------------------------------

    def _style_table(self) -> dict[str, Style]:
        if not self._styles:
            v = self.app.theme_variables
            self._styles = {
                "number": Style(color=rich_colour(v, "accent")),
                "register": Style(color=rich_colour(v, "primary")),
                "directive": Style(color=rich_colour(v, "secondary")),
                "label": Style(color=rich_colour(v, "success"), bold=True),
                "opcode": Style(bold=True),
                "comment": Style(dim=True, italic=True),
                "gutter": Style(dim=True),
                "linked": Style(bgcolor=rich_colour(v, "asm-highlight")),
                "cursor": Style(bgcolor=rich_colour(v, "asm-cursor")),
                "+": Style(color=rich_colour(v, "pass")),
                "-": Style(color=rich_colour(v, "fail")),
                "mapped": Style(color=rich_colour(v, "primary")),
            }
        return self._styles

    def _segments(self, index: int, is_cursor: bool, is_linked: bool) -> list[Segment]:
        key = (index, is_cursor, is_linked, self.size.width)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        styles = self._style_table()
        line = self.view[index]
        text = Text(no_wrap=True, end="")
        number = str(line.number) if line.number is not None else ""
        text.append(f"{number:>{self._gutter}}", style=styles["gutter"])
        text.append("▏" if line.source is not None else " ", style=styles["mapped"])
        if line.mark:
            text.append(line.mark, style=styles.get(line.mark, Style()))
        body = Text(line.text, no_wrap=True, end="")
        for pattern, name in _RULES:
            for match in pattern.finditer(line.text):
                start, end = match.span(1) if name == "opcode" and match.lastindex else match.span()
                body.stylize(styles[name], start, end)
        if line.mark in ("+", "-"):
            body.stylize(styles[line.mark])
        text.append_text(body)
        if is_linked:
            text.stylize(styles["linked"])
        if is_cursor:
            text.stylize(styles["cursor"])
        segments = list(text.render(self.app.console))
        self._cache[key] = segments
        return segments

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= len(self.view):
            return Strip.blank(width, self.rich_style)
        is_cursor = index == self.cursor and self.has_focus
        segments = self._segments(index, is_cursor, index in self.linked)
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        base = self._style_table()["cursor"] if is_cursor else (
            self._style_table()["linked"] if index in self.linked else None)
        strip = strip.extend_cell_length(width, base or Style())
        return strip.apply_style(self.rich_style)

    def watch_cursor(self, previous: int, cursor: int) -> None:
        self._cache.clear()
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # -- actions ------------------------------------------------------------------------------

    def _move_to(self, index: int) -> None:
        if not self.view:
            return
        self.cursor = max(0, min(index, len(self.view) - 1))
        height = self.scrollable_content_region.height
        top = int(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def action_cursor(self, delta: int) -> None:
        self._move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._move_to(self.cursor + direction * max(1, self.scrollable_content_region.height - 1))

    def action_top(self) -> None:
        self._move_to(0)

    def action_bottom(self) -> None:
        self._move_to(len(self.view) - 1)

    def action_jump_to_source(self) -> None:
        if not self.view:
            return
        line = self.view[self.cursor]
        if line.source is None:
            self.notify("this asm line has no source location (no debug info on it)", severity="warning")
            return
        self.post_message(JumpToSource(line.source))

    def on_click(self, event: Click) -> None:
        self._move_to(int(self.scroll_offset.y) + event.y)

    # The pane owns stages, filters and the diff: forward those actions to it.
    def action_stage(self, delta: int) -> None:
        self._pane().switch_stage(delta)

    def action_toggle_filter(self, name: str) -> None:
        self._pane().toggle_filter(name)

    def action_toggle_diff(self) -> None:
        self._pane().toggle_diff()

    def action_edit_stage(self) -> None:
        stage = self._pane().stage()
        if stage is None:
            self.notify("no compiler output to edit yet: it appears after a run that dumps it", severity="warning")
            return
        self.post_message(EditStage(stage.name, stage.text))

    def _pane(self) -> AsmPane:
        for ancestor in self.ancestors:
            if isinstance(ancestor, AsmPane):
                return ancestor
        raise LookupError("AsmLines outside an AsmPane")


class StageBar(Static):
    """The compiler stages of one listing, the shown one highlighted; a click picks another.

    Drawn in one Static rather than a Tabs widget: results arrive while an earlier set of tabs is
    still being mounted or removed, and a plain render has no such in-between state.
    """

    class Chosen(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.names: list[str] = []
        self.active: str | None = None

    def set_stages(self, names: list[str], active: str | None) -> None:
        self.names = list(names)
        self.active = active
        text = Text()
        for name in self.names:
            label = f" {name} "
            text.append(label, style="bold reverse" if name == active else "")
            text.append(" ")
        self.update(text)

    def name_at(self, x: int) -> str | None:
        start = 0
        for name in self.names:
            width = len(name) + 2
            if start <= x < start + width:
                return name
            start += width + 1
        return None

    def on_click(self, event: Click) -> None:
        event.stop()
        name = self.name_at(event.x - self.gutter.left)
        if name is not None:
            self.post_message(self.Chosen(name))


class AsmPane(Vertical):
    DEFAULT_CSS = """
    AsmPane #asm-tabs { height: 1; padding: 0 1; }
    AsmPane #asm-filters { height: 1; color: $text-muted; padding: 0 1; }
    AsmPane #asm-note { color: $text-muted; padding: 1 1; height: auto; }
    """

    def __init__(self, hide_directives: bool = True, hide_comments: bool = False, hide_hex: bool = True,
                 *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.listing = AsmListing(note="no compiler output yet: it appears after a run that dumps it")
        self.previous: AsmListing | None = None
        self.filters = {"directives": hide_directives, "comments": hide_comments, "hex": hide_hex}
        self.diff = False
        self.stage_name: str | None = None

    def compose(self) -> ComposeResult:
        tabs = self.tabs = StageBar(id="asm-tabs")
        tabs.display = False
        self.filters_label = Static("", id="asm-filters")
        self.note_label = Static(self.listing.note, id="asm-note")
        self.lines = AsmLines(id="asm-lines")
        yield tabs
        yield self.filters_label
        yield self.note_label
        yield self.lines

    @property
    def lines_widget(self) -> AsmLines:
        return self.lines

    async def show(self, listing: AsmListing, previous: AsmListing | None = None) -> None:
        self.listing = listing
        self.previous = previous
        names = [s.name for s in listing.stages]
        note = self.note_label
        note.update(listing.note)
        note.display = not listing.stages
        self.tabs.display = bool(listing.stages)
        if names:
            keep = self.stage_name if self.stage_name in names else ("SASS" if "SASS" in names else names[-1])
            self.stage_name = keep
        else:
            self.stage_name = None
        self.tabs.set_stages(names, self.stage_name)
        self._rebuild()

    def on_stage_bar_chosen(self, event: StageBar.Chosen) -> None:
        event.stop()
        if event.name != self.stage_name:
            self.stage_name = event.name
            self.tabs.set_stages(self.tabs.names, event.name)
            self._rebuild()

    def stage(self) -> AsmStage | None:
        return next((s for s in self.listing.stages if s.name == self.stage_name), None)

    def switch_stage(self, delta: int) -> None:
        names = [s.name for s in self.listing.stages]
        if not names:
            return
        index = names.index(self.stage_name) if self.stage_name in names else 0
        self.stage_name = names[(index + delta) % len(names)]
        self.tabs.set_stages(names, self.stage_name)
        self._rebuild()

    def toggle_filter(self, name: str) -> None:
        self.filters[name] = not self.filters[name]
        self._rebuild(keep_position=True)

    def toggle_diff(self) -> None:
        if not self.diff and (self.previous is None or not self.previous.stages):
            self.notify("no previous accepted version to compare with yet", severity="warning")
            return
        self.diff = not self.diff
        self._rebuild()

    def _rebuild(self, keep_position: bool = False) -> None:
        stage = self.stage()
        lines = self.lines_widget
        lines.display = stage is not None
        if stage is None:
            lines.set_view([])
            self._show_filters()
            return
        f = self.filters
        view = build_view(stage, f["directives"], f["comments"], f["hex"])
        if self.diff and self.previous is not None:
            old_stage = next((s for s in self.previous.stages if s.name == stage.name), None)
            if old_stage is None:
                view = [ViewLine(f"(the previous accepted version has no {stage.name})", None, None)]
            else:
                view = build_diff(build_view(old_stage, f["directives"], f["comments"], f["hex"]), view)
        lines.set_view(view, keep_position=keep_position)
        self._show_filters()

    def _show_filters(self) -> None:
        stage = self.stage()
        parts = []
        for name, key in (("directives", "d"), ("comments", "c"), ("hex", "x")):
            parts.append(f"{key}:{name} {'hidden' if self.filters[name] else 'shown'}")
        parts.append(f"v:diff {'on' if self.diff else 'off'}")
        size = f"{len(stage.lines()):,} lines · " if stage else ""
        self.filters_label.update(Text(size + " · ".join(parts), style="dim", no_wrap=True,
                                                             overflow="ellipsis"))

    def link_source_line(self, line: int | None) -> None:
        self.lines_widget.link_source_line(line)
