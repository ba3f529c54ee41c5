"""Which reader cuts which file: by its suffix, plain paragraphs for everything else."""

from __future__ import annotations

from collections.abc import Callable

from kerneltui.core.agent.search.chunk_code import c_layout, python_layout
from kerneltui.core.agent.search.chunk_docs import markdown_layout, notebook_layout, plain_layout, rst_layout
from kerneltui.core.agent.search.chunks import Chunk, Layout, SpanLayout, drop_license, pack

Reader = Callable[[str], Layout]
_C = ("c", c_layout)
KINDS: dict[str, tuple[str, Reader]] = {
    ".py": ("python", python_layout), ".pyi": ("python", python_layout),
    ".c": _C, ".cc": _C, ".cpp": _C, ".cxx": _C, ".h": _C, ".hh": _C, ".hpp": _C, ".cuh": _C, ".cu": _C, ".inl": _C,
    ".md": ("markdown", markdown_layout), ".markdown": ("markdown", markdown_layout),
    ".rst": ("rst", rst_layout),
    ".ipynb": ("notebook", notebook_layout),
}
_TEXT = ("text", plain_layout)


def _kind(name: str) -> tuple[str, Reader]:
    dot = name.rfind(".")
    return KINDS.get(name[dot:].lower(), _TEXT) if dot > 0 else _TEXT


def kind_of(name: str) -> str:
    """The reader's name for a file: "python", "c", "markdown", "rst", "notebook" or "text"."""
    return _kind(name)[0]


def chunk_text(name: str, text: str) -> tuple[list[Chunk], str]:
    """The chunks of a file's text, and "" or why it was read as plain text instead of by its kind."""
    kind, reader = _kind(name)
    try:
        layout = reader(text)
        if kind in ("python", "c") and isinstance(layout, SpanLayout):
            drop_license(layout)
        return pack(layout), ""
    except (ValueError, IndexError, RecursionError, AttributeError) as exc:
        # A reader that trips on an odd file must not lose the file: its paragraphs still get indexed.
        return pack(plain_layout(text)), f"read as plain text ({type(exc).__name__}: {exc})"
