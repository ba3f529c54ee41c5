"""The kernel editor: a code TextArea that saves with ctrl+s and never loses an edit.

A save replaces the file whole or not at all (``core.files.write_text_atomic``); a save that fails
(a full disk, a read-only file) leaves the text in the editor, unsaved, and tells the app
(``SaveFailed``), which keeps a copy and says why.

The editor remembers the text it last read from or wrote to disk (``disk_text``). A change on disk
that matches it is our own save; anything else is another editor's save: with no unsaved edits it
reloads, with unsaved edits the app asks first (``screens.file_changed``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.binding import BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import TextArea
from textual.widgets.text_area import Selection

from kerneltui.files import write_text_atomic
from kerneltui.ui import keys
from kerneltui.ui.messages import EditorCursorMoved, ProposalDecision, SaveFailed, SaveRequested

if TYPE_CHECKING:
    from tree_sitter import Language

LANGUAGE_BY_SUFFIX = {".py": "python", ".cu": "cuda", ".cuh": "cuda", ".cpp": "cuda", ".cc": "cuda", ".h": "cuda",
                      ".hpp": "cuda", ".toml": "toml"}


@cache
def cuda_language() -> tuple[Language, str] | None:
    """The tree-sitter CUDA grammar and our highlight query, or None when tree-sitter-cuda is absent."""
    try:
        import tree_sitter_cuda
        from tree_sitter import Language
    except ImportError:
        return None
    query = (Path(__file__).resolve().parent.parent / "queries" / "cuda.scm").read_text(encoding="utf-8")
    return Language(tree_sitter_cuda.language()), query


def language_for(path: Path) -> str | None:
    return LANGUAGE_BY_SUFFIX.get(path.suffix)


class KernelEditor(TextArea):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.EDITOR)

    dirty: reactive[bool] = reactive(False)

    def __init__(self, path: Path, text: str, *, id: str | None = None) -> None:
        super().__init__(text, soft_wrap=False, tab_behavior="indent", show_line_numbers=True, id=id)
        self.path = path
        self.disk_text = text
        self.highlighting_note = ""
        self.read_only_note = ""  # why the editor is read-only (a replay); a save says it instead of writing
        self.editing_proposal = ""  # a proposal's text being edited: ctrl+s accepts it instead of saving
        self._cursor_row = 0

    def on_mount(self) -> None:
        self._apply_language()

    def _apply_language(self) -> None:
        language = language_for(self.path)
        if language == "cuda":
            grammar = cuda_language()
            if grammar is None:
                self.highlighting_note = "no CUDA highlighting: pip install tree-sitter-cuda"
                return
            self.register_language("cuda", grammar[0], grammar[1])
        if language is None:
            return
        try:
            self.language = language
        except Exception as exc:  # LanguageDoesNotExist: tree-sitter or the grammar is not installed
            self.highlighting_note = f"no syntax highlighting: {str(exc).splitlines()[0]}"

    # -- text and disk --------------------------------------------------------------------------

    def _on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.dirty = self.text != self.disk_text

    class DirtyChanged(Message):
        def __init__(self, dirty: bool) -> None:
            super().__init__()
            self.dirty = dirty

    def watch_dirty(self, dirty: bool) -> None:
        self.post_message(self.DirtyChanged(dirty))

    def replace_from_disk(self, text: str) -> None:
        """Show the file's new content, keeping the cursor on the same line where possible."""
        row, col = self.cursor_location
        scroll = self.scroll_offset
        self.disk_text = text
        self.load_text(text)
        last = max(0, self.document.line_count - 1)
        self.cursor_location = (min(row, last), col)
        self.scroll_to(scroll.x, scroll.y, animate=False)
        self.dirty = False

    def make_read_only(self, note: str) -> None:
        """Nothing typed, nothing saved: ctrl+s (or any caller of ``action_save``) says ``note`` instead."""
        self.read_only = True
        self.read_only_note = note

    def mark(self) -> str:
        """What the pane's title adds to the file name: read-only, a proposal being edited, unsaved edits."""
        if self.read_only_note:
            return " [dim](replay, read-only)[/]"
        if self.editing_proposal:
            return f" [b]editing {self.editing_proposal}[/] [dim](ctrl+s accepts it)[/]"
        return " ●" if self.dirty else ""

    def start_proposal_edit(self, proposal_id: str, text: str) -> None:
        """Show a proposal's text to change; the file on disk stays as it is until ctrl+s accepts it."""
        self.editing_proposal = proposal_id
        self.load_text(text)
        self.dirty = text != self.disk_text
        self.post_message(self.DirtyChanged(self.dirty))

    def stop_proposal_edit(self, disk_text: str | None = None) -> None:
        """Back to the file on disk (``disk_text``: its text now, when the accept just wrote it)."""
        self.editing_proposal = ""
        self.replace_from_disk(self.disk_text if disk_text is None else disk_text)
        self.post_message(self.DirtyChanged(False))

    def action_save(self) -> None:
        if self.read_only_note:
            self.notify(self.read_only_note, severity="warning", timeout=6)
            return
        if self.editing_proposal:
            self.post_message(ProposalDecision(self.editing_proposal, "edit", edited_source=self.text))
            return
        text = self.text
        try:
            write_text_atomic(self.path, text)
        except OSError as exc:
            # The file on disk is as it was (the write is all or nothing); the text stays here, unsaved.
            self.post_message(SaveFailed(text, exc))
            return
        self.disk_text = text
        self.dirty = False
        self.post_message(SaveRequested(text))

    # -- cursor ---------------------------------------------------------------------------------

    def goto_line(self, line: int, column: int = 1) -> None:
        """Move the cursor to a 1-based line (a failing rung's location) and show it."""
        row = max(0, min(line - 1, self.document.line_count - 1))
        self.selection = Selection.cursor((row, max(0, column - 1)))
        self.scroll_cursor_visible(center=True, animate=False)

    def _on_text_area_selection_changed(self, event: TextArea.SelectionChanged) -> None:
        row = event.selection.end[0]
        if row != self._cursor_row:
            self._cursor_row = row
            self.post_message(EditorCursorMoved(row + 1))
